package actors

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// streamReader is the actor that consumes StreamAgentStateUpdates for the
// session's conversation. Its one job: hand every frame to the session, in
// order (*frameReceived), and say when the stream is up
// (*messages.StreamState).
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
		up, skipped := false, false
		for {
			f, err := st.Next()
			if err != nil && errors.Is(err, rpc.ErrFrameSkipped) {
				if !up {
					up = true // connected: the frames after it come
					r.t.send(session, &messages.StreamState{Gen: r.gen, Up: true})
				}
				r.t.send(session, &frameSkipped{gen: r.gen, err: err, first: !skipped})
				skipped = true
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					r.t.send(self, &streamEnded{err})
				}
				return
			}
			if !up {
				up = true
				r.t.send(session, &messages.StreamState{Gen: r.gen, Up: true})
			}
			r.t.send(session, &frameReceived{gen: r.gen, frame: f, received: r.cfg.Clock.Now()})
		}
	})
}
