package mapper

import "github.com/agyharness/agyharness/wire"

// Child is a subagent conversation spawned by an INVOKE_SUBAGENT step.
type Child struct {
	ConversationID  string
	ParentStepIndex int  // the INVOKE_SUBAGENT step that spawned it
	ParentTerminal  bool // that step is terminal: once the child is idle too, it is over
}

// ChildConversations lists the child conversation ids an INVOKE_SUBAGENT
// step names (invokeSubagent.results[].conversationId), without empties or
// repeats. Other steps name none.
func ChildConversations(step *wire.Step) []string {
	if step == nil || step.Type != wire.StepInvokeSubagent || step.InvokeSubagent == nil {
		return nil
	}
	var ids []string
	for _, r := range step.InvokeSubagent.Results {
		if r.ConversationID == "" {
			continue
		}
		dup := false
		for _, id := range ids {
			if id == r.ConversationID {
				dup = true
				break
			}
		}
		if !dup {
			ids = append(ids, r.ConversationID)
		}
	}
	return ids
}

// noteChildren records the children of an INVOKE_SUBAGENT step at index.
func (r *Reconciler) noteChildren(index int, step *wire.Step) {
	terminal := step.Status.Terminal()
	for _, id := range ChildConversations(step) {
		if i, ok := r.childAt[id]; ok {
			if terminal {
				r.children[i].ParentTerminal = true
			}
			continue
		}
		r.childAt[id] = len(r.children)
		r.children = append(r.children, Child{ConversationID: id, ParentStepIndex: index, ParentTerminal: terminal})
	}
	if terminal {
		for i := range r.children {
			if r.children[i].ParentStepIndex == index {
				r.children[i].ParentTerminal = true
			}
		}
	}
}

// Children lists the subagent child conversations seen so far, in the order
// they appeared.
func (r *Reconciler) Children() []Child {
	return append([]Child(nil), r.children...)
}
