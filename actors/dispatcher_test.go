package actors

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitGroupDone reports whether wg is done within limit.
func waitGroupDone(wg *sync.WaitGroup, limit time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}

func TestAnOwnGoroutineRunsWhatIsScheduledInOrder(t *testing.T) {
	var wg sync.WaitGroup
	d := newOwnGoroutine(&wg)
	ran := make(chan int, 3)
	for i := range 3 {
		// As a mailbox does: the next run is scheduled once the last began.
		d.Schedule(func() { ran <- i })
		select {
		case got := <-ran:
			assert.Equal(t, i, got)
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d did not run", i)
		}
	}
	d.stop()
	require.True(t, waitGroupDone(&wg, 5*time.Second), "the goroutine did not end")
}

func TestAnOwnGoroutineStoppedFromItsRunEndsAfterIt(t *testing.T) {
	var wg sync.WaitGroup
	d := newOwnGoroutine(&wg)
	finished := make(chan struct{})
	d.Schedule(func() {
		d.stop()
		d.stop() // twice is safe
		close(finished)
	})
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not run")
	}
	require.True(t, waitGroupDone(&wg, 5*time.Second), "the goroutine did not end")
	// Runs scheduled after stop are dropped, and scheduling never waits.
	ran := make(chan struct{}, 2)
	d.Schedule(func() { ran <- struct{}{} })
	d.Schedule(func() { ran <- struct{}{} })
	assert.Never(t, func() bool { return len(ran) > 0 }, 50*time.Millisecond, time.Millisecond, "a run after stop ran")
}

func TestAnOwnGoroutineStoppedWhileIdleEnds(t *testing.T) {
	var wg sync.WaitGroup
	d := newOwnGoroutine(&wg)
	d.stop()
	require.True(t, waitGroupDone(&wg, 5*time.Second), "the goroutine did not end")
}
