package actors

import (
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
)

// frameActor runs a session's work on each frame it is sent (onFrame: the
// reconciler, the event log, a subscription) and says when it is done.
type frameActor struct {
	s    *session
	done chan struct{}
}

func (a *frameActor) Receive(c actor.Context) {
	if m, ok := c.Message().(*frameReceived); ok {
		a.s.onFrame(nil, m)
		a.done <- struct{}{}
	}
}

// BenchmarkSessionMailbox sends stream frames one at a time to an actor
// running the session's work on each, the sender waiting for each: the
// mailbox goes from empty to busy on every frame, as a session's does when
// frames come one per wake-up. own: the mailbox on a goroutine of its own
// (ownGoroutine, as the session actor has it); default: Proto.Actor's
// dispatcher, a new goroutine per run. Besides ns/op it reports
// cpu-ns/frame (getrusage).
func BenchmarkSessionMailbox(b *testing.B) {
	for _, mode := range []string{"own", "default"} {
		b.Run(mode, func(b *testing.B) {
			const n, versions = 100, 256
			hist := benchHistory(b, n-1)
			frames := make([]*rpc.StreamFrame, versions)
			text := ""
			for v := range frames {
				text += "A streamed chunk of text. "
				f, err := rpc.DecodeFrame(benchFrame(b, n-1, text))
				if err != nil {
					b.Fatal(err)
				}
				frames[v] = f
			}
			bs := newBenchSession(hist)
			s, fresh := bs.s, bs.fresh
			system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
			a := &frameActor{s: s, done: make(chan struct{})}
			var opts []actor.PropsOption
			var own *ownGoroutine
			if mode == "own" {
				own = newOwnGoroutine(bs.wg)
				opts = append(opts, actor.WithDispatcher(own))
			}
			pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }, opts...))
			var paused time.Duration // CPU of fresh, not counted
			before := cpuNow()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v := i % versions
				if v == 0 && i > 0 {
					b.StopTimer()
					t0 := cpuNow()
					fresh()
					paused += cpuNow() - t0
					b.StartTimer()
				}
				system.Root.Send(pid, &frameReceived{frame: frames[v], received: time.Now()})
				<-a.done
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuNow()-before-paused).Nanoseconds())/float64(b.N), "cpu-ns/frame")
			_ = system.Root.StopFuture(pid).Wait()
			if own != nil {
				own.stop()
			}
			system.Shutdown()
			bs.stop()
		})
	}
}

// BenchmarkSubscriptionPush pushes events one at a time to a subscription
// whose consumer waits on C, the producer waiting for each to arrive, as a
// session publishes to a consumer that keeps up: each event is handed to
// the consumer by Push itself. Besides ns/op it reports cpu-ns/event
// (getrusage).
func BenchmarkSubscriptionPush(b *testing.B) {
	p := &pumps{abandon: make(chan struct{})}
	sub := newSubscription(64, p)
	got := make(chan struct{})
	go func() {
		for range sub.C() {
			got <- struct{}{}
		}
		close(got)
	}()
	ev := &messages.Event{Type: messages.EventOutputTextDelta, Delta: "chunk"}
	before := cpuNow()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sub.push(ev)
		<-got
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuNow()-before).Nanoseconds())/float64(b.N), "cpu-ns/event")
	sub.finish()
	for range got {
	}
	p.wg.Wait()
}

// cpuNow is the process's CPU time so far, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
