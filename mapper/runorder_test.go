package mapper

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// itemIndices are the step indices of the conversation items in evs, in
// the order they were emitted.
func itemIndices(t *testing.T, evs []messages.Event) []int {
	t.Helper()
	var out []int
	for _, e := range evs {
		switch e.Type {
		case messages.EventUserMessage, messages.EventMessage, messages.EventFunctionCall, messages.EventFunctionCallOutput:
		default:
			continue
		}
		rest := strings.TrimPrefix(e.ID, testConv+"/")
		i, err := strconv.Atoi(rest[:strings.IndexByte(rest, '/')])
		require.NoError(t, err, e.ID)
		out = append(out, i)
	}
	return out
}

// runAfterUnflushedStep: a turn whose last step the stream showed only
// live (agy reported IDLE before flushing it, and the stream never sends
// its DONE copy), then a new run at the next indices, on the stream,
// before the read that brings that DONE copy. start is the new run's first
// step: a SYSTEM_MESSAGE (a background task's wake) or a USER_INPUT.
func runAfterUnflushedStep(t *testing.T, start wire.Step) []messages.Event {
	t.Helper()
	r := newTestReconciler()
	user := userStep("start the tests", "MODEL_M20")
	live := plannerStep(wire.StatusGenerating, "", "Started the tests")
	done := plannerStep(wire.StatusDone, "", "Started the tests in the background.")
	woken := plannerStep(wire.StatusDone, "", "The tests passed.")
	var evs []messages.Event
	evs = append(evs, r.Apply(frame(1, wire.RunRunning, 0, user, live))...)
	evs = append(evs, r.Apply(frame(2, wire.RunIdle, 2))...) // IDLE, the last step not flushed
	evs = append(evs, r.Apply(frame(3, wire.RunRunning, 2, start, woken))...)
	evs = append(evs, r.Apply(snapshot(4, wire.RunRunning, user, done, start, woken))...)
	evs = append(evs, r.Apply(snapshot(5, wire.RunIdle, user, done, start, woken))...)
	return evs
}

// TestWokenRunWaitsForThePreviousRunsLastStep: items of a run nobody typed
// are not emitted before the DONE copy of the step before it is read: the
// session's items stay in trajectory order, each once.
func TestWokenRunWaitsForThePreviousRunsLastStep(t *testing.T) {
	wake := systemStep(wire.StepSystemMessage)
	evs := runAfterUnflushedStep(t, wake)
	assert.Equal(t, []int{0, 1, 3}, itemIndices(t, evs), "items in trajectory order, each once")
	assert.Equal(t, testConv+"/1/message", findEvent(t, evs, messages.EventMessage).ID)
	assert.Equal(t, messages.StateIdle, evs[len(evs)-1].State)
}

// TestTurnAfterUnflushedStepWaitsForIt: the same with a user turn typed
// at once (a turn queued behind the one that ends): its user_message comes
// after the previous step's message.
func TestTurnAfterUnflushedStepWaitsForIt(t *testing.T) {
	evs := runAfterUnflushedStep(t, userStep("and then?", "MODEL_M20"))
	assert.Equal(t, []int{0, 1, 2, 3}, itemIndices(t, evs), "items in trajectory order, each once")
}

// TestHeldRunLiftedByARead: a read made after the new run began that still
// shows the earlier step live is agy's own word: the held run's items go
// out from that read, and later frames are not held for that step again.
func TestHeldRunLiftedByARead(t *testing.T) {
	r := newTestReconciler()
	user := userStep("go", "MODEL_M20")
	stuck := commandStep(wire.StatusRunning, "sleep 100")
	wake := systemStep(wire.StepSystemMessage)
	woken := plannerStep(wire.StatusGenerating, "", "The task")
	var evs []messages.Event
	evs = append(evs, r.Apply(frame(1, wire.RunRunning, 0, user, stuck))...)
	held := r.Apply(frame(2, wire.RunRunning, 2, wake, woken))
	assert.Empty(t, itemIndices(t, held), "held behind the live step 1")
	assert.True(t, r.AwaitingRead(), "a held run asks for a read")
	evs = append(evs, held...)
	evs = append(evs, r.Apply(snapshot(3, wire.RunRunning, user, stuck, wake, woken))...)
	assert.False(t, r.AwaitingRead())
	evs = append(evs, r.Apply(frame(4, wire.RunRunning, 3, plannerStep(wire.StatusDone, "", "The task finished.")))...)
	assert.False(t, r.AwaitingRead(), "step 1 is live in agy's own read: nothing is held for it")
	assert.Equal(t, []int{0, 1, 3}, itemIndices(t, evs))
}

// TestHoldOutlastsAReadOlderThanTheFrames: a read that was made before the
// last frames of the held run came (it ends before them) does not end the
// hold: the frames after it stay held until a read brings those steps.
func TestHoldOutlastsAReadOlderThanTheFrames(t *testing.T) {
	r := newTestReconciler()
	user := userStep("start the tests", "MODEL_M20")
	live := plannerStep(wire.StatusGenerating, "", "Started")
	done := plannerStep(wire.StatusDone, "", "Started the tests.")
	next := userStep("and then?", "MODEL_M20")
	answer := plannerStep(wire.StatusDone, "", "Then nothing.")
	more := plannerStep(wire.StatusDone, "", "Nothing at all.")
	var evs []messages.Event
	evs = append(evs, r.Apply(frame(1, wire.RunRunning, 0, user, live))...)
	evs = append(evs, r.Apply(frame(2, wire.RunIdle, 2))...)
	evs = append(evs, r.Apply(frame(3, wire.RunRunning, 2, next))...)
	evs = append(evs, r.Apply(frame(4, wire.RunRunning, 3, answer))...)
	// Read before step 3 was written, applied after its frame.
	evs = append(evs, r.Apply(snapshot(5, wire.RunRunning, user, done, next))...)
	assert.True(t, r.AwaitingRead(), "step 3 came after that read: still held")
	evs = append(evs, r.Apply(frame(6, wire.RunRunning, 4, more))...)
	evs = append(evs, r.Apply(snapshot(7, wire.RunIdle, user, done, next, answer, more))...)
	assert.False(t, r.AwaitingRead())
	assert.Equal(t, []int{0, 1, 2, 3, 4}, itemIndices(t, evs), "items in trajectory order, each once")
}

// TestRunAfterAnUnseenStepWaitsForIt: the run before ended with a step the
// stream never sent at all (written and finished between two frames, then
// IDLE before the flush): a new run after it waits for a read of it too.
func TestRunAfterAnUnseenStepWaitsForIt(t *testing.T) {
	r := newTestReconciler()
	user := userStep("start the tests", "MODEL_M20")
	started := plannerStep(wire.StatusDone, "", "Started the tests.")
	wake := systemStep(wire.StepSystemMessage)
	reply := plannerStep(wire.StatusDone, "", "The tests passed.")
	next := userStep("and then?", "MODEL_M20")
	answer := plannerStep(wire.StatusDone, "", "Then nothing.")
	var evs []messages.Event
	evs = append(evs, r.Apply(frame(1, wire.RunRunning, 0, user, started))...)
	evs = append(evs, r.Apply(snapshot(2, wire.RunIdle, user, started))...)
	evs = append(evs, r.Apply(frame(3, wire.RunRunning, 2, wake))...)
	evs = append(evs, r.Apply(frame(4, wire.RunIdle, 3))...) // the reply at 3 never streamed
	evs = append(evs, r.Apply(frame(5, wire.RunRunning, 4, next, answer))...)
	assert.True(t, r.AwaitingRead(), "step 3 was never seen: the run at 4 waits")
	evs = append(evs, r.Apply(snapshot(6, wire.RunIdle, user, started, wake, reply, next, answer))...)
	assert.False(t, r.AwaitingRead())
	assert.Equal(t, []int{0, 1, 3, 4, 5}, itemIndices(t, evs), "items in trajectory order, each once")
}
