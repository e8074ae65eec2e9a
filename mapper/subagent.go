package mapper

import (
	"strings"

	"github.com/agyharness/agyharness/wire"
)

// Child is a subagent conversation spawned by an INVOKE_SUBAGENT step.
type Child struct {
	ConversationID  string
	ParentStepIndex int    // the INVOKE_SUBAGENT step that spawned it
	ParentTerminal  bool   // that step is terminal: once the child is idle too, it is over
	Title           string // its role (invokeSubagent.subagents[i].role), else its type name, else ""
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
		r.children = append(r.children, Child{ConversationID: id, Title: childTitles(step)[id], ParentStepIndex: index, ParentTerminal: terminal})
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

// ChildrenSince lists the children after the first n (those that appeared
// since Children or ChildrenSince returned n of them: the list only grows),
// and how many there are now.
func (r *Reconciler) ChildrenSince(n int) ([]Child, int) {
	if n >= len(r.children) {
		return nil, len(r.children)
	}
	return append([]Child(nil), r.children[n:]...), len(r.children)
}

// Child is the child conversation id, if the reconciler has seen it.
func (r *Reconciler) Child(id string) (Child, bool) {
	i, ok := r.childAt[id]
	if !ok {
		return Child{}, false
	}
	return r.children[i], true
}

// childTitles gives each child an INVOKE_SUBAGENT step names its title:
// the role of the subagent at the same position in invokeSubagent.subagents
// (agy 1.1.9 fills results in positionally), else its type name.
func childTitles(step *wire.Step) map[string]string {
	out := map[string]string{}
	if step == nil || step.InvokeSubagent == nil {
		return out
	}
	is := step.InvokeSubagent
	for i, res := range is.Results {
		if res.ConversationID == "" || i >= len(is.Subagents) {
			continue
		}
		title := is.Subagents[i].Role
		if title == "" {
			title = is.Subagents[i].TypeName
		}
		if title != "" {
			out[res.ConversationID] = clip(title, 200)
		}
	}
	return out
}

// subagentsTitle is the title of an INVOKE_SUBAGENT call that lists its
// subagents (agy 1.1.9): their roles ("" when it lists none).
func subagentsTitle(step *wire.Step) string {
	if step == nil || step.InvokeSubagent == nil || len(step.InvokeSubagent.Subagents) == 0 {
		return ""
	}
	var roles []string
	for _, sp := range step.InvokeSubagent.Subagents {
		switch {
		case sp.Role != "":
			roles = append(roles, sp.Role)
		case sp.TypeName != "":
			roles = append(roles, sp.TypeName)
		default:
			roles = append(roles, "subagent")
		}
	}
	if len(roles) == 1 {
		return clip("Subagent "+oneLine(roles[0]), 200)
	}
	return clip("Subagents: "+oneLine(strings.Join(roles, ", ")), 200)
}
