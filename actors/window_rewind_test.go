package actors

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
)

// TestWindowedReadStartsOverAfterARewind: a read from the tail whose first
// step is no longer the one read there before (another createdAt, CLEARED,
// or gone) reads the trajectory from its start, so a rewind is seen at its
// first changed step, not at the tail.
func TestWindowedReadStartsOverAfterARewind(t *testing.T) {
	step := func(created string, st rpc.StepStatus) rpc.Step {
		return rpc.Step{Type: rpc.StepPlannerResponse, Status: st, Metadata: rpc.StepMetadata{CreatedAt: created}}
	}
	before := []rpc.Step{step("a", rpc.StatusDone), step("b", rpc.StatusDone), step("c", rpc.StatusDone), step("d", rpc.StatusDone)}
	for _, tc := range []struct {
		name string
		now  []rpc.Step
	}{
		{"rewritten", []rpc.Step{step("a", rpc.StatusDone), step("x", rpc.StatusDone), step("y", rpc.StatusDone), step("z", rpc.StatusDone)}},
		{"cleared", []rpc.Step{step("a", rpc.StatusDone), step("b", rpc.StatusCleared), step("c", rpc.StatusCleared), step("d", rpc.StatusCleared)}},
		{"gone", []rpc.Step{step("a", rpc.StatusDone)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := trajectoryWindow{}
			w.keep(before, 0)
			var offsets []int
			read := func(_ context.Context, off int, _ []rpc.Step) ([]rpc.Step, error) {
				offsets = append(offsets, off)
				if off >= len(tc.now) {
					return nil, nil
				}
				return tc.now[off:], nil
			}
			steps, start, err := w.readWith(context.Background(), read, "c", -1)
			require.NoError(t, err)
			assert.Equal(t, 0, start)
			assert.Equal(t, tc.now, steps)
			assert.Equal(t, []int{3, 0}, offsets, "the tail, then from the start")
		})
	}
	// Unchanged: the tail only.
	w := trajectoryWindow{}
	w.keep(before, 0)
	steps, start, err := w.readWith(context.Background(), func(_ context.Context, off int, _ []rpc.Step) ([]rpc.Step, error) {
		return before[off:], nil
	}, "c", -1)
	require.NoError(t, err)
	assert.Equal(t, 3, start)
	assert.Len(t, steps, 1)
}
