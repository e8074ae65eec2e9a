package actors

import (
	"context"
	"hash/maphash"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/wire"
)

// A trajectory found shorter than what was read (agy's /rewind cut it) is
// read again from where it may differ. Reading it all again from index 0
// costs one answer per agy's cap of steps (a few hundred, or a few on some
// builds): on a long conversation, many seconds on a loaded machine, and
// the rewind is reported only after it. agy's history is cut back and
// written anew, never changed before the cut: so when the last step of the
// shorter trajectory is the very step read there before (its createdAt),
// nothing before it changed, and the read starts there. The window keeps,
// for that, the createdAt (hashed) of the last maxCreatedPrints indices it
// read; an index it has no print of is read from 0, as before.

// maxCreatedPrints bounds the indices whose createdAt a window keeps.
const maxCreatedPrints = 1024

var createdSeed = maphash.MakeSeed()

// createdPrints are the createdAt prints of the last maxCreatedPrints
// indices noted: a slot for each index modulo maxCreatedPrints, which a
// later index noted there takes over (16 KiB).
type createdPrints [maxCreatedPrints]createdPrint

// createdPrint is the print of the step at index; 0: none.
type createdPrint struct {
	index int
	print uint64
}

// get is the print of index i, if it still has it.
func (p *createdPrints) get(i int) (uint64, bool) {
	if p == nil || i < 0 {
		return 0, false
	}
	s := &p[i%maxCreatedPrints]
	if s.print == 0 || s.index != i {
		return 0, false
	}
	return s.print, true
}

// put notes h as the print of index i.
func (p *createdPrints) put(i int, h uint64) {
	if i >= 0 {
		p[i%maxCreatedPrints] = createdPrint{index: i, print: h}
	}
}

// createdHash is a step's createdAt hashed; 0 for none.
func createdHash(s *wire.Step) uint64 { return hashCreated(s.Metadata.CreatedAt) }

// hashCreated is a createdAt hashed; 0 for "".
func hashCreated(created string) uint64 {
	if created == "" {
		return 0
	}
	return maphash.String(createdSeed, created) | 1
}

// notePrints records the createdAt of the steps a read handed on, from
// trajectory index offset.
func (w *trajectoryWindow) notePrints(steps []wire.Step, offset int) {
	if len(steps) == 0 {
		return
	}
	if w.prints == nil {
		w.prints = new(createdPrints)
	}
	at := mapper.Indexer(steps, offset)
	for i := range steps {
		if h := createdHash(&steps[i]); h != 0 {
			w.prints.put(at(i), h)
		}
	}
}

// notePrintsOf records the createdAt of steps known by index (the
// session's, where this window read nothing yet), the last
// maxCreatedPrints of them.
func (w *trajectoryWindow) notePrintsOf(known map[int]string) {
	hi := -1
	for i := range known {
		hi = max(hi, i)
	}
	for i, created := range known {
		if h := hashCreated(created); h != 0 && i > hi-maxCreatedPrints {
			if w.prints == nil {
				w.prints = new(createdPrints)
			}
			w.prints.put(i, h)
		}
	}
}

// shorterStart is where a read of a trajectory of count steps, shorter
// than the steps read before, starts: its last step when the window has
// its print (the first answer is then checked: matches), else 0.
func (w *trajectoryWindow) shorterStart(count int) int {
	if count <= 0 {
		return 0
	}
	if _, ok := w.prints.get(count - 1); ok {
		return count - 1
	}
	return 0
}

// matches reports whether an answer from index off starts with the step
// the window has a print of there (true when it has none: nothing to
// compare). An empty answer where a step was read is no match.
func (w *trajectoryWindow) matches(off int, ws []wire.Step) bool {
	h, ok := w.prints.get(off)
	if !ok {
		return true
	}
	if len(ws) == 0 {
		return false
	}
	got := createdHash(&ws[0])
	return got == 0 || got == h
}

// restartFrom is where a read whose first answer (from start, ws) shows
// the trajectory changed there goes on: the last step of the shorter
// trajectory when its length is known (stepCount; for an answer that came
// back empty, read with hooks.count when stepCount is unknown or not
// shorter) and the window has its
// print, below start; else 0.
//
// It returns the step count the read goes on with (stepCount, or the one
// read now).
func (w *trajectoryWindow) restartFrom(ctx context.Context, start int, ws []wire.Step, stepCount int, hooks readHooks) (int, int) {
	n := stepCount
	if (n < 0 || n > start) && len(ws) == 0 && hooks.count != nil {
		// No count, or one read before the cut (a summary read before the
		// steps): read it now.
		c, err := hooks.count(ctx)
		if err != nil {
			return 0, stepCount
		}
		n = c
	}
	if n < 0 || n > start {
		return 0, stepCount
	}
	if from := w.shorterStart(n); from < start {
		return from, n
	}
	return 0, n
}
