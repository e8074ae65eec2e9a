package actors

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// session is the actor of one attached agy session. Its one job: be the
// single writer of the session's events. It owns the mapper's reconcilers
// (one for the bound conversation, one per subagent child), the open prompts
// and the turns it sent, and it spawns and re-spawns its children:
// Discovery until a port is bound, then StreamReader, Poller,
// RotationWatcher and TurnSender on that port, an Interaction per open
// prompt and a Subagent per child conversation.
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
type session struct {
	core *sessionCore
	cfg  Config
	t    *tasks
	self *actor.PID

	client     *rpc.Client
	boundAt    time.Time // when the port was bound, or the conversation rotated
	frameTold  time.Time // when the last frame the rotation watcher was told of came
	streamUp   bool
	turnActive bool // the poller was told a turn runs
	endErr     error

	discovery, stream, poller, rotation, turns *actor.PID
	terminal                                   *actor.PID            // the terminal writer, when the spec has a Terminal
	interactions                               map[string]*actor.PID // elicitation id -> Interaction
	subagents                                  map[string]*actor.PID // child conversation -> Subagent
	kinds                                      map[string]string     // child PID id -> actor kind

	lostSince    time.Time
	lostReported bool
	certReported bool // told the driver that the named port presents another certificate

	// held are turns and interrupts that arrived while no port was bound;
	// they go out once one is (or are dropped past their deadline).
	held []heldRequest

	// scratch is the slice apply has the reconciler append events to.
	scratch []messages.Event

	// typed are the turns typed into agy's terminal not yet seen as user
	// turns in its conversation; each is checked TypedTurnTimeout after.
	typed     []typedTurn
	typedNext int
	// answers are the answers on their way to agy, by elicitation id: the
	// keys that close agy's dialog depend on them (agy may show the prompt
	// answered, and the reconciler close it, before delivery is confirmed).
	answers map[string]answerOnItsWay
	// noConvSince is when the session found agy without a conversation
	// (zero once it has one).
	noConvSince time.Time
}

// answerOnItsWay is an answer being delivered, with its prompt as it was
// answered.
type answerOnItsWay struct {
	prompt  mapper.Prompt
	resolve messages.Resolve
	root    bool // a prompt of the bound conversation (not a subagent's)
}

// typedTurn is a turn typed into agy's terminal, expected back as a user
// turn of its conversation.
type typedTurn struct {
	id   int
	text string
}

// typedTurnCheck is sent by the session to itself when a typed turn's time
// to show is up; turnTyped by the terminal writer once it typed the turn, or
// failed to (err).
type typedTurnCheck struct{ id int }

type turnTyped struct {
	id  int
	err error
}

// conversationWaitOver is sent by the session to itself when
// Spec.WaitConversation has passed since it found agy without a
// conversation.
type conversationWaitOver struct{ since time.Time }

// maxScratchEvents bounds the scratch slice a session keeps: a frame yields
// a few events, a first read of a long history thousands (584 bytes each),
// which are not worth keeping room for.
const maxScratchEvents = 32

// heldRequest is a request waiting for the session to be bound.
type heldRequest struct {
	msg      any
	sender   *actor.PID
	deadline time.Time
	resend   bool // a turn sent once that never reached agy: already expected and recorded
}

// subscribe asks a session (from the embedding API) for a new subscriber:
// the events after afterSeq still in its log, then the open prompts again,
// then live events go to sub. Reply: *subscribed. It carries a live
// Subscription, so it is the tree's own: it never crosses a node.
type subscribe struct {
	afterSeq uint64
	sub      *Subscription
}

type subscribed struct{}

// clientChanged is sent by the session to its Interaction and Subagent
// children when it has bound agy's port again (or followed a rotation), so
// that work they have in flight goes on over its new client and generation.
// No reply. It carries a live client, so it is the tree's own: it never
// crosses a node.
type clientChanged struct {
	gen    messages.Gen
	client *rpc.Client
}

// restartNow is sent by the session to itself when a failed child's
// backoff has elapsed.
type restartNow struct {
	pid *actor.PID
	gen messages.Gen
}

func newSession(core *sessionCore) actor.Actor {
	return &session{
		core:         core,
		cfg:          core.cfg,
		interactions: make(map[string]*actor.PID),
		subagents:    make(map[string]*actor.PID),
		kinds:        make(map[string]string),
		answers:      make(map[string]answerOnItsWay),
	}
}

// Receive handles lifecycle first, then children's reports, then API requests.
func (s *session) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.self = ctx.Self()
		s.t = newTasks(s.core.wg, s.cfg.Clock, s.core.system.Root)
		if s.core.root == nil && s.core.spec.ConversationID != "" {
			s.bindConversation(s.core.spec.ConversationID)
		}
		if term := s.core.spec.Terminal; term != nil {
			c := s.childOf("")
			s.terminal = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return newTerminalWriter(c, term) }))
		}
		s.startDiscovery(ctx)
	case *actor.Restarting:
		s.t.stop()
		s.closeClient()
	case *actor.Stopping:
		s.t.stop()
		for _, h := range s.held {
			ctx.Send(h.sender, &messages.TurnResult{Err: ErrSessionEnded})
		}
		s.held = nil
	case *actor.Stopped:
		s.closeClient()
		s.core.finish(s.endErr)
		if s.core.mailbox != nil {
			s.core.mailbox.stop() // after this run: nothing comes after Stopped
		}

	case *messages.PortFound:
		s.onPortFound(ctx, m)
	case *messages.DiscoveryStalled:
		s.onDiscoveryStalled(ctx, m)
	case *messages.PortLost:
		if m.Gen == s.core.gen {
			s.portLost(ctx, m.Err)
		}
	case *frameReceived:
		if m.gen == s.core.gen {
			s.onFrame(ctx, m)
		}
		// Nothing the session keeps refers to the frame's bytes (events and
		// prompts hold copies; the reconciler keeps Raw of snapshots only).
		m.frame.Release()
	case *messages.StreamState:
		if m.Gen == s.core.gen {
			s.setStreamUp(ctx, m.Up)
		}
	case *frameSkipped:
		if m.gen == s.core.gen {
			s.onFrameSkipped(ctx, m)
		}
	case *readOverLimit:
		if m.gen == s.core.gen {
			s.onReadOverLimit(ctx, m)
		}
	case *messages.SnapshotRead:
		if m.Gen == s.core.gen {
			if s.core.spec.Recorder != nil {
				s.record("snapshot", m.ConversationID, captureSnapshot(m.Steps, m.Offset, m.RunStatus), m.Received)
			}
			obs := mapper.FromWindow(m.Steps, m.Offset, m.RunStatus, m.Received)
			s.apply(ctx, m.ConversationID, obs)
		}
	case *messages.ConversationRotated:
		if m.Gen == s.core.gen && m.From == s.conv() {
			s.rotate(ctx, m.To)
		}
	case *messages.SubagentDone:
		if m.Gen == s.core.gen {
			s.maybeStopSubagent(ctx, m.ConversationID)
		}
	case *messages.ModelsLoaded:
		if m.Gen == s.core.gen {
			s.setModels(m.Models)
		}
	case *messages.AnswerDelivered:
		s.onAnswerDelivered(ctx, m)
	case *messages.AnswerFailed:
		s.onAnswerFailed(ctx, m)
	case *restartNow:
		if m.gen == s.core.gen {
			ctx.(actor.Supervisor).RestartChildren(m.pid)
		}
	case *typedTurnCheck:
		s.checkTyped(ctx, m.id)
	case *turnTyped:
		switch {
		case m.err != nil:
			s.dropTyped(m.id) // the requester was told
		case s.conv() == "" && s.rotation != nil:
			// agy mints its first conversation for this turn now: look again.
			ctx.Send(s.rotation, &messages.ReadNow{Gen: s.core.gen})
		}
	case *conversationWaitOver:
		if s.conv() == "" && s.noConvSince.Equal(m.since) {
			s.endWithError(ctx, fmt.Sprintf("agy has no conversation after %s: no first turn was typed into agy's terminal", s.core.spec.WaitConversation))
		}

	case *messages.SendTurn:
		s.onSendTurn(ctx, m)
	case *turnNotSent:
		// Held even if bound: the sender is failing over its lost port, and
		// the next binding releases it.
		s.held = append(s.held, heldRequest{msg: m.msg, sender: m.reply, deadline: m.msg.Deadline, resend: true})
	case *messages.Interrupt:
		switch {
		case s.client != nil && s.conv() == "":
			ctx.Respond(&messages.TurnResult{}) // agy has no conversation: nothing runs
		case s.turns == nil:
			s.hold(ctx, m, m.Deadline)
		default:
			s.interrupt(ctx, m, ctx.Sender())
		}
	case *interruptDone:
		s.onInterruptDone(ctx, m)
	case *interruptNotDone:
		if m.gen != s.core.gen && s.turns != nil {
			s.interrupt(ctx, m.msg, m.reply) // bound to agy's new port already
		} else {
			// The next binding releases it (the port loss is on its way).
			s.held = append(s.held, heldRequest{msg: m.msg, sender: m.reply, deadline: m.msg.Deadline})
		}
	case *messages.ResolveElicitation:
		ctx.Respond(&messages.ResolveAccepted{Err: s.onResolve(ctx, m.Resolve)})
	case *subscribe:
		s.core.events.subscribe(m.sub, m.afterSeq)
		ctx.Respond(&subscribed{})
	}
}

func (s *session) conv() string { return s.core.rootConv }

// now is the time on the host's clock.
func (s *session) now() time.Time { return s.cfg.Clock.Now() }

// bindConversation makes conv the session's root conversation, with a fresh
// reconciler unless it is already the bound one.
func (s *session) bindConversation(conv string) {
	if s.core.root != nil && s.core.rootConv == conv {
		return
	}
	s.core.rootConv = conv
	s.core.root = mapper.NewReconciler(mapper.Config{ConversationID: conv, Models: s.core.models, Window: s.cfg.StepWindow})
	for _, tt := range s.typed {
		s.core.root.ExpectTurn(tt.text) // typed before this conversation was bound
	}
	s.record("bind", conv, nil, s.now()) // "": agy's port, no conversation yet
}

// ---- binding ----

func (s *session) startDiscovery(ctx actor.Context) {
	s.core.gen++
	c, spec, pin := s.childOf(s.conv()), s.core.spec, s.core.pin
	s.discovery = s.spawn(ctx, "discovery", func() actor.Actor { return newDiscovery(c, spec, pin) })
}

// childOf is what a child spawned now for conv works with: the bound
// client and the current generation.
func (s *session) childOf(conv string) child {
	return child{client: s.client, conv: conv, cfg: s.cfg, gen: s.core.gen, wg: s.core.wg}
}

// spawn starts a child of the kind its supervision knows it by.
func (s *session) spawn(ctx actor.Context, kind string, produce func() actor.Actor) *actor.PID {
	pid := ctx.Spawn(actor.PropsFromProducer(produce))
	s.kinds[pid.Id] = kind
	return pid
}

func (s *session) stopChild(ctx actor.Context, pid *actor.PID) {
	if pid == nil {
		return
	}
	delete(s.kinds, pid.Id)
	ctx.Stop(pid)
}

func (s *session) onPortFound(ctx actor.Context, m *messages.PortFound) {
	if m.Gen != s.core.gen {
		return
	}
	client, err := rpc.NewClient(rpc.Config{Host: s.core.spec.Host, Port: m.Port, Pin: m.Pin,
		CSRFToken: m.CSRFToken, OnError: s.core.countRPCError, MaxMessageSize: s.cfg.MaxMessageSize})
	if err != nil {
		// Discovery probed with the same host and port: this cannot be.
		s.endWithError(ctx, fmt.Sprintf("agy's port %d: %v", m.Port, err))
		return
	}
	s.stopChild(ctx, s.discovery)
	s.discovery = nil
	s.closeClient()
	s.client = client
	if s.core.spec.Port > 0 && s.core.pin == nil {
		// The port the user named: from now on only this certificate is agy's.
		s.core.pin = m.Pin
	}
	s.bindConversation(m.ConversationID)
	if s.core.everBound {
		s.core.publishView(func(v *sessionView) { v.rebinds++ })
	}
	s.lostSince, s.lostReported = time.Time{}, false
	s.boundAt = time.Now() // compared with agy's times: the machine's clock
	s.core.markBound(m.ConversationID, m.Port)
	if m.ConversationID == "" {
		s.awaitConversation(ctx)
	}
	s.spawnReaders(ctx)
	s.release(ctx)
	// Work in flight follows the session to the new port; prompts opened
	// while no port was bound get their Interaction now.
	changed := &clientChanged{gen: s.core.gen, client: s.client}
	for _, pid := range s.interactions {
		ctx.Send(pid, changed)
	}
	for _, pid := range s.subagents {
		ctx.Send(pid, changed)
	}
	for _, p := range s.core.root.OpenPrompts() {
		s.ensureInteraction(ctx, p)
	}
}

// spawnReaders starts the RPC children on the bound port and conversation.
func (s *session) spawnReaders(ctx actor.Context) {
	c, mode, since := s.childOf(s.conv()), s.core.spec.ReadMode, s.boundAt
	s.streamUp = false
	if c.conv == "" {
		// agy has no conversation yet: watch for its first.
		s.rotation = s.spawn(ctx, "rotation", func() actor.Actor { return newRotationWatcher(c, since) })
		return
	}
	if mode != ReadPoll {
		s.stream = s.spawn(ctx, "stream", func() actor.Actor { return newStreamReader(c) })
	}
	from := s.core.root.FirstLive() // taken now: a restarted poller must not read the session's state
	s.poller = s.spawn(ctx, "poller", func() actor.Actor { return newPoller(c, mode, from) })
	s.frameTold = time.Time{} // the new watcher has been told of no frame
	s.rotation = s.spawn(ctx, "rotation", func() actor.Actor { return newRotationWatcher(c, since) })
	s.turns = s.spawn(ctx, "turns", func() actor.Actor { return newTurnSender(c) })
	s.turnActive = false // the new poller knows of no turn
	s.tellTurnActive(ctx)
}

func (s *session) stopReaders(ctx actor.Context) {
	for _, pid := range []*actor.PID{s.stream, s.poller, s.rotation, s.turns} {
		s.stopChild(ctx, pid)
	}
	s.stream, s.poller, s.rotation, s.turns = nil, nil, nil, nil
	s.streamUp = false
}

func (s *session) closeClient() {
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
}

// portLost re-runs discovery: the RPC children stop, the generation moves
// on (late messages of the old children are ignored), and the reconcilers
// stay: nothing already emitted is emitted again on the new port.
func (s *session) portLost(ctx actor.Context, err error) {
	if s.discovery != nil {
		return // already re-discovering
	}
	s.core.cfg.Logger.Info("port lost; re-discovering", "session", s.core.spec.SessionID, "err", err)
	s.core.publishView(func(v *sessionView) { v.lastErr, v.port = err, 0 })
	s.stopReaders(ctx)
	s.lostSince = s.now()
	s.startDiscovery(ctx)
}

func (s *session) onDiscoveryStalled(ctx actor.Context, m *messages.DiscoveryStalled) {
	if m.Gen != s.core.gen {
		return
	}
	s.core.publishView(func(v *sessionView) { v.lastErr = m.Err })
	if errors.Is(m.Err, rpc.ErrCertificateChanged) && !s.certReported {
		s.certReported = true
		s.publishError(ctx, fmt.Sprintf("port %d now presents another certificate than the agy this session bound: "+
			"another process holds it; nothing (no token, no turn) is sent to it", s.core.spec.Port), false)
	}
	if s.lostSince.IsZero() {
		s.lostSince = s.now()
	}
	if m.GiveUp {
		s.endWithError(ctx, fmt.Sprintf("agy's language server is gone: not found for %s (%v); giving up", m.Since, m.Err))
		return
	}
	if !s.lostReported && s.now().Sub(s.lostSince) >= s.cfg.LostAfter {
		s.lostReported = true
		s.publishError(ctx, fmt.Sprintf("agy's language server unreachable for %s (%v); still looking", m.Since, m.Err), true)
	}
}

// awaitConversation reports that agy has no conversation yet, and arms
// Spec.WaitConversation.
func (s *session) awaitConversation(ctx actor.Context) {
	if !s.noConvSince.IsZero() {
		return // still waiting, on a new port
	}
	s.noConvSince = s.now()
	s.publish(NoConversationEvent(s.noConvSince))
	if d := s.core.spec.WaitConversation; d > 0 {
		s.t.after(d, ctx.Self(), &conversationWaitOver{since: s.noConvSince})
	}
}

// NoConversationEvent is the status event of a session that found agy
// without a conversation (at t): once per session, with an id of its own.
func NoConversationEvent(t time.Time) *messages.Event {
	return &messages.Event{Type: messages.EventStatus, ID: "status/" + messages.StateNoConversation, State: messages.StateNoConversation, Time: t}
}

// rotate follows agy into a new root conversation (/clear), or into its
// first (from "": the conversation agy minted for the first turn typed).
func (s *session) rotate(ctx actor.Context, to string) {
	from := s.conv()
	t := s.now()
	if from != "" {
		s.publish(&messages.Event{
			Type: messages.EventConversationRotated, ID: from + "/rotated/" + to,
			ConversationID: to, From: from, To: to, Time: t,
		})
	}
	s.noConvSince = time.Time{}
	s.stopReaders(ctx)
	for id, pid := range s.interactions {
		s.stopChild(ctx, pid)
		delete(s.interactions, id)
	}
	// The old root's children are still mirrored to their end, under the
	// new generation; their parent is no longer followed, so it counts as
	// finished.
	for conv := range s.subagents {
		s.core.orphans[conv] = true
	}
	s.core.gen++
	s.bindConversation(to)
	s.boundAt = time.Now() // compared with agy's times: the machine's clock
	s.core.markBound(to, s.client.Port())
	s.spawnReaders(ctx)
	s.release(ctx)
	changed := &clientChanged{gen: s.core.gen, client: s.client}
	for _, pid := range s.subagents {
		ctx.Send(pid, changed)
	}
}

// ---- reading ----

func (s *session) onFrame(ctx actor.Context, m *frameReceived) {
	up := &m.frame.Update
	if s.core.spec.Recorder != nil {
		conv := up.ConversationID
		if conv == "" {
			conv = s.conv()
		}
		s.record("frame", conv, captureFrame(m.frame), m.received)
	}
	if up.ConversationID != "" && up.ConversationID != s.conv() {
		if _, child := s.core.children[up.ConversationID]; !child && s.rotation != nil {
			// The frame names another conversation: agy may have rotated.
			ctx.Send(s.rotation, &messages.ReadNow{Gen: s.core.gen})
		}
		return
	}
	s.tellFrame(ctx, m.received)
	s.apply(ctx, s.conv(), mapper.FromFrame(m.frame, m.received))
	if up.Status == rpc.RunIdle && s.poller != nil {
		// agy can report IDLE before its last steps are flushed: read once more.
		ctx.Send(s.poller, &messages.ReadNow{Gen: s.core.gen})
	}
}

// onFrameSkipped has the poller read what a frame over the limit carried
// (agy's first frame of a long conversation: every step), window by
// window. Nothing is lost: no error event; a warning, once a stream.
func (s *session) onFrameSkipped(ctx actor.Context, m *frameSkipped) {
	if m.first {
		s.core.cfg.Logger.Warn("a stream frame over the limit was skipped; reading the steps instead",
			"session", s.core.spec.SessionID, "limit", s.cfg.MaxMessageSize, "err", m.err)
	}
	if s.poller != nil {
		ctx.Send(s.poller, &messages.ReadNow{Gen: s.core.gen})
	}
}

// onReadOverLimit tells the driver that agy's answer of the steps is over
// the limit: retryable, as the reads go on (past the steps skipped, or
// with backoff). The poller sends a failure once per run of them, and each
// skip once.
func (s *session) onReadOverLimit(ctx actor.Context, m *readOverLimit) {
	var msg string
	if sk := m.skipped; sk != nil {
		msg = fmt.Sprintf("agy's answer of the steps of %s is over the limit of %d bytes: steps %d to %d were not read, reading from %d on (%v)",
			m.conv, s.cfg.MaxMessageSize, sk.from, sk.to-1, sk.to, m.err)
	} else {
		msg = fmt.Sprintf("agy's answer of the steps of %s is over the limit of %d bytes and cannot be read past: reading again with backoff (%v)",
			m.conv, s.cfg.MaxMessageSize, m.err)
	}
	s.core.cfg.Logger.Warn(msg, "session", s.core.spec.SessionID)
	s.publishError(ctx, msg, true)
}

// tellFrame tells the rotation watcher that a frame of the bound
// conversation came at t: on the first frame, then at most every quarter
// of its interval (it reads less while frames flow).
func (s *session) tellFrame(ctx actor.Context, t time.Time) {
	if s.rotation != nil && (s.frameTold.IsZero() || t.Sub(s.frameTold) >= s.cfg.RotationInterval/4) {
		s.frameTold = t
		ctx.Send(s.rotation, &messages.FramesFlowing{Gen: s.core.gen, Last: t})
	}
}

func (s *session) setStreamUp(ctx actor.Context, up bool) {
	if s.streamUp == up {
		return
	}
	s.streamUp = up
	if s.poller != nil {
		ctx.Send(s.poller, &messages.StreamState{Gen: s.core.gen, Up: up})
	}
}

// apply runs an observation through the conversation's reconciler and
// publishes what it implies.
func (s *session) apply(ctx actor.Context, conv string, obs mapper.Observation) {
	rec := s.core.root
	child := false
	if conv != s.conv() {
		r, ok := s.core.children[conv]
		if !ok {
			return
		}
		rec, child = r, true
	}
	// One slice for every apply (taken, in case publishing re-entered).
	evs := rec.AppendApply(s.scratch[:0], obs)
	s.scratch = nil
	for i := range evs {
		ev := evs[i] // published by pointer: a copy of its own
		s.publish(&ev)
		s.react(ctx, rec, &ev)
	}
	if cap(evs) <= maxScratchEvents {
		clear(evs) // keep no event's strings alive
		s.scratch = evs[:0]
	}
	if !child {
		if rec.AwaitingDetail() && s.poller != nil {
			// A question seen on the stream lacks its flags: read a polled copy now.
			ctx.Send(s.poller, &messages.ReadNow{Gen: s.core.gen})
		}
		s.syncSubagents(ctx)
	}
}

// react starts and stops Interaction actors as prompts open and close, and
// tells the poller when a turn of the bound conversation starts and ends.
func (s *session) react(ctx actor.Context, rec *mapper.Reconciler, ev *messages.Event) {
	switch ev.Type {
	case messages.EventStatus:
		if rec == s.core.root {
			s.tellTurnActive(ctx)
		}
	case messages.EventUserMessage:
		if rec == s.core.root && ev.Origin == messages.OriginHarness {
			s.sawTyped(ev.Text)
		}
	case messages.EventElicitationRequest:
		if p, ok := rec.Prompt(ev.ElicitationID); ok {
			s.ensureInteraction(ctx, p)
		}
	case messages.EventElicitationResolved:
		if ev.By == messages.ByHarness {
			s.answered(ctx, ev.ElicitationID) // agy shows our answer before its delivery is confirmed
		}
		if pid, ok := s.interactions[ev.ElicitationID]; ok {
			s.stopChild(ctx, pid)
			delete(s.interactions, ev.ElicitationID)
		}
	}
}

// tellTurnActive tells the poller whether a turn runs, when that changed.
func (s *session) tellTurnActive(ctx actor.Context) {
	st := s.core.root.State()
	active := st == messages.StateRunning || st == messages.StateWaiting
	if active != s.turnActive && s.poller != nil {
		s.turnActive = active
		ctx.Send(s.poller, &messages.TurnActive{Gen: s.core.gen, Active: active})
	}
}

func (s *session) ensureInteraction(ctx actor.Context, p *mapper.Prompt) {
	if _, ok := s.interactions[p.ElicitationID]; ok || s.client == nil {
		return
	}
	prompt := *p
	conv := p.Request.ConversationID
	if conv == "" {
		conv = s.conv()
	}
	c := s.childOf(conv)
	s.interactions[p.ElicitationID] = s.spawn(ctx, "interaction", func() actor.Actor { return newInteraction(c, prompt) })
}

// syncSubagents mirrors every child conversation the root has spawned.
func (s *session) syncSubagents(ctx actor.Context) {
	if s.client == nil {
		return
	}
	for _, c := range s.core.root.Children() {
		if _, ok := s.core.children[c.ConversationID]; !ok {
			s.core.children[c.ConversationID] = mapper.NewReconciler(mapper.Config{
				ConversationID: c.ConversationID, ParentConversationID: s.conv(), Models: s.core.models, Window: s.cfg.StepWindow,
			})
		}
		if _, ok := s.subagents[c.ConversationID]; ok || s.core.childrenDone[c.ConversationID] {
			continue
		}
		sc := s.childOf(c.ConversationID)
		s.subagents[sc.conv] = s.spawn(ctx, "subagent", func() actor.Actor { return newSubagent(sc) })
	}
}

func (s *session) maybeStopSubagent(ctx actor.Context, conv string) {
	parentDone := s.core.orphans[conv]
	for _, c := range s.core.root.Children() {
		if c.ConversationID == conv && c.ParentTerminal {
			parentDone = true
		}
	}
	if !parentDone {
		return
	}
	if pid, ok := s.subagents[conv]; ok {
		s.stopChild(ctx, pid)
		delete(s.subagents, conv)
		s.core.childrenDone[conv] = true
	}
}

func (s *session) setModels(models map[string]rpc.ModelInfo) {
	s.core.models = models
	s.record("models", s.conv(), models, s.now())
	s.core.root.SetModels(models)
	for _, r := range s.core.children {
		r.SetModels(models)
	}
}

// ---- commands ----

// hold keeps a request until the session is bound again.
func (s *session) hold(ctx actor.Context, msg any, deadline time.Time) {
	s.held = append(s.held, heldRequest{msg: msg, sender: ctx.Sender(), deadline: deadline})
}

// release sends the held requests that are still wanted, in order.
func (s *session) release(ctx actor.Context) {
	held := s.held
	s.held = nil
	now := time.Now() // a requester's deadline is on the machine's clock (its context's)
	for _, h := range held {
		if now.After(h.deadline) {
			continue // the requester has given up: never send it late
		}
		switch m := h.msg.(type) {
		case *messages.SendTurn:
			if h.resend && s.turns != nil {
				ctx.RequestWithCustomSender(s.turns, m, h.sender)
				continue
			}
			s.routeTurn(ctx, m, h.sender)
		case *messages.Interrupt:
			if s.turns == nil {
				ctx.Send(h.sender, &messages.TurnResult{}) // agy has no conversation: nothing runs
				continue
			}
			s.interrupt(ctx, m, h.sender)
		}
	}
}

func (s *session) onSendTurn(ctx actor.Context, m *messages.SendTurn) {
	s.routeTurn(ctx, m, ctx.Sender())
}

// routeTurn types a turn into agy's terminal (every turn in TurnsTUI mode,
// and a fresh agy's first: it has no conversation to send it to), sends it
// over RPC, holds it while agy's port is being found, or refuses it when
// agy has no conversation and the session no terminal.
func (s *session) routeTurn(ctx actor.Context, m *messages.SendTurn, sender *actor.PID) {
	switch {
	case s.terminal != nil && (s.core.spec.Turns == TurnsTUI || s.conv() == ""):
		s.typeTurn(ctx, m, sender)
	case s.turns != nil:
		s.sendTurn(ctx, m, sender)
	case s.client != nil && s.conv() == "":
		ctx.Send(sender, &messages.TurnResult{Err: ErrNoConversation})
	default:
		s.hold(ctx, m, m.Deadline)
	}
}

// typeTurn has the terminal writer type a turn into agy's terminal, and
// checks Config.TypedTurnTimeout later that agy took it: a user turn with
// its text in the conversation. It is never typed twice.
func (s *session) typeTurn(ctx actor.Context, m *messages.SendTurn, sender *actor.PID) {
	s.typedNext++
	tt := typedTurn{id: s.typedNext, text: m.Text}
	s.typed = append(s.typed, tt)
	if s.core.root != nil {
		s.core.root.ExpectTurn(m.Text) // origin harness (a conversation bound later expects it too)
	}
	s.record("turn", s.conv(), map[string]string{"text": m.Text}, s.now())
	ctx.Send(s.terminal, &typeTurn{id: tt.id, text: m.Text, reply: sender})
	s.t.after(s.cfg.TypedTurnTimeout, s.self, &typedTurnCheck{id: tt.id})
	if s.conv() == "" && s.rotation != nil {
		// agy mints its first conversation for this turn: look for it now.
		ctx.Send(s.rotation, &messages.ReadNow{Gen: s.core.gen})
	}
}

// sawTyped notes that agy took a typed turn with text.
func (s *session) sawTyped(text string) {
	if i := slices.IndexFunc(s.typed, func(tt typedTurn) bool { return tt.text == text }); i >= 0 {
		s.typed = slices.Delete(s.typed, i, i+1)
	}
}

func (s *session) dropTyped(id int) {
	s.typed = slices.DeleteFunc(s.typed, func(tt typedTurn) bool { return tt.id == id })
}

// checkTyped reports a typed turn agy did not take in time.
func (s *session) checkTyped(ctx actor.Context, id int) {
	i := slices.IndexFunc(s.typed, func(tt typedTurn) bool { return tt.id == id })
	if i < 0 {
		return // seen, or its typing failed (the requester was told)
	}
	text := s.typed[i].text
	s.typed = slices.Delete(s.typed, i, i+1)
	s.publishError(ctx, fmt.Sprintf("the turn typed into agy's terminal did not show in agy's conversation within %s (it was not typed again): %q",
		s.cfg.TypedTurnTimeout, trimForError(text)), false)
}

// trimForError shortens a text quoted in an error event.
func trimForError(s string) string {
	const max = 80
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

// answered closes agy's dialog of a prompt our answer reached, once:
// whichever comes first of the delivery's confirmation and agy showing it.
func (s *session) answered(ctx actor.Context, elicitationID string) {
	if a, ok := s.answers[elicitationID]; ok {
		delete(s.answers, elicitationID)
		if a.root {
			s.closeDialog(ctx, &a.prompt, a.resolve)
		}
	}
}

// closeDialog presses the keys that close agy's own dialog for a prompt of
// the bound conversation answered over RPC (Spec.CloseKeys, else agy's).
// agy keeps its dialog open after an RPC answer, and a turn typed next
// would land in it. Subagents' prompts are not known to show in agy's
// terminal: none is closed.
func (s *session) closeDialog(ctx actor.Context, p *mapper.Prompt, r messages.Resolve) {
	if s.terminal == nil || p == nil {
		return
	}
	keys := s.core.spec.CloseKeys
	if keys == nil {
		keys = mapper.CloseKeys(p, r)
	}
	if len(keys) > 0 {
		ctx.Send(s.terminal, &pressKeys{keys: keys, why: "close the dialog of " + p.ElicitationID})
	}
}

func (s *session) sendTurn(ctx actor.Context, m *messages.SendTurn, sender *actor.PID) {
	m.LastModel = s.core.root.LastModel()
	s.core.root.ExpectTurn(m.Text)
	s.record("turn", s.conv(), map[string]string{"text": m.Text}, s.now())
	ctx.RequestWithCustomSender(s.turns, m, sender)
}

// interrupt hands an interrupt to the turn sender with the conversations
// where agy may wait on prompts (the bound one and its subagents), each from
// its first step that can still change: the turn sender declines them
// first. The open prompts are the harness's to close now: agy shows them
// declined by us.
func (s *session) interrupt(ctx actor.Context, m *messages.Interrupt, sender *actor.PID) {
	m.Conversations = []messages.ConversationFrom{{ConversationID: s.conv(), From: s.core.root.FirstLive()}}
	for conv, r := range s.core.children {
		if !s.core.childrenDone[conv] {
			m.Conversations = append(m.Conversations, messages.ConversationFrom{ConversationID: conv, From: r.FirstLive()})
		}
	}
	for _, r := range s.reconcilers() {
		for _, p := range r.OpenPrompts() {
			r.AnswerInFlight(p.ElicitationID, messages.ActionCancel)
		}
	}
	ctx.RequestWithCustomSender(s.turns, m, sender)
}

// onInterruptDone closes agy's dialogs of the prompts the interrupt
// declined, and clears the marks of prompts it did not close.
func (s *session) onInterruptDone(ctx actor.Context, m *interruptDone) {
	if m.gen != s.core.gen {
		return
	}
	for _, d := range m.declined {
		if d.conv == s.conv() {
			s.closeDialog(ctx, &d.prompt, messages.Resolve{Action: messages.ActionCancel})
		}
	}
	for _, r := range s.reconcilers() {
		for _, p := range r.OpenPrompts() {
			if !slices.ContainsFunc(m.declined, func(d declinedPrompt) bool { return d.prompt.Key == p.Key }) {
				r.AnswerInFlight(p.ElicitationID, "")
			}
		}
	}
}

// reconcilers are the root's and every subagent child's.
func (s *session) reconcilers() []*mapper.Reconciler {
	out := []*mapper.Reconciler{s.core.root}
	for _, r := range s.core.children {
		out = append(out, r)
	}
	return out
}

func (s *session) findPrompt(id string) (*mapper.Prompt, bool) {
	if p, ok := s.core.root.Prompt(id); ok {
		return p, true
	}
	for _, r := range s.core.children {
		if p, ok := r.Prompt(id); ok {
			return p, true
		}
	}
	return nil, false
}

func (s *session) onResolve(ctx actor.Context, r messages.Resolve) error {
	if r.ElicitationID == "" {
		return errors.New("resolve: elicitation_id is required")
	}
	p, ok := s.findPrompt(r.ElicitationID)
	if !ok && s.core.events.resolved[r.ElicitationID] {
		return fmt.Errorf("resolve: %w %q: %w", ErrUnknownElicitation, r.ElicitationID, ErrElicitationResolved)
	}
	if !ok {
		return fmt.Errorf("resolve: %w %q", ErrUnknownElicitation, r.ElicitationID)
	}
	// Check the answer against the prompt now, so a bad command changes nothing.
	if _, err := mapper.BuildInteraction(p, r, p.TrajectoryID, p.StepIndex); err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	pid, ok := s.interactions[r.ElicitationID]
	if !ok {
		return ErrNotBound
	}
	rec := s.reconcilerOf(r.ElicitationID)
	rec.AnswerInFlight(r.ElicitationID, r.Action)
	s.answers[r.ElicitationID] = answerOnItsWay{prompt: *p, resolve: r, root: rec == s.core.root}
	s.record("delivering", s.conv(), answerRecord{ElicitationID: r.ElicitationID, Action: r.Action}, s.now())
	ctx.Send(pid, &messages.DeliverAnswer{Gen: s.core.gen, Resolve: r})
	return nil
}

// reconcilerOf finds the reconciler holding an open prompt (the root's when none does).
func (s *session) reconcilerOf(elicitationID string) *mapper.Reconciler {
	if _, ok := s.core.root.Prompt(elicitationID); !ok {
		for _, r := range s.core.children {
			if _, ok := r.Prompt(elicitationID); ok {
				return r
			}
		}
	}
	return s.core.root
}

func (s *session) onAnswerDelivered(ctx actor.Context, m *messages.AnswerDelivered) {
	t := s.now()
	s.record("resolved", s.conv(), answerRecord{ElicitationID: m.ElicitationID, Action: m.Action, StepIndex: &m.StepIndex}, t)
	s.answered(ctx, m.ElicitationID)
	if ev, ok := s.reconcilerOf(m.ElicitationID).MarkResolved(m.ElicitationID, m.Action, m.StepIndex, t); ok {
		s.publish(&ev)
	}
	if pid, ok := s.interactions[m.ElicitationID]; ok {
		s.stopChild(ctx, pid)
		delete(s.interactions, m.ElicitationID)
	}
}

func (s *session) onAnswerFailed(ctx actor.Context, m *messages.AnswerFailed) {
	delete(s.answers, m.ElicitationID)
	s.reconcilerOf(m.ElicitationID).AnswerInFlight(m.ElicitationID, "")
	s.record("delivering", s.conv(), answerRecord{ElicitationID: m.ElicitationID}, s.now())
	s.publishError(ctx, fmt.Sprintf("answer to %s not delivered: %v", m.ElicitationID, m.Err), m.Retryable)
}

// ---- publishing ----

// publish stamps ev with the time (when it has none), and the event log
// with the session id and the next seq; the log keeps it and hands it to
// every subscriber. It never blocks.
func (s *session) publish(ev *messages.Event) {
	if ev.Time.IsZero() {
		ev.Time = s.now()
	}
	s.core.events.publish(ev)
	if ev.Type == messages.EventElicitationRequest || ev.Type == messages.EventElicitationResolved {
		open := s.core.events.openIDs()
		s.core.publishView(func(v *sessionView) { v.openIDs = open })
	}
}

func (s *session) publishError(ctx actor.Context, msg string, retryable bool) {
	s.publish(&messages.Event{
		Type: messages.EventError, ID: fmt.Sprintf("%s/error/%d", s.core.spec.SessionID, s.core.events.seq+1),
		ConversationID: s.conv(), Message: msg, Retryable: messages.Ptr(retryable),
	})
}

// endWithError ends the session for good: an error event (not retryable)
// with msg, status error, and the session stops with msg as its Err.
func (s *session) endWithError(ctx actor.Context, msg string) {
	s.publishError(ctx, msg, false)
	s.publishStatus(messages.StateError)
	s.endErr = errors.New(msg)
	ctx.Stop(ctx.Self())
}

func (s *session) publishStatus(state string) {
	s.publish(&messages.Event{
		Type: messages.EventStatus, ID: fmt.Sprintf("%s/status/%d", s.core.spec.SessionID, s.core.events.seq+1),
		ConversationID: s.conv(), State: state,
	})
}

// ---- supervision ----

// HandleFailure is the session's supervision strategy for its children; see
// sessionDecider for the policy. It runs on the session's own goroutine.
func (s *session) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, _ any) {
	ctx := sup.(actor.Context)
	kind, ours := s.kinds[child.Id]
	if !ours {
		// A child already stopped (replaced after a re-discovery) failed on
		// its way out: nothing to restart.
		sup.StopChildren(child)
		return
	}
	err, _ := reason.(error)
	if err == nil {
		err = fmt.Errorf("%v", reason)
	}
	publish := func(d actor.Directive) {
		system.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: d})
	}
	if kind == "stream" {
		s.setStreamUp(ctx, false)
	}
	switch sessionDecider(reason) {
	case restartChild:
		rs.Fail()
		n := rs.NumberOfFailures(s.cfg.RestartWindow)
		if n > s.cfg.RestartBudget {
			publish(actor.StopDirective)
			s.portLost(ctx, fmt.Errorf("%s failed %d times within %s: %w", kind, n, s.cfg.RestartWindow, err))
			return
		}
		publish(actor.RestartDirective)
		s.core.publishView(func(v *sessionView) {
			v.restarts = maps.Clone(v.restarts)
			if v.restarts == nil {
				v.restarts = make(map[string]int)
			}
			v.restarts[kind]++
		})
		s.t.after(backoff(n, s.cfg.RestartBackoffMin, s.cfg.RestartBackoffMax), s.self, &restartNow{pid: child, gen: s.core.gen})
	case rediscover:
		publish(actor.StopDirective)
		s.stopChild(ctx, child)
		s.portLost(ctx, err)
	case stopChild:
		publish(actor.StopDirective)
		s.stopChild(ctx, child)
		s.publishError(ctx, err.Error(), false)
		s.endErr = err
		ctx.Stop(ctx.Self())
	}
}
