package hostcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
)

// Stream is a session's event stream read from another node: the events
// after the requested seq, in order, each once, while both nodes live. C
// closes when the session ends or the stream fails; Err then says why
// (nil: the session ended). When the owning node is lost, the last event
// before C closes is an error event whose message starts with "node_lost"
// (it repeats the last seq delivered: it is not in the session's log).
//
// A stream opened raw (Node.SubscribeRaw) hands out each event as the
// owner encoded it (RawC), never decoded and encoded again here; C is then
// nil.
type Stream struct {
	out       chan *messages.Event
	rawOut    chan RawEvent
	published uint64
	actor     *actor.PID
	root      *actor.RootContext

	closeOnce sync.Once
	done      chan struct{} // closed by Close
	mu        sync.Mutex
	err       error
}

// C is the event channel (nil for a raw stream).
func (s *Stream) C() <-chan *messages.Event { return s.out }

// RawC is a raw stream's event channel (nil for a decoded one).
func (s *Stream) RawC() <-chan RawEvent { return s.rawOut }

// RawEvent is an event of a raw stream: its seq, and its JSON as the
// owner's json.Marshal of its messages.Event wrote it: one JSON object, no
// line break (checked on arrival), so it can be written as one SSE data
// line.
type RawEvent struct {
	Seq  uint64
	JSON []byte
}

// streamItem is an event on its way from the stream actor to the pump:
// decoded (ev) for a decoded stream, checked and kept as received (raw)
// for a raw one.
type streamItem struct {
	seq uint64
	raw []byte
	ev  *messages.Event
}

// Published is how many events the session had published when the stream
// opened.
func (s *Stream) Published() uint64 { return s.published }

// Err says why C closed (nil: the session ended, or Close).
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the stream; the owner stops sending.
func (s *Stream) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.root.Stop(s.actor)
	})
}

// streamActor runs on the reading node, one per Stream. Its one job:
// receive a session's events from the owner's feeder and hand them to the
// Stream's pump, in seq order, each once. It asks the owner's node actor
// for the stream (Subscribe, itself the sender), takes Subscribed,
// EventBatch and StreamEnd from the feeder, watches the feeder (a broken
// connection to its node ends the stream as node_lost), and takes
// ownerLost from the node when the owner leaves the cluster. Its queue to
// the pump holds at most the credit window, which the pump returns as the
// consumer takes events. It stops when the stream ends or Close is called,
// telling the feeder to stop.
type streamActor struct {
	owner     *actor.PID // the owner's node actor
	node      string
	sessionID string
	after     uint64
	window    int
	raw       bool // pass events on undecoded (Node.SubscribeRaw)

	opened chan<- openResult // Subscribed's outcome, once
	in     chan streamItem   // to the pump; capacity window
	ended  chan<- error      // the end and why, once

	feeder *actor.PID
	isOpen bool
	over   bool
}

type openResult struct {
	feeder    *actor.PID
	published uint64
	err       error
}

// streamHome is where a stream actor lives: the actor system of a node's
// generation, which ends its streams when it leaves.
type streamHome interface {
	root() *actor.RootContext
	track(pid *actor.PID) bool
	untrack(pid *actor.PID)
}

// errStreamClosed ends a stream stopped before its end.
var errStreamClosed = errors.New("hostcluster: stream closed")

// ownerLost tells a stream actor its owner's node is gone (queued after
// whatever the owner sent before).
type ownerLost struct{ why string }

func (a *streamActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Request(a.owner, &clusterpb.Subscribe{Version: ProtocolVersion, SessionId: a.sessionID, AfterSeq: a.after, Window: uint32(a.window)})
	case *actor.Stopping:
		if a.feeder != nil && !a.over {
			ctx.Send(a.feeder, &clusterpb.CancelStream{Version: ProtocolVersion})
		}
		if !a.isOpen {
			a.opened <- openResult{err: errors.New("hostcluster: stream closed before it opened")}
			a.isOpen = true
		}
		a.end(errStreamClosed)
	case *clusterpb.Subscribed:
		if a.isOpen {
			return
		}
		a.isOpen = true
		if m.Failure != nil || m.Version != ProtocolVersion {
			err := fromFailure(m.Failure)
			if m.Version != ProtocolVersion {
				err = fromFailure(versionFailure(m.Version))
			}
			a.opened <- openResult{err: err}
			a.over = true
			ctx.Stop(ctx.Self())
			return
		}
		a.feeder = ctx.Sender()
		if a.feeder != nil {
			ctx.Watch(a.feeder)
		}
		a.opened <- openResult{feeder: a.feeder, published: m.Published}
	case *clusterpb.EventBatch:
		if a.over {
			return
		}
		for _, raw := range m.Events {
			it, err := a.item(raw)
			if err != nil {
				a.fail(ctx, &Error{Status: http.StatusBadGateway, Code: CodeFailed, Message: "an event from node " + a.node + " does not decode: " + err.Error()})
				return
			}
			// Passed as the owner sent them: open prompts replayed on
			// subscribing keep their own (earlier) seq, as locally.
			select {
			case a.in <- it:
			default:
				a.fail(ctx, &Error{Status: http.StatusBadGateway, Code: CodeFailed, Message: "node " + a.node + " sent past the stream's credit"})
				return
			}
		}
	case *clusterpb.StreamEnd:
		a.over = true
		a.end(fromFailure(m.Failure))
		ctx.Stop(ctx.Self())
	case *actor.Terminated:
		if a.feeder == nil || !m.Who.Equal(a.feeder) {
			return
		}
		why := "stopped streaming"
		if m.Why == actor.TerminatedReason_AddressTerminated {
			why = "is unreachable: its connection broke"
		}
		// After whatever the feeder sent before it went.
		ctx.Send(ctx.Self(), &ownerLost{why: why})
	case *ownerLost:
		if a.over {
			return
		}
		if !a.isOpen {
			a.isOpen = true
			a.opened <- openResult{err: nodeLost(a.node, m.why)}
			a.over = true
			ctx.Stop(ctx.Self())
			return
		}
		a.fail(ctx, nodeLost(a.node, m.why))
	}
}

// item is raw as the pump takes it: decoded, or for a raw stream checked
// to be one JSON object on one line, with its seq read.
func (a *streamActor) item(raw []byte) (streamItem, error) {
	if !a.raw {
		ev := new(messages.Event)
		if err := json.Unmarshal(raw, ev); err != nil {
			return streamItem{}, err
		}
		return streamItem{seq: ev.Seq, ev: ev}, nil
	}
	if bytes.ContainsAny(raw, "\r\n") {
		return streamItem{}, errors.New("a line break in an event")
	}
	var head struct {
		Seq uint64 `json:"seq"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return streamItem{}, errors.New("an event that is not a JSON object")
	}
	if err := json.Unmarshal(raw, &head); err != nil { // the whole of raw is checked
		return streamItem{}, err
	}
	return streamItem{seq: head.Seq, raw: raw}, nil
}

// fail ends the stream with err.
func (a *streamActor) fail(ctx actor.Context, err error) {
	a.over = true
	a.end(err)
	ctx.Stop(ctx.Self())
}

// end closes the queue to the pump, once, with why.
func (a *streamActor) end(err error) {
	if a.ended == nil {
		return
	}
	a.ended <- err
	a.ended = nil
	close(a.in)
}

// openStream starts a stream actor and waits for the owner's answer, the
// owner's loss, or ctx.
func openStream(ctx context.Context, g streamHome, wg *sync.WaitGroup, owner *actor.PID, node, sessionID string,
	after uint64, window int, lost <-chan struct{}, raw bool) (*Stream, error) {
	root := g.root()
	opened := make(chan openResult, 1)
	ended := make(chan error, 1)
	in := make(chan streamItem, window)
	a := &streamActor{owner: owner, node: node, sessionID: sessionID, after: after, window: window, raw: raw,
		opened: opened, in: in, ended: ended}
	pid := root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	if !g.track(pid) {
		root.Stop(pid)
		<-opened
		return nil, nodeLost(node, "is out of reach: this node is leaving the cluster")
	}
	s := &Stream{actor: pid, root: root, done: make(chan struct{})}
	if raw {
		s.rawOut = make(chan RawEvent)
	} else {
		s.out = make(chan *messages.Event)
	}
	var res openResult
	select {
	case res = <-opened:
	case <-lost:
		root.Send(pid, &ownerLost{why: "left the cluster"})
		res = <-opened
	case <-ctx.Done():
		root.Stop(pid)
		<-opened
		g.untrack(pid)
		return nil, ctx.Err()
	}
	if res.err != nil {
		g.untrack(pid)
		return nil, res.err
	}
	s.published = res.published
	watchLost := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.pump(in, ended, res.feeder, window, sessionID, node, after)
		g.untrack(pid)
		close(watchLost)
	}()
	if lost != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-lost:
				root.Send(pid, &ownerLost{why: "left the cluster"})
			case <-watchLost:
			}
		}()
	}
	return s, nil
}

// pump hands events to the consumer and returns credit to the feeder as
// they are taken. On a loss it adds the node_lost error event.
func (s *Stream) pump(in <-chan streamItem, ended <-chan error, feeder *actor.PID, window int, sessionID, node string, lastSeq uint64) {
	defer func() {
		if s.out != nil {
			close(s.out)
		} else {
			close(s.rawOut)
		}
	}()
	taken := 0
	for it := range in {
		if !s.hand(it) {
			return
		}
		lastSeq = max(lastSeq, it.seq)
		if taken++; taken >= max(window/2, 1) {
			s.root.Send(feeder, &clusterpb.Credit{Version: ProtocolVersion, Events: uint32(taken)})
			taken = 0
		}
	}
	err := <-ended
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	if !errors.Is(err, ErrNodeLost) {
		return
	}
	msg := err.Error()
	if e := (*Error)(nil); errors.As(err, &e) {
		msg = e.Message // the API's text: "node_lost: …"
	}
	retry := true
	ev := &messages.Event{Type: messages.EventError, ID: fmt.Sprintf("node_lost-%s-%d", sessionID, lastSeq),
		SessionID: sessionID, Seq: lastSeq, Time: time.Now().UTC(), Message: msg, Retryable: &retry}
	it := streamItem{seq: ev.Seq, ev: ev}
	if s.out == nil {
		b, err := json.Marshal(ev)
		if err != nil {
			return
		}
		it = streamItem{seq: ev.Seq, raw: b}
	}
	s.hand(it)
}

// hand gives the consumer it, in the stream's form; false: Close was
// called.
func (s *Stream) hand(it streamItem) bool {
	if s.out != nil {
		select {
		case s.out <- it.ev:
			return true
		case <-s.done:
			return false
		}
	}
	select {
	case s.rawOut <- RawEvent{Seq: it.seq, JSON: it.raw}:
		return true
	case <-s.done:
		return false
	}
}
