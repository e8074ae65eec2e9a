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
	"github.com/agyharness/agyharness/wire"
)

// longAnswer is a turn that streams for about a second (40 chunks 25 ms
// apart), long enough to send another turn behind it.
func longAnswer() *agytest.Scenario {
	return scenario(agytest.Say("A long answer that streams for a while, chunk after chunk after chunk.", 40))
}

func takenConfig() actors.Config {
	cfg := testConfig()
	cfg.TurnTakenTimeout = 200 * time.Millisecond
	return cfg
}

// A turn agy accepted while it ran another, then dropped when an interrupt
// cancelled the run (agy queues it behind the run; the cancel drops the
// queue): the session reports it once agy is idle without it, by code and
// text, and does not send it again.
func TestATurnAgyAcceptedAndDroppedIsReported(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: longAnswer(), ChunkDelay: 25 * time.Millisecond})
	r := newRigWith(t, takenConfig(), srv, actors.Spec{})
	seq := r.turn("one")
	r.ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.Seq > seq && e.State == messages.StateRunning })
	sent := time.Now()
	r.turn("two") // queued behind "one"
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, r.s.Interrupt(ctx))
	e := r.ev.waitFor(t, messages.EventError, func(e *messages.Event) bool { return e.Code == messages.ErrorTurnNotTaken })
	assert.Equal(t, "two", e.Text)
	// Two looks a TurnTakenTimeout apart found agy idle without it: a
	// moment of idle before a queued turn starts is never taken for a drop.
	assert.GreaterOrEqual(t, e.Time.Sub(sent), 2*takenConfig().TurnTakenTimeout)
	assert.Contains(t, e.Message, `"two"`)
	assert.Contains(t, e.Message, "agy is idle and its conversation does not show the turn")
	assert.False(t, e.ShownByAgy())
	assert.True(t, *e.Retryable, "the driver may send it again")
	// Nothing more: the turn is never sent again, and reported once.
	time.Sleep(5 * takenConfig().TurnTakenTimeout)
	evs := r.ev.all()
	for _, ev := range ofType(evs, messages.EventUserMessage) {
		assert.NotEqual(t, "two", ev.Text, dump(evs))
	}
	n := 0
	for _, ev := range ofType(evs, messages.EventError) {
		if ev.Code == messages.ErrorTurnNotTaken {
			n++
		}
	}
	assert.Equal(t, 1, n, dump(evs))
	inputs := 0
	for _, st := range srv.Steps(r.s.ConversationID()) {
		if st.Type == wire.StepUserInput {
			inputs++
		}
	}
	assert.Equal(t, 1, inputs, "agy recorded one turn")
}

// A turn queued behind a run that goes on longer than TurnTakenTimeout is
// not reported: while agy works the check waits, and agy takes the turn
// once the run ends. Neither is a turn agy takes at once.
func TestATurnQueuedBehindALongRunIsNotReported(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: longAnswer(), ChunkDelay: 25 * time.Millisecond})
	r := newRigWith(t, takenConfig(), srv, actors.Spec{})
	seq := r.turn("one")
	r.ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.Seq > seq && e.State == messages.StateRunning })
	r.turn("two")
	user := r.ev.waitFor(t, messages.EventUserMessage, func(e *messages.Event) bool { return e.Text == "two" })
	assert.Equal(t, messages.OriginHarness, user.Origin)
	r.ev.waitIdleAfter(t, user.Seq)
	r.ev.waitIdleAfter(t, r.turn("three"))
	time.Sleep(5 * takenConfig().TurnTakenTimeout)
	evs := r.ev.all()
	assert.Empty(t, ofType(evs, messages.EventError), dump(evs))
}

// A turn agy took after a dropped one tells at once that the dropped one is
// gone (agy takes the turns it queued in order), without waiting for agy to
// stay idle: a driver that goes on sending learns of it with its next turn.
func TestATurnPassedOverIsReportedWhenALaterOneShows(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: longAnswer(), ChunkDelay: 25 * time.Millisecond})
	cfg := testConfig()
	cfg.TurnTakenTimeout = time.Minute // the looks never come within the test
	r := newRigWith(t, cfg, srv, actors.Spec{})
	seq := r.turn("one")
	r.ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.Seq > seq && e.State == messages.StateRunning })
	r.turn("two") // queued behind "one"
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, r.s.Interrupt(ctx))
	r.turn("three")
	user := r.ev.waitFor(t, messages.EventUserMessage, func(e *messages.Event) bool { return e.Text == "three" })
	e := r.ev.waitFor(t, messages.EventError, func(e *messages.Event) bool { return e.Code == messages.ErrorTurnNotTaken })
	assert.Equal(t, "two", e.Text)
	assert.Equal(t, user.Seq+1, e.Seq, "reported with the turn that passed it")
	assert.Contains(t, e.Message, "agy took a turn sent after it first")
}

// checksClock is a TestClock that keeps its timers of one delay, the
// sent turns' checks, on a TestClock of their own, to count those pending.
type checksClock struct {
	*actors.TestClock
	delay  time.Duration
	checks *actors.TestClock
}

func (c *checksClock) AfterFunc(d time.Duration, f func()) actors.Timer {
	if d == c.delay {
		return c.checks.AfterFunc(d, f)
	}
	return c.TestClock.AfterFunc(d, f)
}

// A turn agy took leaves no check of it pending: its timer is stopped once
// the turn shows, not left to run out TurnTakenTimeout (one per turn sent,
// which a driver sending turns quickly would pile up).
func TestATurnAgyTookLeavesNoCheckPending(t *testing.T) {
	cfg := testConfig()
	cfg.TurnTakenTimeout = 97 * time.Minute // no other timer of the session's is that long
	clock := &checksClock{TestClock: actors.NewTestClock(), delay: cfg.TurnTakenTimeout, checks: actors.NewTestClock()}
	cfg.Clock = clock
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say("Done.", 1))})
	r := newRigWith(t, cfg, srv, actors.Spec{})
	for _, text := range []string{"one", "two", "three"} {
		seq := r.turn(text)
		r.ev.waitFor(t, messages.EventUserMessage, func(e *messages.Event) bool { return e.Seq > seq && e.Text == text })
		r.ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.Seq > seq && e.State == messages.StateIdle })
	}
	require.Eventually(t, func() bool { return clock.checks.Pending() == 0 }, waitLong, 5*time.Millisecond,
		"checks pending after the turns showed: %d", clock.checks.Pending())
}
