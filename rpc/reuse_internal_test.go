package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agyharness/agyharness/wire"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
)

// reuseStep is a step of index i as agy sends it, with a text that may hold
// anything the filter must see past (quotes, escapes, brackets, names).
func reuseStep(i int, text string) string {
	return `{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":` +
		itoa(i) + `}},"plannerResponse":{"response":` + string(must(json.Marshal(text))) + `}}`
}

// reuseSeeds are answers for FuzzStepsFilter: pairs of a last read and a
// new answer, where the filter must replace, must not, or must fail as the
// decoder does.
var reuseSeeds = [][2]string{
	{`{"steps":[` + reuseStep(0, "a") + `,` + reuseStep(1, "b") + `]}`, `{"steps":[` + reuseStep(0, "a") + `,` + reuseStep(1, "b, longer") + `]}`},
	{`{"steps":[` + reuseStep(0, `"steps":[{}],\"}`) + `]}`, `{"steps":[` + reuseStep(0, `"steps":[{}],\"}`) + ` , ` + reuseStep(1, "]}") + `]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"other":{"steps":[` + reuseStep(0, "a") + `]},"STEPS":[` + reuseStep(0, "a") + `]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"st\u0065ps":[` + reuseStep(0, "a") + `]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"\u017fteps":[` + reuseStep(0, "a") + `],"steps":[` + reuseStep(0, "a") + `]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"ſteps":[` + reuseStep(0, "a") + `]}`},
	{`{"steps":[` + reuseStep(0, "a") + `,` + reuseStep(1, "b") + `]}`, `{"steps":[],"steps":[` + reuseStep(0, "a") + `,` + reuseStep(1, "b") + `]}`},
	{`{"steps":[` + reuseStep(0, "a") + `,` + reuseStep(1, "b") + `]}`, `{"steps":[` + reuseStep(0, "a") + `],"steps":[` + reuseStep(1, "b") + `,` + reuseStep(0, "a") + `]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"steps":null,"steps":[` + reuseStep(0, "a") + `]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"steps":[` + reuseStep(0, "a") + `],"steps":[{}]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"steps":[` + reuseStep(0, "a") + `]} {"steps":[]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"steps":[` + reuseStep(0, "a") + `x]}`},
	{`{"steps":[` + reuseStep(0, "a") + `]}`, `{"steps":[` + reuseStep(0, "a") + `,` + `{"type":7}]}`},
	{`{"steps":[` + reuseStep(0, "a") + `,` + reuseStep(1, "b") + `]}`, `{"steps":[` + reuseStep(0, "a") + `,` + reuseStep(1, "b")[:40]},
	{`{"steps":[{"type":"A"},{"type":"B"}]}`, `{"steps":[{"type":"A"},{"type":"B"},{"metadata":{"sourceTrajectoryStepInfo":{"stepIndex":"x"}}}]}`},
	{`{"steps":[{"type":"A"},null]}`, `{"steps":[{"type":"A"},null]}`},
	{`{"steps":[{"type":"A"}]}`, `[{"type":"A"}]`},
	{`{"steps":[{"type":"A"}]}`, `{"steps":{"type":"A"}}`},
	{`{"steps":[{"type":"A"}]}`, "\n{ \"steps\" :\t[ {\"type\":\"A\"} ,{\"type\":\"B\"}\r] }\n"},
}

// FuzzStepsFilter: whatever the answer and the last read, and however the
// answer arrives (in one piece or a byte at a time), decodeStepsReusing
// returns what a decode from scratch returns, or fails with the same error,
// placed at the same byte of the answer.
func FuzzStepsFilter(f *testing.F) {
	for _, s := range reuseSeeds {
		f.Add([]byte(s[0]), []byte(s[1]), false)
		f.Add([]byte(s[0]), []byte(s[1]), true)
	}
	f.Fuzz(func(t *testing.T, last, data []byte, oneByte bool) {
		prev, err := wire.DecodeStepsReusing(bytes.NewReader(last), nil)
		if err != nil {
			prev = nil
		}
		// jsontext's errors depend on how the input comes in pieces (the
		// pointer of a truncated name): both decodes read it the same way.
		reader := func() io.Reader {
			if oneByte {
				return iotest.OneByteReader(bytes.NewReader(data))
			}
			return bytes.NewReader(data)
		}
		want, werr := wire.DecodeStepsReusing(reader(), nil)
		got, gerr := wire.DecodeStepsReusing(reader(), prev)
		if werr != nil {
			sameError(t, werr, gerr, "answer %q, last read %q", data, last)
			return
		}
		require.NoError(t, gerr, "answer %q, last read %q", data, last)
		require.Equal(t, want, got, "answer %q, last read %q", data, last)
	})
}

// sameError requires got to be want but for its JSON pointer: jsontext
// names members by where their names lie in its buffer, so the pointer of an
// error depends on where the pieces it read ended (an answer cut short names
// the member it was in, or not; a name may come out empty). Both errors are
// taken apart for this (they are the caller's to keep).
func sameError(t *testing.T, want, got error, msgAndArgs ...any) {
	t.Helper()
	for _, err := range []error{want, got} {
		if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
			se.JSONPointer = ""
		}
		if se, ok := errors.AsType[*jsonv2.SemanticError](err); ok {
			se.JSONPointer = ""
		}
	}
	require.EqualError(t, got, want.Error(), msgAndArgs...)
}

// TestStepsFilterPlacesErrorsInTheAnswer: an error after replaced steps is
// at its byte of the answer, not of what the decoder read.
func TestStepsFilterPlacesErrorsInTheAnswer(t *testing.T) {
	a := reuseStep(0, strings.Repeat("a", 300))
	prev := must(wire.DecodeStepsReusing(strings.NewReader(`{"steps":[`+a+`,`+a+`]}`), nil))
	for _, answer := range []string{
		`{"steps":[` + a + `,` + a + `,{"type":7}]}`,
		`{"steps":[` + a + `,` + a + `] x`,
		`{"steps":[` + a + `,` + a + `]} x`,
		`{"steps":[` + a + `,` + a + `,{"metadata":{"sourceTrajectoryStepInfo":{"stepIndex":"x"}}}]}`,
	} {
		_, want := wire.DecodeStepsReusing(strings.NewReader(answer), nil)
		require.Error(t, want, answer)
		_, got := wire.DecodeStepsReusing(strings.NewReader(answer), prev)
		require.EqualError(t, got, want.Error(), answer)
	}
}
