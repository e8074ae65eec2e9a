package actors

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

func TestSessionDecider(t *testing.T) {
	cases := []struct {
		reason any
		want   verdict
	}{
		{&failure{Actor: "stream", Err: rpc.ErrPortGone}, rediscover},
		{&failure{Actor: "stream", Err: fmt.Errorf("wrapped: %w", rpc.ErrCertificateChanged)}, rediscover},
		{&failure{Actor: "poller", Err: rpc.ErrTrajectoryNotFound}, rediscover},
		{&failure{Actor: "stream", Err: errStreamEnded}, restartChild},
		{&failure{Actor: "stream", Err: errors.New("503 unavailable")}, restartChild},
		{&failure{Actor: "x", Err: fmt.Errorf("%w: no such host", errBadConfig)}, stopChild},
		{"a panic in our own code", restartChild},
	}
	for _, c := range cases {
		require.Equal(t, c.want, sessionDecider(c.reason), "%v", c.reason)
	}
	require.Equal(t, actor.StopDirective, hostDecider(errBadConfig))
	require.Equal(t, actor.RestartDirective, hostDecider("boom"))
}

func TestBackoffIsCappedExponential(t *testing.T) {
	min, max := 10*time.Millisecond, 100*time.Millisecond
	got := []time.Duration{}
	for n := 1; n <= 6; n++ {
		got = append(got, backoff(n, min, max))
	}
	require.Equal(t, []time.Duration{10, 20, 40, 80, 100, 100}, scale(got, time.Millisecond))
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}

func delta(seq uint64, item, text string) *messages.Event {
	return &messages.Event{Type: messages.EventOutputTextDelta, Seq: seq, ID: fmt.Sprint("d", seq), ItemID: item, Delta: text}
}

func TestTicksFallOnASharedGrid(t *testing.T) {
	base := time.Unix(1_800_000_000, 123_456_789)
	for _, d := range []time.Duration{200 * time.Millisecond, 2 * time.Second, 10 * time.Second, 300 * time.Millisecond} {
		grid := min(d/20, maxTickSlack)
		var fires []int64
		for i := range 50 {
			now := base.Add(time.Duration(i) * 7919 * time.Microsecond)
			got := alignedDelay(now, d)
			require.GreaterOrEqual(t, got, d, "d=%v: never early", d)
			require.Less(t, got-d, grid, "d=%v: late by less than the grid", d)
			fire := now.Add(got).UnixNano()
			require.Zero(t, fire%int64(grid), "d=%v: on the grid", d)
			fires = append(fires, fire)
		}
		distinct := map[int64]bool{}
		for _, f := range fires {
			distinct[f] = true
		}
		// 50 ticks asked within 0.4 s fall on the few grid points there.
		require.LessOrEqual(t, len(distinct), int(400*time.Millisecond/grid)+2, "d=%v", d)
	}
	// Below a grid of a millisecond (the tests' intervals), no rounding.
	require.Equal(t, 15*time.Millisecond, alignedDelay(base, 15*time.Millisecond))
}

func TestSubscriptionCoalescesDeltasNeverItems(t *testing.T) {
	p := &pumps{abandon: make(chan struct{})}
	sub := newSubscription(2, p)
	// Nobody reads yet: the pump holds one event; the queue grows.
	sub.push(&messages.Event{Type: messages.EventStatus, Seq: 1, State: "running"})
	for i := uint64(2); i <= 10; i++ {
		sub.push(delta(i, "a", fmt.Sprint(i, " ")))
	}
	sub.push(&messages.Event{Type: messages.EventMessage, Seq: 11, ItemID: "a", Text: "all"})
	sub.push(delta(12, "b", "x"))
	sub.push(&messages.Event{Type: messages.EventOutputTextDelta, Seq: 13, ItemID: "b", Snapshot: "rewritten"})
	sub.finish()

	var got []*messages.Event
	for ev := range sub.C() {
		got = append(got, ev)
	}
	p.wg.Wait()
	var text string
	var types []messages.EventType
	for _, ev := range got {
		types = append(types, ev.Type)
		if ev.ItemID == "a" && ev.Type == messages.EventOutputTextDelta {
			text += ev.Delta
		}
	}
	require.Equal(t, "2 3 4 5 6 7 8 9 10 ", text, "coalesced deltas keep every byte")
	require.Less(t, len(got), 13, "deltas were merged")
	require.Contains(t, types, messages.EventMessage)
	require.Equal(t, messages.EventStatus, got[0].Type)
	last := got[len(got)-1]
	require.Equal(t, "rewritten", last.Snapshot)
	require.Equal(t, uint64(13), last.Seq)
	for i := 1; i < len(got); i++ {
		require.Greater(t, got[i].Seq, got[i-1].Seq)
	}
	require.Greater(t, sub.Coalesced(), uint64(0))
}

// TestSubscriptionKeepsOrderAcrossHandoffs: a consumer that sometimes waits
// on C (events handed over by Push itself) and sometimes lags (events
// queued for the pump) still gets every event once, in order.
func TestSubscriptionKeepsOrderAcrossHandoffs(t *testing.T) {
	p := &pumps{abandon: make(chan struct{})}
	sub := newSubscription(1<<30, p) // never coalesce: count every event
	const n = 20000
	got := make(chan []uint64)
	go func() {
		var seqs []uint64
		for ev := range sub.C() {
			seqs = append(seqs, ev.Seq)
			if ev.Seq%1000 < 3 {
				time.Sleep(100 * time.Microsecond) // lag now and then
			}
		}
		got <- seqs
	}()
	for i := uint64(1); i <= n; i++ {
		require.True(t, sub.push(delta(i, "a", "x")))
		if i%7 == 0 {
			runtime.Gosched() // let the consumer catch up and wait on C
		}
	}
	sub.finish()
	seqs := <-got
	p.wg.Wait()
	require.Len(t, seqs, n)
	for i, seq := range seqs {
		require.Equal(t, uint64(i+1), seq)
	}
}

// TestSubscriptionHandsOverWithoutThePump: events pushed while the
// consumer waits on C are handed over by Push itself, not by the pump.
func TestSubscriptionHandsOverWithoutThePump(t *testing.T) {
	synctest.Test(t, testSubscriptionHandsOverWithoutThePump)
}

func testSubscriptionHandsOverWithoutThePump(t *testing.T) {
	p := &pumps{abandon: make(chan struct{})}
	sub := newSubscription(4, p)
	got := make(chan *messages.Event)
	go func() {
		for ev := range sub.C() {
			got <- ev
		}
		close(got)
	}()
	handedOver := func() uint64 {
		sub.mu.Lock()
		defer sub.mu.Unlock()
		return sub.handedOver
	}
	// Once every goroutine in the bubble is blocked (synctest.Wait), the
	// consumer waits on C and the pump has nothing in flight: each push
	// hands its event over itself.
	for seq := uint64(1); seq <= 3; seq++ {
		synctest.Wait()
		require.True(t, sub.push(delta(seq, "a", "x")))
		require.Equal(t, seq, handedOver(), "the event went straight to the consumer")
		require.Equal(t, seq, (<-got).Seq)
	}
	sub.finish()
	_, open := <-got
	require.False(t, open)
	p.wg.Wait()
}

func TestSubscriptionClosedByConsumerStopsTakingEvents(t *testing.T) {
	p := &pumps{abandon: make(chan struct{})}
	sub := newSubscription(4, p)
	require.True(t, sub.push(delta(1, "a", "x")))
	sub.Close()
	p.wg.Wait()
	require.False(t, sub.push(delta(2, "a", "y")))
}

func summary(parent, root, lastInput string) rpc.TrajectorySummary {
	return rpc.TrajectorySummary{
		TrajectoryMetadata: rpc.TrajectoryMetadata{ParentConversationID: parent, RootConversationID: root},
		LastUserInputTime:  lastInput,
	}
}

func TestMostRecentRootSkipsChildren(t *testing.T) {
	all := map[string]rpc.TrajectorySummary{
		"old":   summary("", "", "2026-01-01T00:00:00Z"),
		"new":   summary("", "new", "2026-01-02T00:00:00Z"),
		"child": summary("new", "new", "2026-01-03T00:00:00Z"),
	}
	id, ok := mostRecentRoot(all)
	require.True(t, ok)
	require.Equal(t, "new", id)
	_, ok = mostRecentRoot(map[string]rpc.TrajectorySummary{"c": summary("p", "p", "")})
	require.False(t, ok)
	// A fresh agy: one root conversation without times.
	id, ok = mostRecentRoot(map[string]rpc.TrajectorySummary{"fresh": summary("", "", "")})
	require.True(t, ok)
	require.Equal(t, "fresh", id)
}

// listedMap is a conversationList of a map.
type listedMap map[string]listedConv

func (m listedMap) Len() int { return len(m) }
func (m listedMap) Get(conv string) (listedConv, bool) {
	c, ok := m[conv]
	return c, ok
}
func (m listedMap) All() iter.Seq2[string, listedConv] { return maps.All(m) }

// listedAs is what the rotation watcher keeps of a read of all.
func listedAs(all map[string]rpc.TrajectorySummary) listedMap {
	m := listedMap{}
	for id, s := range all {
		m[id] = listedOf(id, s)
	}
	return m
}

func TestRotationRule(t *testing.T) {
	w := &rotationWatcher{child: child{conv: "a"}}
	first := map[string]rpc.TrajectorySummary{
		"a":     summary("", "", "2026-01-02T00:00:00Z"),
		"older": summary("", "", "2026-01-01T00:00:00Z"),
	}
	_, _, ok := w.rotationTarget(listedAs(first))
	require.False(t, ok, "nothing newer at the first read")

	withChild := map[string]rpc.TrajectorySummary{
		"a":     first["a"],
		"older": first["older"],
		"kid":   summary("a", "a", "2026-01-05T00:00:00Z"),
	}
	_, _, ok = w.rotationTarget(listedAs(withChild))
	require.False(t, ok, "a subagent child is never a rotation")

	cleared := map[string]rpc.TrajectorySummary{
		"a":     first["a"],
		"older": first["older"],
		"kid":   withChild["kid"],
		"fresh": summary("", "", ""), // just minted by /clear: no times yet
	}
	to, isNew, ok := w.rotationTarget(listedAs(cleared))
	require.True(t, ok)
	require.Equal(t, "fresh", to)
	require.True(t, isNew, "it appeared after the first read: all of it happened while watched")

	// Bound to a conversation just minted (no times): older activity
	// elsewhere is history, newer activity is a rotation.
	bound := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	w2 := &rotationWatcher{child: child{conv: "fresh"}, started: bound}
	active := map[string]rpc.TrajectorySummary{
		"fresh": summary("", "", ""),
		"a":     summary("", "", "2026-01-09T00:00:00Z"),
	}
	_, _, ok = w2.rotationTarget(listedAs(active))
	require.False(t, ok, "activity before the binding is not a rotation back")
	active["a"] = summary("", "", "2026-01-11T00:00:00Z")
	to, isNew, ok = w2.rotationTarget(listedAs(active))
	require.True(t, ok, "a root strictly more recently active than the binding rotates")
	require.Equal(t, "a", to)
	require.False(t, isNew, "a conversation known from the first read has a history")
}

func TestRecommendedModel(t *testing.T) {
	cat := map[string]wire.ModelInfo{
		"M2": {Model: "M2"}, "M1": {Model: "M1"}, "M3": {Model: "M3", Recommended: true},
	}
	require.Equal(t, "M3", recommended(cat))
	delete(cat, "M3")
	require.Equal(t, "M1", recommended(cat))
	require.Equal(t, "", recommended(nil))
}

func TestParseReadMode(t *testing.T) {
	for _, m := range []ReadMode{ReadBoth, ReadStream, ReadPoll} {
		got, err := ParseReadMode(string(m))
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	for _, s := range []string{"", "Both", "sometimes"} {
		_, err := ParseReadMode(s)
		require.ErrorContains(t, err, "want both, stream or poll", "%q", s)
	}
}

// Proto.Actor goes on delivering a stopping actor's queued messages while
// its children stop. A report queued behind the Poison that would spawn
// children (a port found: stream, poller, rotation, turns) must not: a
// child spawned then is never stopped, and the session never ends (the
// attach e2e test's detach hung on a prompt's interaction this way).
func TestASessionStopsWhateverItsMailboxHolds(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{ChunkDelay: time.Millisecond})
	host := NewHost(Config{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, host.Shutdown(ctx))
	})
	s, err := host.Attach(t.Context(), Spec{Port: srv.Port()})
	require.NoError(t, err)
	events := s.Events()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range events {
		}
	}()
	t.Cleanup(func() { <-drained })
	root := s.shared.system.Root
	root.Poison(s.pid)
	// The first binding's generation: the session takes it as a new port.
	root.Send(s.pid, &messages.PortFound{Gen: 1, Port: srv.Port()})
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not stop")
	}
}

// A request whose reply the session owes, queued behind the Poison (an
// interrupt that met agy's port gone, a turn not sent), is refused, not
// left to its caller's deadline.
func TestASessionThatStopsRefusesTheRepliesItOwes(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{ChunkDelay: time.Millisecond})
	host := NewHost(Config{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, host.Shutdown(ctx))
	})
	s, err := host.Attach(t.Context(), Spec{Port: srv.Port()})
	require.NoError(t, err)
	events, drained := s.Events(), make(chan struct{})
	go func() {
		defer close(drained)
		for range events {
		}
	}()
	t.Cleanup(func() { <-drained })
	root := s.shared.system.Root
	interrupt, turn := actor.NewFuture(root.ActorSystem(), 5*time.Second), actor.NewFuture(root.ActorSystem(), 5*time.Second)
	root.Poison(s.pid)
	root.Send(s.pid, &interruptNotDone{gen: 1, reply: interrupt.PID()})
	root.Send(s.pid, &turnNotSent{msg: &messages.RunTurn{Text: "hi"}, reply: turn.PID()})
	for name, f := range map[string]*actor.Future{"interrupt": interrupt, "turn": turn} {
		res, err := f.Result()
		require.NoError(t, err, "%s: no reply", name)
		require.ErrorIs(t, res.(*messages.TurnResult).Err, ErrSessionEnded, name)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not stop")
	}
}
