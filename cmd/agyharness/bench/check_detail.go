package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// itemStepIndex reads the step index out of an item id of conv, with or
// without a rewind's epoch (conversation[/r<k>]/index/kind).
func itemStepIndex(id, conv string) (int, bool) {
	rest, ok := strings.CutPrefix(id, conv+"/")
	if !ok {
		return 0, false
	}
	if r, ok := strings.CutPrefix(rest, "r"); ok {
		if _, after, found := strings.Cut(r, "/"); found {
			rest = after
		}
	}
	n, _, _ := strings.Cut(rest, "/")
	i, err := strconv.Atoi(n)
	return i, err == nil
}

// missingItems names the steps of the conversation's trajectory (steps, by
// index) that call for an item of type t of which the session emitted none
// at that index, and shows the events around the first, for a report of
// lost items.
func missingItems(evs []*messages.Event, steps []wire.Step, conv string, t messages.EventType) string {
	seen := map[int]bool{}
	for _, ev := range evs {
		if ev.ConversationID == conv && ev.Type == t {
			if i, ok := itemStepIndex(ev.ID, conv); ok {
				seen[i] = true
			}
		}
	}
	var missing []int
	for i := range steps {
		if expected(steps[i : i+1])[t] > 0 && !seen[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n    no %s for step(s)", t)
	for _, i := range missing[:min(len(missing), 20)] {
		fmt.Fprintf(&b, " %d (%s %s)", i, steps[i].Type, steps[i].Status)
	}
	first := missing[0]
	b.WriteString(orderContext(evs, steps, conv, max(0, first-2), min(len(steps)-1, first+2)))
	return b.String()
}
