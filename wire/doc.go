// Package wire holds agy's payload types as its language server writes them
// in proto3 JSON: trajectory steps (Step and its bodies), their types and
// statuses, a cascade's run status, the model catalog's entries, and the
// tolerant integers (Int, Int64). It has no client and no transport: it is
// what a consumer of package messages compiles, and what package rpc
// decodes its answers and frames into.
//
// Decoding is json v2 (github.com/go-json-experiment/json), told to be
// exactly as lenient as encoding/json (decode.go; FuzzDecodeV1V2 in package
// rpc compares the two), and every Step keeps its raw JSON. Unmarshal is how
// rpc reads a frame or an answer held whole; DecodeStepsReusing reads a
// GetCascadeTrajectorySteps answer as it arrives, decoding only the steps
// that changed since the caller's last read (internal/stepsfilter finds them
// by comparing bytes); a StreamDecoder decodes only what a streaming planner
// text adds to the text the stream's last frame carried
// (internal/textcache). Encoding stays with encoding/json.
package wire
