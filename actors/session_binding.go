package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// binding is the session's hold on agy's language server: the port's
// client, the children that read and write on it, and how long it has been
// lost. gen, everBound and pin outlive an incarnation of the session; the
// rest is one incarnation's.
type binding struct {
	gen       messages.Gen // grows with each binding: children's messages carry it
	everBound bool
	pin       []byte // the certificate first bound on Spec.Port

	client     *rpc.Client
	boundAt    time.Time // when the port was bound, or the conversation rotated
	streamUp   bool
	flowing    bool // the stream's frames flow (StreamState)
	turnActive bool // the poller was told a turn runs

	discovery, stream, poller, rotation, turns *actor.PID
	terminal                                   *actor.PID // the terminal writer, when the spec has a Terminal

	lostSince    time.Time
	lostReported bool
	certReported bool // told the driver that the named port presents another certificate
	// noConvSince is when the session found agy without a conversation
	// (zero once it has one).
	noConvSince time.Time
}

// newIncarnation forgets what belonged to the previous incarnation (its
// children and client are gone), keeping the generation and the pin.
func (b *binding) newIncarnation() {
	*b = binding{gen: b.gen, everBound: b.everBound, pin: b.pin}
}

func (s *session) startDiscovery(ctx actor.Context) {
	s.link.gen++
	c, spec, pin := s.childOf(s.conv()), s.shared.spec, s.link.pin
	s.link.discovery = s.spawn(ctx, "discovery", func() actor.Actor { return newDiscovery(c, spec, pin) })
}

// childOf is what a child spawned now for conv works with: the bound
// client and the current generation.
func (s *session) childOf(conv string) child {
	return child{client: s.link.client, conv: conv, cfg: s.cfg, gen: s.link.gen, wg: s.shared.wg}
}

func (s *session) onPortFound(ctx actor.Context, m *messages.PortFound) {
	if m.Gen != s.link.gen {
		return
	}
	client, err := rpc.NewClient(rpc.Config{Host: s.shared.spec.Host, Port: m.Port, Pin: m.Pin,
		CSRFToken: m.CSRFToken, OnError: s.shared.countRPCError, MaxMessageSize: s.cfg.MaxMessageSize})
	if err != nil {
		// Discovery probed with the same host and port: this cannot be.
		s.endWithError(ctx, fmt.Sprintf("agy's port %d: %v", m.Port, err))
		return
	}
	s.stopChild(ctx, s.link.discovery)
	s.link.discovery = nil
	s.closeClient()
	s.link.client = client
	if s.shared.spec.Port > 0 && s.link.pin == nil {
		// The port the user named: from now on only this certificate is agy's.
		s.link.pin = m.Pin
	}
	s.bindConversation(m.ConversationID, false)
	if s.link.everBound {
		s.shared.publishView(func(v *sessionView) { v.rebinds++ })
	}
	s.link.lostSince, s.link.lostReported = time.Time{}, false
	s.link.boundAt = time.Now() // compared with agy's times: the machine's clock
	s.markBound(m.ConversationID, m.Port)
	if m.ConversationID == "" {
		s.awaitConversation(ctx)
	}
	s.spawnReaders(ctx)
	s.release(ctx)
	// Work in flight follows the session to the new port; prompts opened
	// while no port was bound get their Interaction now.
	changed := &clientChanged{gen: s.link.gen, client: s.link.client}
	for _, pid := range s.prompts.interactions {
		ctx.Send(pid, changed)
	}
	for _, pid := range s.convs.mirrors {
		ctx.Send(pid, changed)
	}
	for _, p := range s.convs.root.OpenPrompts() {
		s.ensureInteraction(ctx, p)
	}
}

// markBound publishes the bound conversation and port, and signals the
// first binding.
func (s *session) markBound(conv string, port int) {
	s.shared.publishView(func(v *sessionView) { v.conversationID, v.port = conv, port })
	if !s.link.everBound {
		s.link.everBound = true
		close(s.shared.bound)
	}
}

// spawnReaders starts the RPC children on the bound port and conversation.
func (s *session) spawnReaders(ctx actor.Context) {
	c, mode, since := s.childOf(s.conv()), s.shared.spec.ReadMode, s.link.boundAt
	s.link.streamUp, s.link.flowing = false, false
	if c.conv == "" {
		// agy has no conversation yet: watch for its first.
		s.link.rotation = s.spawn(ctx, "rotation", func() actor.Actor { return newRotationWatcher(c, since) })
		return
	}
	if mode != ReadPoll {
		s.link.stream = s.spawn(ctx, "stream", func() actor.Actor { return newStreamReader(c) })
	}
	// Taken now: a restarted poller must not read the session's state.
	from, known := s.convs.root.FirstLive(), s.convs.root.Identities()
	s.link.poller = s.spawn(ctx, "poller", func() actor.Actor { return newPoller(c, mode, from, known) })
	s.link.rotation = s.spawn(ctx, "rotation", func() actor.Actor { return newRotationWatcher(c, since) })
	s.link.turns = s.spawn(ctx, "turns", func() actor.Actor { return newTurnSender(c) })
	s.link.turnActive = false // the new poller knows of no turn
	s.tellTurnActive(ctx)
}

func (s *session) stopReaders(ctx actor.Context) {
	for _, pid := range []*actor.PID{s.link.stream, s.link.poller, s.link.rotation, s.link.turns} {
		s.stopChild(ctx, pid)
	}
	s.link.stream, s.link.poller, s.link.rotation, s.link.turns = nil, nil, nil, nil
	s.link.streamUp, s.link.flowing = false, false
}

func (s *session) closeClient() {
	if s.link.client != nil {
		s.link.client.Close()
		s.link.client = nil
	}
}

// portLost re-runs discovery: the RPC children stop, the generation moves
// on (late messages of the old children are ignored), and the reconcilers
// stay: nothing already emitted is emitted again on the new port.
func (s *session) portLost(ctx actor.Context, err error) {
	if s.link.discovery != nil {
		return // already re-discovering
	}
	s.cfg.Logger.Info("port lost; re-discovering", "session", s.shared.spec.SessionID, "err", err)
	s.shared.publishView(func(v *sessionView) { v.lastErr, v.port = err, 0 })
	s.stopReaders(ctx)
	s.link.lostSince = s.now()
	s.startDiscovery(ctx)
}

func (s *session) onDiscoveryStalled(ctx actor.Context, m *messages.DiscoveryStalled) {
	if m.Gen != s.link.gen {
		return
	}
	s.shared.publishView(func(v *sessionView) { v.lastErr = m.Err })
	if errors.Is(m.Err, rpc.ErrCertificateChanged) && !s.link.certReported {
		s.link.certReported = true
		s.publishError(ctx, fmt.Sprintf("port %d now presents another certificate than the agy this session bound: "+
			"another process holds it; nothing (no token, no turn) is sent to it", s.shared.spec.Port), false)
	}
	if s.link.lostSince.IsZero() {
		s.link.lostSince = s.now()
	}
	if m.GiveUp {
		s.endWithError(ctx, fmt.Sprintf("agy's language server is gone: not found for %s (%v); giving up", m.Since, m.Err))
		return
	}
	if !s.link.lostReported && s.now().Sub(s.link.lostSince) >= s.cfg.LostAfter {
		s.link.lostReported = true
		s.publishError(ctx, fmt.Sprintf("agy's language server unreachable for %s (%v); still looking", m.Since, m.Err), true)
	}
}

// awaitConversation reports that agy has no conversation yet, and arms
// Spec.WaitConversation.
func (s *session) awaitConversation(ctx actor.Context) {
	if !s.link.noConvSince.IsZero() {
		return // still waiting, on a new port
	}
	s.link.noConvSince = s.now()
	s.publish(NoConversationEvent(s.link.noConvSince))
	if d := s.shared.spec.WaitConversation; d > 0 {
		s.t.after(d, ctx.Self(), &conversationWaitOver{since: s.link.noConvSince})
	}
}

// NoConversationEvent is the status event of a session that found agy
// without a conversation (at t): once per session, with an id of its own.
func NoConversationEvent(t time.Time) *messages.Event {
	return &messages.Event{Type: messages.EventStatus, ID: "status/" + messages.StateNoConversation, State: messages.StateNoConversation, Time: t}
}

// rotate follows agy into a new root conversation (/clear), or into its
// first (from "": the conversation agy minted for the first turn typed);
// isNew: to appeared while the session watched (ConversationRotated.New).
func (s *session) rotate(ctx actor.Context, to string, isNew bool) {
	from := s.conv()
	t := s.now()
	if from != "" {
		s.publish(&messages.Event{
			Type: messages.EventConversationRotated, ID: from + "/rotated/" + to,
			ConversationID: to, From: from, To: to, Time: t,
		})
	}
	s.link.noConvSince = time.Time{}
	s.stopReaders(ctx)
	for id, pid := range s.prompts.interactions {
		s.stopChild(ctx, pid)
		delete(s.prompts.interactions, id)
	}
	// The old root's children are still mirrored to their end, under the
	// new generation; their parent is no longer followed, so it counts as
	// finished.
	for conv := range s.convs.mirrors {
		s.convs.orphans[conv] = true
	}
	s.link.gen++
	// A turn sent to the conversation left behind shows there, if at all:
	// the new one is not checked for it.
	s.desk.forgetSent()
	s.bindConversation(to, isNew)
	s.link.boundAt = time.Now() // compared with agy's times: the machine's clock
	s.markBound(to, s.link.client.Port())
	s.spawnReaders(ctx)
	s.release(ctx)
	changed := &clientChanged{gen: s.link.gen, client: s.link.client}
	for _, pid := range s.convs.mirrors {
		ctx.Send(pid, changed)
	}
}

// onStreamState takes the stream reader's report. One that frames stopped
// never opens the stream: it may come from a stream that ended (the
// failure is handled first).
func (s *session) onStreamState(ctx actor.Context, m *messages.StreamState) {
	if m.Up && !m.Flowing && !s.link.streamUp {
		return
	}
	s.setStreamState(ctx, m.Up, m.Up && m.Flowing)
}

// setStreamUp sets whether the stream is up; one that goes up has not
// carried a frame yet.
func (s *session) setStreamUp(ctx actor.Context, up bool) { s.setStreamState(ctx, up, false) }

// setStreamState sets the stream's state, and tells the poller of a change.
func (s *session) setStreamState(ctx actor.Context, up, flowing bool) {
	if s.link.streamUp == up && s.link.flowing == flowing {
		return
	}
	wasUp := s.link.streamUp
	s.link.streamUp, s.link.flowing = up, flowing
	if s.link.poller != nil {
		ctx.Send(s.link.poller, &messages.StreamState{Gen: s.link.gen, Up: up, Flowing: flowing})
	}
	if s.link.rotation != nil && up != wasUp {
		// With the stream up the rotation watcher reads the conversation
		// list only now and then: frames name a new conversation.
		ctx.Send(s.link.rotation, &messages.StreamState{Gen: s.link.gen, Up: up})
	}
}

// tellTurnActive tells the poller whether a turn runs, when that changed.
func (s *session) tellTurnActive(ctx actor.Context) {
	st := s.convs.root.State()
	active := st == messages.StateRunning || st == messages.StateWaiting
	if active != s.link.turnActive && s.link.poller != nil {
		s.link.turnActive = active
		ctx.Send(s.link.poller, &messages.TurnActive{Gen: s.link.gen, Active: active})
	}
}

// readNow asks the poller, when there is one, to read the steps at once.
func (s *session) readNow(ctx actor.Context) {
	if s.link.poller != nil {
		ctx.Send(s.link.poller, &messages.ReadNow{Gen: s.link.gen})
	}
}

// lookForConversation asks the rotation watcher, when there is one, to read
// agy's conversations at once.
func (s *session) lookForConversation(ctx actor.Context) {
	if s.link.rotation != nil {
		ctx.Send(s.link.rotation, &messages.ReadNow{Gen: s.link.gen})
	}
}
