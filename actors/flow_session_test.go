package actors_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// flowConfig is testConfig on a clock the test moves, with a running
// turn's reads every hour of it and no reconciliation reads.
func flowConfig() (actors.Config, *actors.TestClock) {
	cfg := testConfig()
	clock := actors.NewTestClock()
	cfg.Clock, cfg.PollActive, cfg.PollSlow = clock, time.Hour, 100*time.Hour
	return cfg, clock
}

// readsSettle waits until no read of the steps has reached the fake for a
// while.
func readsSettle(t *testing.T, srv *agytest.Server) {
	t.Helper()
	last, since := -1, time.Now()
	require.Eventually(t, func() bool {
		if n := srv.Calls(rpc.MethodGetCascadeTrajectorySteps); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) > 200*time.Millisecond
	}, waitLong, 5*time.Millisecond, "the reads settle")
}

// While agy streams a turn, however long, the session reads no steps: the
// stream shows what changes.
func TestNoStepsReadWhileATurnStreams(t *testing.T) {
	for _, mode := range []actors.ReadMode{actors.ReadBoth, actors.ReadStream} {
		t.Run(string(mode), func(t *testing.T) {
			sc := scenario(agytest.Say(strings.Repeat("A long answer, streamed. ", 100), 400))
			srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: 5 * time.Millisecond})
			cfg, clock := flowConfig()
			r := newRigWith(t, cfg, srv, actors.Spec{ReadMode: mode})
			readsSettle(t, srv) // the reads after attaching (agy's first frame says IDLE: one more) are over
			reads := srv.Calls(rpc.MethodGetCascadeTrajectorySteps)
			seq := r.turn("write at length")
			r.ev.waitFor(t, messages.EventStatus, func(ev *messages.Event) bool { return ev.Seq > seq && ev.State == messages.StateRunning })
			// Three PollActive pass, the session taking a frame in each half
			// of one (each a new event: the answer's text grows).
			for range 6 {
				n := len(r.ev.all())
				require.Eventually(t, func() bool { return len(r.ev.all()) > n }, waitLong, time.Millisecond, "agy streams")
				clock.Advance(cfg.PollActive / 2)
			}
			require.Never(t, func() bool { return srv.Calls(rpc.MethodGetCascadeTrajectorySteps) > reads }, 100*time.Millisecond, 5*time.Millisecond,
				"no steps read while frames flow")
			require.Equal(t, wire.RunRunning, srv.RunStatus(r.s.ConversationID()), "agy streamed throughout")
			r.ev.waitIdleAfter(t, seq)
			itemsOnce(t, srv, r.s.ConversationID(), r.ev.all())
		})
	}
}

// A prompt agy parks without a frame shows once the stream has been quiet
// for PollActive: one interval after agy's last frame, without a frame.
func TestParkedPromptNotStreamedShowsWithinPollActiveOfTheLastFrame(t *testing.T) {
	for _, mode := range []actors.ReadMode{actors.ReadBoth, actors.ReadStream} {
		t.Run(string(mode), func(t *testing.T) {
			sc := scenario(agytest.Run(agytest.CommandAction{Line: "make deploy", Output: "ok\n", NeedsApproval: true}), agytest.Say("Done.", 1))
			srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond, UnstreamedPrompts: 1})
			cfg, clock := flowConfig()
			r := newRigWith(t, cfg, srv, actors.Spec{ReadMode: mode})
			conv := r.s.ConversationID()
			readsSettle(t, srv)
			seq := r.turn("deploy")
			require.Eventually(t, func() bool { _, parked := srv.OpenPrompt(conv); return parked }, waitLong, time.Millisecond, "agy parks the prompt")
			shown := func() bool {
				return len(ofType(r.ev.all(), messages.EventElicitationRequest)) > 0
			}
			require.Never(t, shown, 50*time.Millisecond, 5*time.Millisecond, "no frame shows it")

			clock.Advance(cfg.PollActive + 100*time.Millisecond) // a tick's slack
			req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
			assert.Equal(t, "make deploy", req.Command.Line)
			require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}))
			r.ev.waitIdleAfter(t, req.Seq)
			itemsOnce(t, srv, conv, r.ev.all())
		})
	}
}
