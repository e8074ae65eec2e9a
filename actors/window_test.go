package actors

import (
	"context"
	"testing"

	"github.com/agyharness/agyharness/rpc"
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
	rd, err := w.readWith(context.Background(), agy.readFrom, "c", 4, readHooks{})
	require.NoError(t, err)
	steps := rd.steps
	assert.Equal(t, 0, rd.offset)
	require.Len(t, steps, 4)
	for i, s := range steps {
		assert.Equal(t, done, s.Status, "step %d", i)
	}
	assert.Equal(t, []int{0, 2, 0}, agy.calls, "the first answer, with a live step, read again last")

	// At rest, nothing is read twice.
	agy.calls = nil
	w = trajectoryWindow{}
	_, err = w.readWith(context.Background(), agy.readFrom, "c", 4, readHooks{})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2}, agy.calls)
}

// Answers read again go from the last but one back to the first that held a
// live step.
func TestWindowedReadReadsAgainBackwards(t *testing.T) {
	running, done := wire.StatusRunning, wire.StatusDone
	agy := &movingAgy{cap: 2, statuses: []wire.StepStatus{done, done, done, running, running, running, running}}
	var w trajectoryWindow
	_, err := w.readWith(context.Background(), agy.readFrom, "c", 7, readHooks{})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2, 4, 6, 4, 2}, agy.calls)
}

// overLimitAgy answers from a trajectory of n steps, at rest, every answer
// running to the end (no cap), and refuses as over the limit any answer
// that would hold more than fits steps, or that holds a step of heavy.
type overLimitAgy struct {
	n, fits int
	heavy   map[int]bool
	calls   []int
}

func (a *overLimitAgy) readFrom(_ context.Context, off int, _ []wire.Step) ([]wire.Step, error) {
	a.calls = append(a.calls, off)
	var out []wire.Step
	for i := off; i < a.n; i++ {
		if a.heavy[i] || len(out) == a.fits {
			return nil, &rpc.Error{Code: rpc.CodeResourceExhausted, Err: rpc.ErrMessageTooLarge}
		}
		s := wire.Step{Type: wire.StepPlannerResponse, Status: wire.StatusDone}
		s.Metadata.SourceTrajectoryStepInfo.StepIndex = wire.Int(i)
		out = append(out, s)
	}
	return out, nil
}

// An answer over the limit is read past: the lowest index whose answer
// fits is found, the read goes on from there, and the steps before it are
// reported skipped. The trajectory's length is read when the caller did
// not know it.
func TestWindowedReadSkipsPastAnAnswerOverTheLimit(t *testing.T) {
	agy := &overLimitAgy{n: 1000, fits: 100}
	var w trajectoryWindow
	counted := 0
	rd, err := w.readWith(context.Background(), agy.readFrom, "c", -1, readHooks{count: func(context.Context) (int, error) {
		counted++
		return agy.n, nil
	}})
	require.NoError(t, err)
	assert.Equal(t, 1, counted)
	require.NotNil(t, rd.skipped)
	assert.Equal(t, 0, rd.skipped.from)
	assert.Equal(t, 900, rd.skipped.to, "the lowest index whose answer fits")
	require.ErrorIs(t, rd.skipped.err, rpc.ErrMessageTooLarge)
	assert.Contains(t, rd.skipped.err.Error(), "from index 0")
	assert.Equal(t, 900, rd.offset)
	assert.Len(t, rd.steps, 100)
	assert.LessOrEqual(t, len(agy.calls), 1+11, "a search halving the span")

	// The last step alone over the limit: nothing fits, the read fails.
	agy = &overLimitAgy{n: 10, fits: 100, heavy: map[int]bool{9: true}}
	w = trajectoryWindow{}
	_, err = w.readWith(context.Background(), agy.readFrom, "c", 10, readHooks{})
	require.ErrorIs(t, err, rpc.ErrMessageTooLarge)
}

// A long history is handed on window by window as it is read, never held
// whole: what the read holds, and what the window keeps after it, stay
// bounded; the steps handed on and returned are every step, once, in order.
func TestWindowedReadHandsALongHistoryOnAsItGoes(t *testing.T) {
	agy := &movingAgy{cap: 600}
	for range 100_000 {
		agy.statuses = append(agy.statuses, wire.StatusDone)
	}
	var w trajectoryWindow
	next, biggest := 0, 0
	deliver := func(steps []wire.Step, off int) {
		require.Equal(t, next, off, "in order, each once")
		next += len(steps)
		biggest = max(biggest, len(steps))
	}
	rd, err := w.readWith(context.Background(), agy.readFrom, "c", len(agy.statuses), readHooks{deliver: deliver})
	require.NoError(t, err)
	assert.Equal(t, next, rd.offset)
	assert.Equal(t, len(agy.statuses), next+len(rd.steps))
	assert.LessOrEqual(t, biggest, deliverSteps+600)
	assert.LessOrEqual(t, len(rd.steps), deliverSteps+600)
	w.keep(rd.steps, rd.offset)
	assert.Len(t, w.last, 1, "only the step the next read starts at is kept")
	assert.Equal(t, len(agy.statuses)-1, w.from())
}
