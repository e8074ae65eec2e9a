package actors

import (
	"sync"

	"github.com/agyharness/agyharness/messages"
)

// Subscription is one consumer's view of a session's events, in seq order.
// The session hands it events without ever blocking; when the consumer
// falls behind by more than Config.CoalesceAfter events, consecutive deltas
// of one item are merged into one (their text concatenated, or the later
// snapshot kept). Items, prompts and status edges are never merged or
// dropped.
type Subscription struct {
	out     chan *messages.Event
	done    chan struct{}   // closed by Close: the consumer is gone
	abandon <-chan struct{} // closed by Host.Shutdown when consumers did not drain in time

	mu         sync.Mutex
	queue      []*messages.Event
	inFlight   bool   // the pump holds an event it has not handed over yet
	handedOver uint64 // events push gave the consumer itself
	wake       chan struct{}
	closed     bool // no more pushes: drain then close out
	coalesceN  int
	coalesced  uint64
}

// pumps owns the subscriptions' goroutines: Host.Shutdown waits for them
// (consumers receive every queued event) until its context ends, then
// closes abandon.
type pumps struct {
	wg      sync.WaitGroup
	abandon chan struct{}
}

func newSubscription(coalesceAfter int, p *pumps) *Subscription {
	wg := &p.wg
	s := &Subscription{
		out:       make(chan *messages.Event),
		done:      make(chan struct{}),
		abandon:   p.abandon,
		wake:      make(chan struct{}, 1),
		coalesceN: coalesceAfter,
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.pump()
	}()
	return s
}

// C is the event channel. It is closed after the session ends and every
// queued event was received, or after Close.
func (s *Subscription) C() <-chan *messages.Event { return s.out }

// Close stops the subscription; events still queued are discarded.
func (s *Subscription) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
}

// Coalesced reports how many deltas were merged because the consumer lagged.
func (s *Subscription) Coalesced() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.coalesced
}

// push queues ev for the consumer (the session's goroutine calls it). It
// never blocks. It returns false once the consumer has closed the
// subscription.
func (s *Subscription) push(ev *messages.Event) bool {
	select {
	case <-s.done:
		return false
	default:
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	if len(s.queue) == 0 && !s.inFlight {
		// Nothing is ahead of ev: a consumer waiting on C takes it from
		// here, without waking the pump (one goroutine hop fewer per event:
		// BenchmarkSubscriptionPush; docs/PERFORMANCE.md).
		select {
		case s.out <- ev:
			s.handedOver++
			s.mu.Unlock()
			return true
		default:
		}
	}
	if n := len(s.queue); n >= s.coalesceN && n > 0 && mergeable(s.queue[n-1], ev) {
		s.queue[n-1] = merge(s.queue[n-1], ev)
		s.coalesced++
	} else {
		s.queue = append(s.queue, ev)
	}
	s.mu.Unlock()
	s.signal()
	return true
}

// finish marks the end of the session's events: the pump drains the queue
// and then closes C.
func (s *Subscription) finish() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Subscription) pump() {
	defer func() {
		// No push may hand an event to C once it is closed.
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.out)
	}()
	for {
		s.mu.Lock()
		var ev *messages.Event
		if len(s.queue) > 0 {
			ev = s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
		}
		s.inFlight = ev != nil
		closed := s.closed
		s.mu.Unlock()
		if ev == nil {
			if closed {
				return
			}
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			case <-s.abandon:
				return
			}
		}
		select {
		case s.out <- ev:
		case <-s.done:
			return
		case <-s.abandon:
			return
		}
	}
}

func isDelta(ev *messages.Event) bool { return ev.Type.Delta() }

// mergeable: two deltas of the same item and kind, next to each other.
func mergeable(prev, next *messages.Event) bool {
	return isDelta(prev) && isDelta(next) && prev.Type == next.Type && prev.ItemID == next.ItemID
}

// merge returns one delta equivalent to prev followed by next. The result
// keeps prev's id (the first delta it stands for) and next's seq and time.
func merge(prev, next *messages.Event) *messages.Event {
	m := *prev
	m.Seq, m.Time = next.Seq, next.Time
	switch {
	case next.Snapshot != "":
		m.Delta, m.Snapshot = "", next.Snapshot
	case prev.Snapshot != "":
		m.Snapshot = prev.Snapshot + next.Delta
	default:
		m.Delta = prev.Delta + next.Delta
	}
	return &m
}
