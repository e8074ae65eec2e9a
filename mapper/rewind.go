package mapper

import (
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// rewindState is what the reconciler knows of agy's rewinds (/rewind cuts
// the trajectory back to a step; what follows takes the freed indices).
type rewindState struct {
	epoch int // rewinds so far: items of slots made since carry it in their ids
	// retired: the identities (index and createdAt) of the steps rewinds
	// removed, with the epoch of the rewind that removed them. A copy of one
	// is a read made before the rewind: stale. Bounded (pruneRetired).
	retired map[stepIdentity]int
	// retiredPrints: the same for the steps that were dropped from the
	// window (their index and createdAt's hash: retiredPrint).
	retiredPrints map[uint64]int
	// shorter: the length a snapshot's summary gave that was shorter than
	// the steps seen (-1: none). A second snapshot in a row saying so
	// confirms it; one read alone may be older than what a frame showed.
	shorter int
	end     int // the end of the snapshot being applied
}

func newRewindState() rewindState {
	return rewindState{retired: map[stepIdentity]int{}, retiredPrints: map[uint64]int{}, shorter: -1}
}

// stepIdentity is a step's identity: its index and its createdAt.
type stepIdentity struct {
	index   int
	created string
}

// maxRetiredRewinds is how many of the latest rewinds keep the identities
// of the steps they removed. A read in flight across more rewinds than
// that is not expected: the poller reads one at a time, and each rewind is
// seen by a read of its own.
const maxRetiredRewinds = 8

// pruneRetired bounds the retired identities to what can still matter:
// those of the last maxRetiredRewinds rewinds, at indices in the window
// (Config.Window back from the end). A stale copy of a step retired before
// that, or behind the window, is taken as any copy at its index: behind
// the window, by its fingerprint (a step of the same type is delivered,
// another type is a new step); in the window, against the slot there (a
// step with another createdAt is a rewrite: reported as one more rewind).
// So the set holds at most maxRetiredRewinds windows of identities, however
// many rewinds a conversation sees.
func (r *Reconciler) pruneRetired() {
	oldest, cutoff := r.rewinds.epoch-maxRetiredRewinds, r.known-r.window
	for id, epoch := range r.rewinds.retired {
		if epoch <= oldest || id.index < cutoff {
			delete(r.rewinds.retired, id)
		}
	}
	for id, epoch := range r.rewinds.retiredPrints { // behind the window: by epoch alone
		if epoch <= oldest {
			delete(r.rewinds.retiredPrints, id)
		}
	}
}

// idBase is what the ids of the items at index begin with: the
// conversation id, then /r<k> when the slot was made after the k-th rewind.
// Ids before any rewind are what they always were.
func (r *Reconciler) idBase(index int) string {
	if sl := r.slots[index]; sl != nil && sl.epoch > 0 {
		return r.cfg.ConversationID + "/r" + strconv.Itoa(sl.epoch)
	}
	return r.cfg.ConversationID
}

// epochCallID makes a call id derived from the step index unique across
// rewinds.
func epochCallID(id string, epoch int) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[:i] + ":r" + strconv.Itoa(epoch) + id[i:]
	}
	return id + ":r" + strconv.Itoa(epoch)
}

// RewindSuspected reports whether the last snapshot gave a trajectory
// shorter than the steps seen: the caller should read again soon, since a
// second such read confirms a rewind.
func (r *Reconciler) RewindSuspected() bool { return r.rewinds.shorter >= 0 }

// Epoch is the number of rewinds the reconciler has seen.
func (r *Reconciler) Epoch() int { return r.rewinds.epoch }

// retired reports whether s is a copy of a step a rewind removed.
func (r *Reconciler) retired(index int, s *wire.Step) bool {
	c := s.Metadata.CreatedAt
	if c == "" {
		return false
	}
	if _, ok := r.rewinds.retired[stepIdentity{index, c}]; ok {
		return true
	}
	_, ok := r.rewinds.retiredPrints[retiredPrint(index, createdPrint(c))]
	return ok
}

// rewritten reports whether the step at index is another step than the
// one the slot holds (its createdAt changed): agy's history was cut back to
// index and written anew. It rewinds the reconciler to index.
func (r *Reconciler) rewritten(index int, st *slot, s *wire.Step) bool {
	c := s.Metadata.CreatedAt
	if c == "" || st.created == "" || c == st.created {
		return false
	}
	r.rewind(index)
	return true
}

// cleared handles a copy of a step in status CLEARED (the other shape a
// rewind may take: the rewound steps stay, marked). The first one seen
// rewinds to its index; it and the cleared steps after it map to nothing.
func (r *Reconciler) cleared(index int, st *slot, h uint64) {
	if st != nil && st.cleared {
		st.hash = h
		return
	}
	if st != nil {
		r.rewind(index)
	}
	r.slots[index] = &slot{hash: h, epoch: r.rewinds.epoch, terminal: true, cleared: true}
	if index >= r.known {
		r.known = index + 1
	}
}

// shrunk checks the snapshot being applied for a trajectory shorter than the
// steps seen: the second snapshot in a row whose summary says the same
// shorter length rewinds to it.
func (r *Reconciler) shrunk() {
	obs := &r.obs
	if !obs.HasLength || obs.Length >= r.known {
		r.rewinds.shorter = -1
		return
	}
	if r.rewinds.shorter != obs.Length {
		r.rewinds.shorter = obs.Length
		return
	}
	r.rewinds.shorter = -1
	r.rewind(obs.Length)
}

// rewind forgets the steps from index to on: their open prompts are
// withdrawn (expired), their identities retired, and the slots made from
// now on carry the next epoch in their ids. It reports conversation_rewound.
func (r *Reconciler) rewind(to int) {
	r.rewinds.epoch++
	for i, sl := range r.slots {
		if i < to {
			continue
		}
		if sl.created != "" {
			r.rewinds.retired[stepIdentity{i, sl.created}] = r.rewinds.epoch
		}
		delete(r.slots, i)
	}
	r.forgetFrom(to)
	r.closingTurn = true
	for _, p := range r.prompts {
		if !p.closed && p.StepIndex >= to {
			r.closePrompt(p, messages.ActionCancel, messages.ByExpired, nil)
		}
	}
	r.closingTurn = false
	r.known = to
	if r.liveFrom > to {
		r.liveFrom = to // the steps after a rewind are new
	}
	r.rewindHold(to)
	r.pruneRetired()
	if r.obs.Kind == Snapshot {
		r.stale = r.rewinds.end < r.known
	}
	r.rewinds.shorter = -1
	e := r.event(messages.EventConversationRewound, r.cfg.ConversationID+"/rewind/"+strconv.Itoa(r.rewinds.epoch))
	e.ToStep = messages.Ptr(to)
	e.Epoch = r.rewinds.epoch
	r.emit(e)
	if r.state == messages.StateWaiting && r.openCount() == 0 {
		r.setState(messages.StateRunning, to)
	}
}
