package mapper

import "github.com/agyharness/agyharness/wire"

// runHold keeps a run's items from going out before the end of the run
// before it. agy ends a run before it starts another (a user turn, or a
// background task's wake), but it can report IDLE before flushing the
// run's last step, and the stream may never send that step's final copy:
// only a read brings it. A new run that the stream shows meanwhile would be
// emitted before that step's message. So a frame's copy of a step that
// starts a run (USER_INPUT, SYSTEM_MESSAGE), new at its index while a step
// before it is still live in the reconciler's view, or the index before it
// was never seen (a step written and finished between two frames, then
// not flushed), is not applied: it and
// every later index the frames bring are held (dropped, not kept) until
// snapshots have brought them again, which maps them in trajectory order.
// AwaitingRead asks the caller for those reads.
//
// The hold ends with a snapshot that reaches every index dropped and has
// every dropped terminal copy terminal too (the stream never sends a
// finished step again; a dropped live copy is sent again when the step
// changes, and the snapshot's copy is no older than what came before it).
// A snapshot read before the last frames came does not end it: the next
// read is asked for.
//
// A snapshot that ends the hold while a step before the run is still live
// is agy's own word: such steps hold no run again (settled).
type runHold struct {
	start   int              // the index of the run start that began the hold; -1: none
	to      int              // one past the highest index dropped
	done    map[int]struct{} // the indices of the terminal copies dropped, not yet read terminal
	settled int              // live steps below this index hold no run
}

func newRunHold() runHold { return runHold{start: -1} }

// AwaitingRead reports whether steps a frame brought are held until a
// read of the trajectory brings them again (see runHold): the caller
// should read now.
func (r *Reconciler) AwaitingRead() bool { return r.hold.start >= 0 }

// held reports whether the frame's copy of the step at index is held.
func (r *Reconciler) held(index int, s *wire.Step) bool {
	h := &r.hold
	if h.start < 0 {
		if s.Type != wire.StepUserInput && s.Type != wire.StepSystemMessage {
			return false
		}
		if r.slots[index] != nil || index <= r.known && !r.liveBefore(index) {
			return false
		}
		h.start, h.to = index, index+1
	}
	if index < h.start {
		return false
	}
	h.to = max(h.to, index+1)
	if s.Status.Terminal() {
		if h.done == nil {
			h.done = make(map[int]struct{})
		}
		h.done[index] = struct{}{}
	}
	return true
}

// liveBefore reports whether a step before index (and not settled) is live.
func (r *Reconciler) liveBefore(index int) bool {
	for i, sl := range r.slots {
		if i < index && i >= r.hold.settled && !sl.terminal {
			return true
		}
	}
	return false
}

// liftHold ends the hold when the snapshot just applied, ending at end,
// brought again every step the frames dropped.
func (r *Reconciler) liftHold(end int) {
	h := &r.hold
	if h.start < 0 || end < h.to {
		return
	}
	for i := range h.done {
		if sl := r.slots[i]; sl == nil || sl.terminal {
			// Read terminal (or dropped from the window since, at rest).
			delete(h.done, i)
		}
	}
	if len(h.done) > 0 {
		return
	}
	h.settled = max(h.settled, h.start)
	h.start, h.done = -1, nil
}

// rewindHold forgets what a rewind to index to removed from the hold.
func (r *Reconciler) rewindHold(to int) {
	h := &r.hold
	h.settled = min(h.settled, to)
	if h.start >= to {
		h.start, h.done = -1, nil
		return
	}
	h.to = min(h.to, to)
	for i := range h.done {
		if i >= to {
			delete(h.done, i)
		}
	}
}
