package mapper

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// historyTurn is one finished turn of a long history: a user turn, a
// command that asked for permission and ran, a reply.
func historyTurn(k int) []wire.Step {
	cmd := withOutput(commandStep(wire.StatusDone, fmt.Sprintf("echo %d", k)), "ok", 0)
	cmd.Raw = []byte(fmt.Sprintf(`{"runCommand":{"commandId":"cmd-%d"}}`, k))
	return []wire.Step{userStep(fmt.Sprintf("turn %d", k), ""), cmd, plannerStep(wire.StatusDone, "", fmt.Sprintf("reply %d", k))}
}

// readHistory feeds turns [0, n) of a history to r as windows of 600 steps
// read from offset 0 (each step numbered by its trajectory index), and
// returns the events.
func readHistory(r *Reconciler, n int) []messages.Event {
	var steps []wire.Step
	for k := range n {
		steps = append(steps, historyTurn(k)...)
	}
	steps = indexed(steps)
	var evs []messages.Event
	for off := 0; off < len(steps); off += 600 {
		evs = r.AppendApply(evs, FromWindow(steps[off:min(off+600, len(steps))], off, "", at(0)))
	}
	return evs
}

// A long history goes through the reconciler once, each item exactly once,
// and what it keeps stays bounded by its window: not a slot per step, nor a
// command line per command, nor a status id per turn. Read again from the
// start, the history yields nothing: the steps dropped from the window are
// known delivered by their fingerprints.
func TestReconcilerKeepsABoundedWindowOfALongHistory(t *testing.T) {
	const turns = 10_000 // 30,000 steps
	r := newTestReconciler()
	evs := readHistory(r, turns)
	assert.Len(t, ofType(evs, messages.EventUserMessage), turns)
	assert.Len(t, ofType(evs, messages.EventMessage), turns)
	assert.Len(t, ofType(evs, messages.EventFunctionCallOutput), turns)
	assert.Equal(t, 3*turns, r.Steps())

	bound := DefaultWindow + DefaultWindow/4 // the default window and its slack
	assert.LessOrEqual(t, len(r.slots), bound, "steps kept whole")
	assert.LessOrEqual(t, len(r.commands), 256, "command lines kept")
	assert.LessOrEqual(t, len(r.statusIDs), bound, "status ids kept")

	again := readHistory(r, turns)
	for _, e := range again {
		switch e.Type {
		case messages.EventUserMessage, messages.EventMessage, messages.EventFunctionCall, messages.EventFunctionCallOutput, messages.EventUsage:
			t.Fatalf("%s %s delivered again", e.Type, e.ID)
		}
	}
}

// A dropped step whose index later holds a step of another type (agy
// rewrote its history) is a new step, as a kept one would be; one of the
// same type is the step already delivered.
func TestDroppedStepRewrittenIsANewStep(t *testing.T) {
	r := NewReconciler(Config{ConversationID: testConv, Window: 16})
	readHistory(r, 100)
	require.Less(t, r.Footprint().Slots, 100, "steps dropped")
	require.Nil(t, r.slots[2], "step 2 dropped")

	same := indexed([]wire.Step{plannerStep(wire.StatusDone, "", "reply 0 (copy)")})
	assert.Empty(t, r.Apply(FromWindow(same, 2, "", at(1))), "the same step again")

	rewritten := indexed([]wire.Step{userStep("rewritten", "")})
	evs := r.Apply(FromWindow(rewritten, 2, "", at(2)))
	users := ofType(evs, messages.EventUserMessage)
	require.Len(t, users, 1)
	assert.Equal(t, "conv-1/2/user", users[0].ID)
	assert.Equal(t, "rewritten", users[0].Text)
}

// Past Config.Fingerprints indices, the oldest fingerprints are sealed:
// what is kept stays bounded however long the history, and a copy of a
// sealed step is taken as delivered.
func TestFingerprintsAreBoundedAndTheOldestSealed(t *testing.T) {
	r := NewReconciler(Config{ConversationID: testConv, Window: 16, Fingerprints: 64})
	readHistory(r, 1000)
	fp := r.Footprint()
	assert.LessOrEqual(t, fp.Slots, 16+16/4)
	assert.LessOrEqual(t, fp.Fingerprints, 64)
	assert.Positive(t, r.pastBase, "the oldest sealed")
	assert.Empty(t, r.Apply(FromWindow(indexed([]wire.Step{userStep("rewritten", "")}), 0, "", at(1))),
		"a sealed step is taken as delivered")
}

// Steps agy leaves live far behind the end are dropped too once they
// outnumber the window twice, whatever agy sends; a hostile index far
// ahead costs no memory for the indices it skips.
func TestLiveStepsFarBehindAndSparseIndicesStayBounded(t *testing.T) {
	r := NewReconciler(Config{ConversationID: testConv, Window: 16, Fingerprints: 64})
	for i := range 1000 {
		r.Apply(frame(0, wire.RunRunning, i, plannerStep(wire.StatusGenerating, "", "x")))
	}
	assert.LessOrEqual(t, r.Footprint().Slots, 2*16)
	r.Apply(frame(1, wire.RunRunning, 1<<40, plannerStep(wire.StatusDone, "", "far")))
	r.Apply(frame(2, wire.RunRunning, 1<<41, plannerStep(wire.StatusDone, "", "farther")))
	for i := range 100 {
		r.Apply(frame(3, wire.RunRunning, 1<<41+1+i, plannerStep(wire.StatusDone, "", "y")))
	}
	fp := r.Footprint()
	assert.LessOrEqual(t, fp.Slots, 2*16)
	assert.LessOrEqual(t, fp.Fingerprints, 64)
}

// Prompts that closed are let go of: a history of many answered prompts
// keeps none of them.
func TestClosedPromptsAreLetGo(t *testing.T) {
	r := newTestReconciler()
	idx := 0
	for k := range 500 {
		line := fmt.Sprintf("rm %d", k)
		evs := r.Apply(frame(2*k, wire.RunRunning, idx, userStep(fmt.Sprintf("turn %d", k), ""), commandStep(wire.StatusWaiting, line)))
		require.Len(t, ofType(evs, messages.EventElicitationRequest), 1)
		evs = r.Apply(frame(2*k+1, wire.RunRunning, idx+1, withOutput(commandStep(wire.StatusDone, line), "", 0)))
		require.Len(t, ofType(evs, messages.EventElicitationResolved), 1)
		idx += 2
	}
	assert.LessOrEqual(t, len(r.prompts), 1)
	assert.LessOrEqual(t, len(r.promptIDs), 1)
}

// A finished step's bytes are not kept beside what was mapped of them: of
// a history read in windows, only the last step (where the next read
// starts) keeps its raw bytes, and no finished reply keeps its text. A
// live step keeps its bytes (the next read brings them again, reused)
// until it finishes and another follows. Read again, nothing is emitted.
func TestReconcilerKeepsNoFinishedStepsBytes(t *testing.T) {
	r := newTestReconciler()
	reply := strings.Repeat("a long finished reply. ", 100)
	var steps []wire.Step
	for k := range 500 {
		steps = append(steps, userStep(fmt.Sprintf("turn %d", k), ""), plannerStep(wire.StatusDone, "", reply))
	}
	steps = indexed(steps)
	for off := 0; off < len(steps); off += 300 {
		r.Apply(FromWindow(steps[off:min(off+300, len(steps))], off, "", at(0)))
	}
	held := func() (raw, text int, kept []int) {
		for i, st := range r.slots {
			raw += len(st.raw)
			if st.texts != nil {
				text += len(st.texts.text.cur) + len(st.texts.thinking.cur) + len(st.texts.out.cur)
			}
			if len(st.raw) > 0 {
				kept = append(kept, i)
			}
		}
		return raw, text, kept
	}
	raw, text, kept := held()
	assert.Equal(t, []int{len(steps) - 1}, kept, "only the last step keeps its bytes")
	assert.Less(t, raw, 2*len(reply)+1024)
	assert.Zero(t, text, "no finished step keeps its text")

	live := indexed(append(slices.Clone(steps), plannerStep(wire.StatusRunning, "", "streaming")))
	r.Apply(FromWindow(live[len(steps)-1:], len(steps)-1, wire.RunRunning, at(1)))
	_, _, kept = held()
	slices.Sort(kept)
	assert.Equal(t, []int{len(steps)}, kept, "the live step keeps its bytes; the one before it is finished and no longer last")

	assert.Empty(t, ofType(r.Apply(FromWindow(steps, 0, wire.RunRunning, at(2))), messages.EventMessage), "read again: nothing new")

	// A step left live behind finished ones: reads start there, so the
	// finished steps after it come again at every read and keep their
	// bytes (known unchanged without hashing); those before it do not.
	r = newTestReconciler()
	mixed := slices.Clone(steps[:20])
	mixed[9] = plannerStep(wire.StatusRunning, "", "still going")
	mixed = indexed(mixed)
	r.Apply(FromWindow(mixed, 0, wire.RunRunning, at(3)))
	_, _, kept = held()
	slices.Sort(kept)
	assert.Equal(t, []int{9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, kept)
}
