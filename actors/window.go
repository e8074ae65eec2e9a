package actors

import (
	"context"
	"fmt"
	"slices"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
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
	last   []rpc.Step   // the last read's steps (from offset), for the next read to reuse
	limit  int          // the longest answer seen cut short by agy (0: none yet)
}

// maxWindows bounds the answers of one read: a trajectory of a million
// steps at agy's reported cap.
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
func (w *trajectoryWindow) prevFor(off int) []rpc.Step {
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
// everyone they are handed to.
func (w *trajectoryWindow) read(ctx context.Context, c *rpc.Client, conv string, stepCount int) ([]rpc.Step, int, error) {
	return w.readWith(ctx, func(ctx context.Context, off int, prev []rpc.Step) ([]rpc.Step, error) {
		return c.GetCascadeTrajectoryStepsFrom(ctx, conv, off, prev)
	}, conv, stepCount)
}

// stepsFrom reads one answer of a conversation's steps from a trajectory
// index (GetCascadeTrajectorySteps with stepOffset).
type stepsFrom func(ctx context.Context, off int, prev []rpc.Step) ([]rpc.Step, error)

// window is one answer of a read: the steps from trajectory index off.
type window struct {
	off   int
	steps []rpc.Step
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
func (w *trajectoryWindow) readWith(ctx context.Context, readFrom stepsFrom, conv string, stepCount int) ([]rpc.Step, int, error) {
	start := w.from()
	if stepCount >= 0 && stepCount < start {
		start = 0 // the trajectory is shorter than what was read: read it all again
	}
	var windows []window
	off := start
	for n := 0; ; n++ {
		if n == maxWindows {
			return nil, 0, fmt.Errorf("reading %s: more than %d windows of steps", conv, maxWindows)
		}
		ws, err := readFrom(ctx, off, w.prevFor(off))
		if err != nil {
			return nil, 0, err
		}
		if n == 0 && start > 0 && rewritten(w.prevFor(off), ws) {
			// The step read last time at start is gone or another (a
			// rewind to an earlier step): read it all again, in order.
			start, off = 0, 0
			continue
		}
		windows = append(windows, window{off: off, steps: ws})
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
	}
	if err := rereadBackwards(ctx, readFrom, windows); err != nil {
		return nil, 0, err
	}
	var steps []rpc.Step
	for _, win := range windows {
		if steps == nil {
			steps = win.steps
		} else {
			steps = append(steps, win.steps...)
		}
	}
	return steps, start, nil
}

// rereadBackwards reads again, from the last but one back, the windows from
// the first one before the last that holds a live step. A window read again
// whose length changed (the trajectory was rewritten meanwhile) is left as
// first read, and so are the ones before it: the next read sees them again.
func rereadBackwards(ctx context.Context, readFrom stepsFrom, windows []window) error {
	last := len(windows) - 1
	first := slices.IndexFunc(windows[:max(last, 0)], func(win window) bool {
		return slices.ContainsFunc(win.steps, func(s rpc.Step) bool { return !s.Status.Terminal() })
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

// keep records a read that reached the session: the next one starts from it.
func (w *trajectoryWindow) keep(steps []rpc.Step, offset int) {
	w.offset, w.last = offset, steps
}

// rewritten reports whether a read's first step is no longer the step the
// previous read had at that index: gone, another step (its createdAt), or
// CLEARED since (agy's /rewind, in either shape).
func rewritten(prev, next []rpc.Step) bool {
	if len(prev) == 0 {
		return false
	}
	if len(next) == 0 {
		return true
	}
	a, b := &prev[0], &next[0]
	if b.Status == rpc.StatusCleared && a.Status != rpc.StatusCleared {
		return true
	}
	return a.Metadata.CreatedAt != "" && b.Metadata.CreatedAt != "" && a.Metadata.CreatedAt != b.Metadata.CreatedAt
}
