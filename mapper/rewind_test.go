package mapper

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// created stamps a step's createdAt, its identity at its index.
func created(s wire.Step, at string) wire.Step {
	s.Metadata.CreatedAt = "2026-08-02T04:49:" + at + "Z"
	return s
}

// twoTurns is a conversation of two finished turns: steps 0-1 and 2-3.
func twoTurns() []wire.Step {
	return []wire.Step{
		created(userStep("first", "MODEL_M20"), "00"),
		created(plannerStep(wire.StatusDone, "", "one"), "01"),
		created(userStep("second", "MODEL_M20"), "02"),
		created(plannerStep(wire.StatusDone, "", "two"), "03"),
	}
}

func lengthSnapshot(k int, run wire.RunStatus, length int, steps ...wire.Step) Observation {
	return snapshot(k, run, steps...).WithLength(length)
}

// TestRewindRewritesStepsInPlace: /rewind to step 2 and a new turn there
// (new steps at the freed indices, new createdAt): conversation_rewound,
// then the new turn's items with the epoch in their ids, and the turn
// closes. The first turn's ids are untouched.
func TestRewindRewritesStepsInPlace(t *testing.T) {
	r := newTestReconciler()
	before := r.Apply(snapshot(1, wire.RunIdle, twoTurns()...))
	assert.Contains(t, ids(before), testConv+"/2/user")

	after := append(twoTurns()[:2],
		created(userStep("second, again", "MODEL_M20"), "10"),
		created(plannerStep(wire.StatusDone, "", "two, again"), "11"),
	)
	evs := r.Apply(snapshot(2, wire.RunIdle, after...))
	require.NotEmpty(t, evs)
	rw := evs[0]
	assert.Equal(t, messages.EventConversationRewound, rw.Type)
	assert.Equal(t, testConv+"/rewind/1", rw.ID)
	assert.Equal(t, messages.Ptr(2), rw.ToStep)
	assert.Equal(t, 1, rw.Epoch)
	assert.Equal(t, []string{"conversation_rewound", "user_message", "status:running", "message", "usage", "status:idle"}, types(evs))
	user := findEvent(t, evs, messages.EventUserMessage)
	assert.Equal(t, testConv+"/r1/2/user", user.ID)
	assert.Equal(t, "second, again", user.Text)
	assert.Equal(t, testConv+"/r1/3/message", findEvent(t, evs, messages.EventMessage).ID)

	// Read again, and a stale read from before the rewind: nothing new.
	assert.Empty(t, r.Apply(snapshot(3, wire.RunIdle, after...)))
	assert.Empty(t, r.Apply(snapshot(4, wire.RunIdle, twoTurns()...)), "a copy of a rewound step is stale")
}

// TestRewindSeenAsAShorterTrajectory: rewound to step 2 with nothing new
// yet; a single read of the shorter trajectory may be stale (read before
// steps a frame showed), two in a row are the rewind. The next turn at the
// freed indices maps with the epoch's ids, and closes.
func TestRewindSeenAsAShorterTrajectory(t *testing.T) {
	r := newTestReconciler()
	r.Apply(lengthSnapshot(1, wire.RunIdle, 4, twoTurns()...))
	short := twoTurns()[:2]
	assert.Empty(t, ofType(r.Apply(lengthSnapshot(2, wire.RunIdle, 2, short...)), messages.EventConversationRewound), "one short read proves nothing")
	evs := r.Apply(lengthSnapshot(3, wire.RunIdle, 2, short...))
	require.Len(t, ofType(evs, messages.EventConversationRewound), 1)
	assert.Equal(t, messages.Ptr(2), evs[0].ToStep)
	assert.Equal(t, 2, r.Steps())

	// A new turn: the same indices, without createdAt (only the length said it).
	next := append(twoTurns()[:2], userStep("third", "MODEL_M20"), plannerStep(wire.StatusDone, "", "three"))
	evs = r.Apply(lengthSnapshot(4, wire.RunIdle, 4, next...))
	assert.Equal(t, []string{"user_message", "status:running", "message", "usage", "status:idle"}, types(evs))
	assert.Equal(t, testConv+"/r1/2/user", evs[0].ID)
}

// TestShortReadThenGrowthIsNotARewind: a short read followed by a read of
// the full length resets the count.
func TestShortReadThenGrowthIsNotARewind(t *testing.T) {
	r := newTestReconciler()
	r.Apply(lengthSnapshot(1, wire.RunIdle, 4, twoTurns()...))
	r.Apply(lengthSnapshot(2, wire.RunIdle, 2, twoTurns()[:2]...))
	r.Apply(lengthSnapshot(3, wire.RunIdle, 4, twoTurns()...))
	evs := r.Apply(lengthSnapshot(4, wire.RunIdle, 2, twoTurns()[:2]...))
	assert.Empty(t, ofType(evs, messages.EventConversationRewound))
	assert.Equal(t, 0, r.Epoch())
}

// TestRewindMarkedCleared: the rewound steps stay with status CLEARED and
// new ones follow them: conversation_rewound to the first cleared step,
// nothing for the cleared ones, the epoch in the new items' ids.
func TestRewindMarkedCleared(t *testing.T) {
	r := newTestReconciler()
	r.Apply(snapshot(1, wire.RunIdle, twoTurns()...))
	steps := twoTurns()
	steps[2].Status, steps[3].Status = wire.StatusCleared, wire.StatusCleared
	steps = append(steps, created(userStep("instead", "MODEL_M20"), "20"), created(plannerStep(wire.StatusDone, "", "ok"), "21"))
	evs := r.Apply(snapshot(2, wire.RunIdle, steps...))
	assert.Equal(t, []string{"conversation_rewound", "user_message", "status:running", "message", "usage", "status:idle"}, types(evs))
	assert.Equal(t, messages.Ptr(2), evs[0].ToStep)
	assert.Equal(t, testConv+"/r1/4/user", evs[1].ID)
	assert.Empty(t, r.Apply(snapshot(3, wire.RunIdle, steps...)))
}

// TestRewindWithdrawsPromptsAfterIt: a prompt open at a rewound step is
// withdrawn (expired).
func TestRewindWithdrawsPromptsAfterIt(t *testing.T) {
	r := newTestReconciler()
	steps := append(twoTurns()[:3], created(commandStep(wire.StatusWaiting, "ls"), "05"))
	evs := r.Apply(snapshot(1, wire.RunRunning, steps...))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	short := twoTurns()[:2]
	r.Apply(lengthSnapshot(2, wire.RunIdle, 2, short...))
	evs = r.Apply(lengthSnapshot(3, wire.RunIdle, 2, short...))
	res := findEvent(t, evs, messages.EventElicitationResolved)
	assert.Equal(t, req.ElicitationID, res.ElicitationID)
	assert.Equal(t, messages.ByExpired, res.By)
	assert.Equal(t, "status:idle", types(evs)[len(evs)-1], "the turn closes")
}

// TestSecondRewindIdsCarryItsEpoch: ids stay unique through two rewinds.
func TestSecondRewindIdsCarryItsEpoch(t *testing.T) {
	r := newTestReconciler()
	seen := map[string]bool{}
	add := func(evs []messages.Event) {
		for _, e := range evs {
			require.False(t, seen[e.ID], "duplicate id %s", e.ID)
			seen[e.ID] = true
		}
	}
	add(r.Apply(snapshot(1, wire.RunIdle, twoTurns()...)))
	for k, at := range []string{"30", "40"} {
		steps := append(twoTurns()[:2], created(userStep("again", "MODEL_M20"), at), created(plannerStep(wire.StatusDone, "", "again"), at+".5"))
		evs := r.Apply(snapshot(2+k, wire.RunIdle, steps...))
		add(evs)
		assert.Equal(t, k+1, findEvent(t, evs, messages.EventConversationRewound).Epoch)
	}
	assert.True(t, seen[testConv+"/r2/2/user"])
}

func ids(evs []messages.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestReaskAfterARewind: a step asked again after a rewind has both marks in
// its id, the epoch from the rewind and the count from the re-ask
// (c/r1/prompt/i.2); the rewind withdraws the re-ask open at the point.
func TestReaskAfterARewind(t *testing.T) {
	line := "git status && git log"
	r := newTestReconciler()
	first := twoTurns()[:2]
	turn := func(k int, user wire.Step, cmd wire.Step) []messages.Event {
		return r.Apply(snapshot(k, wire.RunRunning, append(append([]wire.Step{}, first...), user, cmd)...))
	}
	user := created(userStep("check", "MODEL_M20"), "02")
	turn(1, user, created(reaskStep(line, nil, "git status"), "03"))
	reqs, _ := elicitationsOf(turn(2, user, created(reaskStep(line, []string{"git status"}, "git log"), "03")))
	require.Len(t, reqs, 1)
	require.Equal(t, testConv+"/prompt/3.2", reqs[0].ElicitationID)

	// /rewind to step 2 and the same command asked anew there.
	again := created(userStep("check again", "MODEL_M20"), "10")
	evs := turn(3, again, created(reaskStep(line, nil, "git status"), "11"))
	require.Len(t, ofType(evs, messages.EventConversationRewound), 1)
	reqs, res := elicitationsOf(evs)
	require.Len(t, res, 1, "%v", types(evs))
	assert.Equal(t, testConv+"/prompt/3.2", res[0].ElicitationID, "the re-ask open at the point is withdrawn")
	assert.Equal(t, messages.ByExpired, res[0].By)
	require.Len(t, reqs, 1)
	assert.Equal(t, testConv+"/r1/prompt/3", reqs[0].ElicitationID)

	evs = turn(4, again, created(reaskStep(line, []string{"git status"}, "git log"), "11"))
	reqs, res = elicitationsOf(evs)
	require.Len(t, res, 1)
	assert.Equal(t, testConv+"/r1/prompt/3", res[0].ElicitationID)
	require.Len(t, reqs, 1)
	assert.Equal(t, testConv+"/r1/prompt/3.2", reqs[0].ElicitationID)
	assert.Equal(t, testConv+"/r1/prompt/3.2/request", reqs[0].ID)
	_, ok := r.Prompt(testConv + "/r1/prompt/3.2")
	assert.True(t, ok)
}

// longCreated is a history of n finished turns (2n steps), each step with
// its own createdAt.
func longCreated(n int) []wire.Step {
	var steps []wire.Step
	for k := range n {
		steps = append(steps,
			created(userStep(fmt.Sprintf("turn %d", k), "MODEL_M20"), fmt.Sprintf("%02d.%04dU", k%60, k)),
			created(plannerStep(wire.StatusDone, "", fmt.Sprintf("reply %d", k)), fmt.Sprintf("%02d.%04dP", k%60, k)))
	}
	return steps
}

// A rewind far behind the window (its steps dropped, fingerprints kept):
// the new turn written at the freed indices is delivered, not taken for
// the dropped steps of the same type there; a read from before the rewind
// brings nothing back.
func TestRewindBehindTheWindowDeliversTheNewTurn(t *testing.T) {
	r := NewReconciler(Config{ConversationID: testConv, Window: 16})
	hist := longCreated(100)
	r.Apply(lengthSnapshot(1, wire.RunIdle, len(hist), hist...))
	require.Nil(t, r.slots[40], "step 40 dropped")
	r.Apply(lengthSnapshot(2, wire.RunIdle, 40, hist[:40]...))
	evs := r.Apply(lengthSnapshot(3, wire.RunIdle, 40, hist[:40]...))
	require.Len(t, ofType(evs, messages.EventConversationRewound), 1)

	next := append(slices.Clone(hist[:40]), created(userStep("instead", "MODEL_M20"), "59.9999U"), created(plannerStep(wire.StatusDone, "", "anew"), "59.9999P"))
	evs = r.Apply(lengthSnapshot(4, wire.RunIdle, 42, next...))
	users := ofType(evs, messages.EventUserMessage)
	require.Len(t, users, 1, "the new turn at the freed index is delivered")
	assert.Equal(t, "instead", users[0].Text)
	assert.Equal(t, testConv+"/r1/40/user", users[0].ID)

	assert.Empty(t, ofType(r.Apply(lengthSnapshot(5, wire.RunIdle, 42, append(slices.Clone(next), hist[42:]...)...)), messages.EventMessage),
		"a read from before the rewind brings nothing back")
}

// A step behind the window written anew (another createdAt at its index)
// is a rewind to it, as a kept step's would be: conversation_rewound, then
// the new step's items.
func TestDroppedStepWithAnotherCreatedAtIsARewind(t *testing.T) {
	r := NewReconciler(Config{ConversationID: testConv, Window: 16})
	hist := longCreated(100)
	r.Apply(snapshot(1, wire.RunIdle, hist...))
	require.Nil(t, r.slots[40], "step 40 dropped")
	again := []wire.Step{created(userStep("instead", "MODEL_M20"), "59.9999U")}
	evs := r.Apply(FromWindow(indexed(again), 40, wire.RunIdle, at(2)))
	rewound := ofType(evs, messages.EventConversationRewound)
	require.Len(t, rewound, 1)
	assert.Equal(t, messages.Ptr(40), rewound[0].ToStep)
	users := ofType(evs, messages.EventUserMessage)
	require.Len(t, users, 1)
	assert.Equal(t, "instead", users[0].Text)
}
