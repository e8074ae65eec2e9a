package actors

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/wire"
)

// TestWindowedReadStartsOverAfterARewind: a read from the tail whose first
// step is no longer the one read there before (another createdAt, CLEARED,
// or gone) reads the trajectory from its start, so a rewind is seen at its
// first changed step, not at the tail.
func TestWindowedReadStartsOverAfterARewind(t *testing.T) {
	step := func(created string, st wire.StepStatus) wire.Step {
		return wire.Step{Type: wire.StepPlannerResponse, Status: st, Metadata: wire.StepMetadata{CreatedAt: created}}
	}
	before := []wire.Step{step("a", wire.StatusDone), step("b", wire.StatusDone), step("c", wire.StatusDone), step("d", wire.StatusDone)}
	for _, tc := range []struct {
		name string
		now  []wire.Step
	}{
		{"rewritten", []wire.Step{step("a", wire.StatusDone), step("x", wire.StatusDone), step("y", wire.StatusDone), step("z", wire.StatusDone)}},
		{"cleared", []wire.Step{step("a", wire.StatusDone), step("b", wire.StatusCleared), step("c", wire.StatusCleared), step("d", wire.StatusCleared)}},
		{"gone", []wire.Step{step("a", wire.StatusDone)}},
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
			rd, err := w.readWith(context.Background(), read, "c", -1, readHooks{})
			require.NoError(t, err)
			assert.Equal(t, 0, rd.offset)
			assert.Equal(t, tc.now, rd.steps)
			assert.Equal(t, []int{3, 0}, offsets, "the tail, then from the start")
		})
	}
	// Unchanged: the tail only.
	w := trajectoryWindow{}
	w.keep(before, 0)
	rd, err := w.readWith(context.Background(), func(_ context.Context, off int, _ []wire.Step) ([]wire.Step, error) {
		return before[off:], nil
	}, "c", -1, readHooks{})
	require.NoError(t, err)
	assert.Equal(t, 3, rd.offset)
	assert.Len(t, rd.steps, 1)
}
