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

// TestAWindowKeepsThePrintsOfItsLastIndices: after reads over a long
// trajectory the window has the print of each of the last
// maxCreatedPrints indices read, none of an index further behind (it is
// then read from 0), and a print read again at an index replaces the old.
func TestAWindowKeepsThePrintsOfItsLastIndices(t *testing.T) {
	const n = 5000
	steps := make([]wire.Step, n)
	for i := range steps {
		steps[i].Metadata.CreatedAt = "at-" + strconv.Itoa(i)
	}
	var w trajectoryWindow
	for from := 0; from < n; from += 300 {
		w.notePrints(steps[from:min(from+300, n)], from)
	}
	for i := n - maxCreatedPrints; i < n; i++ {
		h, ok := w.prints.get(i)
		require.True(t, ok, "index %d", i)
		require.Equal(t, createdHash(&steps[i]), h, "index %d", i)
	}
	for _, i := range []int{0, 1, n - maxCreatedPrints - 1, n, -1} {
		_, ok := w.prints.get(i)
		assert.False(t, ok, "index %d is not among the last read", i)
	}
	assert.Equal(t, n-1, w.shorterStart(n), "the last step read: a read starts there")
	assert.Equal(t, 0, w.shorterStart(100), "a step far behind: a read starts at 0")

	// History written anew from n-10: the new steps' prints replace the old.
	again := []wire.Step{{}, {}}
	again[0].Metadata.CreatedAt, again[1].Metadata.CreatedAt = "new-a", "new-b"
	w.notePrints(again, n-10)
	assert.True(t, w.matches(n-10, again))
	assert.False(t, w.matches(n-10, steps[n-10:]), "the old step there is another step now")

	var none trajectoryWindow
	_, ok := none.prints.get(3)
	assert.False(t, ok, "a window that read nothing has no print")
	assert.True(t, none.matches(3, steps[3:]), "nothing to compare")
}
