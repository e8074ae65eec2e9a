// Package rpc is the client for agy's language server: the connect-RPC
// service exa.language_server_pb.LanguageServerService that agy serves on a
// random loopback port over TLS (self-signed) and HTTP/2.
//
// A Client speaks the Connect protocol with the JSON codec: unary calls
// (GetCascadeTrajectorySteps, SendUserCascadeMessage,
// HandleCascadeUserInteraction, the interrupts, ...) and the
// StreamAgentStateUpdates server stream, whose envelopes (envelope.go) are
// decoded one at a time. Payloads are proto3 JSON, decoded into the types
// of package wire (Step, RunStatus, ...), which also holds how they are
// decoded: tolerantly (unknown fields are ignored, and every Step keeps its
// raw JSON), with json v2 told to be exactly as lenient as encoding/json.
// Requests are encoded with encoding/json.
//
// The speed tricks that stay, because their benchmarks show they pay
// (docs/PERFORMANCE.md), each live in a package of their own:
//   - a caller that reads the same trajectory again and again hands its last
//     read to GetCascadeTrajectoryStepsReusing, which decodes only the steps
//     that changed, found by comparing bytes before the decoder scans them
//     (wire.DecodeStepsReusing, internal/stepsfilter);
//   - a stream decodes only what a streaming planner text adds to the text
//     the last frame carried (wire.StreamDecoder, internal/textcache), and
//     reads a frame into the buffer of one released before it
//     (StreamFrame.Release; rpc/internal/spare);
//   - under the HTTP/2 transport (golang.org/x/net/http2), the connection
//     batches the WINDOW_UPDATE frames the transport would otherwise write
//     after every 4 KiB read (rpc/internal/flowconn).
//
// Failures are translated here, once, into *Error values with a Connect
// Code; callers classify them with errors.Is against the sentinels
// (ErrPortGone, ErrInputNotRegistered, ErrModelRequired, ...) and
// IsTransient, and never parse messages.
//
// Probe tells whether a port is a live language server hosting a
// conversation. Finding candidate ports from outside (a process tree's
// listeners, agy's log, ANTIGRAVITY_LS_ADDRESS) is internal/agyproc's; the
// server half of the framing, for the fake server in rpc/agytest, is
// rpc/internal/connectserver's.
//
// The client only ever connects to loopback: NewClient refuses any other
// host, and TLS verification is replaced by pinning the first certificate
// seen on the port.
package rpc
