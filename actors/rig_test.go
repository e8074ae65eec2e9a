package actors_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/require"
)

// testConfig runs every interval in milliseconds so the tests wait on
// conditions, not on clocks.
func testConfig() actors.Config {
	return actors.Config{
		PollFast:            20 * time.Millisecond,
		PollSlow:            300 * time.Millisecond,
		RotationInterval:    40 * time.Millisecond,
		SubagentPoll:        20 * time.Millisecond,
		DiscoveryBackoffMin: 10 * time.Millisecond,
		DiscoveryBackoffMax: 100 * time.Millisecond,
		LostAfter:           300 * time.Millisecond,
		GiveUpAfter:         3 * time.Second,
		RestartBackoffMin:   10 * time.Millisecond,
		RestartBackoffMax:   100 * time.Millisecond,
		DeliveryAttempts:    2,
		InterruptDeadline:   5 * time.Second,
		PromptRetryWait:     5 * time.Second,
		// Short, so that every test's turns are checked for being taken: a
		// turn_not_taken error where agy took the turn fails the tests
		// that expect no error.
		TurnTakenTimeout: 300 * time.Millisecond,
		Logger:           testLogger(),
	}
}

// testLogger logs to stderr when AGYHARNESS_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("AGYHARNESS_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

const waitLong = 15 * time.Second

// collector reads a session's events into a slice that tests wait on.
type collector struct {
	mu     sync.Mutex
	evs    []*messages.Event
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func collect(ch <-chan *messages.Event) *collector {
	c := &collector{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ev := range ch {
			c.mu.Lock()
			c.evs = append(c.evs, ev)
			c.mu.Unlock()
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	}()
	return c
}

func (c *collector) all() []*messages.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*messages.Event(nil), c.evs...)
}

// wait blocks until pred holds over the events so far, or fails the test.
func (c *collector) wait(t *testing.T, what string, pred func([]*messages.Event) bool) []*messages.Event {
	t.Helper()
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	for {
		evs := c.all()
		if pred(evs) {
			return evs
		}
		select {
		case <-c.wake:
		case <-time.After(50 * time.Millisecond):
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; events:\n%s", what, dump(c.all()))
		}
	}
}

// waitFor waits for an event of type typ matching pred, and returns it.
func (c *collector) waitFor(t *testing.T, typ messages.EventType, pred func(*messages.Event) bool) *messages.Event {
	t.Helper()
	var found *messages.Event
	c.wait(t, string(typ), func(evs []*messages.Event) bool {
		for _, ev := range evs {
			if ev.Type == typ && (pred == nil || pred(ev)) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// waitIdleAfter waits for a status idle event of the root conversation (a
// subagent's idle does not end the turn) after seq.
func (c *collector) waitIdleAfter(t *testing.T, seq uint64) *messages.Event {
	t.Helper()
	return c.waitFor(t, messages.EventStatus, func(ev *messages.Event) bool {
		return ev.State == messages.StateIdle && ev.Seq > seq && ev.ParentConversationID == ""
	})
}

func (c *collector) lastSeq() uint64 {
	evs := c.all()
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

func dump(evs []*messages.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "  %d %s id=%s", ev.Seq, ev.Type, ev.ID)
		switch ev.Type {
		case messages.EventStatus:
			fmt.Fprintf(&b, " %s", ev.State)
		case messages.EventMessage, messages.EventUserMessage:
			fmt.Fprintf(&b, " %q", trunc(ev.Text))
		case messages.EventOutputTextDelta, messages.EventReasoningDelta:
			fmt.Fprintf(&b, " %q", trunc(ev.Delta+ev.Snapshot))
		case messages.EventError:
			fmt.Fprintf(&b, " %q", ev.Message)
		case messages.EventElicitationResolved:
			fmt.Fprintf(&b, " %s by %s", ev.Action, ev.By)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// rig is one fake agy, one host, one attached session.
type rig struct {
	t    *testing.T
	srv  *agytest.Server
	host *actors.Host
	s    *actors.Session
	ev   *collector
}

func newRig(t *testing.T, opts agytest.Options, spec actors.Spec) *rig {
	t.Helper()
	if opts.ChunkDelay == 0 {
		opts.ChunkDelay = time.Millisecond
	}
	return newRigOn(t, agytest.Start(t, opts), spec)
}

func newRigOn(t *testing.T, srv *agytest.Server, spec actors.Spec) *rig {
	t.Helper()
	return newRigWith(t, testConfig(), srv, spec)
}

// newHost starts a host configured by cfg, shut down when the test ends
// (every event channel then closes, and nothing is left running).
func newHost(t *testing.T, cfg actors.Config) *actors.Host {
	t.Helper()
	host := actors.NewHost(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, host.Shutdown(ctx))
	})
	return host
}

// attach attaches a session to the agy spec names, within waitLong.
func attach(t *testing.T, host *actors.Host, spec actors.Spec) *actors.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	s, err := host.Attach(ctx, spec)
	require.NoError(t, err)
	return s
}

// collectUntilShutdown collects a session's events; the test's end waits
// for its channel to close (call it before newHost: cleanups run last
// first).
func collectUntilShutdown(t *testing.T) func(*actors.Session) *collector {
	t.Helper()
	var c *collector
	t.Cleanup(func() {
		if c != nil {
			<-c.done
		}
	})
	return func(s *actors.Session) *collector {
		c = collect(s.Events())
		return c
	}
}

// newRigWith is newRigOn with a host configured by cfg.
func newRigWith(t *testing.T, cfg actors.Config, srv *agytest.Server, spec actors.Spec) *rig {
	t.Helper()
	events := collectUntilShutdown(t)
	r := &rig{t: t, srv: srv, host: newHost(t, cfg)}
	if spec.PID == 0 && spec.Port == 0 && spec.LogFile == "" {
		spec.Port = srv.Port()
	}
	r.s = attach(t, r.host, spec)
	r.ev = events(r.s)
	// The first read of a quiet agy ends in idle; tests start from there.
	r.ev.waitFor(t, messages.EventStatus, func(ev *messages.Event) bool { return ev.State == messages.StateIdle })
	return r
}

// conversationsBut are the fake's conversations other than those named:
// the subagent children, when the root (and a rotation's target) are named.
func (r *rig) conversationsBut(not ...string) []string {
	var out []string
	for _, c := range r.srv.Conversations() {
		if !slices.Contains(not, c) {
			out = append(out, c)
		}
	}
	return out
}

func (r *rig) turn(text string) uint64 {
	r.t.Helper()
	seq := r.ev.lastSeq()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(r.t, r.s.SendTurn(ctx, text, ""))
	return seq
}

func (r *rig) resolve(res messages.Resolve) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	return r.s.Resolve(ctx, res)
}

// itemsOnce checks the no-loss-no-duplicate guarantee against the fake's
// ground truth: every committed planner text step yields exactly one
// message, every committed tool step one function_call and one
// function_call_output, every user turn one user_message, and no item id
// appears twice.
func itemsOnce(t *testing.T, srv *agytest.Server, conv string, evs []*messages.Event) {
	t.Helper()
	ids := map[string]int{}
	count := map[messages.EventType]int{}
	for _, ev := range evs {
		if ev.ConversationID != conv {
			continue
		}
		switch ev.Type {
		case messages.EventMessage, messages.EventUserMessage, messages.EventFunctionCall, messages.EventFunctionCallOutput:
			ids[ev.ID]++
			count[ev.Type]++
		}
	}
	for id, n := range ids {
		require.Equalf(t, 1, n, "item %s emitted %d times", id, n)
	}
	want := map[messages.EventType]int{}
	for _, st := range srv.GroundTruth(conv) {
		switch st.Type {
		case wire.StepUserInput:
			want[messages.EventUserMessage]++
		case wire.StepPlannerResponse:
			// A planner step that ended (DONE, or cut by an interrupt) with
			// text is committed as one message.
			if st.Status.Terminal() && st.PlannerResponse != nil &&
				(st.PlannerResponse.Response != "" || st.PlannerResponse.ModifiedResponse != "") {
				want[messages.EventMessage]++
			}
		case wire.StepRunCommand, wire.StepViewFile, wire.StepListDirectory, wire.StepGeneric, wire.StepAskQuestion, wire.StepInvokeSubagent:
			want[messages.EventFunctionCall]++
			want[messages.EventFunctionCallOutput]++
		}
	}
	for _, typ := range []messages.EventType{messages.EventUserMessage, messages.EventMessage, messages.EventFunctionCall, messages.EventFunctionCallOutput} {
		require.Equalf(t, want[typ], count[typ], "%s: ground truth has %d, the session emitted %d\n%s", typ, want[typ], count[typ], dump(evs))
	}
}

// deltasPrefix checks that each item's deltas concatenate to a prefix of
// its committed message (a snapshot restarts the text).
func deltasPrefix(t *testing.T, evs []*messages.Event) {
	t.Helper()
	text := map[string]string{}
	for _, ev := range evs {
		switch ev.Type {
		case messages.EventOutputTextDelta:
			if ev.Snapshot != "" {
				text[ev.ItemID] = ev.Snapshot
			} else {
				text[ev.ItemID] += ev.Delta
			}
		case messages.EventMessage:
			got := text[ev.ItemID]
			require.Truef(t, strings.HasPrefix(ev.Text, got), "deltas of %s are not a prefix of its message:\n%q\n%q", ev.ItemID, got, ev.Text)
		}
	}
}

func ofType(evs []*messages.Event, typ messages.EventType) []*messages.Event {
	var out []*messages.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// dumpLazy prints a collector's events when formatted (for failure messages
// built before the failure).
type dumpLazy struct{ c *collector }

func (d dumpLazy) String() string { return dump(d.c.all()) }

// advanceUntil moves clock forward by step every few milliseconds until
// done holds (a timeout or backoff of step on the host's clock passes at
// once), or fails the test after waitLong.
func advanceUntil(t *testing.T, clock *actors.TestClock, step time.Duration, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		clock.Advance(step)
		time.Sleep(5 * time.Millisecond) // paces the loop: the condition is polled, with a deadline
	}
}

// closed says whether ch is closed.
func closed(ch <-chan struct{}) func() bool {
	return func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}
