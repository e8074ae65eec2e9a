package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// trajectoryWindow is what a reader of one conversation keeps between its
// reads of the steps (GetCascadeTrajectorySteps): where the last read
// started, what it read, and the largest answer agy was seen to cut a read
// at. It reads from the steps that can still change, never the whole
// history again: a 5,000-step conversation's poll reads its tail. agy may
// cap one answer (a third-party client reports about 600 steps), so a read
// goes on window by window to the trajectory's end.
//
// It is owned by one reader, and its reads run one at a time.
type trajectoryWindow struct {
	gen    messages.Gen // the generation the reads were made for
	offset int          // trajectory index the last read started at
	last   []wire.Step  // the last read's steps (from offset), for the next read to reuse
	limit  int          // the longest answer seen cut short by agy (0: none yet)
	// prints: the createdAt (hashed) of the steps read at the last
	// maxCreatedPrints indices, for a trajectory found shorter
	// (window_shorter.go).
	prints *createdPrints
}

// maxWindows bounds the answers a read holds at once (those it has not
// handed on: see readHooks.deliver).
const maxWindows = 2000

// forGen readies the window for a read made for gen: reads made for an
// earlier generation were dropped by the session, so what they read is not
// known there, and the next read starts over.
func (w *trajectoryWindow) forGen(gen messages.Gen) {
	if w.gen != gen {
		*w = trajectoryWindow{gen: gen, limit: w.limit}
	}
}

// from is where the next read starts: the first step of the last read that
// is not terminal (it can still change), else its last step (read again,
// one step, so a change to a finished step is still seen: agy fills an
// INVOKE_SUBAGENT step's children in after it is DONE on some builds).
func (w *trajectoryWindow) from() int {
	if len(w.last) == 0 {
		return w.offset
	}
	at := mapper.Indexer(w.last, w.offset)
	for i := range w.last {
		if !w.last[i].Status.Terminal() {
			return at(i)
		}
	}
	return at(len(w.last) - 1)
}

// prevFor returns the part of the last read that lines up with a read from
// trajectory position off, for reuse (nil when it does not).
func (w *trajectoryWindow) prevFor(off int) []wire.Step {
	if i := off - w.offset; i >= 0 && i < len(w.last) {
		return w.last[i:]
	}
	return nil
}

// read reads the conversation's steps from w.from() to the trajectory's
// end. stepCount is the trajectory's length when the caller read it just
// before (its summary), -1 when unknown: then a window is taken for the end
// unless it is as long as an answer agy was seen to cut. It returns the
// steps and the trajectory index they start at; the caller keeps them (keep)
// once they reach the session, and only then: the next read must start
// from what the session has. The steps share values with the previous read (see
// rpc.Client.GetCascadeTrajectoryStepsFrom): they are read-only for
// everyone they are handed to. Steps at rest read on the way may be handed
// on before the read ends (readHooks.deliver).
func (w *trajectoryWindow) read(ctx context.Context, c *rpc.Client, conv string, stepCount int, hooks readHooks) (windowRead, error) {
	return w.readWith(ctx, func(ctx context.Context, off int, prev []wire.Step) ([]wire.Step, error) {
		return c.GetCascadeTrajectoryStepsFrom(ctx, conv, off, prev)
	}, conv, stepCount, hooks)
}

// stepsFrom reads one answer of a conversation's steps from a trajectory
// index (GetCascadeTrajectorySteps with stepOffset).
type stepsFrom func(ctx context.Context, off int, prev []wire.Step) ([]wire.Step, error)

// window is one answer of a read: the steps from trajectory index off.
type window struct {
	off   int
	steps []wire.Step
}

// readHooks are what a read calls on its way.
type readHooks struct {
	// deliver hands on the steps read so far, from trajectory index
	// offset, before the read ends: the windows at rest once they hold
	// deliverSteps, and the windows before steps skipped (see windowRead).
	// The read keeps them (keep) once handed on. Nil: everything read is
	// in the result, and a read that would skip steps after some windows
	// ends before them.
	deliver func(steps []wire.Step, offset int)
	// count reads the trajectory's step count, for a read that meets an
	// answer over the limit with stepCount unknown (nil: no steps are
	// skipped then).
	count func(ctx context.Context) (int, error)
}

// deliverSteps is how many steps at rest a read holds before it hands them
// on (readHooks.deliver): a history of a million steps is read window by
// window, never held whole.
const deliverSteps = 2048

// windowRead is what a read returns: the steps from trajectory index
// offset (after those handed on), and the steps it did not read.
type windowRead struct {
	steps  []wire.Step
	offset int
	// skipped is set when agy's answer of the steps from skipped.from was
	// over the client's limit (rpc.ErrMessageTooLarge): the read went on
	// from skipped.to, the first index whose answer fits, and the steps in
	// between were never read.
	skipped *skippedSteps
}

// skippedSteps are steps a read could not read: [from, to).
type skippedSteps struct {
	from, to int
	err      error // the answer's error
}

// readWith is read, each answer read by readFrom.
//
// A read of several answers is not one moment of agy's: a step live in an
// early answer may have finished, and later steps been written, by the time
// a later answer is read; mapped in index order, that later step's items
// would come before the earlier step's last ones. So when an answer before
// the last holds a live step, the answers from the last but one back to
// that one are read again, in that order: each answer is then no older than
// every answer after it, and a step is never seen behind a later one.
//
// An answer over the client's limit (agy may put megabytes in one step, or
// send every step of a long history in one answer) cannot be read. agy's
// answer runs from stepOffset to its cap or the end, so no smaller answer
// starts there: the read looks for the lowest later index whose answer
// fits (halving the span to the trajectory's end), reads on from there,
// and reports the steps between as skipped. It fails when none fits (the
// last step alone is over the limit) or the trajectory's length is
// unknown.
func (w *trajectoryWindow) readWith(ctx context.Context, readFrom stepsFrom, conv string, stepCount int, hooks readHooks) (windowRead, error) {
	start := w.from()
	if stepCount >= 0 && stepCount < start {
		// The trajectory is shorter than what was read: read it again from
		// where it may differ.
		start = w.shorterStart(stepCount)
	}
	var res windowRead
	var windows []window
	held := 0
	// handOn delivers the windows held, read again where needed.
	handOn := func() error {
		if err := rereadBackwards(ctx, readFrom, windows); err != nil {
			return err
		}
		steps, off := joined(windows)
		hooks.deliver(steps, off)
		w.keep(steps, off)
		windows, held = nil, 0
		return nil
	}
	off := start
	for {
		if len(windows) == maxWindows {
			return windowRead{}, fmt.Errorf("reading %s: more than %d windows of steps", conv, maxWindows)
		}
		ws, err := readFrom(ctx, off, w.prevFor(off))
		if err != nil && errors.Is(err, rpc.ErrMessageTooLarge) && res.skipped == nil {
			if stepCount < 0 && hooks.count != nil {
				n, cerr := hooks.count(ctx)
				if cerr != nil {
					return windowRead{}, cerr
				}
				stepCount = n
			}
			if len(windows) > 0 && hooks.deliver == nil {
				break // what comes before the steps it would skip
			}
			err = fmt.Errorf("the answer of the steps from index %d: %w", off, err)
			to, tail, ferr := fitFrom(ctx, readFrom, off, stepCount)
			if ferr != nil {
				return windowRead{}, err
			}
			if len(windows) > 0 {
				// The steps before the gap go first: a step without its
				// index is known by its position after them.
				if err := handOn(); err != nil {
					return windowRead{}, err
				}
			}
			res.skipped = &skippedSteps{from: off, to: to, err: err}
			off, ws, err = to, tail, nil
			if len(windows) == 0 && held == 0 {
				start = to
			}
		}
		if err != nil {
			return windowRead{}, err
		}
		if off == start && len(windows) == 0 && held == 0 && res.skipped == nil && start > 0 && (rewritten(w.prevFor(off), ws) || !w.matches(off, ws)) {
			// The step read last time at start is gone or another (a
			// rewind to an earlier step): read again, in order, from where
			// the trajectory may differ.
			start, stepCount = w.restartFrom(ctx, start, ws, stepCount, hooks)
			off = start
			continue
		}
		windows = append(windows, window{off: off, steps: ws})
		held += len(ws)
		if len(ws) == 0 {
			break
		}
		next := mapper.Indexer(ws, off)(len(ws)-1) + 1
		more := false
		switch {
		case stepCount >= 0:
			more = next < stepCount
		case w.limit > 0:
			more = len(ws) >= w.limit
		}
		if !more {
			break
		}
		if stepCount >= 0 && len(ws) > w.limit {
			w.limit = len(ws) // the answer ended short of the trajectory: agy's cap
		}
		off = next
		if hooks.deliver != nil && held >= deliverSteps && !slices.ContainsFunc(windows, liveWindow) {
			if err := handOn(); err != nil {
				return windowRead{}, err
			}
		}
	}
	if err := rereadBackwards(ctx, readFrom, windows); err != nil {
		return windowRead{}, err
	}
	res.steps, res.offset = joined(windows)
	if len(windows) == 0 {
		res.offset = start
	}
	return res, nil
}

// joined is the windows' steps as one slice, and the index they start at.
func joined(windows []window) ([]wire.Step, int) {
	if len(windows) == 0 {
		return nil, 0
	}
	if len(windows) == 1 {
		return windows[0].steps, windows[0].off
	}
	n := 0
	for _, win := range windows {
		n += len(win.steps)
	}
	steps := make([]wire.Step, 0, n)
	for _, win := range windows {
		steps = append(steps, win.steps...)
	}
	return steps, windows[0].off
}

// liveWindow reports whether an answer holds a step that can still change.
func liveWindow(win window) bool {
	return slices.ContainsFunc(win.steps, func(s wire.Step) bool { return !s.Status.Terminal() })
}

// fitFrom finds the lowest index in (off, count) whose answer is within the
// limit, assuming that an answer from a later index is no larger (agy's
// runs to the end, or to its cap): it halves the span to the end until one
// fits, then narrows down to the lowest that does. It returns the index and
// its answer; an error when none fits or count is unknown.
func fitFrom(ctx context.Context, readFrom stepsFrom, off, count int) (int, []wire.Step, error) {
	lo, hi := off+1, count-1
	best, bestSteps := -1, []wire.Step(nil)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		ws, err := readFrom(ctx, mid, nil)
		switch {
		case err == nil:
			best, bestSteps, hi = mid, ws, mid-1
		case errors.Is(err, rpc.ErrMessageTooLarge):
			lo = mid + 1
		default:
			return 0, nil, err
		}
	}
	if best < 0 {
		return 0, nil, fmt.Errorf("no answer from an index in (%d, %d) fits", off, count)
	}
	return best, bestSteps, nil
}

// rereadBackwards reads again, from the last but one back, the windows from
// the first one before the last that holds a live step. A window read again
// whose length changed (the trajectory was rewritten meanwhile) is left as
// first read, and so are the ones before it: the next read sees them again.
func rereadBackwards(ctx context.Context, readFrom stepsFrom, windows []window) error {
	last := len(windows) - 1
	first := slices.IndexFunc(windows[:max(last, 0)], func(win window) bool {
		return slices.ContainsFunc(win.steps, func(s wire.Step) bool { return !s.Status.Terminal() })
	})
	if first < 0 {
		return nil // every window before the last was at rest: nothing in them moves
	}
	for i := last - 1; i >= first; i-- {
		ws, err := readFrom(ctx, windows[i].off, windows[i].steps)
		if err != nil {
			return err
		}
		if len(ws) != len(windows[i].steps) {
			return nil
		}
		windows[i].steps = ws
	}
	return nil
}

// keep records a read that reached the session: the next one starts from
// it. Only the steps from where the next read starts are kept (a copy):
// those before are mapped, and holding them would hold the history.
func (w *trajectoryWindow) keep(steps []wire.Step, offset int) {
	w.notePrints(steps, offset)
	w.offset, w.last = offset, steps
	if len(steps) == 0 {
		return
	}
	at := mapper.Indexer(steps, offset)
	i := slices.IndexFunc(steps, func(s wire.Step) bool { return !s.Status.Terminal() })
	if i < 0 {
		i = len(steps) - 1
	}
	if i > 0 {
		w.offset, w.last = at(i), slices.Clone(steps[i:])
	}
}

// rewritten reports whether a read's first step is no longer the step the
// previous read had at that index: gone, another step (its createdAt), or
// CLEARED since (agy's /rewind, in either shape).
func rewritten(prev, next []wire.Step) bool {
	if len(prev) == 0 {
		return false
	}
	if len(next) == 0 {
		return true
	}
	a, b := &prev[0], &next[0]
	if b.Status == wire.StatusCleared && a.Status != wire.StatusCleared {
		return true
	}
	return a.Metadata.CreatedAt != "" && b.Metadata.CreatedAt != "" && a.Metadata.CreatedAt != b.Metadata.CreatedAt
}
