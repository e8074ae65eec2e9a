package stepsfilter

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// step is a step of index i as agy sends it, with a text that may hold
// anything the filter must see past (quotes, escapes, brackets, names).
func step(i int, text string) string {
	b, err := json.Marshal(text)
	if err != nil {
		panic(err)
	}
	idx, _ := json.Marshal(i)
	return `{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":` +
		string(idx) + `}},"plannerResponse":{"response":` + string(b) + `}}`
}

// last is a last read of these steps, for New.
func last(steps ...string) (int, func(int) []byte) {
	return len(steps), func(i int) []byte { return []byte(steps[i]) }
}

// TestFilterReplacesEqualSteps reads what the decoder reads: the steps
// equal to the last read's are {} (wherever the buffer cuts them), the rest
// is the answer's bytes.
func TestFilterReplacesEqualSteps(t *testing.T) {
	a, b, c := step(0, "a"), step(1, `b "quoted" ]},{`), step(2, strings.Repeat("c", 5000))
	n, prev := last(a, b, c)
	changed := step(2, strings.Repeat("c", 5001))
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
				f := New(r, n, prev)
				out, err := io.ReadAll(f)
				require.NoError(t, err)
				require.Equal(t, tt.want, string(out))
				for i, reused := range tt.reused {
					require.Equal(t, reused, f.Reused(int64(i)), "step %d", i)
				}
			}
		})
	}
}

// TestFilterBufferFitsTheLastRead: with no buffer to reuse, a filter
// reads into one the size of the last read, up to filterBuffer, so that the
// read after a short trajectory's turn does not make 32 KiB.
func TestFilterBufferFitsTheLastRead(t *testing.T) {
	shortN, short := last(step(0, "a"), step(1, "b"))
	longN, long := last(step(0, strings.Repeat("a", 40<<10)))
	for filterBuffers.Get() != nil { // empty the pool
	}
	f := New(strings.NewReader(""), shortN, short)
	require.Less(t, cap(f.buf), 1024, "two short steps")
	require.GreaterOrEqual(t, cap(f.buf), len(short(0))+len(short(1)))
	f.Release()
	g := New(strings.NewReader(""), longN, long)
	require.Equal(t, filterBuffer, cap(g.buf), "a long trajectory: the pooled short buffer is not enough")
	g.Release()
}
