package actors

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClock is a Clock for tests: it runs with the machine's clock, ahead by
// as much as the test has moved it forward (Advance), so a session's
// periodic reads go on as usual while a timeout or a backoff of minutes is
// over at once. Each timer fires at its time on either count, once.
type TestClock struct {
	mu     sync.Mutex
	ahead  time.Duration
	timers map[*testTimer]struct{}
}

type testTimer struct {
	c    *TestClock
	due  time.Time // on the test clock
	f    func()
	real *time.Timer
}

// NewTestClock returns a Clock that tests move forward (for Config.Clock).
func NewTestClock() *TestClock { return &TestClock{timers: make(map[*testTimer]struct{})} }

func (c *TestClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.ahead)
}

func (c *TestClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &testTimer{c: c, due: time.Now().Add(c.ahead + d), f: f}
	c.timers[t] = struct{}{}
	t.real = time.AfterFunc(d, t.fire)
	return t
}

// Advance moves the clock forward by d: every timer due by then fires now.
func (c *TestClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.ahead += d
	now := time.Now().Add(c.ahead)
	var due []*testTimer
	for t := range c.timers {
		if !t.due.After(now) {
			due = append(due, t)
			delete(c.timers, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.real.Stop()
		go t.f()
	}
}

// Pending is how many timers have yet to fire.
func (c *TestClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// take removes t from the pending timers; false when it was not there.
func (c *TestClock) take(t *testTimer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, pending := c.timers[t]
	delete(c.timers, t)
	return pending
}

func (t *testTimer) fire() {
	if t.c.take(t) {
		t.f()
	}
}

func (t *testTimer) Stop() bool {
	t.real.Stop()
	return t.c.take(t)
}

// In a synctest bubble the machine's clock is the bubble's: "nothing fired"
// is checked once every goroutine is blocked (synctest.Wait), not by waiting.
func TestTestClockFiresEachTimerOnceAtItsTime(t *testing.T) {
	synctest.Test(t, testTestClockFiresEachTimerOnceAtItsTime)
}

func testTestClockFiresEachTimerOnceAtItsTime(t *testing.T) {
	c := NewTestClock()
	fired := make(chan string, 4)
	start := c.Now()
	c.AfterFunc(time.Hour, func() { fired <- "hour" })
	c.AfterFunc(2*time.Hour, func() { fired <- "two hours" })
	stopped := c.AfterFunc(time.Minute, func() { fired <- "stopped" })
	require.True(t, stopped.Stop())
	require.False(t, stopped.Stop())
	soon := c.AfterFunc(time.Millisecond, func() { fired <- "soon" })
	require.Equal(t, "soon", <-fired, "the machine's time counts too")
	require.False(t, soon.Stop(), "already fired")

	c.Advance(time.Hour)
	require.Equal(t, "hour", <-fired)
	require.GreaterOrEqual(t, c.Now().Sub(start), time.Hour)
	synctest.Wait()
	select {
	case f := <-fired:
		t.Fatalf("%s fired early", f)
	default:
	}
	c.Advance(time.Hour)
	require.Equal(t, "two hours", <-fired)
	c.Advance(time.Hour)
	synctest.Wait()
	select {
	case f := <-fired:
		t.Fatalf("%s fired twice, or after Stop", f)
	default:
	}
}
