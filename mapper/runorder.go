package mapper

import "github.com/agyharness/agyharness/wire"

// runHold keeps a run's items from going out before the end of the run
// before it. agy ends a run before it starts another (a user turn, or a
// background task's wake), but it can report IDLE before flushing the
// run's last step, and the stream may never send that step's final copy:
// only a read brings it. A new run that the stream shows meanwhile would be
// emitted before that step's message. So a frame's copy of a step that
// starts a run (USER_INPUT, SYSTEM_MESSAGE), new at its index while a step
// before it is still live in the reconciler's view, is not applied: it and
// every later index the frames bring are held (dropped, not kept) until a
// snapshot that reaches the held index is applied, which maps them in
// trajectory order. AwaitingRead asks the caller for that read.
//
// A snapshot read after the run began that still shows the earlier step
// live is agy's own word: the hold ends with it, and steps live below that
// index hold nothing again (settled).
type runHold struct {
	from    int // the first index held; -1: none
	settled int // live steps below this index hold no run
}

func newRunHold() runHold { return runHold{from: -1} }

// AwaitingRead reports whether steps a frame brought are held until a
// read of the trajectory reaches them (see runHold): the caller should
// read now.
func (r *Reconciler) AwaitingRead() bool { return r.hold.from >= 0 }

// held reports whether the frame's copy of the step at index is held.
func (r *Reconciler) held(index int, s *wire.Step) bool {
	if h := &r.hold; h.from >= 0 {
		return index >= h.from
	}
	if s.Type != wire.StepUserInput && s.Type != wire.StepSystemMessage {
		return false
	}
	if r.slots[index] != nil || !r.liveBefore(index) {
		return false
	}
	r.hold.from = index
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
// reached the held index.
func (r *Reconciler) liftHold(end int) {
	h := &r.hold
	if h.from < 0 || end <= h.from {
		return
	}
	h.settled = max(h.settled, h.from)
	h.from = -1
}
