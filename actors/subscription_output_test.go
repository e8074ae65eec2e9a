package actors

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
)

// TestSubscriptionCoalescesToolOutputDeltas: a lagging consumer gets a
// command's output deltas merged like text deltas (every byte kept, one
// call's apart from another's), and the function_call_output never merged.
func TestSubscriptionCoalescesToolOutputDeltas(t *testing.T) {
	p := &pumps{abandon: make(chan struct{})}
	sub := newSubscription(2, p)
	out := func(seq uint64, call, text string) *messages.Event {
		return &messages.Event{Type: messages.EventFunctionCallOutputDelta, Seq: seq, CallID: call, ItemID: "c/" + call + "/output", Delta: text}
	}
	sub.Push(&messages.Event{Type: messages.EventStatus, Seq: 1, State: "running"})
	seq := uint64(1)
	for i := 0; i < 8; i++ {
		seq++
		call := "1"
		if i%4 == 3 {
			call = "2" // another command's output, between
		}
		sub.Push(out(seq, call, fmt.Sprint(i, ";")))
	}
	seq++
	sub.Push(&messages.Event{Type: messages.EventFunctionCallOutput, Seq: seq, CallID: "1", Output: "0;1;2;4;5;6;"})
	sub.Finish()

	texts := map[string]string{}
	n, outputs := 0, 0
	for ev := range sub.C() {
		n++
		switch ev.Type {
		case messages.EventFunctionCallOutputDelta:
			require.Equal(t, "c/"+ev.CallID+"/output", ev.ItemID, "merged only within one call")
			texts[ev.CallID] += ev.Delta
		case messages.EventFunctionCallOutput:
			outputs++
		}
	}
	p.wg.Wait()
	require.Equal(t, "0;1;2;4;5;6;", texts["1"])
	require.Equal(t, "3;7;", texts["2"])
	require.Equal(t, 1, outputs)
	require.Less(t, n, 10, "deltas were merged")
	require.Greater(t, sub.Coalesced(), uint64(0))
}

// TestLogKeepsAToolOutputDeltaCompact: a command's output delta is kept in a
// delta's fields, its call id with it, and comes back as published.
func TestLogKeepsAToolOutputDeltaCompact(t *testing.T) {
	var wg sync.WaitGroup
	core := newSessionCore(Spec{SessionID: "log"}, Config{}.withDefaults(), &wg, &pumps{abandon: make(chan struct{})}, nil)
	ev := &messages.Event{Type: messages.EventFunctionCallOutputDelta, ID: "c/4/output@10", SessionID: "log", ConversationID: "c",
		Seq: 3, Time: time.Unix(1700000000, 5), ItemID: "c/4/output", CallID: "traj:4", Delta: "ok  w/db\n"}
	core.logEvent(ev)
	require.Nil(t, core.log[0].whole, "kept in a delta's fields")
	require.Equal(t, ev, core.logged()[0])

	text := &messages.Event{Type: messages.EventOutputTextDelta, ID: "c/3/text@0", SessionID: "log", ConversationID: "c",
		Seq: 4, ItemID: "c/3/message", CallID: "x", Delta: "hi"}
	core.logEvent(text)
	require.Same(t, text, core.log[1].whole, "a text delta with a call id is unusual: kept whole")
}
