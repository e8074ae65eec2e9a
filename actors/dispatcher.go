package actors

import (
	"sync"
)

// ownGoroutine is a Proto.Actor dispatcher that runs one actor's mailbox on
// a goroutine of its own, kept for the actor's life, instead of a new
// goroutine each time the mailbox goes from empty to busy (Proto.Actor's
// default).
//
// It is for the session actor, whose mailbox goes from empty to busy on
// almost every stream frame: a fresh goroutine starts on a small stack and
// grows it (copying it) as the frame goes through the reconciler; a
// goroutine kept for the session keeps its stack between frames
// (BenchmarkSessionMailbox, own against default; docs/PERFORMANCE.md).
// Unlike a pool shared by sessions (measured and not adopted), no session
// waits behind another.
//
// The mailbox schedules at most one run at a time, so Schedule never waits
// for a run to finish. stop ends the goroutine; runs scheduled afterwards
// are dropped (the actor has stopped).
type ownGoroutine struct {
	runs chan func()
	done chan struct{}
	once sync.Once
}

// newOwnGoroutine starts the goroutine, counted in wg until stop.
func newOwnGoroutine(wg *sync.WaitGroup) *ownGoroutine {
	d := &ownGoroutine{runs: make(chan func(), 1), done: make(chan struct{})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-d.done:
				return
			case fn := <-d.runs:
				fn()
			}
		}
	}()
	return d
}

// Schedule runs fn on the goroutine.
func (d *ownGoroutine) Schedule(fn func()) {
	select {
	case d.runs <- fn:
	case <-d.done:
	}
}

// Throughput is how many messages a run takes before it yields: Proto.Actor's
// default.
func (d *ownGoroutine) Throughput() int { return 300 }

// stop ends the goroutine once the run in progress returns. It is safe to
// call more than once, and from a run.
func (d *ownGoroutine) stop() { d.once.Do(func() { close(d.done) }) }
