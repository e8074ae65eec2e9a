package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

// While a turn runs the poller reads the steps only while the stream's
// frames do not flow: none while they flow (agy is talking, and the stream
// shows the turn), one as soon as they stop (agy may have parked a prompt
// without a frame), then one every PollActive until they flow again.
func TestPollerReadsARunningTurnOnlyWhileFramesDoNotFlow(t *testing.T) {
	for _, mode := range []ReadMode{ReadBoth, ReadStream} {
		t.Run(string(mode), func(t *testing.T) {
			srv, client := startAgy(t, agytest.Options{Conversation: true})
			clock := NewTestClock()
			cfg := testCfg()
			// Every tick comes when the test moves the clock.
			cfg.Clock, cfg.PollFast, cfg.PollActive, cfg.PollSlow = clock, time.Hour, time.Hour, 100*time.Hour
			conv := srv.ConversationID()
			r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
				p := newPoller(child{client: client, conv: conv, cfg: cfg, gen: 2, wg: wg}, mode, 0, nil).(*poller)
				// As if told before it started: a turn runs, the stream is up
				// and no frame came yet. Its first read is the one owed at
				// start; the next is the turn's, a PollActive later.
				p.streamUp, p.active = true, true
				return p
			})
			expect[*messages.SnapshotRead](r, nil)
			require.Eventually(t, func() bool { return clock.Pending() == 1 }, 10*time.Second, time.Millisecond, "the turn's tick is armed")
			reads := func() int { return srv.Calls(rpc.MethodGetCascadeTrajectorySteps) }
			// noReadOver moves the clock on by two PollActive, half of one at
			// a time, and checks that nothing is read meanwhile.
			noReadOver := func(why string) {
				t.Helper()
				before := reads()
				for range 4 {
					clock.Advance(cfg.PollActive/2 + maxTickSlack)
					require.Never(t, func() bool { return reads() > before }, 30*time.Millisecond, 3*time.Millisecond, why)
				}
			}

			r.system.Root.Send(r.child, &messages.StreamState{Gen: 2, Up: true, Flowing: true})
			noReadOver("frames flow: the turn's tick pending is dropped, and none is armed")

			before, pending := reads(), clock.Pending()
			r.system.Root.Send(r.child, &messages.StreamState{Gen: 2, Up: true, Flowing: false})
			expect[*messages.SnapshotRead](r, nil)
			require.Equal(t, before+1, reads(), "frames stopped: a read at once")
			require.Eventually(t, func() bool { return clock.Pending() == pending+1 }, 10*time.Second, time.Millisecond, "the next tick is armed")
			clock.Advance(cfg.PollActive + maxTickSlack)
			expect[*messages.SnapshotRead](r, nil)
			require.Equal(t, before+2, reads(), "and every PollActive while they do not flow")

			r.system.Root.Send(r.child, &messages.StreamState{Gen: 2, Up: true, Flowing: true})
			noReadOver("frames flow again: no read")
		})
	}
}

// The stream reader says when frames begin to flow (with the first, before
// it), when none has come for PollActive, and when they flow again.
func TestStreamReaderTellsWhetherFramesFlow(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Hello there, all is well.", 4)}}}}
	srv, client := startAgy(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	clock := NewTestClock()
	cfg := testCfg()
	cfg.Clock, cfg.PollActive = clock, time.Hour // frames stop only when the test moves the clock
	conv := srv.ConversationID()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newStreamReader(child{client: client, conv: conv, cfg: cfg, gen: 3, wg: wg})
	})
	// next is the next StreamState or frame the reader sent.
	next := func() any {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m := <-r.ch:
				switch m := m.(type) {
				case *messages.StreamState:
					require.Equal(t, messages.Gen(3), m.Gen)
					return m
				case *frameReceived:
					m.frame.Release()
					return m
				}
			case <-deadline:
				t.Fatal("the stream reader sent nothing")
				return nil
			}
		}
	}
	turn := func(text string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, client.SendUserCascadeMessage(ctx, conv, text, "MODEL_PLACEHOLDER_M20"))
		require.NoError(t, srv.WaitIdle(ctx, conv))
	}
	// frames takes every frame the fake wrote, until none has come for a
	// while, and fails on a StreamState among them.
	frames := func(got int) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m := <-r.ch:
				switch m := m.(type) {
				case *messages.StreamState:
					t.Fatalf("frames flow: nothing else is told (%+v)", m)
				case *frameReceived:
					m.frame.Release()
					got++
				}
			case <-time.After(100 * time.Millisecond):
				if written, _ := srv.FramesWritten(); int64(got) >= written {
					return
				}
			case <-deadline:
				t.Fatal("the frames did not all come")
			}
		}
	}

	turn("hello")
	require.Equal(t, &messages.StreamState{Gen: 3, Up: true, Flowing: true}, next(), "up, flowing, before the first frame")
	frames(0)
	clock.Advance(cfg.PollActive + maxTickSlack)
	require.Equal(t, &messages.StreamState{Gen: 3, Up: true, Flowing: false}, next(), "no frame for PollActive")

	written, _ := srv.FramesWritten()
	turn("again")
	require.Equal(t, &messages.StreamState{Gen: 3, Up: true, Flowing: true}, next(), "flowing again, before the next frame")
	frames(int(written))
}
