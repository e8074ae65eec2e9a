package hostcluster

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/asynkron/protoactor-go/actor"
)

// maxBatch bounds the events of one EventBatch.
const maxBatch = 64

// feeder runs on the node that owns a session, one per stream another node
// reads. Its one job: send the session's events after the requested seq to
// the reader's stream actor, in order, never more than the credit the
// reader granted ahead of what it consumed (so a slow reader leaves its
// backlog in the local subscription, where deltas coalesce exactly as for
// a slow local client, and nothing grows here). It takes Credit and
// CancelStream from the reader, and Terminated when the reader (or its
// node) goes. A goroutine it owns opens the local stream and sends the
// batches; the feeder stops when the session ends (after StreamEnd), the
// reader cancels or goes, or its parent stops.
type feeder struct {
	local     Local
	sessionID string
	after     uint64
	reader    *actor.PID
	window    int
	wg        *sync.WaitGroup

	cancel context.CancelFunc
	credit atomic.Int64  // events the goroutine may send
	wake   chan struct{} // credit was granted
}

// feederDone tells the feeder its goroutine finished.
type feederDone struct{}

func (f *feeder) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Watch(f.reader)
		gctx, cancel := context.WithCancel(context.Background())
		f.cancel = cancel
		f.credit.Store(int64(f.window))
		f.wake = make(chan struct{}, 1)
		f.wg.Add(1)
		self, root := ctx.Self(), ctx.ActorSystem().Root
		go func() {
			defer f.wg.Done()
			f.pump(gctx, root, self)
			root.Send(self, &feederDone{})
		}()
	case *actor.Stopping:
		f.cancel()
	case *clusterpb.Credit:
		f.credit.Add(int64(m.Events))
		select {
		case f.wake <- struct{}{}:
		default:
		}
	case *clusterpb.CancelStream, *feederDone:
		ctx.Stop(ctx.Self())
	case *actor.Terminated:
		if m.Who.Equal(f.reader) {
			ctx.Stop(ctx.Self())
		}
	}
}

// pump opens the local stream, tells the reader, then sends batches under
// credit until the stream ends or ctx is cancelled.
func (f *feeder) pump(ctx context.Context, root *actor.RootContext, self *actor.PID) {
	sub, published, err := f.local.Subscribe(ctx, f.sessionID, f.after)
	if err != nil {
		root.RequestWithCustomSender(f.reader, &clusterpb.Subscribed{Version: ProtocolVersion, Failure: failure(err)}, self)
		return
	}
	defer sub.Close()
	root.RequestWithCustomSender(f.reader, &clusterpb.Subscribed{Version: ProtocolVersion, Published: published}, self)
	for {
		credit := int(f.credit.Load())
		if credit <= 0 {
			select {
			case <-f.wake:
			case <-ctx.Done():
				return
			}
			continue
		}
		var batch [][]byte
		select {
		case ev, ok := <-sub.C():
			if !ok {
				root.RequestWithCustomSender(f.reader, &clusterpb.StreamEnd{Version: ProtocolVersion}, self)
				return
			}
			batch = appendEvent(batch, ev)
		case <-ctx.Done():
			return
		}
	fill:
		for len(batch) < min(credit, maxBatch) {
			select {
			case ev, ok := <-sub.C():
				if !ok {
					break fill // the next read sees the end again
				}
				batch = appendEvent(batch, ev)
			default:
				break fill
			}
		}
		f.credit.Add(-int64(len(batch)))
		root.RequestWithCustomSender(f.reader, &clusterpb.EventBatch{Version: ProtocolVersion, Events: batch}, self)
	}
}

func appendEvent(batch [][]byte, ev any) [][]byte {
	b, err := json.Marshal(ev)
	if err != nil {
		return batch
	}
	return append(batch, b)
}
