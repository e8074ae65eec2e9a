package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

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
		prev, err := decodeStepsReusing(bytes.NewReader(last), nil)
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
		want, werr := decodeStepsReusing(reader(), nil)
		got, gerr := decodeStepsReusing(reader(), prev)
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

// TestStepsFilterReplacesEqualSteps reads what the decoder reads: the steps
// equal to the last read's are {} (wherever the buffer cuts them), the rest
// is the answer's bytes.
func TestStepsFilterReplacesEqualSteps(t *testing.T) {
	a, b, c := reuseStep(0, "a"), reuseStep(1, `b "quoted" ]},{`), reuseStep(2, strings.Repeat("c", 5000))
	prev := must(decodeStepsReusing(strings.NewReader(`{"steps":[`+a+`,`+b+`,`+c+`]}`), nil))
	changed := reuseStep(2, strings.Repeat("c", 5001))
	for _, tt := range []struct {
		name, answer, want string
		reused             []bool
	}{
		{"unchanged", `{"steps":[` + a + `,` + b + `,` + c + `]}`, `{"steps":[{},{},{}]}`, []bool{true, true, true}},
		{"last changed", `{"steps":[` + a + `, ` + b + `,` + changed + `]}`, `{"steps":[{}, {},` + changed + `]}`, []bool{true, true, false}},
		{"grew", `{"steps":[` + a + `,` + b + `,` + c + `,` + a + `]}`, `{"steps":[{},{},{},` + a + `]}`, []bool{true, true, true, false}},
		{"moved", `{"steps":[` + b + `,` + a + `]}`, `{"steps":[` + b + `,` + a + `]}`, []bool{false, false}},
		{"after another member", `{"x":"{\"steps\":[","steps":[` + a + `]}`, `{"x":"{\"steps\":[","steps":[{}]}`, []bool{true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.answer), iotest.HalfReader(strings.NewReader(tt.answer))} {
				f := newStepsFilter(r, prev)
				out, err := io.ReadAll(f)
				require.NoError(t, err)
				require.Equal(t, tt.want, string(out))
				for i, reused := range tt.reused {
					require.Equal(t, reused, f.wasReused(int64(i)), "step %d", i)
				}
			}
		})
	}
}

// TestStepsFilterPlacesErrorsInTheAnswer: an error after replaced steps is
// at its byte of the answer, not of what the decoder read.
func TestStepsFilterPlacesErrorsInTheAnswer(t *testing.T) {
	a := reuseStep(0, strings.Repeat("a", 300))
	prev := must(decodeStepsReusing(strings.NewReader(`{"steps":[`+a+`,`+a+`]}`), nil))
	for _, answer := range []string{
		`{"steps":[` + a + `,` + a + `,{"type":7}]}`,
		`{"steps":[` + a + `,` + a + `] x`,
		`{"steps":[` + a + `,` + a + `]} x`,
		`{"steps":[` + a + `,` + a + `,{"metadata":{"sourceTrajectoryStepInfo":{"stepIndex":"x"}}}]}`,
	} {
		_, want := decodeStepsReusing(strings.NewReader(answer), nil)
		require.Error(t, want, answer)
		_, got := decodeStepsReusing(strings.NewReader(answer), prev)
		require.EqualError(t, got, want.Error(), answer)
	}
}

// TestStepsFilterBufferFitsTheLastRead: with no buffer to reuse, a filter
// reads into one the size of the last read, up to filterBuffer, so that the
// read after a short trajectory's turn does not make 32 KiB.
func TestStepsFilterBufferFitsTheLastRead(t *testing.T) {
	short := must(decodeStepsReusing(strings.NewReader(`{"steps":[`+reuseStep(0, "a")+`,`+reuseStep(1, "b")+`]}`), nil))
	long := must(decodeStepsReusing(strings.NewReader(`{"steps":[`+reuseStep(0, strings.Repeat("a", 40<<10))+`]}`), nil))
	for filterBuffers.Get() != nil { // empty the pool
	}
	f := newStepsFilter(strings.NewReader(""), short)
	require.Less(t, cap(f.buf), 1024, "two short steps")
	require.GreaterOrEqual(t, cap(f.buf), len(short[0].Raw)+len(short[1].Raw))
	f.release()
	g := newStepsFilter(strings.NewReader(""), long)
	require.Equal(t, filterBuffer, cap(g.buf), "a long trajectory: the pooled short buffer is not enough")
	g.release()
}
