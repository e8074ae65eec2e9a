package actors

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/wire"
)

// TestWindowedReadOfAShorterTrajectoryStartsAtItsEnd: a trajectory found
// shorter than what was read (a /rewind) whose last step is the one read
// there before is read from that step, not from index 0 (one answer, not
// one per agy's cap over the whole history); when that step is another
// (history written anew), or the window never read it, from index 0.
func TestWindowedReadOfAShorterTrajectoryStartsAtItsEnd(t *testing.T) {
	step := func(created string) wire.Step {
		return wire.Step{Type: wire.StepPlannerResponse, Status: wire.StatusDone, Metadata: wire.StepMetadata{CreatedAt: created}}
	}
	var before []wire.Step
	for i := range 10 {
		before = append(before, step("t"+strconv.Itoa(i)))
	}
	cut := before[:7:7]
	rewritten := append(append([]wire.Step{}, before[:5]...), step("n5"), step("n6"))
	for _, tc := range []struct {
		name    string
		now     []wire.Step
		count   int  // the summary's count given to the read (-1: none)
		hooked  bool // the read may ask for the count (hooks.count)
		offsets []int
		offset  int
	}{
		{"cut, count known", cut, 7, false, []int{6}, 6},
		{"cut, count asked", cut, -1, true, []int{9, 6}, 6},
		{"cut, count read before the cut", cut, 10, true, []int{9, 6}, 6},
		{"cut, count unknown", cut, -1, false, []int{9, 0}, 0},
		{"written anew", rewritten, 7, false, []int{6, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := trajectoryWindow{}
			w.keep(before, 0)
			var offsets []int
			read := func(_ context.Context, off int, _ []wire.Step) ([]wire.Step, error) {
				offsets = append(offsets, off)
				if off >= len(tc.now) {
					return nil, nil
				}
				return tc.now[off:], nil
			}
			hooks := readHooks{}
			if tc.hooked {
				hooks.count = func(context.Context) (int, error) { return len(tc.now), nil }
			}
			rd, err := w.readWith(context.Background(), read, "c", tc.count, hooks)
			require.NoError(t, err)
			assert.Equal(t, tc.offsets, offsets)
			assert.Equal(t, tc.offset, rd.offset)
			assert.Equal(t, tc.now[tc.offset:], rd.steps)
		})
	}
	// Never read at the new end (a window of the tail only): from index 0.
	w := trajectoryWindow{}
	w.keep(before[8:], 8)
	var offsets []int
	_, err := w.readWith(context.Background(), func(_ context.Context, off int, _ []wire.Step) ([]wire.Step, error) {
		offsets = append(offsets, off)
		return cut[min(off, len(cut)):], nil
	}, "c", 7, readHooks{})
	require.NoError(t, err)
	assert.Equal(t, []int{0}, offsets)
}
