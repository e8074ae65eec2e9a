package actors

import (
	"fmt"
	"testing"

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
	sub.push(&messages.Event{Type: messages.EventStatus, Seq: 1, State: "running"})
	seq := uint64(1)
	for i := 0; i < 8; i++ {
		seq++
		call := "1"
		if i%4 == 3 {
			call = "2" // another command's output, between
		}
		sub.push(out(seq, call, fmt.Sprint(i, ";")))
	}
	seq++
	sub.push(&messages.Event{Type: messages.EventFunctionCallOutput, Seq: seq, CallID: "1", Output: "0;1;2;4;5;6;"})
	sub.finish()

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
