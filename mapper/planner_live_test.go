package mapper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// reasoning is the reasoning deltas of evs joined, and how many there were.
func reasoning(evs []messages.Event) (string, int) {
	text, n := "", 0
	for _, e := range ofType(evs, messages.EventReasoningDelta) {
		text += e.Delta
		n++
	}
	return text, n
}

// A planner step the session first sees finished still gives its thinking
// when the step happened while the session watched: a turn it sent that
// agy ran before the session was bound, or a step after the session's
// first read that a stream outage let finish unseen. The history the
// session found at its first read gives no thinking (an attach to a long
// conversation would otherwise replay all of it).
func TestThinkingOfALiveStepFirstSeenFinished(t *testing.T) {
	done := func(thinking, text string) wire.Step { return plannerStep(wire.StatusDone, thinking, text) }

	t.Run("history at the first read gives none", func(t *testing.T) {
		r := newTestReconciler()
		evs := r.Apply(snapshot(0, wire.RunIdle,
			userStep("old", "MODEL_M20"), done("Old thinking.", "Old answer.")))
		_, n := reasoning(evs)
		assert.Zero(t, n, "the history's thinking is not replayed")
		assert.Len(t, ofType(evs, messages.EventMessage), 1)
	})

	t.Run("a turn the session sent, finished before its first read", func(t *testing.T) {
		r := newTestReconciler()
		r.ExpectTurn("new")
		evs := r.Apply(snapshot(0, wire.RunIdle,
			userStep("old", "MODEL_M20"), done("Old thinking.", "Old answer."),
			userStep("new", "MODEL_M20"), done("New thinking.", "New answer.")))
		text, n := reasoning(evs)
		assert.Equal(t, "New thinking.", text, "this turn's thinking, not the history's")
		assert.Equal(t, 1, n)
		ty := types(evs)
		assert.Equal(t, []string{"reasoning_delta", "message"}, ty[len(ty)-4:len(ty)-2], "the thinking comes right before the reply it led to")
	})

	t.Run("a typed turn after the first read, finished unseen", func(t *testing.T) {
		r := newTestReconciler()
		hist := []wire.Step{userStep("old", "MODEL_M20"), done("Old thinking.", "Old answer.")}
		r.Apply(snapshot(0, wire.RunIdle, hist...))
		evs := r.Apply(snapshot(1, wire.RunIdle, append(hist,
			userStep("typed", "MODEL_M20"), done("Typed thinking.", "Typed answer."))...))
		text, _ := reasoning(evs)
		assert.Equal(t, "Typed thinking.", text)
		again := r.Apply(snapshot(2, wire.RunIdle, append(hist,
			userStep("typed", "MODEL_M20"), done("Typed thinking.", "Typed answer."))...))
		assert.Empty(t, again, "read again, it gives nothing more")
	})

	t.Run("seen live, then finished: the thinking once", func(t *testing.T) {
		r := newTestReconciler()
		r.ExpectTurn("new")
		var evs []messages.Event
		evs = append(evs, r.Apply(snapshot(0, wire.RunRunning, userStep("new", "MODEL_M20")))...)
		evs = append(evs, r.Apply(frame(1, wire.RunRunning, 1, plannerStep(wire.StatusGenerating, "New thi", "")))...)
		evs = append(evs, r.Apply(frame(2, wire.RunIdle, 1, done("New thinking.", "New answer.")))...)
		text, _ := reasoning(evs)
		assert.Equal(t, "New thinking.", text, "the deltas add up to the thinking, nothing twice")
	})

	t.Run("a conversation watched from its start (Config.Live)", func(t *testing.T) {
		r := NewReconciler(Config{ConversationID: testConv, Live: true})
		evs := r.Apply(snapshot(0, wire.RunIdle, userStep("task", "MODEL_M20"), done("Child thinking.", "Child answer.")))
		text, _ := reasoning(evs)
		assert.Equal(t, "Child thinking.", text, "none of it is history")
	})

	t.Run("Watched", func(t *testing.T) {
		r := newTestReconciler()
		assert.False(t, r.Watched(0), "nothing is known before the first read")
		r.ExpectTurn("new")
		r.Apply(snapshot(0, wire.RunRunning, userStep("old", "MODEL_M20"), done("", "Old."), userStep("new", "MODEL_M20")))
		assert.False(t, r.Watched(1), "the history before the session's turn")
		assert.True(t, r.Watched(2), "the session's turn")
		assert.True(t, r.Watched(3), "what follows it")
	})

	t.Run("after a rewind below the first read", func(t *testing.T) {
		r := newTestReconciler()
		hist := []wire.Step{userStep("a", "MODEL_M20"), done("A thinking.", "A."), userStep("b", "MODEL_M20"), done("B thinking.", "B.")}
		r.Apply(snapshot(0, wire.RunIdle, hist...))
		r.rewind(2)
		evs := r.Apply(snapshot(1, wire.RunIdle, append(hist[:2:2],
			userStep("c", "MODEL_M20"), done("C thinking.", "C."))...))
		require.NotEmpty(t, ofType(evs, messages.EventMessage), "the new step is mapped")
		text, _ := reasoning(evs)
		assert.Equal(t, "C thinking.", text, "the steps after a rewind are new")
	})
}
