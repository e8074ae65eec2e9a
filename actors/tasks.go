package actors

import (
	"context"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// tasks owns the goroutines and timers of one actor incarnation. RPCs run
// in its goroutines under its context, which the actor cancels when it stops
// or restarts; results come back to the actor as messages. The host's wait
// group counts every goroutine, so Host.Shutdown can wait for all of them.
type tasks struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     *sync.WaitGroup
	clock  Clock
	root   *actor.RootContext

	mu     sync.Mutex
	timers map[Timer]struct{}
}

func newTasks(wg *sync.WaitGroup, clock Clock, root *actor.RootContext) *tasks {
	ctx, cancel := context.WithCancel(context.Background())
	return &tasks{ctx: ctx, cancel: cancel, wg: wg, clock: clock, root: root}
}

// run starts f in a goroutine owned by this incarnation.
func (t *tasks) run(f func(ctx context.Context)) {
	if t.ctx.Err() != nil {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f(t.ctx)
	}()
}

// send delivers msg to pid unless this incarnation has stopped (a late
// message to a stopped actor would be a dead letter).
func (t *tasks) send(pid *actor.PID, msg any) {
	if t.ctx.Err() == nil {
		t.root.Send(pid, msg)
	}
}

// after sends msg to pid after d on the clock, unless the incarnation
// stops first or stop is called.
func (t *tasks) after(d time.Duration, pid *actor.PID, msg any) (stop func()) {
	return t.afterFunc(d, func() { t.send(pid, msg) })
}

// afterFunc calls f, in a goroutine of the clock's, after d on the clock,
// unless the incarnation stops first or stop is called (a call already
// under way is not undone). f must not block.
func (t *tasks) afterFunc(d time.Duration, f func()) (stop func()) {
	if t.ctx.Err() != nil {
		return func() {}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var tm Timer
	tm = t.clock.AfterFunc(d, func() {
		t.mu.Lock()
		delete(t.timers, tm)
		t.mu.Unlock()
		f()
	})
	if t.timers == nil {
		t.timers = make(map[Timer]struct{})
	}
	t.timers[tm] = struct{}{}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if _, pending := t.timers[tm]; pending {
			tm.Stop()
			delete(t.timers, tm)
		}
	}
}

// alarm is a call of f that its owner sets again and again, one pending at
// most, stopped with the incarnation (flowWatch's). Each set moves the
// pending call rather than making another, so setting it often costs no
// timer fired: it fires only when it was not set again for its delay.
type alarm struct {
	t  *tasks
	f  func()
	tm Timer // nil until the first set
}

// newAlarm returns an alarm that calls f, in a goroutine of the clock's.
// f must not block.
func (t *tasks) newAlarm(f func()) *alarm { return &alarm{t: t, f: f} }

// resettable is a Timer that can be moved (the machine clock's): an alarm
// of another Clock is stopped and made anew each time it is set.
type resettable interface{ Reset(d time.Duration) bool }

// set has the alarm call f after d on the clock, in place of any call
// pending; once the incarnation stopped, it does nothing.
func (a *alarm) set(d time.Duration) {
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return
	}
	if a.tm != nil {
		if r, ok := a.tm.(resettable); ok {
			r.Reset(d)
			return
		}
		a.tm.Stop()
		delete(t.timers, a.tm)
	}
	a.tm = t.clock.AfterFunc(d, a.f)
	if t.timers == nil {
		t.timers = make(map[Timer]struct{})
	}
	t.timers[a.tm] = struct{}{}
}

// stop cancels the pending call, if any.
func (a *alarm) stop() {
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.tm != nil {
		a.tm.Stop()
		delete(t.timers, a.tm)
		a.tm = nil
	}
}

// tick is after for a periodic read. The moment it fires is rounded up to a
// grid shared by every actor of the process (alignedDelay), so the reads of
// many sessions fall due together: a host of hundreds of idle sessions wakes
// once for a batch of reads instead of once for each, and a wake-up is most
// of what a small read costs (docs/PERFORMANCE.md). A tick fires
// at most a twentieth of d, and at most maxTickSlack, late.
func (t *tasks) tick(d time.Duration, pid *actor.PID, msg any) {
	t.after(alignedDelay(t.clock.Now(), d), pid, msg)
}

// maxTickSlack bounds how late alignedDelay makes a tick.
const maxTickSlack = 100 * time.Millisecond

// alignedDelay is d, lengthened so that now+d falls on a multiple of a
// grid of d/20 (at most maxTickSlack) on the clock. Below a grid of a
// millisecond, d is returned as it is.
func alignedDelay(now time.Time, d time.Duration) time.Duration {
	g := int64(min(d/20, maxTickSlack))
	if g < int64(time.Millisecond) {
		return d
	}
	due := now.Add(d).UnixNano()
	return d + time.Duration((g-due%g)%g)
}

// stop cancels every goroutine's context and every pending timer.
func (t *tasks) stop() {
	t.cancel()
	t.mu.Lock()
	for tm := range t.timers {
		tm.Stop()
	}
	t.timers = nil
	t.mu.Unlock()
}
