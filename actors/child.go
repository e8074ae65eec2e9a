package actors

import (
	"sync"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// child is what every child actor of a session is spawned with, and the
// tasks of its incarnation. Each child embeds it and begins its Receive
// with lifecycle, so that its goroutines and timers start with an
// incarnation and stop with it.
type child struct {
	client *rpc.Client     // the session's client of agy's port (nil where none is needed)
	conv   string          // the conversation the child works on
	cfg    Config          // the host's
	gen    messages.Gen    // the session's generation the child works for
	wg     *sync.WaitGroup // the host's: counts every goroutine the child starts
	t      *tasks          // the goroutines and timers of this incarnation
}

// lifecycle starts the incarnation's tasks on *actor.Started, and stops
// them (cancelling its RPCs and timers) on *actor.Stopping and
// *actor.Restarting. The child's own handling of those messages follows.
func (c *child) lifecycle(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		c.t = newTasks(c.wg, c.cfg.Clock, ctx.ActorSystem().Root)
	case *actor.Stopping, *actor.Restarting:
		c.t.stop()
	}
}

// clientChanged is sent by the session to its Interaction and Subagent
// children when it has bound agy's port again (or followed a rotation), so
// that work they have in flight goes on over its new client and generation.
// No reply. It carries a live client, so it is the tree's own: it never
// crosses a node.
type clientChanged struct {
	gen    messages.Gen
	client *rpc.Client
}
