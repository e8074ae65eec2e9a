package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/agyharness/agyharness/internal/stepsfilter"
)

// decodeOptions make json v2 read what agy may send the way encoding/json
// (v1) read it, so that switching decoders changed the speed and nothing
// else (FuzzDecodeV1V2 compares the two on arbitrary input):
//   - invalid UTF-8 is replaced by U+FFFD, not rejected;
//   - a repeated member name is accepted, the last one wins;
//   - member names match case-insensitively, as strings.EqualFold does (v2
//     alone would also ignore '_' and '-': "step_index" would match
//     stepIndex, which v1 never did);
//   - null leaves a struct, string or number as it is (v1's merge, which only
//     shows when a name is repeated);
//   - unknown members are ignored (v2's default).
//
// Encoding stays with encoding/json.
var decodeOptions = jsonv2.JoinOptions(
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
	jsonv2.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
	jsonv1.MergeWithLegacySemantics(true),
)

// Unmarshal decodes one JSON value (the whole of data) into v with json v2
// and decodeOptions: how rpc reads frames and unary answers. data is handed
// over for good (nothing may write to it afterwards): a Step's Raw is a
// slice of data, not a copy, which saves a copy of every step of every
// frame.
func Unmarshal(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, decodeOptions, keepRaw)
}

// keepRaw decodes a Step in one pass over its bytes, and makes its Raw
// those bytes in the input (capped, so that an append to Raw can never write
// over what follows). It relies on the decoder reading from memory (Unmarshal
// hands it all of data at once): the unread buffer before the step still
// holds the step after it is decoded.
var keepRaw = jsonv2.WithUnmarshalers(keepRawStep)

// keepRawStep is keepRaw's unmarshaler, for joining with others.
var keepRawStep = jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, s *Step) error {
	rest, start := dec.UnreadBuffer(), dec.InputOffset()
	// Decoded in place, from a zero step (as a new one would be): a step
	// of its own would be one more allocation of a Step's size per step.
	type plain Step
	*s = Step{}
	if err := jsonv2.UnmarshalDecode(dec, (*plain)(s)); err != nil {
		return err
	}
	n := dec.InputOffset() - start
	if n > int64(len(rest)) {
		return errors.New("wire: a step was not decoded from memory") // cannot happen with Unmarshal
	}
	// What was read since the previous value: a delimiter, blanks, the step.
	raw := rest[:n]
	for len(raw) > 0 && (raw[0] == ',' || raw[0] == ':' || raw[0] == ' ' || raw[0] == '\t' || raw[0] == '\n' || raw[0] == '\r') {
		raw = raw[1:]
	}
	s.Raw = raw[:len(raw):len(raw)]
	return nil
})

// DecodeStepsReusing decodes a GetCascadeTrajectorySteps answer
// ({"steps":[...]}) as it is read from r, and returns its steps: the answer,
// which holds the whole trajectory, is never held whole. Where the i-th
// element of steps is byte for byte prev[i].Raw, prev[i] is taken as it is
// (sharing its Raw and its pointers) instead of being decoded again; every
// other element is decoded, with a Raw of its own. Everything else about the
// answer is read as Unmarshal reads it. A stepsfilter.Filter finds the equal elements without the
// decoder scanning them; where it cannot be sure (a name it does not
// compare, a repeated steps member), the decoder compares what it read.
func DecodeStepsReusing(r io.Reader, prev []Step) ([]Step, error) {
	var f *stepsfilter.Filter
	if len(prev) > 0 {
		f = stepsfilter.New(r, len(prev), func(i int) []byte { return prev[i].Raw })
		defer f.Release()
		r = f
	}
	first := true // in the first array of steps the decoder met
	last := int64(-1)
	reuse := jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, s *Step) error {
		// The element's index is the number of values its array holds so far.
		kind, i := dec.StackIndex(dec.StackDepth())
		if i <= last {
			first = false // a repeated steps member
		}
		last = i
		raw, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if kind == '[' && i < int64(len(prev)) {
			if first && f.Reused(i) && string(raw) == stepsfilter.Placeholder ||
				len(prev[i].Raw) > 0 && bytes.Equal(raw, prev[i].Raw) {
				*s = prev[i]
				return nil
			}
		}
		// raw is a view of the decoder's buffer: decode copies it.
		return placeError(dec, raw, s.decode(raw))
	})
	var resp struct {
		Steps []Step `json:"steps"`
	}
	if len(prev) > 0 {
		// Sized for a trajectory that did not shrink: no growing on the way.
		resp.Steps = make([]Step, 0, len(prev))
	}
	dec := jsontext.NewDecoder(r, decodeOptions)
	err := jsonv2.UnmarshalDecode(dec, &resp, decodeOptions, jsonv2.WithUnmarshalers(reuse))
	if err == nil {
		// Nothing may follow the answer (as Unmarshal requires).
		if _, terr := dec.ReadToken(); terr != io.EOF {
			err = fmt.Errorf("wire: data after the answer at byte %d", f.InputOffset(dec.InputOffset()))
		}
	} else {
		f.PlaceError(err)
	}
	if err != nil {
		return nil, err
	}
	if len(resp.Steps) == 0 && cap(resp.Steps) > 0 {
		// No steps member: nil, as a plain decode leaves it. ("steps":[]
		// replaces the slice with an empty one of no capacity, and is kept.)
		resp.Steps = nil
	}
	return resp.Steps, nil
}

// placeError places an error of decoding raw, the value dec has just read,
// in dec's input: a *json.SemanticError's JSON pointer and byte offset are
// relative to raw, and json v2 leaves them so ("/metadata/..." instead of
// "/steps/3/metadata/...").
func placeError(dec *jsontext.Decoder, raw []byte, err error) error {
	if se, ok := errors.AsType[*jsonv2.SemanticError](err); ok {
		se.JSONPointer = dec.StackPointer() + se.JSONPointer
		se.ByteOffset += dec.InputOffset() - int64(len(raw))
	}
	return err
}
