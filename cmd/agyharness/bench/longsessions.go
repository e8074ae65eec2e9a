package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

// A long-sessions run (--long-sessions N) measures what an active session
// holds once its conversation is long: N sessions, each on an external
// fake whose conversation starts with HistorySteps finished steps, each
// sent TurnsPerSession short text turns one after another. The heap in
// use after (the sessions still attached, after a GC) minus before (the
// fakes started, no session attached), over N, is
// heap_bytes_per_active_session. The fakes run in a fakeagy process, and
// the consumer of each session keeps counters only, so the difference is
// the harness's own.

// longSession is one session of a long-sessions run and its consumer.
type longSession struct {
	s    *actors.Session
	conv string

	mu       sync.Mutex
	last     uint64 // seq of the last event
	lastIdle uint64 // seq of the last idle status of the conversation
	received int
	wake     chan struct{}
	done     chan struct{} // the consumer ended (the events channel closed)
}

func (l *longSession) consume() {
	defer close(l.done)
	for ev := range l.s.Events() {
		l.mu.Lock()
		l.received++
		l.last = ev.Seq
		if ev.Type == messages.EventStatus && ev.State == messages.StateIdle && ev.ConversationID == l.conv {
			l.lastIdle = ev.Seq
		}
		l.mu.Unlock()
		if !ev.Type.Delta() {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

// seqs returns the last seq and the last idle status's seq.
func (l *longSession) seqs() (last, idle uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.lastIdle
}

// waitIdleAfter waits for an idle status after seq; false when ctx ends first.
func (l *longSession) waitIdleAfter(ctx context.Context, seq uint64) bool {
	for {
		if _, idle := l.seqs(); idle > seq {
			return true
		}
		select {
		case <-l.wake:
		case <-l.s.Done():
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// run sends turns text turns, each waited to its end; it returns the turns
// agy took and the ones that did not end in time (or were refused).
func (l *longSession) run(ctx context.Context, turns int, turnWait time.Duration) (took, stuck int) {
	wctx, cancel := context.WithTimeout(ctx, turnWait)
	ok := l.waitIdleAfter(wctx, 0)
	cancel()
	if !ok {
		return 0, 1
	}
	for i := range turns {
		seq, _ := l.seqs()
		tctx, cancel := context.WithTimeout(ctx, turnWait)
		err := l.s.SendTurn(tctx, "text turn "+strconv.Itoa(i), "")
		if err == nil && l.waitIdleAfter(tctx, seq) {
			took++
		} else {
			stuck++
		}
		cancel()
		if stuck > 0 || ctx.Err() != nil {
			break // a session that lost a turn would wait out every one after it
		}
	}
	return took, stuck
}

// longSessions is the long-sessions run of Run.
func (b *bench) longSessions(ctx context.Context) error {
	o, res, n := b.o, b.res, b.o.LongSessions
	res.Sessions, res.ExternalFakes, res.GroundTruthChecked, res.CPUIncludesFakes = n, true, false, false
	host := actors.NewHost(campaignHostConfig(o))
	var sessions []*longSession
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := host.Shutdown(sctx); err != nil {
			res.problem("long sessions host shutdown: %v", err)
		}
		for _, l := range sessions {
			<-l.done
		}
	}()
	heap0 := heapNow()
	for _, f := range b.ext.fakes[:n] {
		actx, cancel := context.WithTimeout(ctx, o.TurnTimeout)
		s, err := host.Attach(actx, actors.Spec{Port: f.port, ReadMode: o.ReadMode})
		cancel()
		if err != nil {
			return fmt.Errorf("bench: attach long session: %w", err)
		}
		l := &longSession{s: s, conv: f.conv, wake: make(chan struct{}, 1), done: make(chan struct{})}
		sessions = append(sessions, l)
		go l.consume()
	}
	start, before := time.Now(), usage()
	var wg sync.WaitGroup
	took, stuck := make([]int, n), make([]int, n)
	for i, l := range sessions {
		wg.Go(func() { took[i], stuck[i] = l.run(ctx, o.TurnsPerSession, o.TurnTimeout) })
	}
	wg.Wait()
	res.driven(start, before)
	res.DurationS = res.DriveS
	heap1 := heapNow()
	if o.HeapProfileEnd != "" {
		if err := writeHeapProfile(o.HeapProfileEnd); err != nil {
			return err
		}
	}
	for i, l := range sessions {
		res.Turns += took[i]
		res.StuckTurns += stuck[i]
		l.mu.Lock()
		res.Events += l.received
		l.mu.Unlock()
	}
	per := float64(int64(heap1)-int64(heap0)) / float64(n)
	res.HeapBytesPerActiveSession = &per
	res.HistorySteps, res.TurnsPerSession = o.HistorySteps, o.TurnsPerSession
	return nil
}

// heapSampler records the peaks of the heap while it runs, read from
// runtime/metrics (no stop of the world) every interval: its objects'
// bytes, garbage not yet collected included, and the bytes the last
// collection found live (what a heap profile counts).
type heapSampler struct {
	stop chan struct{}
	done chan heapPeaks
}

type heapPeaks struct{ objects, live uint64 }

const (
	heapObjects = "/memory/classes/heap/objects:bytes"
	heapLive    = "/gc/heap/live:bytes"
)

func startHeapSampler(interval time.Duration) *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan heapPeaks, 1)}
	go func() {
		sample := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}}
		var peak heapPeaks
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				peak.objects = max(peak.objects, sample[0].Value.Uint64())
			}
			if sample[1].Value.Kind() == metrics.KindUint64 {
				peak.live = max(peak.live, sample[1].Value.Uint64())
			}
			select {
			case <-t.C:
			case <-h.stop:
				h.done <- peak
				return
			}
		}
	}()
	return h
}

// peaks stops the sampler and returns the highest heap it saw.
func (h *heapSampler) peaks() heapPeaks {
	close(h.stop)
	return <-h.done
}

// longChecked checks the long-sessions options.
func (o Options) longChecked() error {
	switch {
	case o.LongSessions < 0:
		return fmt.Errorf("bench: --long-sessions must not be negative, got %d", o.LongSessions)
	case o.HistorySteps < 0:
		return fmt.Errorf("bench: --history-steps must not be negative, got %d", o.HistorySteps)
	case o.LongSessions == 0 && o.HistorySteps > 0:
		return errors.New("bench: --history-steps needs --long-sessions")
	case o.LongSessions == 0:
		return nil
	case o.TurnsPerSession <= 0:
		return fmt.Errorf("bench: --turns-per-session must be positive, got %d", o.TurnsPerSession)
	case len(o.Faults) > 0:
		return errors.New("bench: --long-sessions needs --faults none (its fakes are external)")
	case o.Cluster > 0 || o.Floor || o.IdleSessions > 0 || o.PollSessions > 0:
		return errors.New("bench: --long-sessions goes with no --cluster, --floor, --idle-sessions or --poll-sessions")
	}
	return nil
}
