package actors

import (
	"context"
	"testing"

	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// movingAgy answers windows of at most cap steps of a trajectory that
// moves on after chosen calls, as agy's does while a turn runs.
type movingAgy struct {
	cap      int
	statuses []wire.StepStatus
	after    map[int]func(s *movingAgy) // run after the call of that number (1-based)
	calls    []int                      // the offsets asked, in order
}

func (a *movingAgy) readFrom(_ context.Context, off int, _ []wire.Step) ([]wire.Step, error) {
	a.calls = append(a.calls, off)
	var out []wire.Step
	for i := off; i < len(a.statuses) && len(out) < a.cap; i++ {
		out = append(out, wire.Step{Type: wire.StepPlannerResponse, Status: a.statuses[i]})
	}
	if f := a.after[len(a.calls)]; f != nil {
		f(a)
	}
	return out, nil
}

// A read of several answers never shows a step behind a later one: here
// step 1 is live when the first answer is read, then finishes and steps 2
// and 3 are written before the second; the first answer is read again.
func TestWindowedReadNeverShowsAStepBehindALaterOne(t *testing.T) {
	running, done := wire.StatusRunning, wire.StatusDone
	agy := &movingAgy{cap: 2, statuses: []wire.StepStatus{done, running}, after: map[int]func(*movingAgy){
		1: func(a *movingAgy) { a.statuses = []wire.StepStatus{done, done, done, done} },
	}}
	var w trajectoryWindow
	steps, off, err := w.readWith(context.Background(), agy.readFrom, "c", 4)
	require.NoError(t, err)
	assert.Equal(t, 0, off)
	require.Len(t, steps, 4)
	for i, s := range steps {
		assert.Equal(t, done, s.Status, "step %d", i)
	}
	assert.Equal(t, []int{0, 2, 0}, agy.calls, "the first answer, with a live step, read again last")

	// At rest, nothing is read twice.
	agy.calls = nil
	w = trajectoryWindow{}
	_, _, err = w.readWith(context.Background(), agy.readFrom, "c", 4)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2}, agy.calls)
}

// Answers read again go from the last but one back to the first that held a
// live step.
func TestWindowedReadReadsAgainBackwards(t *testing.T) {
	running, done := wire.StatusRunning, wire.StatusDone
	agy := &movingAgy{cap: 2, statuses: []wire.StepStatus{done, done, done, running, running, running, running}}
	var w trajectoryWindow
	_, _, err := w.readWith(context.Background(), agy.readFrom, "c", 7)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2, 4, 6, 4, 2}, agy.calls)
}
