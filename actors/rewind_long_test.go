package actors_test

import (
	"os"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionFollowsRewindsOfALongConversation: on a conversation longer
// than the reconciler's window, read a few steps an answer, each turn
// rewound away at rest is reported (conversation_rewound to its
// USER_INPUT), turn after turn.
func TestSessionFollowsRewindsOfALongConversation(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Done.", 2)}}}}
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc, HistorySteps: 1000, MaxStepsPerRead: 9, NoBackgroundWakes: true}, actors.Spec{})
	conv := r.s.ConversationID()
	for k := range 6 {
		text := "turn " + string(rune('a'+k))
		r.ev.waitIdleAfter(t, r.turn(text))
		at := firstUserInput(t, r.srv, conv, text)
		seq := r.ev.lastSeq()
		require.NoError(t, r.srv.Rewind(conv, at))
		rw := r.ev.waitFor(t, messages.EventConversationRewound, func(ev *messages.Event) bool { return ev.Seq > seq })
		require.Equal(t, at, *rw.ToStep, dump(r.ev.all()))
	}
}

// A rewind soon after agy moved to a new port is read from its cut, not
// from index 0: the new port's poller has read only the tail, and the
// session hands it the identities of the steps it knows. Read from 0, a
// long conversation at a few steps an answer takes a hundred reads, and on
// a loaded machine the rewind was reported only at the next turn (the
// bench's soak).
func TestARewindAfterAgyMovedIsReadFromItsCut(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Done.", 2)}}}}
	srv, err := agytest.NewServer(agytest.Options{Conversation: true, Scenario: sc, HistorySteps: 1000, MaxStepsPerRead: 9, NoBackgroundWakes: true, ChunkDelay: time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	r := newRigOn(t, srv, actors.Spec{PID: os.Getpid(), ConversationID: srv.ConversationID()})
	conv := r.s.ConversationID()
	r.ev.waitIdleAfter(t, r.turn("before the move"))
	port, err := r.srv.Restart()
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.s.Port() == port }, waitLong, time.Millisecond, "bound to agy's new port")
	r.ev.waitIdleAfter(t, r.turn("after the move"))
	at := firstUserInput(t, r.srv, conv, "after the move")

	seq := r.ev.lastSeq()
	before := r.srv.Calls(rpc.MethodGetCascadeTrajectorySteps)
	require.NoError(t, r.srv.Rewind(conv, at))
	rw := r.ev.waitFor(t, messages.EventConversationRewound, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.Equal(t, at, *rw.ToStep)
	reads := r.srv.Calls(rpc.MethodGetCascadeTrajectorySteps) - before
	assert.Less(t, reads, 20, "reads to see the rewind (from index 0: about %d)", 1000/9)
}
