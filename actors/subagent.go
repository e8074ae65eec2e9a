package actors

import (
	"context"
	"errors"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
)

// subagent is the actor that mirrors one child conversation of an
// INVOKE_SUBAGENT step. Its one job: read the child's trajectory every
// Config.SubagentPoll (its run status first, then its steps) and hand each
// read to the session (*messages.SnapshotRead with the child's conversation
// id), which emits the child's items tagged with the child's and the
// parent's conversation ids. When the child reports IDLE after it has
// done something (a child just minted is IDLE with no steps yet), it says so
// (*messages.SubagentDone); the session stops it once the parent step is
// terminal too. Transient errors wait for the next tick; it follows the
// session to a new port (*clientChanged).
type subagent struct {
	child
	busy bool
	// overLimit counts the reads in a row that failed on an answer over
	// the client's limit: the next one waits a backoff.
	overLimit int
	// window is what the last read read, for the next read to start from
	// and reuse. Only the read in flight touches it, and reads run one at a
	// time (busy).
	window trajectoryWindow
}

type subagentTick struct{}

type subagentRead struct {
	gen    messages.Gen // the generation the read was made and sent under
	status wire.RunStatus
	steps  int // steps read
	err    error
}

// finished: the child has worked and is at rest. (Not "every step
// terminal": a child cut by an interrupt can keep a live step, and would be
// read forever.)
func (r *subagentRead) finished() bool {
	return r.err == nil && r.status == wire.RunIdle && r.steps > 0
}

func newSubagent(c child) actor.Actor {
	return &subagent{child: c}
}

// Receive reads on ticks.
func (a *subagent) Receive(ctx actor.Context) {
	a.lifecycle(ctx)
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.read(ctx)
	case *clientChanged:
		a.client, a.gen = m.client, m.gen
	case *subagentTick:
		a.read(ctx)
	case *subagentRead:
		a.busy = false
		// Done carries the read's generation, not the actor's: a read sent
		// under a generation the session has left is dropped by the session,
		// and so must be the done that rests on it (else the child stops with
		// its one complete read ignored, and is lost).
		if m.finished() {
			ctx.Send(ctx.Parent(), &messages.SubagentDone{Gen: m.gen, ConversationID: a.conv})
		}
		if m.err != nil && errors.Is(m.err, rpc.ErrTrajectoryNotFound) {
			// The child is gone from this server; nothing more to mirror.
			ctx.Send(ctx.Parent(), &messages.SubagentDone{Gen: m.gen, ConversationID: a.conv})
		}
		next := a.cfg.SubagentPoll
		switch {
		case m.err != nil && errors.Is(m.err, rpc.ErrMessageTooLarge):
			if a.overLimit == 0 {
				ctx.Send(ctx.Parent(), &readOverLimit{gen: m.gen, conv: a.conv, err: m.err})
			}
			a.overLimit++
			next = backoff(a.overLimit, a.cfg.SubagentPoll, a.cfg.ReadBackoffMax)
		case m.err == nil:
			a.overLimit = 0
		}
		a.t.tick(next, ctx.Self(), &subagentTick{})
	}
}

func (a *subagent) read(ctx actor.Context) {
	if a.busy {
		return
	}
	a.busy = true
	self, session, client, gen := ctx.Self(), ctx.Parent(), a.client, a.gen
	a.t.run(func(c context.Context) {
		a.window.forGen(gen)
		deliver := func(steps []wire.Step, offset int) {
			a.t.send(session, &messages.SnapshotRead{Gen: gen, ConversationID: a.conv, Steps: steps, Offset: offset, Received: a.cfg.Clock.Now()})
		}
		snap, err := readSnapshot(c, client, a.conv, true, &a.window, deliver)
		if err == nil {
			if snap.skipped != nil {
				a.t.send(session, &readOverLimit{gen: gen, conv: a.conv, err: snap.skipped.err, skipped: snap.skipped})
			}
			a.t.send(session, snap.read(gen, a.conv, a.cfg.Clock.Now()))
		}
		a.t.send(self, &subagentRead{gen: gen, status: snap.status, steps: snap.offset + len(snap.steps), err: err})
	})
}
