package actors

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// streamReader is the actor that consumes StreamAgentStateUpdates for the
// session's conversation. Its one job: hand every frame to the session, in
// order (*frameReceived), and say when the stream is up and whether frames
// flow (*messages.StreamState: up with the first frame; frames stopped once
// none has come for Config.PollActive, flowing again with the next). The
// poller reads a running turn's steps only while they do not flow: a
// parked agy sends nothing.
//
// Its goroutine reads the stream and sends frames straight to the session.
// A frame over the client's limit (agy's first frame of a long
// conversation is a snapshot of every step) is skipped, and the stream
// goes on: the session is told (*frameSkipped), and has the poller read
// what the frame carried, window by window. Any end of the stream — an error, a clean end-stream, a repeated
// subscriber closing it — is a failure: the actor panics with it, and the
// session's policy restarts it with capped backoff (or re-discovers when the
// port is gone) while the Poller covers.
type streamReader struct {
	child
}

// frameReceived is sent by the stream reader to its session for every data
// frame of the stream, in order. No reply. Received is when the frame was
// decoded (the mapper stamps events with it). The frame's bytes are lent by
// the stream (the session gives them back: Frame.Release), so the message
// is the tree's own: it never crosses a node. Lending pays where frames come
// fast: docs/PERFORMANCE.md, "Read a frame into a released frame's buffer"
// (BenchmarkStreamTransport, Release off -> on: 0.81, lower in 9 of 10 pairs).
type frameReceived struct {
	gen      messages.Gen
	frame    *rpc.StreamFrame
	received time.Time
}

// frameSkipped is sent by the stream reader to its session for a frame
// over the client's limit, skipped (rpc.ErrFrameSkipped). No reply. first:
// the first of this stream.
type frameSkipped struct {
	gen   messages.Gen
	err   error
	first bool
}

// streamEnded is sent by the reader's goroutine to the reader.
type streamEnded struct{ err error }

var errStreamEnded = errors.New("stream ended")

func newStreamReader(c child) actor.Actor {
	return &streamReader{child: c}
}

// Receive starts the stream and fails when it ends.
func (r *streamReader) Receive(ctx actor.Context) {
	r.lifecycle(ctx)
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.read(ctx.Self(), ctx.Parent())
	case *streamEnded:
		err := m.err
		if errors.Is(err, io.EOF) {
			err = errStreamEnded
		}
		fail("stream", err)
	}
}

func (r *streamReader) read(self, session *actor.PID) {
	r.t.run(func(ctx context.Context) {
		st, err := r.client.StreamAgentStateUpdates(ctx, r.conv, "")
		if err != nil {
			r.t.send(self, &streamEnded{err})
			return
		}
		defer st.Close()
		flow := newFlowWatch(r.t, r.cfg.Clock, r.cfg.PollActive, func(flowing bool) {
			r.t.send(session, &messages.StreamState{Gen: r.gen, Up: true, Flowing: flowing})
		})
		defer flow.stop()
		skipped := false
		for {
			f, err := st.Next()
			if err != nil && errors.Is(err, rpc.ErrFrameSkipped) {
				flow.heard(r.cfg.Clock.Now()) // connected: the frames after it come
				r.t.send(session, &frameSkipped{gen: r.gen, err: err, first: !skipped})
				skipped = true
				continue
			}
			if err != nil {
				// No report that frames stopped may follow the end.
				flow.stop()
				if ctx.Err() == nil {
					r.t.send(self, &streamEnded{err})
				}
				return
			}
			now := r.cfg.Clock.Now()
			flow.heard(now)
			r.t.send(session, &frameReceived{gen: r.gen, frame: f, received: now})
		}
	})
}

// flowWatch tells whether a stream's frames flow: tell(true) with the
// first frame heard, tell(false) once none has been heard for quiet, and
// tell(true) again with the next. Its tells are sent in that order, never
// two alike in a row, and none after stop. The stream's goroutine calls
// heard, which sets an alarm on the incarnation's clock a quiet from then
// (rounded up to the shared grid, alignedDelay): while frames flow the
// alarm is moved on, and fires only once they stop. (A check fired once a
// quiet while frames flowed, a timer's goroutine each time: for a host of
// hundreds of streaming sessions, a sixth of its CPU; docs/PERFORMANCE.md.)
type flowWatch struct {
	tell  func(flowing bool)
	clock Clock
	quiet time.Duration

	mu      sync.Mutex
	alarm   *alarm
	last    time.Time // when the latest frame was heard
	flowing bool
	stopped bool
}

func newFlowWatch(t *tasks, clock Clock, quiet time.Duration, tell func(flowing bool)) *flowWatch {
	w := &flowWatch{tell: tell, clock: clock, quiet: quiet}
	w.alarm = t.newAlarm(w.check)
	return w
}

// heard records a frame heard at t.
func (w *flowWatch) heard(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.last = t
	if !w.flowing {
		w.flowing = true
		w.tell(true)
	}
	w.alarm.set(alignedDelay(t, w.quiet))
}

// check tells that frames stopped when none came for quiet, else looks again
// when that would be (the alarm fired as a frame set it again).
func (w *flowWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || !w.flowing {
		return
	}
	now := w.clock.Now()
	if wait := w.last.Add(w.quiet).Sub(now); wait > 0 {
		w.alarm.set(alignedDelay(now, wait))
		return
	}
	w.flowing = false
	w.tell(false)
}

// stop ends the watch: nothing is told after it returns.
func (w *flowWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.alarm.stop()
}
