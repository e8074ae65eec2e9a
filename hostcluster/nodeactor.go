package hostcluster

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
)

// nodeActorName is the name every node spawns its node actor under: the
// others reach it at actor.NewPID(<member address>, nodeActorName).
const nodeActorName = "agyharness-node"

// ownerDefault bounds a request whose sender gave no deadline.
const ownerDefault = time.Minute

// nodeActor is the one well-known actor of a node. Its one job: serve the
// other nodes' requests for this node's sessions from Local. It takes
// ListSessions (answered at once), CreateSession and Command (run on a
// goroutine it owns, answered from there to the sender), and Subscribe
// (spawns a feeder child that owns the stream), and ReadSession (run on a
// goroutine like a command, its pieces kept in docs). A panic restarts it (its
// children, the feeders, stop: their readers see the stream end); requests
// in flight are answered by their goroutines all the same.
type nodeActor struct {
	name    string
	local   Local
	window  int
	wg      *sync.WaitGroup
	members *membership
	rejoin  func(memberID, why string)
	docs    *documents
	ctx     context.Context
	cancel  context.CancelFunc
}

func (a *nodeActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
	case *actor.Stopping:
		a.cancel()
	case *actor.Restarting:
		a.cancel()
	case *clusterpb.ListSessions:
		if m.Version != ProtocolVersion {
			ctx.Respond(&clusterpb.SessionList{Version: ProtocolVersion, Node: a.name, Failure: versionFailure(m.Version)})
			return
		}
		list := a.local.Sessions()
		for _, s := range list {
			s.Node = a.name
		}
		reply := &clusterpb.SessionList{Version: ProtocolVersion, Node: a.name, Sessions: list}
		if a.members != nil {
			reply.MemberId, reply.AliveMembers, reply.LostMembers = a.members.view()
		}
		ctx.Respond(reply)
	case *clusterpb.Rejoin:
		if m.Version == ProtocolVersion && a.rejoin != nil {
			a.rejoin(m.MemberId, m.Reason)
		}
	case *clusterpb.CreateSession:
		if m.Version != ProtocolVersion {
			ctx.Respond(&clusterpb.Created{Version: ProtocolVersion, Failure: versionFailure(m.Version)})
			return
		}
		a.run(ctx, m.DeadlineUnixNano, func(rctx context.Context) any {
			info, err := a.local.Attach(rctx, m)
			if info != nil {
				info.Node = a.name
			}
			return &clusterpb.Created{Version: ProtocolVersion, Session: info, Failure: failure(err)}
		})
	case *clusterpb.Command:
		if m.Version != ProtocolVersion {
			ctx.Respond(&clusterpb.CommandResult{Version: ProtocolVersion, Failure: versionFailure(m.Version)})
			return
		}
		c := commandOf(m)
		a.run(ctx, m.DeadlineUnixNano, func(rctx context.Context) any {
			return &clusterpb.CommandResult{Version: ProtocolVersion, Failure: failure(a.local.Do(rctx, m.SessionId, c))}
		})
	case *clusterpb.ReadSession:
		if m.Version != ProtocolVersion {
			ctx.Respond(&clusterpb.SessionPiece{Version: ProtocolVersion, Failure: versionFailure(m.Version)})
			return
		}
		a.run(ctx, m.DeadlineUnixNano, func(rctx context.Context) any { return a.docs.serve(rctx, a.local, m) })
	case *clusterpb.Subscribe:
		reader := ctx.Sender()
		if reader == nil {
			return
		}
		if m.Version != ProtocolVersion {
			ctx.Send(reader, &clusterpb.Subscribed{Version: ProtocolVersion, Failure: versionFailure(m.Version)})
			return
		}
		window := int(m.Window)
		if window <= 0 || window > 4*a.window {
			window = a.window
		}
		ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &feeder{local: a.local, sessionID: m.SessionId, after: m.AfterSeq, reader: reader, window: window, wg: a.wg}
		}))
	}
}

// run answers the current request from a goroutine the actor owns, under a
// context that ends at the sender's deadline or when the actor stops.
func (a *nodeActor) run(ctx actor.Context, deadlineNano int64, do func(context.Context) any) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	deadline := time.Now().Add(ownerDefault)
	if deadlineNano > 0 {
		deadline = time.Unix(0, deadlineNano)
	}
	root := ctx.ActorSystem().Root
	parent := a.ctx
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		rctx, cancel := context.WithDeadline(parent, deadline)
		defer cancel()
		root.Send(sender, do(rctx))
	}()
}

func commandOf(m *clusterpb.Command) messages.Command {
	c := messages.Command{Type: messages.CommandType(m.Type), Text: m.Text, Model: m.Model,
		ElicitationID: m.ElicitationId, Action: m.Action, Choice: m.Choice}
	for _, a := range m.Answers {
		c.Answers = append(c.Answers, messages.Answer{Question: a.Question, SelectedOptionIDs: a.SelectedOptionIds, WriteIn: a.WriteIn})
	}
	return c
}

func commandMessage(sessionID string, c messages.Command, deadline time.Time) *clusterpb.Command {
	m := &clusterpb.Command{Version: ProtocolVersion, SessionId: sessionID, Type: string(c.Type), Text: c.Text,
		Model: c.Model, ElicitationId: c.ElicitationID, Action: c.Action, Choice: c.Choice, DeadlineUnixNano: deadline.UnixNano()}
	for _, a := range c.Answers {
		m.Answers = append(m.Answers, &clusterpb.Answer{Question: a.Question, SelectedOptionIds: a.SelectedOptionIDs, WriteIn: a.WriteIn})
	}
	return m
}

// notFound is a session this node does not have.
func notFound(id string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no session \"" + id + "\""}
}
