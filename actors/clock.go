package actors

import (
	"context"
	"time"
)

// Clock is the time a host's actors keep (Config.Clock): when their timers,
// periodic reads, retries and backoffs fire, the spans they measure (how
// long agy has been gone, how long an answer has waited for its prompt), and
// the times they stamp on events and records. The default is the machine's
// clock; a test gives the host a clock it moves forward, so that a timeout
// or a backoff of minutes passes at once.
//
// Two kinds of time stay on the machine's clock whatever Clock is: bounds
// on I/O (an RPC's deadline, a write to agy's terminal, a requester's
// context), and the moments compared with agy's own times (when a
// conversation was bound, against its last activity).
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// AfterFunc calls f in a goroutine of its own once d has passed, unless
	// the Timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a call Clock.AfterFunc will make.
type Timer interface {
	// Stop cancels the call. It returns false when the call has already
	// been made or cancelled.
	Stop() bool
}

// machineClock is the default Clock.
type machineClock struct{}

func (machineClock) Now() time.Time { return time.Now() }

func (machineClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// sleep waits d on c, or until ctx ends (then it returns false).
func sleep(ctx context.Context, c Clock, d time.Duration) bool {
	woken := make(chan struct{})
	t := c.AfterFunc(d, func() { close(woken) })
	defer t.Stop()
	select {
	case <-woken:
		return true
	case <-ctx.Done():
		return false
	}
}
