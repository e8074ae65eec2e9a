package mapper

import (
	"hash/maphash"
	"slices"

	"github.com/agyharness/agyharness/wire"
)

// Defaults of Config's bounds.
const (
	// DefaultWindow is Config.Window's default: the step indices a
	// reconciler keeps whole, counted back from the highest one seen.
	// Reads start at the first step that can still change, so a finished
	// step behind comes again only when a read starts over; its
	// fingerprint then tells it delivered, or rewritten.
	DefaultWindow = 512
	// DefaultFingerprints is Config.Fingerprints' default: 8 bytes each,
	// 8 MiB at most.
	DefaultFingerprints = 1 << 20
)

// maxUnknownTypes bounds the step types reported as unknown_step: past
// it, further unknown types are mapped as before but no longer reported.
const maxUnknownTypes = 256

// maxCommands bounds the command lines kept for the COMMAND_STATUS steps
// that check on a command: the latest ones.
const maxCommands = 256

// The window (see "Memory" in the package doc). A reconciler keeps a slot
// (what it emitted, the base of the next delta) for the steps of the last
// Config.Window indices, and for older ones that can still change (live,
// or with an open prompt). A finished step older than that is dropped from
// memory; what is kept of it is its fingerprint: a hash of its type, 4
// bytes, in a dense array from pastBase on (0: no step was dropped at that
// index). A copy of a dropped step with the same type is already
// delivered (an INVOKE_SUBAGENT copy still names its children); one with
// another type is a new step (history rewritten), mapped from scratch as a
// slot would be. The fingerprint also holds a hash of the step's createdAt
// (its identity at that index, 4 bytes more): a copy with another one is
// agy's history cut back to that index and written anew (a /rewind), seen
// as a slot sees it (rewritten). At most Config.Fingerprints indices keep a
// fingerprint: past that the oldest are sealed (indices below pastBase),
// and a copy of a sealed step is taken as delivered.

// typeSeed hashes step types and createdAt times into fingerprints.
var typeSeed = maphash.MakeSeed()

// stepPrint is what is kept of a dropped step: its type's hash (never 0;
// 0: no step was dropped at that index) and its createdAt's (0: none).
type stepPrint struct{ typ, created uint32 }

// fingerprint is a step's type's hash, never 0.
func fingerprint(t wire.StepType) uint32 {
	return uint32(maphash.String(typeSeed, string(t))) | 1
}

// createdPrint is a createdAt's hash, never 0; 0 for none.
func createdPrint(c string) uint32 {
	if c == "" {
		return 0
	}
	return uint32(maphash.String(typeSeed, c)) | 1
}

// retiredPrint is the key of a dropped step a rewind removed, among
// rewindState.retiredPrints.
func retiredPrint(index int, created uint32) uint64 { return uint64(index)<<32 | uint64(created) }

// Footprint is what a reconciler holds, counted in entries.
type Footprint struct {
	Slots        int // steps kept whole
	Fingerprints int // indices with room for a fingerprint (dropped steps, and gaps between them)
	Prompts      int // prompts held (open ones, and closed ones not yet let go)
	Commands     int // command lines kept for COMMAND_STATUS titles
	StatusIDs    int // status ids kept to number repeats
	Children     int // subagent children kept whole (and holes among them: ForgetChild)
	Forgotten    int // subagent children forgotten: a hash each
}

// Footprint counts what the reconciler holds: bounded by the window and
// the fingerprints, whatever the trajectory's length, but for the subagent
// children not forgotten (ForgetChild).
func (r *Reconciler) Footprint() Footprint {
	return Footprint{
		Slots: len(r.slots), Fingerprints: len(r.past), Prompts: len(r.prompts),
		Commands: len(r.commands), StatusIDs: len(r.statusIDs),
		Children: len(r.children), Forgotten: len(r.forgotten),
	}
}

// dropped handles a copy of a step with no slot: true when the step was
// dropped from the window (or sealed) and the copy implies nothing.
func (r *Reconciler) dropped(index int, s *wire.Step) bool {
	if index < r.pastBase {
		return true // sealed: taken as delivered
	}
	j := index - r.pastBase
	if j >= len(r.past) || r.past[j].typ == 0 {
		return false // never dropped: a new step
	}
	if c := createdPrint(s.Metadata.CreatedAt); c != 0 && r.past[j].created != 0 && c != r.past[j].created {
		r.rewind(index) // another step at this index: agy's history written anew from it
		return false
	}
	if s.Type != "" && fingerprint(s.Type) != r.past[j].typ {
		r.past[j] = stepPrint{} // another step now (history rewritten): a new one
		return false
	}
	if s.Type == wire.StepInvokeSubagent {
		r.noteChildren(index, s) // agy may fill its children in after DONE
	}
	return true
}

// compact drops the finished steps behind the window when the slots have
// outgrown it by a quarter (so the cost is spread over many steps), and
// lets go of what refers to them.
func (r *Reconciler) compact() {
	if len(r.slots) <= r.window+r.window/4 {
		return
	}
	cutoff := r.known - r.window
	for i, st := range r.slots {
		if i < cutoff && st.terminal && (st.prompt == nil || st.prompt.closed) {
			r.drop(i, st)
		}
	}
	if len(r.slots) > 2*r.window {
		// Steps left live (or asking) far behind the end, whatever agy
		// sends: the oldest go too; a later copy of one implies nothing.
		idx := make([]int, 0, len(r.slots))
		for i := range r.slots {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		for _, i := range idx[:len(idx)-r.window] {
			r.drop(i, r.slots[i])
		}
	}
	for k := range r.statusIDs {
		if k.anchor < cutoff {
			delete(r.statusIDs, k)
		}
	}
}

// drop removes the slot of index, keeping its fingerprint.
func (r *Reconciler) drop(index int, st *slot) {
	delete(r.slots, index)
	if index < r.pastBase {
		return
	}
	if index-r.pastBase >= r.maxPast {
		// Seal the oldest: room for this index and as many after it.
		base := index - r.maxPast/2
		if shift := base - r.pastBase; shift >= len(r.past) {
			r.past = r.past[:0]
		} else {
			n := copy(r.past, r.past[shift:])
			clear(r.past[n:])
			r.past = r.past[:n]
		}
		r.pastBase = base
	}
	j := index - r.pastBase
	if j >= len(r.past) {
		n := len(r.past)
		r.past = slices.Grow(r.past, j+1-n)[:j+1]
		clear(r.past[n:])
	}
	r.past[j] = stepPrint{typ: fingerprint(st.typ), created: createdPrint(st.created)}
}

// forgetFrom lets go of the fingerprints from index on (a rewind to it):
// the steps written there next are new. Those with a createdAt are retired:
// a copy of one is a read made before the rewind.
func (r *Reconciler) forgetFrom(index int) {
	j := max(index-r.pastBase, 0)
	if j >= len(r.past) {
		return
	}
	for k, p := range r.past[j:] {
		if p.typ != 0 && p.created != 0 {
			r.rewinds.retiredPrints[retiredPrint(r.pastBase+j+k, p.created)] = r.rewinds.epoch
		}
	}
	clear(r.past[j:])
	r.past = r.past[:j]
}

// letGoOfClosedPrompts forgets the prompts that are closed: nothing asks
// for them again (Prompt, MarkResolved and AnswerInFlight take open ones
// only), and the slots that asked them keep their own reference.
func (r *Reconciler) letGoOfClosedPrompts() {
	if !slices.ContainsFunc(r.prompts, func(p *promptState) bool { return p.closed }) {
		return
	}
	r.prompts = slices.DeleteFunc(r.prompts, func(p *promptState) bool {
		if p.closed {
			delete(r.promptIDs, p.ElicitationID)
		}
		return p.closed
	})
}

// noteCommand keeps a command's line for the COMMAND_STATUS steps that
// check on it: the latest maxCommands.
func (r *Reconciler) noteCommand(id, line string) {
	if _, ok := r.commands[id]; !ok {
		r.commandOrder = append(r.commandOrder, id)
		if len(r.commandOrder) > maxCommands {
			delete(r.commands, r.commandOrder[0])
			r.commandOrder = slices.Delete(r.commandOrder, 0, 1)
		}
	}
	r.commands[id] = line
}
