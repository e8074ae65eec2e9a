package actors

import (
	"fmt"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
)

// session is the actor of one attached agy session. Its one job: be the
// single writer of the session's events. It dispatches each message to the
// part of its state that owns it:
//
//   - link (session_binding.go): the binding to agy's port: Discovery until
//     a port is bound, then StreamReader, Poller, RotationWatcher and
//     TurnSender on it; re-discovery when the port is lost; rotation;
//   - convs (session_conversations.go): the mapper's reconcilers, one for
//     the bound conversation and one per subagent child (each mirrored by a
//     Subagent), and applying what the readers observe;
//   - desk (session_turns.go): turns and interrupts, held while no port is
//     bound, and turns sent or typed that agy has not shown yet;
//   - prompts (session_prompts.go): an Interaction per open prompt, and the
//     answers on their way to agy;
//   - kids (session_children.go): the kind of each child, for its
//     supervision;
//   - shared (session_api.go): what the embedding API reads: the event log
//     (session_publish.go publishes to it), the view, the done signals.
//
// It takes the children's messages (PortFound, frameReceived, SnapshotRead,
// ConversationRotated, AnswerDelivered, ...) and the embedding API's
// requests (SendTurn, Interrupt, ResolveElicitation, subscribe). Every child
// message carries the generation the child was spawned with; a message from
// an older generation is ignored.
//
// Failures of children are handled by HandleFailure (the session is its
// children's supervision strategy) under sessionDecider: transient failures
// restart the child after a capped backoff; a lost port re-runs discovery and
// respawns the RPC children on the new port; past the retry limits the
// session emits an error event and stops.
//
// The actor value outlives its incarnations: a restart keeps convs and the
// binding's generation and pin (nothing emitted is emitted again), and
// starts every other part afresh (incarnate).
type session struct {
	shared *sessionShared
	cfg    Config

	// Kept across restarts.
	convs conversations
	link  binding

	// One incarnation's.
	t       *tasks
	self    *actor.PID
	desk    turnDesk
	prompts promptDesk
	kids    childKinds
	endErr  error
	scratch []messages.Event // the slice apply has the reconciler append events to
	// ending is set once Proto.Actor stops or restarts the incarnation:
	// ErrSessionEnded, or ErrNotBound for a restart. Until Stopped (or the
	// next incarnation) the mailbox still delivers what was queued, and the
	// session only refuses it (whileEnding).
	ending error
}

// Messages the session takes that are this package's own: it sends them
// itself (timers), or they carry a live object (a subscription), so they
// never cross a node. What its children send it is declared beside them
// (frameReceived, turnNotSent, turnOutcome, interruptDone, interruptNotDone,
// turnTyped)
// or in package messages.

// subscribe asks a session (from the embedding API) for a new subscriber:
// the events after afterSeq still in its log, then the open prompts again,
// then live events go to sub. Reply: *subscribed.
type subscribe struct {
	afterSeq uint64
	sub      *Subscription
}

type subscribed struct{}

// restartNow is sent by the session to itself when a failed child's
// backoff has elapsed.
type restartNow struct {
	pid *actor.PID
	gen messages.Gen
}

// typedTurnCheck is sent by the session to itself when a typed turn's time
// to show is up.
type typedTurnCheck struct{ id int }

// sentTurnCheck is sent by the session to itself to check that agy took a
// turn it accepted over RPC (checkSent).
type sentTurnCheck struct{ id int }

// conversationWaitOver is sent by the session to itself when
// Spec.WaitConversation has passed since it found agy without a
// conversation.
type conversationWaitOver struct{ since time.Time }

// newSession makes the session actor of shared; the host's producer calls
// incarnate for each incarnation.
func newSession(shared *sessionShared) *session {
	return &session{shared: shared, cfg: shared.cfg, convs: newConversations()}
}

// incarnate starts a new incarnation: every part but the conversations and
// the binding's generation and pin starts afresh.
func (s *session) incarnate() actor.Actor {
	s.t, s.self, s.endErr, s.scratch, s.ending = nil, nil, nil, nil, nil
	s.link.newIncarnation()
	s.convs.newIncarnation()
	s.desk = turnDesk{}
	s.prompts = newPromptDesk()
	s.kids = childKinds{}
	return s
}

// Receive handles lifecycle first, then children's reports, then API requests.
func (s *session) Receive(ctx actor.Context) {
	if s.ending != nil {
		s.whileEnding(ctx)
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.started(ctx)
	case *actor.Restarting:
		s.ending = ErrNotBound
		s.t.stop()
		s.desk.refuseHeld(ctx, s.ending)
		s.closeClient()
	case *actor.Stopping:
		s.ending = ErrSessionEnded
		s.t.stop()
		s.desk.refuseHeld(ctx, s.ending)

	// Children's reports.
	case *messages.PortFound:
		s.onPortFound(ctx, m)
	case *messages.DiscoveryStalled:
		s.onDiscoveryStalled(ctx, m)
	case *messages.PortLost:
		if m.Gen == s.link.gen {
			s.portLost(ctx, m.Err)
		}
	case *frameReceived:
		if m.gen == s.link.gen {
			s.onFrame(ctx, m)
		}
		// Nothing the session keeps refers to the frame's bytes (events and
		// prompts hold copies; the reconciler keeps Raw of snapshots only).
		m.frame.Release()
	case *messages.StreamState:
		if m.Gen == s.link.gen {
			s.onStreamState(ctx, m)
		}
	case *frameSkipped:
		if m.gen == s.link.gen {
			s.onFrameSkipped(ctx, m)
		}
	case *readOverLimit:
		if m.gen == s.link.gen {
			s.onReadOverLimit(ctx, m)
		}
	case *messages.SnapshotRead:
		if m.Gen == s.link.gen {
			s.onSnapshot(ctx, m)
		}
	case *messages.ConversationRotated:
		if m.Gen == s.link.gen && m.From == s.conv() {
			s.rotate(ctx, m.To, m.New)
		}
	case *messages.SubagentDone:
		if m.Gen == s.link.gen {
			s.maybeStopSubagent(ctx, m.ConversationID)
		}
	case *messages.ModelsLoaded:
		if m.Gen == s.link.gen {
			s.setModels(m.Models)
		}
	case *messages.AnswerDelivered:
		s.onAnswerDelivered(ctx, m)
	case *messages.AnswerFailed:
		s.onAnswerFailed(ctx, m)
	case *dialogPressed:
		s.onDialogPressed(ctx, m)
	case *dialogAnswerDue:
		s.onDialogAnswerDue(ctx, m)
	case *restartNow:
		if m.gen == s.link.gen {
			ctx.(actor.Supervisor).RestartChildren(m.pid)
		}
	case *typedTurnCheck:
		s.checkTyped(ctx, m.id)
	case *turnTyped:
		s.onTurnTyped(ctx, m)
	case *turnOutcome:
		s.onTurnOutcome(m)
	case *sentTurnCheck:
		s.checkSent(ctx, m.id)
	case *conversationWaitOver:
		if s.conv() == "" && s.link.noConvSince.Equal(m.since) {
			s.endWithError(ctx, fmt.Sprintf("agy has no conversation after %s: no first turn was typed into agy's terminal", s.shared.spec.WaitConversation))
		}
	case *turnNotSent:
		// Held even if bound: the sender is failing over its lost port, and
		// the next binding releases it.
		s.desk.held = append(s.desk.held, heldRequest{msg: m.msg, sender: m.reply, deadline: m.msg.Deadline})
	case *interruptDone:
		s.onInterruptDone(ctx, m)
	case *interruptNotDone:
		s.onInterruptNotDone(ctx, m)

	// The embedding API's requests.
	case *messages.SendTurn:
		s.routeTurn(ctx, m, ctx.Sender())
	case *messages.Interrupt:
		s.onInterrupt(ctx, m)
	case *messages.ResolveElicitation:
		ctx.Respond(&messages.ResolveAccepted{Err: s.onResolve(ctx, m.Resolve)})
	case *subscribe:
		s.shared.events.subscribe(m.sub, m.afterSeq)
		ctx.Respond(&subscribed{})
	case *countReconcilers:
		ctx.Respond([2]int{len(s.convs.children) + 1, len(s.convs.root.Children())})
	}
}

// countReconcilers asks the session how many reconcilers it keeps (its
// root's and its subagents'), and how many subagents its root keeps a
// record of (a [2]int; for the tests).
type countReconcilers struct{}

// whileEnding handles what the mailbox delivers between Stopping (or
// Restarting) and the end of the incarnation. Proto.Actor goes on
// delivering queued messages while it waits for the children to stop, and a
// child spawned then (a prompt's interaction, a stream after a port was
// found) would never be stopped, so the session would never reach Stopped.
// So nothing is acted on: requests are refused with s.ending, children's
// reports are dropped (the next incarnation reads agy afresh).
func (s *session) whileEnding(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Stopped:
		s.stopped()
	case *frameReceived:
		m.frame.Release()
	case *turnNotSent:
		ctx.Send(m.reply, &messages.TurnResult{Err: s.ending})
	case *interruptNotDone:
		ctx.Send(m.reply, &messages.TurnResult{Err: s.ending})
	case *messages.SendTurn, *messages.Interrupt:
		ctx.Respond(&messages.TurnResult{Err: s.ending})
	case *messages.ResolveElicitation:
		ctx.Respond(&messages.ResolveAccepted{Err: s.ending})
	case *subscribe:
		// The log is still whole: a late subscriber gets it, and its end.
		s.shared.events.subscribe(m.sub, m.afterSeq)
		ctx.Respond(&subscribed{})
	}
}

// started begins an incarnation: its tasks, the bound conversation's
// reconciler when the spec names it, the terminal writer, and discovery.
func (s *session) started(ctx actor.Context) {
	s.self = ctx.Self()
	s.t = newTasks(s.shared.wg, s.cfg.Clock, s.shared.system.Root)
	if s.convs.root == nil && s.shared.spec.ConversationID != "" {
		s.bindConversation(s.shared.spec.ConversationID, false)
	}
	if term := s.shared.spec.Terminal; term != nil {
		c := s.childOf("")
		s.link.terminal = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return newTerminalWriter(c, term) }))
	}
	s.startDiscovery(ctx)
}

// stopped ends the session: its client closes, the API is told, and the
// mailbox's goroutine stops after this run (nothing comes after Stopped).
func (s *session) stopped() {
	s.closeClient()
	s.shared.finish(s.endErr)
	if s.shared.mailbox != nil {
		s.shared.mailbox.stop()
	}
}

// conv is the bound conversation ("" while agy has none).
func (s *session) conv() string { return s.convs.rootConv }

// now is the time on the host's clock.
func (s *session) now() time.Time { return s.cfg.Clock.Now() }
