package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// Behaviours of agy recorded live (issue 19), each against the fake doing
// them, as agy does by default.

// agy may send no stream frame while a prompt is parked: the prompt is
// found by reading the steps within Config.PollActive, however long the
// slow reconciliation interval, and in stream mode too.
func TestParkedPromptNotStreamedIsFoundWithinThePollInterval(t *testing.T) {
	for _, mode := range []actors.ReadMode{actors.ReadBoth, actors.ReadStream} {
		t.Run(string(mode), func(t *testing.T) {
			sc := scenario(agytest.Run(agytest.CommandAction{Line: "make deploy", Output: "ok\n", NeedsApproval: true}), agytest.Say("Done.", 1))
			srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond, UnstreamedPrompts: 1})
			cfg := testConfig()
			cfg.PollSlow = time.Hour
			cfg.PollActive = 50 * time.Millisecond
			r := newRigWith(t, cfg, srv, actors.Spec{ReadMode: mode})
			seq := r.turn("deploy")
			req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
			assert.Equal(t, "make deploy", req.Command.Line)
			waiting := r.ev.waitFor(t, messages.EventStatus, func(ev *messages.Event) bool { return ev.Seq > seq && ev.State == messages.StateWaiting })
			assert.Greater(t, waiting.Seq, req.Seq, "waiting comes from the WAITING step")
			assert.Equal(t, rpc.RunRunning, srv.RunStatus(r.s.ConversationID()), "agy reports RUNNING while parked")
			require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}))
			r.ev.waitIdleAfter(t, req.Seq)
			itemsOnce(t, srv, r.s.ConversationID(), r.ev.all())
		})
	}
}

// If agy moved a conversation's lastModifiedTime on every read at rest
// (none is known to; nothing promises it does not), turns still reach idle
// within 2 s of agy's last step.
func TestIdleDoesNotHingeOnLastModifiedTime(t *testing.T) {
	for _, mode := range []actors.ReadMode{actors.ReadBoth, actors.ReadStream, actors.ReadPoll} {
		t.Run(string(mode), func(t *testing.T) {
			sc := scenario(agytest.Think("Brief."), agytest.Say("Hello there, all is well.", 4))
			srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond, MovingModifiedTime: true})
			cfg := testConfig()
			cfg.PollSlow = time.Hour
			r := newRigWith(t, cfg, srv, actors.Spec{ReadMode: mode})
			for i := range 3 {
				seq := r.turn(fmt.Sprintf("hello %d", i))
				ctx, cancel := context.WithTimeout(context.Background(), waitLong)
				require.NoError(t, srv.WaitIdle(ctx, r.s.ConversationID()))
				cancel()
				rested := time.Now()
				r.ev.wait(t, "idle within 2 s of agy's last step", func(evs []*messages.Event) bool {
					for _, ev := range evs {
						if ev.Seq > seq && ev.Type == messages.EventStatus && ev.State == messages.StateIdle {
							return true
						}
					}
					return false
				})
				assert.Less(t, time.Since(rested), 2*time.Second)
			}
			itemsOnce(t, srv, r.s.ConversationID(), r.ev.all())
		})
	}
}

// A long conversation is only ever seen in windows (agy caps one answer):
// it is read whole once, window by window, and afterwards the polls read its
// tail, never the whole history again.
func TestLongConversationIsReadInWindows(t *testing.T) {
	sc := scenario(agytest.Say("One more answer.", 2), agytest.Run(agytest.CommandAction{Line: "ls", Output: "a\n"}))
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: -1, MaxStepsPerRead: 7})
	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	defer c.Close()
	conv := srv.ConversationID()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for i := range 30 {
		require.NoError(t, c.SendUserCascadeMessage(ctx, conv, fmt.Sprintf("turn %d", i), "MODEL_PLACEHOLDER_M20"))
		require.NoError(t, srv.WaitIdle(ctx, conv))
	}
	history := len(srv.Steps(conv))
	require.Greater(t, history, 100)

	for _, mode := range []actors.ReadMode{actors.ReadBoth, actors.ReadPoll} {
		t.Run(string(mode), func(t *testing.T) {
			r := newRigOn(t, srv, actors.Spec{ReadMode: mode})
			itemsOnce(t, srv, conv, r.ev.all())
			before := srv.StepsServed()
			seq := r.turn("one more")
			r.ev.waitIdleAfter(t, seq)
			itemsOnce(t, srv, conv, r.ev.all())
			read := srv.StepsServed() - before
			assert.Less(t, read, int64(history), "reads after the first start at the steps that can still change")
		})
	}
}
