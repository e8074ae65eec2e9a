package actors_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// overLimitErrors are the error events that report agy's answer over the
// limit.
func overLimitErrors(evs []*messages.Event) []*messages.Event {
	var out []*messages.Event
	for _, ev := range ofType(evs, messages.EventError) {
		if strings.Contains(ev.Message, "over the limit") {
			out = append(out, ev)
		}
	}
	return out
}

// A long history whose stream snapshot is over the frame limit: the
// stream skips that frame and goes on (no restart), the poller reads the
// history window by window, every item comes exactly once, and a turn
// after it streams as usual.
func TestLongHistoryOverTheFrameLimitIsReadInWindowsOnce(t *testing.T) {
	const say = "After the history, this answer streams in many small chunks, one after another."
	srv := agytest.Start(t, agytest.Options{Conversation: true, HistorySteps: 6000, MaxStepsPerRead: 300,
		ChunkDelay: 5 * time.Millisecond, Scenario: scenario(agytest.Say(say, 16))})
	cfg := testConfig()
	cfg.MaxMessageSize = 256 << 10 // the snapshot of 6,000 steps is over it; a window of 300 is not
	cfg.StepWindow = 256
	r := newRigWith(t, cfg, srv, actors.Spec{})
	conv := r.s.ConversationID()

	seq := r.turn("and now")
	r.ev.waitIdleAfter(t, seq)
	evs := r.ev.all()
	itemsOnce(t, srv, conv, evs)
	users := ofType(evs, messages.EventUserMessage)
	require.Len(t, users, 3001)
	assert.Equal(t, "history turn 0", users[0].Text)
	assert.Equal(t, "and now", users[3000].Text)
	assert.NotEmpty(t, ofType(evs, messages.EventOutputTextDelta), "the turn after the history streamed")
	assert.Empty(t, overLimitErrors(evs), "nothing was lost: no error")
	assert.Zero(t, r.s.Stats().Restarts["stream"], "the stream went on past the frame it skipped")
	assert.Equal(t, 1, srv.Calls(rpc.MethodStreamAgentStateUpdates))
}

// A steps answer over the limit (every answer of agy's runs to the end,
// and the whole history is too large): the read goes on from the lowest
// index whose answer fits, the steps before it are reported once in a
// retryable error naming the limit, and the session works on: a turn
// after it is mapped.
func TestStepsAnswerOverTheLimitIsReadPastAndReported(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, HistorySteps: 400, HistoryStepBytes: 2000, MaxStepsPerRead: -1,
		ChunkDelay: time.Millisecond, Scenario: scenario(agytest.Say("still here", 2))})
	cfg := testConfig()
	cfg.MaxMessageSize = 64 << 10
	r := newRigWith(t, cfg, srv, actors.Spec{})

	errs := r.ev.wait(t, "an error over the limit", func(evs []*messages.Event) bool { return len(overLimitErrors(evs)) > 0 })
	e := overLimitErrors(errs)[0]
	assert.Contains(t, e.Message, "65536 bytes")
	assert.Contains(t, e.Message, "were not read")
	require.NotNil(t, e.Retryable)
	assert.True(t, *e.Retryable)

	seq := r.turn("go on")
	r.ev.waitIdleAfter(t, seq)
	evs := r.ev.all()
	msgs := ofType(evs, messages.EventMessage)
	require.NotEmpty(t, msgs)
	assert.Equal(t, "still here", msgs[len(msgs)-1].Text)
	assert.Len(t, overLimitErrors(evs), 1, "reported once")
	users := ofType(evs, messages.EventUserMessage)
	assert.Equal(t, "go on", users[len(users)-1].Text)
	assert.Less(t, len(users), 201, "the turns skipped are not reported")
}

// recordingClock is a TestClock that records the delays asked of it.
type recordingClock struct {
	*actors.TestClock
	mu     sync.Mutex
	delays []time.Duration
}

func (c *recordingClock) AfterFunc(d time.Duration, f func()) actors.Timer {
	c.mu.Lock()
	c.delays = append(c.delays, d)
	c.mu.Unlock()
	return c.TestClock.AfterFunc(d, f)
}

// longest is the longest delay asked at least min.
func (c *recordingClock) longest() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var l time.Duration
	for _, d := range c.delays {
		l = max(l, d)
	}
	return l
}

// A steps answer that cannot be read past (the last step alone is over the
// limit): the reads back off exponentially on the host's clock, up to
// Config.ReadBackoffMax, and the driver is told once, not per retry.
func TestStepsAnswerOverTheLimitBacksOffAndIsReportedOnce(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, HistorySteps: 10, HistoryStepBytes: 100 << 10, MaxStepsPerRead: -1,
		ChunkDelay: time.Millisecond})
	clock := &recordingClock{TestClock: actors.NewTestClock()}
	cfg := testConfig()
	cfg.Clock = clock
	cfg.MaxMessageSize = 64 << 10
	cfg.PollFast = time.Minute // the reads' pace is the test clock's alone
	cfg.ReadBackoffMax = 8 * time.Minute
	events := collectUntilShutdown(t)
	host := newHost(t, cfg)
	s := attach(t, host, actors.Spec{Port: srv.Port(), ReadMode: actors.ReadPoll})
	ev := events(s)

	ev.wait(t, "an error over the limit", func(evs []*messages.Event) bool { return len(overLimitErrors(evs)) > 0 })
	advanceUntil(t, clock.TestClock, time.Minute, "the backoff to reach its cap", func() bool {
		return clock.longest() >= cfg.ReadBackoffMax
	})
	reads := srv.Calls(rpc.MethodGetCascadeTrajectorySteps)
	advanceUntil(t, clock.TestClock, time.Minute, "reads at the cap", func() bool {
		return srv.Calls(rpc.MethodGetCascadeTrajectorySteps) > reads
	})
	assert.Less(t, clock.longest(), cfg.ReadBackoffMax+time.Second, "capped")
	errs := overLimitErrors(ev.all())
	require.Len(t, errs, 1, "one error for the whole run of failed reads\n%s", dump(ev.all()))
	assert.Contains(t, errs[0].Message, "65536 bytes")
	assert.Contains(t, errs[0].Message, "backoff")
	require.NotNil(t, errs[0].Retryable)
	assert.True(t, *errs[0].Retryable)
}
