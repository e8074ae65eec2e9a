package actors_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/require"
)

// listReadsAfter moves the clock n rotation intervals forward, one at a
// time, and reports how many times agy's conversation list was read
// meanwhile.
func listReadsAfter(t *testing.T, clock *actors.TestClock, srv *agytest.Server, iv time.Duration, n int) int {
	t.Helper()
	before := srv.Calls(rpc.MethodGetAllCascadeTrajectories)
	for range n {
		clock.Advance(iv + 100*time.Millisecond)
		time.Sleep(20 * time.Millisecond) // paces the loop: a tick's read and the tick after it land before the clock moves on
	}
	return srv.Calls(rpc.MethodGetAllCascadeTrajectories) - before
}

// TestConversationListIsNotReadPeriodicallyWithTheStreamUp: a session
// whose stream is up reads agy's conversation list neither on the rotation
// interval while idle nor while agy streams (only the status reads a turn's
// end takes, which read the bound conversation's entry), and still follows
// a /clear, whose frame names the new conversation.
func TestConversationListIsNotReadPeriodicallyWithTheStreamUp(t *testing.T) {
	clock := actors.NewTestClock()
	cfg := testConfig()
	cfg.Clock, cfg.RotationInterval = clock, time.Hour // a tick comes when the test moves the clock
	cfg.PollSlow = 10 * time.Hour
	long := strings.Repeat("An answer that streams for a while. ", 100)
	srv := agytest.Start(t, agytest.Options{Conversation: true, EarlierRuns: 40, EarlierSubagents: true, ChunkDelay: 5 * time.Millisecond,
		Scenario: &agytest.Scenario{Turns: []agytest.TurnScript{
			{Match: "stream", Actions: []agytest.Action{agytest.Say(long, 2000)}},
			{Actions: []agytest.Action{agytest.Say("Short.", 2)}},
		}}})
	r := newRigWith(t, cfg, srv, actors.Spec{ConversationID: srv.ConversationID()})
	r.ev.waitIdleAfter(t, r.turn("before")) // its frames came: the stream is up

	// Main read on each of the 20 ticks; now: the tick pending when the
	// stream came up, the first safety read (15 intervals), and the status
	// reads the turn's end may still owe (two, and two more when they
	// disagree and are read again): at most 6, well below 20.
	require.LessOrEqual(t, listReadsAfter(t, clock, srv, cfg.RotationInterval, 20), 6, "idle with the stream up")

	seq := r.turn("stream for a while")
	r.ev.waitFor(t, messages.EventOutputTextDelta, func(ev *messages.Event) bool { return ev.Seq > seq })
	// Main read on every fifth tick while frames flowed; now: a safety
	// read (30 intervals after the first) at most.
	require.LessOrEqual(t, listReadsAfter(t, clock, srv, cfg.RotationInterval, 20), 1, "streaming with the stream up")
	for _, ev := range r.ev.all() {
		require.False(t, ev.Seq > seq && ev.Type == messages.EventStatus && ev.State == messages.StateIdle, "agy still streamed")
	}

	from := r.s.ConversationID()
	to := srv.Clear()
	rot := r.ev.waitFor(t, messages.EventConversationRotated, nil)
	require.Equal(t, from, rot.From)
	require.Equal(t, to, rot.To, "the frame naming the new conversation is enough")
}
