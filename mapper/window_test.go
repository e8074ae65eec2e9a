package mapper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// A poll reads a long conversation from an offset (the steps that can still
// change): each step is its trajectory index, never its position in the
// window, and nothing already emitted comes again.
func TestWindowsKeyStepsByTrajectoryIndex(t *testing.T) {
	steps := indexed([]wire.Step{
		userStep("first", ""),
		plannerStep(wire.StatusDone, "", "One."),
		userStep("second", ""),
		plannerStep(wire.StatusDone, "", "Two."),
		plannerStep(wire.StatusGenerating, "", "Thr"),
	})
	r := newTestReconciler()
	evs := r.Apply(FromSnapshot(steps, wire.RunRunning, at(0)))
	require.Len(t, ofType(evs, messages.EventMessage), 2)

	// The live step grows and a new one follows: a window from index 4.
	grown := indexed([]wire.Step{
		userStep("first", ""), plannerStep(wire.StatusDone, "", "One."), userStep("second", ""), plannerStep(wire.StatusDone, "", "Two."),
		plannerStep(wire.StatusDone, "", "Three."),
		plannerStep(wire.StatusDone, "", "Four."),
	})
	evs = r.Apply(FromWindow(grown[4:], 4, wire.RunIdle, at(1)))
	msgs := ofType(evs, messages.EventMessage)
	require.Len(t, msgs, 2)
	assert.Equal(t, "conv-1/4/message", msgs[0].ID)
	assert.Equal(t, "Three.", msgs[0].Text)
	assert.Equal(t, "conv-1/5/message", msgs[1].ID)
	assert.Equal(t, "idle", lastState(evs), "a window to the end closes the turn")

	// The same window again, and a full read: nothing new.
	assert.Empty(t, ofType(r.Apply(FromWindow(grown[4:], 4, wire.RunIdle, at(2))), messages.EventMessage))
	assert.Empty(t, ofType(r.Apply(FromSnapshot(grown, wire.RunIdle, at(3))), messages.EventMessage))
}

// A window that ends before the steps already seen was read before them:
// its IDLE does not close the turn.
func TestWindowEndingBeforeTheKnownStepsIsStale(t *testing.T) {
	steps := indexed([]wire.Step{
		userStep("go", ""),
		plannerStep(wire.StatusDone, "", "One."),
		plannerStep(wire.StatusGenerating, "", "Tw"),
	})
	r := newTestReconciler()
	r.Apply(FromSnapshot(steps, wire.RunRunning, at(0)))
	evs := r.Apply(FromWindow(steps[1:2], 1, wire.RunIdle, at(1)))
	assert.NotEqual(t, "idle", lastState(evs))
}

// Steps without their index (agy omits 0, and some USER_INPUT steps carry
// none) take offset plus position; indices that cannot be the window's
// (another trajectory's, or not increasing) fall back to positions.
func TestIndexer(t *testing.T) {
	withIndex := func(s wire.Step, traj string, i int) wire.Step {
		s.Metadata.SourceTrajectoryStepInfo.TrajectoryID = traj
		s.Metadata.SourceTrajectoryStepInfo.StepIndex = wire.Int(i)
		return s
	}
	u, p := userStep("x", ""), plannerStep(wire.StatusDone, "", "y")
	all := func(steps []wire.Step, offset int) []int {
		at := Indexer(steps, offset)
		out := make([]int, len(steps))
		for i := range steps {
			out[i] = at(i)
		}
		return out
	}
	assert.Equal(t, []int{0, 1, 2}, all([]wire.Step{withIndex(u, "t", 0), withIndex(p, "t", 1), withIndex(p, "t", 2)}, 0))
	assert.Equal(t, []int{600, 601, 602}, all([]wire.Step{withIndex(p, "t", 600), withIndex(u, "t", 0), withIndex(p, "t", 602)}, 600),
		"a USER_INPUT without its index is its position")
	assert.Equal(t, []int{10, 12}, all([]wire.Step{withIndex(p, "t", 10), withIndex(p, "t", 12)}, 10), "gaps are kept")
	assert.Equal(t, []int{5, 6}, all([]wire.Step{withIndex(p, "t", 9), withIndex(p, "t", 3)}, 5), "not increasing: positions")
	assert.Equal(t, []int{5, 6}, all([]wire.Step{withIndex(p, "a", 5), withIndex(p, "b", 6)}, 5), "two trajectories: positions")
	assert.Equal(t, []int{5, 6}, all([]wire.Step{withIndex(p, "t", 2), withIndex(p, "t", 6)}, 5), "below the offset: positions")
}

// A question agy shows answered with no responses was declined.
func TestQuestionDeclinedInAgysTerminal(t *testing.T) {
	r := newTestReconciler()
	waiting := questionStep(wire.StatusWaiting, qLang)
	evs := r.Apply(snapshot(0, wire.RunRunning, userStep("ask", ""), waiting))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	declined := answered(questionStep(wire.StatusDone, qLang), 1, wire.InteractionResponse{
		TrajectoryID: testTraj, StepIndex: 1, AskQuestion: &wire.QuestionResponses{},
	})
	evs = r.Apply(snapshot(1, wire.RunRunning, userStep("ask", ""), declined))
	res := findEvent(t, evs, messages.EventElicitationResolved)
	assert.Equal(t, req.ElicitationID, res.ElicitationID)
	assert.Equal(t, messages.ActionDecline, res.Action)
	assert.Equal(t, messages.ByTerminal, res.By)
}

func lastState(evs []messages.Event) string {
	state := ""
	for _, e := range evs {
		if e.Type == messages.EventStatus {
			state = e.State
		}
	}
	return state
}

func ofType(evs []messages.Event, typ messages.EventType) []messages.Event {
	var out []messages.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// An interrupt declines a prompt, then cancels the turn: agy may show the
// step cancelled rather than answered. The harness closed it.
func TestPromptDeclinedThenCancelledIsTheHarnesss(t *testing.T) {
	r := newTestReconciler()
	evs := r.Apply(snapshot(0, wire.RunRunning, userStep("ask", ""), questionStep(wire.StatusWaiting, qLang)))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	r.AnswerInFlight(req.ElicitationID, messages.ActionCancel)
	evs = r.Apply(snapshot(1, wire.RunIdle, userStep("ask", ""), questionStep(wire.StatusCanceled, qLang)))
	res := findEvent(t, evs, messages.EventElicitationResolved)
	assert.Equal(t, messages.ByHarness, res.By)
	assert.Equal(t, messages.ActionCancel, res.Action)
	assert.Equal(t, "idle", lastState(evs))
}
