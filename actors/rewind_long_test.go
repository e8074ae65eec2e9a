package actors_test

import (
	"testing"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
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
