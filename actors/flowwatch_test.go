package actors

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingClock is the machine's clock, counting the calls its timers make.
type countingClock struct{ fired atomic.Int64 }

func (c *countingClock) Now() time.Time { return time.Now() }

func (c *countingClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, func() { c.fired.Add(1); f() })
}

// tellLog records a flowWatch's tells with the time of each.
type tellLog struct {
	mu    sync.Mutex
	tells []bool
	at    []time.Time
}

func (l *tellLog) tell(flowing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tells, l.at = append(l.tells, flowing), append(l.at, time.Now())
}

func (l *tellLog) got() ([]bool, []time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.tells...), append([]time.Time(nil), l.at...)
}

// While frames flow a flowWatch's alarm is moved on, never fired: a host
// of streaming sessions would otherwise run a timer's goroutine for each
// once a second. Once frames stop, it fires once, and tells within a quiet
// and the grid's step; the next frame tells again. In a synctest bubble the
// machine's clock is the bubble's.
func TestAFlowWatchFiresNothingWhileFramesFlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &countingClock{}
		tk := newTasks(&sync.WaitGroup{}, clock, nil)
		var log tellLog
		w := newFlowWatch(tk, clock, time.Second, log.tell)
		for range 50 { // 10 s of frames, one every 200 ms
			w.heard(time.Now())
			time.Sleep(200 * time.Millisecond)
		}
		synctest.Wait()
		tells, _ := log.got()
		assert.Equal(t, []bool{true}, tells)
		assert.Zero(t, clock.fired.Load(), "no alarm fired while frames flowed")

		last := time.Now()
		w.heard(last)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		tells, at := log.got()
		require.Equal(t, []bool{true, false}, tells)
		assert.Equal(t, int64(1), clock.fired.Load())
		assert.GreaterOrEqual(t, at[1].Sub(last), time.Second)
		assert.LessOrEqual(t, at[1].Sub(last), time.Second+time.Second/20)

		w.heard(time.Now())
		w.stop()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		tells, _ = log.got()
		assert.Equal(t, []bool{true, false, true}, tells, "nothing told after stop")
		assert.Equal(t, int64(1), clock.fired.Load(), "stop cancelled the alarm")
		tk.mu.Lock()
		defer tk.mu.Unlock()
		assert.Empty(t, tk.timers)
	})
}

// A Clock whose timers cannot be moved (TestClock's) gets the same tells:
// the alarm is made anew at each frame.
func TestAFlowWatchOnATestClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := NewTestClock()
		tk := newTasks(&sync.WaitGroup{}, clock, nil)
		var log tellLog
		w := newFlowWatch(tk, clock, time.Second, log.tell)
		for range 10 {
			w.heard(clock.Now())
			time.Sleep(200 * time.Millisecond)
		}
		assert.Equal(t, 1, clock.Pending(), "one alarm pending at most")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		tells, _ := log.got()
		assert.Equal(t, []bool{true, false}, tells)
		w.heard(clock.Now())
		tk.stop()
		clock.Advance(time.Hour)
		synctest.Wait()
		tells, _ = log.got()
		assert.Equal(t, []bool{true, false, true}, tells)
		assert.Zero(t, clock.Pending(), "the incarnation's stop cancelled the alarm")
	})
}
