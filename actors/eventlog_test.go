package actors

import (
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/require"
)

// TestEventLogKeepsTheLastEventsInOrder publishes past the log's bound and
// checks a resuming subscriber gets exactly the last EventLog events, in
// seq order.
func TestEventLogKeepsTheLastEventsInOrder(t *testing.T) {
	p := &pumps{abandon: make(chan struct{})}
	log := newEventLog("log", 5, 0)
	for i := range 13 {
		log.publish(&messages.Event{Type: messages.EventStatus, ID: fmt.Sprint("e", i)})
		if i == 3 {
			require.Len(t, log.logged(), 4, "below the bound the log grows")
		}
	}
	require.Equal(t, uint64(13), log.published.Load())
	sub := newSubscription(100, p)
	log.subscribe(sub, 9)
	log.close()
	var seqs []uint64
	for ev := range sub.C() {
		seqs = append(seqs, ev.Seq)
	}
	p.wg.Wait()
	require.Equal(t, []uint64{10, 11, 12, 13}, seqs)
	var all []uint64
	for _, ev := range log.logged() {
		all = append(all, ev.Seq)
	}
	require.Equal(t, []uint64{9, 10, 11, 12, 13}, all)
}

// TestEventLogReplaysOpenPromptsToLateSubscribers: a subscriber resuming
// after a prompt's request still gets the request while the prompt is open,
// once, and not after it was resolved; one that comes after the log is
// closed is closed at once.
func TestEventLogReplaysOpenPromptsToLateSubscribers(t *testing.T) {
	p := &pumps{abandon: make(chan struct{})}
	log := newEventLog("log", 2, 0)
	log.publish(&messages.Event{Type: messages.EventElicitationRequest, ID: "q1", ElicitationID: "e1"})
	log.publish(&messages.Event{Type: messages.EventElicitationRequest, ID: "q2", ElicitationID: "e2"})
	for i := range 3 {
		log.publish(&messages.Event{Type: messages.EventStatus, ID: fmt.Sprint("s", i)})
	}
	log.publish(&messages.Event{Type: messages.EventElicitationResolved, ID: "r2", ElicitationID: "e2"})
	late := newSubscription(100, p)
	log.subscribe(late, 0)
	log.close()
	var ids []string
	for ev := range late.C() {
		ids = append(ids, ev.ID)
	}
	require.Equal(t, []string{"s2", "r2", "q1"}, ids, "the log's last two, then the prompt still open")

	closed := newSubscription(100, p)
	log.subscribe(closed, 0)
	_, open := <-closed.C()
	require.False(t, open)
	p.wg.Wait()
}

// TestLogKeepsEveryFieldOfAnEvent logs a delta with each field of Event
// set in turn (and one with none of the others): a resuming subscriber
// gets each exactly as published, whether the log kept it in a delta's
// fields or whole. A field added to Event and not to deltaOnly fails here.
func TestLogKeepsEveryFieldOfAnEvent(t *testing.T) {
	log := newEventLog("log", 4096, 0)
	delta := func() *messages.Event {
		return &messages.Event{Type: messages.EventOutputTextDelta, ID: "c/3/text@10", SessionID: "log", ConversationID: "c",
			Seq: 1, Time: time.Unix(1700000000, 5), ItemID: "c/3/message", Delta: "more text"}
	}
	plain := delta()
	log.keep(plain)
	require.Nil(t, log.ring[0].whole, "a plain delta is kept in a delta's fields")
	require.Equal(t, plain, log.logged()[0])

	typ := reflect.TypeFor[messages.Event]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		ev := delta()
		v := reflect.ValueOf(ev).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			if f.Name == "Type" {
				v.SetString(string(messages.EventReasoningDelta))
			} else {
				v.SetString(v.String() + "x")
			}
		case reflect.Uint64:
			v.SetUint(v.Uint() + 1)
		case reflect.Int:
			v.SetInt(v.Int() + 1)
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		case reflect.Struct:
			v.Set(reflect.ValueOf(time.Unix(1800000000, 0)))
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", f.Name, v.Kind())
		}
		log.ring, log.start, log.n = nil, 0, 0
		log.keep(ev)
		require.Equal(t, ev, log.logged()[0], "with %s set", f.Name)
	}
}

// TestFullLogOfDeltas: a session's log full of streamed deltas (4,096, the
// default) holds about 1 MB, where whole events would take about 3 MB.
func TestFullLogOfDeltas(t *testing.T) {
	cfg := Config{}.withDefaults()
	log := newEventLog("log", cfg.EventLog, 0)
	text := strings.Repeat("a sentence of a long answer, ", 3)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	for i := range cfg.EventLog {
		log.keep(&messages.Event{Type: messages.EventOutputTextDelta, ID: benchConv + "/41/text@" + strconv.Itoa(i*len(text)),
			SessionID: "log", ConversationID: benchConv, Seq: uint64(i + 1), Time: time.Now(), ItemID: benchConv + "/41/message",
			Delta: strings.Clone(text)})
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapAlloc) - int64(before)
	t.Logf("a log of %d deltas holds %d bytes (%d a delta)", cfg.EventLog, held, held/int64(cfg.EventLog))
	require.Less(t, held, int64(2<<20), "whole events: 3.3 MB")
	runtime.KeepAlive(&log)
}

// TestLogKeepsAToolOutputDeltaCompact: a command's output delta is kept in a
// delta's fields, its call id with it, and comes back as published.
func TestLogKeepsAToolOutputDeltaCompact(t *testing.T) {
	log := newEventLog("log", 4096, 0)
	ev := &messages.Event{Type: messages.EventFunctionCallOutputDelta, ID: "c/4/output@10", SessionID: "log", ConversationID: "c",
		Seq: 3, Time: time.Unix(1700000000, 5), ItemID: "c/4/output", CallID: "traj:4", Delta: "ok  w/db\n"}
	log.keep(ev)
	require.Nil(t, log.ring[0].whole, "kept in a delta's fields")
	require.Equal(t, ev, log.logged()[0])

	text := &messages.Event{Type: messages.EventOutputTextDelta, ID: "c/3/text@0", SessionID: "log", ConversationID: "c",
		Seq: 4, ItemID: "c/3/message", CallID: "x", Delta: "hi"}
	log.keep(text)
	require.Same(t, text, log.ring[1].whole, "a text delta with a call id is unusual: kept whole")
}

// TestEventLogHoldsItsByteBudget: whole events of a few hundred bytes,
// far fewer than the log's count, fill its budget in bytes: the log keeps
// the newest ones, in order, and holds about its budget (the ring's slots
// counted in); an event larger than the whole budget is still kept, alone.
func TestEventLogHoldsItsByteBudget(t *testing.T) {
	const budget = 64 << 10
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	log := newEventLog("log", 4096, budget)
	for i := range 3000 {
		log.publish(&messages.Event{Type: messages.EventMessage, ID: fmt.Sprint("c/", i, "/message"), Text: strings.Repeat("x", 300)})
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapAlloc) - int64(before)
	kept := log.logged()
	t.Logf("%d events kept in %d bytes (estimated %d)", len(kept), held, len(log.ring)*logEntrySize+log.bytes)
	require.Less(t, len(kept), 3000)
	require.Greater(t, len(kept), 10)
	for i, ev := range kept {
		require.Equal(t, uint64(3000-len(kept)+i+1), ev.Seq, "the newest, in order")
	}
	require.LessOrEqual(t, len(log.ring)*logEntrySize+log.bytes, budget)
	require.Less(t, held, int64(budget+budget/2), "what the log holds is about its budget")

	huge := &messages.Event{Type: messages.EventMessage, ID: "c/huge/message", Text: strings.Repeat("y", 2*budget)}
	log.publish(huge)
	require.Equal(t, []*messages.Event{huge}, log.logged(), "the newest event is kept, whatever its size")
	log.publish(&messages.Event{Type: messages.EventStatus, ID: "s"})
	require.Len(t, log.logged(), 1, "and let go of when the next one needs the room")
	runtime.KeepAlive(&log)
}

// TestEventLogRemembersTheLatestResolvedPrompts: the prompts resolved are
// remembered (an answer to one is refused as already resolved) up to
// maxResolved, the oldest forgotten first: a session of many prompts
// holds a bounded set.
func TestEventLogRemembersTheLatestResolvedPrompts(t *testing.T) {
	log := newEventLog("log", 16, 0)
	for i := range maxResolved + 10 {
		id := fmt.Sprint("e", i)
		log.publish(&messages.Event{Type: messages.EventElicitationRequest, ID: "q" + id, ElicitationID: id})
		log.publish(&messages.Event{Type: messages.EventElicitationResolved, ID: "r" + id, ElicitationID: id})
	}
	require.Len(t, log.resolved, maxResolved)
	require.False(t, log.resolved["e9"], "the oldest forgotten")
	require.True(t, log.resolved["e10"])
	require.True(t, log.resolved[fmt.Sprint("e", maxResolved+9)])
	require.Empty(t, log.openRequests)
}
