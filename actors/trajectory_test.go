package actors_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/require"
)

// firstUserInput is the index of the USER_INPUT of the turn with text.
func firstUserInput(t *testing.T, srv *agytest.Server, conv, text string) int {
	t.Helper()
	for i, st := range srv.Steps(conv) {
		if st.Type == wire.StepUserInput && st.UserInput != nil && st.UserInput.UserResponse == text {
			return i
		}
	}
	t.Fatalf("no turn %q", text)
	return -1
}

// TestSessionQuotaErrorEndsTheTurnWithItsCode: agy's quota exhaustion
// reaches the driver as error events with agy's text and the code
// quota_exhausted (the retries not final), and the turn closes.
func TestSessionQuotaErrorEndsTheTurnWithItsCode(t *testing.T) {
	r := newRig(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Think("Calling the model."), agytest.ProviderErr(agytest.ProviderQuota))}, actors.Spec{})
	seq := r.turn("hello")
	r.ev.waitIdleAfter(t, seq)
	errs := ofType(r.ev.all(), messages.EventError)
	require.Len(t, errs, 3, dump(r.ev.all()))
	for _, e := range errs[:2] {
		require.Equal(t, messages.ErrorQuotaExhausted, e.Code)
		require.Equal(t, messages.Ptr(false), e.Final)
		require.Equal(t, messages.Ptr(true), e.Retryable)
	}
	final := errs[2]
	require.Equal(t, messages.ErrorQuotaExhausted, final.Code)
	require.Equal(t, messages.Ptr(true), final.Final)
	require.Equal(t, messages.Ptr(false), final.Retryable)
	require.True(t, strings.HasPrefix(final.Message, "RESOURCE_EXHAUSTED (code 429): Individual quota reached."), final.Message)
	statusNeverRepeats(t, r.ev.all())
}

// TestSessionFollowsARewind: a turn rewound away (agy's /rewind: the
// trajectory cut back to its USER_INPUT) and a new turn in its place: the
// session reports conversation_rewound to that step, the new turn's items
// carry the epoch in their ids, nothing is emitted twice, and the new turn
// closes.
func TestSessionFollowsARewind(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Done.", 2)}}}}
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	conv := r.s.ConversationID()
	r.ev.waitIdleAfter(t, r.turn("one"))
	r.ev.waitIdleAfter(t, r.turn("two"))
	at := firstUserInput(t, r.srv, conv, "two")

	seq := r.ev.lastSeq()
	require.NoError(t, r.srv.Rewind(conv, at))
	rw := r.ev.waitFor(t, messages.EventConversationRewound, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.Equal(t, at, *rw.ToStep, dump(r.ev.all()))
	require.Equal(t, 1, rw.Epoch)

	r.ev.waitIdleAfter(t, r.turn("three"))
	evs := r.ev.all()
	var users []*messages.Event
	for _, ev := range ofType(evs, messages.EventUserMessage) {
		if ev.Seq > rw.Seq {
			users = append(users, ev)
		}
	}
	require.Len(t, users, 1, dump(evs))
	require.Equal(t, "three", users[0].Text)
	require.Equal(t, conv+"/r1/"+strconv.Itoa(at)+"/user", users[0].ID)
	itemsOnce(t, r.srv, conv, evs)
	statusNeverRepeats(t, evs)
}

// TestSessionFollowsARewindMarkedCleared: the same with the rewound steps
// kept as CLEARED.
func TestSessionFollowsARewindMarkedCleared(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Done.", 2)}}}}
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc, RewindMarksCleared: true}, actors.Spec{})
	conv := r.s.ConversationID()
	r.ev.waitIdleAfter(t, r.turn("one"))
	r.ev.waitIdleAfter(t, r.turn("two"))
	at := firstUserInput(t, r.srv, conv, "two")
	seq := r.ev.lastSeq()
	require.NoError(t, r.srv.Rewind(conv, at))
	rw := r.ev.waitFor(t, messages.EventConversationRewound, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.Equal(t, at, *rw.ToStep, dump(r.ev.all()))
	r.ev.waitIdleAfter(t, r.turn("three"))
	user := r.ev.waitFor(t, messages.EventUserMessage, func(ev *messages.Event) bool { return ev.Text == "three" })
	require.Contains(t, user.ID, conv+"/r1/")
	statusNeverRepeats(t, r.ev.all())
}

// TestSessionShowsARunNobodyTyped: a background task's notification wakes
// agy after the turn: the session reports running, agy's answer and idle,
// with no user turn.
func TestSessionShowsARunNobodyTyped(t *testing.T) {
	// The wake comes well after the turn, so that even a loaded machine's
	// session reads the first turn idle before it (else the two runs are
	// one, and this test has nothing to look at).
	sc := scenario(agytest.Task(agytest.TaskAction{Line: "make test", After: 500, Reply: "The tests passed."}), agytest.Say("Started the tests in the background.", 2))
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	idle := r.ev.waitIdleAfter(t, r.turn("run the tests"))
	msg := r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.Text == "The tests passed." })
	require.Greater(t, msg.Seq, idle.Seq)
	r.ev.waitIdleAfter(t, msg.Seq)
	var after []*messages.Event
	for _, ev := range r.ev.all() {
		if ev.Seq > idle.Seq {
			after = append(after, ev)
		}
	}
	require.Empty(t, ofType(after, messages.EventUserMessage), "nobody typed")
	running := ofType(after, messages.EventStatus)
	require.NotEmpty(t, running)
	require.Equal(t, messages.StateRunning, running[0].State, dump(after))
	statusNeverRepeats(t, r.ev.all())
}

// TestSubagentsAsAgy119: children listed by an INVOKE_SUBAGENT step DONE at
// spawn, their summaries typed CASCADE like a root's: the session mirrors
// each child (its title from its role), never takes one for a /clear
// rotation, and the parent's turn closes after them. The legacy shape
// (Options.LegacySubagents) still works.
func TestSubagentsAsAgy119(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := "1.1.9"
		if legacy {
			name = "legacy"
		}
		t.Run(name, func(t *testing.T) {
			sc := scenario(
				agytest.Action{Subagent: &agytest.SubagentAction{Count: 2, Task: "look around", Role: "Explorer", Actions: []agytest.Action{
					agytest.Think("Looking."),
					agytest.Say("Child done, with an answer that takes a while to stream out.", 20),
				}}},
				agytest.Say("Both children finished.", 2),
			)
			r := newRig(t, agytest.Options{Conversation: true, Scenario: sc, LegacySubagents: legacy, ChunkDelay: 5 * time.Millisecond}, actors.Spec{})
			root := r.s.ConversationID()
			r.ev.waitIdleAfter(t, r.turn("delegate"))
			children := r.conversationsBut(root)
			require.Len(t, children, 2)
			for _, child := range children {
				msg := r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.ConversationID == child })
				require.Equal(t, root, msg.ParentConversationID)
				itemsOnce(t, r.srv, child, r.ev.all())
			}
			require.Empty(t, ofType(r.ev.all(), messages.EventConversationRotated), "a child is never a rotation")
			require.Equal(t, root, r.s.ConversationID())
			call := r.ev.waitFor(t, messages.EventFunctionCall, func(ev *messages.Event) bool { return ev.Name == "invoke_subagent" })
			var spawn wire.Step
			for _, st := range r.srv.GroundTruth(root) {
				if st.Type == wire.StepInvokeSubagent {
					spawn = st
				}
			}
			require.NotNil(t, spawn.InvokeSubagent)
			if legacy {
				require.Empty(t, spawn.InvokeSubagent.Subagents)
				return
			}
			require.Equal(t, []wire.SubagentSpec{{Role: "Explorer 1", TypeName: "general"}, {Role: "Explorer 2", TypeName: "general"}}, spawn.InvokeSubagent.Subagents)
			require.Equal(t, "Subagents: Explorer 1, Explorer 2", call.Title)
			// DONE at spawn: before the children's own answers were written.
			childDone := ""
			for _, st := range r.srv.GroundTruth(children[0]) {
				if st.Type == wire.StepPlannerResponse {
					childDone = st.Metadata.CompletedAt
				}
			}
			require.Less(t, spawn.Metadata.CompletedAt, childDone, "the spawning step ends before its child does")
		})
	}
}
