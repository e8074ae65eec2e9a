package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// The resume window is bounded in bytes as well as in events: a history of
// 400 steps of 2 KB (about 800 KB of messages, far fewer than 4,096
// events) leaves a subscriber that resumes from the start with the last
// events within the default budget only. It gets them in order, without a
// gap after the first (whose seq tells what was let go), the last one
// published among them, then the open prompts, then live events.
func TestResumeWindowIsBoundedInBytes(t *testing.T) {
	const budget = 256 << 10 // actors.DefaultEventLogBytes
	srv := agytest.Start(t, agytest.Options{Conversation: true, HistorySteps: 400, HistoryStepBytes: 2000,
		ChunkDelay: time.Millisecond, Scenario: scenario(agytest.Say("after the history", 2))})
	r := newRigWith(t, testConfig(), srv, actors.Spec{})
	seq := r.turn("and now")
	r.ev.waitIdleAfter(t, seq)
	last := r.s.Stats().Events
	require.Less(t, last, uint64(4096), "fewer events than the log's count: the bytes bound it")

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	sub, err := r.s.Subscribe(ctx, 0)
	require.NoError(t, err)
	defer sub.Close()
	var got []*messages.Event
	timeout := time.After(waitLong)
	for len(got) == 0 || got[len(got)-1].Seq < last {
		select {
		case ev := <-sub.C():
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("the replay did not reach seq %d (%d events)", last, len(got))
		}
	}
	require.Greater(t, got[0].Seq, uint64(1), "the oldest events were let go: the replay starts later")
	text := 0
	for i, ev := range got {
		if i > 0 {
			require.Equal(t, got[i-1].Seq+1, ev.Seq, "no gap after the first event replayed")
		}
		text += len(ev.Text) + len(ev.Delta) + len(ev.Snapshot)
	}
	assert.LessOrEqual(t, text, budget, "the replayed texts fit the budget")
	assert.Greater(t, text, budget/4, "the window holds about its budget")
	msgs := ofType(got, messages.EventMessage)
	require.NotEmpty(t, msgs)
	assert.Equal(t, "after the history", msgs[len(msgs)-1].Text)
}
