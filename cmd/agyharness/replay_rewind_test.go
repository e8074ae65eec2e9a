package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// TestReplayOfARewoundCapture: a session recorded while agy's
// conversation is rewound replays to the same events: the rewind alone
// (found from the trajectory's length, which the capture keeps), and with a
// new turn taking the freed indices (the epoch's ids).
func TestReplayOfARewoundCapture(t *testing.T) {
	t.Run("rewind", func(t *testing.T) { recordRewind(t, false) })
	t.Run("rewind then a turn", func(t *testing.T) { recordRewind(t, true) })
}

func recordRewind(t *testing.T, thirdTurn bool) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Done.", 2)}}}}
	fake := agytest.Start(t, agytest.Options{Conversation: true, Seed: 29, Scenario: sc, ChunkDelay: 2 * time.Millisecond})
	path := filepath.Join(t.TempDir(), "rewind.capture.jsonl")
	rec, err := createRecorder(path, false, func(err error) { t.Errorf("recorder: %v", err) })
	require.NoError(t, err)
	host := actors.NewHost(actors.Config{PollFast: 20 * time.Millisecond, PollSlow: 200 * time.Millisecond})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, host.Shutdown(ctx))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conv := fake.ConversationID()
	sess, err := host.Attach(ctx, actors.Spec{Port: fake.Port(), ConversationID: conv, Recorder: rec.Record})
	require.NoError(t, err)

	var live []*messages.Event
	next := func(what string, done func(*messages.Event) bool) {
		t.Helper()
		for {
			select {
			case ev, ok := <-sess.Events():
				require.True(t, ok, "the session ended before %s", what)
				live = append(live, ev)
				if done(ev) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %s", what)
			}
		}
	}
	idle := func(ev *messages.Event) bool {
		return ev.Type == messages.EventStatus && ev.State == messages.StateIdle
	}
	turn := func(text string) {
		t.Helper()
		require.NoError(t, sess.SendTurn(ctx, text, ""))
		next("the user turn "+text, func(ev *messages.Event) bool { return ev.Type == messages.EventUserMessage && ev.Text == text })
		next("idle after "+text, idle)
	}
	turn("one")
	turn("two")
	at := -1
	for i, st := range fake.Steps(conv) {
		if st.Type == wire.StepUserInput && st.UserInput.UserResponse == "two" {
			at = i
		}
	}
	require.NoError(t, fake.Rewind(conv, at))
	next("conversation_rewound", func(ev *messages.Event) bool { return ev.Type == messages.EventConversationRewound })
	if thirdTurn {
		turn("three")
	}
	require.NoError(t, sess.Detach(ctx))
	for ev := range sess.Events() {
		live = append(live, ev)
	}
	require.NoError(t, rec.Close())

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var replayed []*messages.Event
	require.NoError(t, replayCapture(f, "replay", func(ev *messages.Event) { replayed = append(replayed, ev) }))

	// The conversation's events, as a consumer dedups them: by id, in order.
	lines := func(evs []*messages.Event) string {
		var b bytes.Buffer
		for _, ev := range evs {
			if !strings.HasPrefix(ev.ID, conv+"/") {
				continue
			}
			b.WriteString(string(ev.Type) + " " + ev.ID + " " + ev.Text + ev.State + "\n")
		}
		return b.String()
	}
	want := lines(live)
	require.Contains(t, want, "conversation_rewound "+conv+"/rewind/1")
	if thirdTurn {
		require.Contains(t, want, "user_message "+conv+"/r1/")
	}
	require.Equal(t, want, lines(replayed))
}
