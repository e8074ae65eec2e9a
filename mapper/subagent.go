package mapper

import (
	"hash/maphash"
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
// A child forgotten (ForgetChild) stays forgotten: every copy of its step
// names it again, and a new stream's first frame carries every step.
func (r *Reconciler) noteChildren(index int, step *wire.Step) {
	terminal := step.Status.Terminal()
	for _, id := range ChildConversations(step) {
		if i, ok := r.childAt[id]; ok {
			if terminal {
				r.children[i-r.childBase].ParentTerminal = true
			}
			continue
		}
		if r.isForgotten(id) {
			continue
		}
		r.childAt[id] = r.childBase + len(r.children)
		r.children = append(r.children, Child{ConversationID: id, Title: childTitles(step)[id], ParentStepIndex: index, ParentTerminal: terminal})
	}
	if terminal {
		for i := range r.children {
			if r.children[i].ParentStepIndex == index && r.children[i].ConversationID != "" {
				r.children[i].ParentTerminal = true
			}
		}
	}
}

// Children lists the subagent child conversations seen so far and not
// forgotten, in the order they appeared.
func (r *Reconciler) Children() []Child {
	return r.childrenFrom(0)
}

// childrenFrom is Children after the first n seen.
func (r *Reconciler) childrenFrom(n int) []Child {
	var out []Child
	for _, c := range r.children[max(n-r.childBase, 0):] {
		if c.ConversationID != "" {
			out = append(out, c)
		}
	}
	return out
}

// ChildrenSince lists the children seen after the first n, leaving out
// those forgotten, and how many have been seen now (a count that only
// grows, forgotten ones included): given the count it returned, it lists
// the children that appeared since.
func (r *Reconciler) ChildrenSince(n int) ([]Child, int) {
	seen := r.childBase + len(r.children)
	if n >= seen {
		return nil, seen
	}
	return r.childrenFrom(n), seen
}

// Child is the child conversation id, if the reconciler has seen it. A
// child forgotten is reported with its parent step terminal, and nothing
// else.
func (r *Reconciler) Child(id string) (Child, bool) {
	i, ok := r.childAt[id]
	if !ok {
		if r.isForgotten(id) {
			return Child{ConversationID: id, ParentTerminal: true}, true
		}
		return Child{}, false
	}
	return r.children[i-r.childBase], true
}

// ForgetChild lets go of what the reconciler keeps of a child whose parent
// step is terminal, once nothing more is to be read of it (its caller has
// mirrored it to its end): what stays is a hash of its id, so that it is
// not taken for a new child when its step comes again (a new child whose
// id shared that hash would be taken for it: odds below 1e-7 even at a
// million children). Up to
// Config.Fingerprints children are forgotten; past that, a child is kept
// whole. A child whose parent step is not terminal is kept.
func (r *Reconciler) ForgetChild(id string) {
	i, ok := r.childAt[id]
	if !ok || !r.children[i-r.childBase].ParentTerminal || len(r.forgotten) >= r.maxPast {
		return
	}
	if r.forgotten == nil {
		r.forgotten = make(map[uint64]struct{})
	}
	r.forgotten[childPrint(id)] = struct{}{}
	delete(r.childAt, id)
	r.children[i-r.childBase] = Child{}
	// Let go of the holes at the front.
	k := 0
	for k < len(r.children) && r.children[k].ConversationID == "" {
		k++
	}
	r.children, r.childBase = r.children[k:], r.childBase+k
}

// isForgotten tells whether ForgetChild let go of the child id.
func (r *Reconciler) isForgotten(id string) bool {
	_, ok := r.forgotten[childPrint(id)]
	return ok
}

// childPrint is what a forgotten child keeps: its id's hash.
func childPrint(id string) uint64 { return maphash.String(typeSeed, id) }

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
