package actors

import (
	"fmt"
	"slices"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
)

// turnDesk is the session's part that takes turns and interrupts: those
// held while no port is bound, and the turns sent over RPC or typed into
// agy's terminal not yet seen in its conversation. One incarnation's.
type turnDesk struct {
	// held are turns and interrupts that arrived while no port was bound;
	// they go out once one is (or are dropped past their deadline).
	held []heldRequest
	// typed are the turns typed into agy's terminal not yet seen as user
	// turns in its conversation; each is checked TypedTurnTimeout after.
	typed     []typedTurn
	typedNext int
	// sent are the turns sent over RPC not yet seen as user turns of the
	// bound conversation, in the order they were sent (checkSent).
	sent     []sentTurn
	sentNext int
}

// sentTurn is a turn sent to agy over RPC, expected back as a user turn of
// the bound conversation. delivered: agy accepted it (its check runs from
// then); confirming: a check found agy idle without it and asked for a
// read; idleReads: how many such reads in a row found agy idle without it.
type sentTurn struct {
	id         int
	text       string
	delivered  bool
	confirming bool
	idleReads  int
	stopCheck  func() // cancels its pending sentTurnCheck; nil: none
}

// forget cancels the turn's pending check: it is seen, reported or given
// up, and its timer need not wait out Config.TurnTakenTimeout.
func (st *sentTurn) forget() {
	if st.stopCheck != nil {
		st.stopCheck()
		st.stopCheck = nil
	}
}

// heldRequest is a request waiting for the session to be bound: a
// *messages.SendTurn or *messages.Interrupt from the API, or a
// *messages.RunTurn the turn sender could not deliver (already expected
// and recorded: it is sent again as it is).
type heldRequest struct {
	msg      any
	sender   *actor.PID
	deadline time.Time
}

// typedTurn is a turn typed into agy's terminal, expected back as a user
// turn of its conversation.
type typedTurn struct {
	id   int
	text string
}

// hold keeps a request until the session is bound again.
func (d *turnDesk) hold(msg any, sender *actor.PID, deadline time.Time) {
	d.held = append(d.held, heldRequest{msg: msg, sender: sender, deadline: deadline})
}

// refuseHeld answers every held request with err: the session ends or
// restarts.
func (d *turnDesk) refuseHeld(ctx actor.Context, err error) {
	for _, h := range d.held {
		ctx.Send(h.sender, &messages.TurnResult{Err: err})
	}
	d.held = nil
}

// addTyped notes a turn about to be typed into agy's terminal.
func (d *turnDesk) addTyped(text string) typedTurn {
	d.typedNext++
	tt := typedTurn{id: d.typedNext, text: text}
	d.typed = append(d.typed, tt)
	return tt
}

// sawTyped notes that agy took a typed turn with text (as agy took it:
// mapper.TypedForm of what was typed).
func (d *turnDesk) sawTyped(text string) {
	text = mapper.TypedForm(text)
	if i := slices.IndexFunc(d.typed, func(tt typedTurn) bool { return mapper.TypedForm(tt.text) == text }); i >= 0 {
		d.typed = slices.Delete(d.typed, i, i+1)
	}
}

// addSent notes a turn about to be sent over RPC.
func (d *turnDesk) addSent(text string) {
	d.sentNext++
	d.sent = append(d.sent, sentTurn{id: d.sentNext, text: text})
}

// sawSent notes that agy took a sent turn with text (the first agy
// accepted, else the first sent), and says whether there was one. Any user
// turn of the text counts, whatever its origin, in the form agy would give
// a paste: a turn agy took is never reported as not taken (a person's turn
// of the same text, seen first, can only hide a report). passed are the
// turns agy accepted before that one and has not shown: agy takes the turns
// it queued in order, so it dropped them (the caller reports them, which
// forgets them).
func (d *turnDesk) sawSent(text string) (passed []sentTurn, ok bool) {
	text = mapper.TypedForm(text)
	same := func(st sentTurn) bool { return mapper.TypedForm(st.text) == text }
	i := slices.IndexFunc(d.sent, func(st sentTurn) bool { return st.delivered && same(st) })
	if i < 0 {
		// Shown before agy's answer to its send reached the session.
		i = slices.IndexFunc(d.sent, same)
	}
	if i < 0 {
		return nil, false
	}
	for _, st := range d.sent[:i] {
		if st.delivered {
			passed = append(passed, st)
		}
	}
	d.sent[i].forget()
	d.sent = slices.Delete(d.sent, i, i+1)
	return passed, true
}

// forgetUnsent forgets the first sent turn with text agy has not accepted:
// it is being sent anew (and noted again).
func (d *turnDesk) forgetUnsent(text string) {
	if i := slices.IndexFunc(d.sent, func(st sentTurn) bool { return st.text == text && !st.delivered }); i >= 0 {
		d.sent = slices.Delete(d.sent, i, i+1)
	}
}

// sentByID returns the sent turn id, or nil once it was seen or dropped.
func (d *turnDesk) sentByID(id int) *sentTurn {
	i := slices.IndexFunc(d.sent, func(st sentTurn) bool { return st.id == id })
	if i < 0 {
		return nil
	}
	return &d.sent[i]
}

// dropSent forgets the sent turn id.
func (d *turnDesk) dropSent(id int) {
	d.sent = slices.DeleteFunc(d.sent, func(st sentTurn) bool {
		if st.id != id {
			return false
		}
		st.forget()
		return true
	})
}

// forgetSent forgets every sent turn.
func (d *turnDesk) forgetSent() {
	for i := range d.sent {
		d.sent[i].forget()
	}
	d.sent = nil
}

// takeTyped removes the typed turn id, and says whether it was still there
// (not seen, and its typing not failed).
func (d *turnDesk) takeTyped(id int) (typedTurn, bool) {
	i := slices.IndexFunc(d.typed, func(tt typedTurn) bool { return tt.id == id })
	if i < 0 {
		return typedTurn{}, false
	}
	tt := d.typed[i]
	d.typed = slices.Delete(d.typed, i, i+1)
	return tt, true
}

// release sends the held requests that are still wanted, in order.
func (s *session) release(ctx actor.Context) {
	held := s.desk.held
	s.desk.held = nil
	now := time.Now() // a requester's deadline is on the machine's clock (its context's)
	for _, h := range held {
		if now.After(h.deadline) {
			if m, ok := h.msg.(*messages.RunTurn); ok {
				s.desk.forgetUnsent(m.Text)
			}
			continue // the requester has given up: never send it late
		}
		switch m := h.msg.(type) {
		case *messages.RunTurn:
			if s.link.turns != nil {
				ctx.RequestWithCustomSender(s.link.turns, m, h.sender)
				continue
			}
			s.desk.forgetUnsent(m.Text) // routed anew: noted again if sent
			s.routeTurn(ctx, &messages.SendTurn{Text: m.Text, Model: m.Model, Deadline: m.Deadline}, h.sender)
		case *messages.SendTurn:
			s.routeTurn(ctx, m, h.sender)
		case *messages.Interrupt:
			if s.link.turns == nil {
				ctx.Send(h.sender, &messages.TurnResult{}) // agy has no conversation: nothing runs
				continue
			}
			s.interrupt(ctx, m, h.sender)
		}
	}
}

// routeTurn types a turn into agy's terminal (every turn in TurnsTUI mode,
// and a fresh agy's first: it has no conversation to send it to), sends it
// over RPC, holds it while agy's port is being found, or refuses it when
// agy has no conversation and the session no terminal.
func (s *session) routeTurn(ctx actor.Context, m *messages.SendTurn, sender *actor.PID) {
	switch {
	case s.link.terminal != nil && (s.shared.spec.Turns == TurnsTUI || s.conv() == ""):
		s.typeTurn(ctx, m, sender)
	case s.link.turns != nil:
		s.sendTurn(ctx, m, sender)
	case s.link.client != nil && s.conv() == "":
		ctx.Send(sender, &messages.TurnResult{Err: ErrNoConversation})
	default:
		s.desk.hold(m, sender, m.Deadline)
	}
}

// sendTurn hands a turn to the turn sender, with the model of agy's last turn.
func (s *session) sendTurn(ctx actor.Context, m *messages.SendTurn, sender *actor.PID) {
	run := &messages.RunTurn{Text: m.Text, Model: m.Model, LastModel: s.convs.root.LastModel(), Deadline: m.Deadline}
	s.convs.root.ExpectTurn(m.Text)
	s.desk.addSent(m.Text)
	s.record("turn", s.conv(), map[string]string{"text": m.Text}, s.now())
	ctx.RequestWithCustomSender(s.link.turns, run, sender)
}

// typeTurn has the terminal writer type a turn into agy's terminal, and
// checks Config.TypedTurnTimeout later that agy took it: a user turn with
// its text in the conversation. It is never typed twice.
func (s *session) typeTurn(ctx actor.Context, m *messages.SendTurn, sender *actor.PID) {
	tt := s.desk.addTyped(m.Text)
	if s.convs.root != nil {
		s.convs.root.ExpectTypedTurn(m.Text) // origin harness (a conversation bound later expects it too)
	}
	s.record("turn", s.conv(), map[string]string{"text": m.Text}, s.now())
	ctx.Send(s.link.terminal, &typeTurn{id: tt.id, text: m.Text, reply: sender})
	s.t.after(s.cfg.TypedTurnTimeout, s.self, &typedTurnCheck{id: tt.id})
	if s.conv() == "" {
		// agy mints its first conversation for this turn: look for it now.
		s.lookForConversation(ctx)
	}
}

func (s *session) onTurnTyped(ctx actor.Context, m *turnTyped) {
	switch {
	case m.err != nil:
		s.desk.takeTyped(m.id) // the requester was told
	case s.conv() == "":
		// agy mints its first conversation for this turn now: look again.
		s.lookForConversation(ctx)
	}
}

// checkTyped reports a typed turn agy did not take in time.
func (s *session) checkTyped(ctx actor.Context, id int) {
	tt, ok := s.desk.takeTyped(id)
	if !ok {
		return // seen, or its typing failed (the requester was told)
	}
	s.publishError(ctx, fmt.Sprintf("the turn typed into agy's terminal did not show in agy's conversation within %s (it was not typed again): %q",
		s.cfg.TypedTurnTimeout, trimForError(tt.text)), false)
}

// onTurnOutcome starts the check of a turn agy accepted over RPC, and
// forgets one it refused (the requester was told). Outcomes come in the
// order the turns were sent, so the first sent turn with the text not yet
// delivered is the one.
func (s *session) onTurnOutcome(m *turnOutcome) {
	i := slices.IndexFunc(s.desk.sent, func(st sentTurn) bool { return st.text == m.text && !st.delivered })
	if i < 0 {
		return // seen already, or sent by an earlier incarnation
	}
	st := &s.desk.sent[i]
	if !m.delivered {
		s.desk.dropSent(st.id)
		return
	}
	st.delivered = true
	st.stopCheck = s.t.after(s.cfg.TurnTakenTimeout, s.self, &sentTurnCheck{id: st.id})
}

// sawUserTurn notes a user turn of the bound conversation: a turn the
// session sent, or typed, that agy took; and reports the turns agy accepted
// before it and passed over.
func (s *session) sawUserTurn(ev *messages.Event) {
	passed, ok := s.desk.sawSent(ev.Text)
	for _, st := range passed {
		s.reportNotTaken(st, notTakenPassed)
	}
	if !ok && ev.Origin == messages.OriginHarness {
		s.desk.sawTyped(ev.Text)
	}
}

// checkSent runs Config.TurnTakenTimeout after agy accepted a turn over RPC,
// and again every TurnTakenTimeout while the turn has not shown as a user
// turn. While agy works (running, or waiting on a prompt) the turn may be
// queued behind the run: the check waits. Found idle, the session has the
// steps read (confirmSent counts the read); two such reads in a row, a
// TurnTakenTimeout apart, that find agy idle without the turn report it:
// agy accepted the turn and dropped it (an interrupt cancels the turns agy
// queued behind its run), so the driver, told, may send it again. (Two, so
// that a moment of idle between a run and the turn queued behind it is
// never taken for a drop.) It is never sent again by the session: it could
// come twice.
func (s *session) checkSent(ctx actor.Context, id int) {
	st := s.desk.sentByID(id)
	if st == nil {
		return
	}
	if s.idleAndRead() {
		st.confirming = true
		s.readNow(ctx)
	} else {
		st.idleReads = 0
	}
	st.stopCheck = s.t.after(s.cfg.TurnTakenTimeout, s.self, &sentTurnCheck{id: id})
}

// confirmSent counts a read of the bound conversation for every sent turn a
// check asked it for: one that finds agy idle (the turn not in it: it was
// not seen) counts towards the report, one that finds agy working starts
// the count over.
func (s *session) confirmSent() {
	idle := s.idleAndRead()
	for i := 0; i < len(s.desk.sent); i++ {
		st := &s.desk.sent[i]
		if !st.confirming {
			continue
		}
		st.confirming = false
		if !idle {
			st.idleReads = 0
			continue
		}
		if st.idleReads++; st.idleReads >= 2 {
			s.reportNotTaken(*st, notTakenIdle)
			i-- // reportNotTaken removed it
		}
	}
}

// idleAndRead says whether the session reads agy's bound conversation
// (bound, with a poller) and finds it idle.
func (s *session) idleAndRead() bool {
	return s.link.poller != nil && s.convs.root != nil && s.convs.root.State() == messages.StateIdle
}

// Why a turn is reported not taken (reportNotTaken).
const (
	notTakenIdle   = "agy is idle and its conversation does not show the turn"
	notTakenPassed = "agy took a turn sent after it first"
)

// reportNotTaken reports a sent turn agy accepted and never recorded, and
// forgets it; why is notTakenIdle or notTakenPassed.
func (s *session) reportNotTaken(st sentTurn, why string) {
	s.desk.dropSent(st.id)
	ev := s.errorEvent(fmt.Sprintf("agy accepted the turn but did not take it: %s (it was not sent again): %q", why, trimForError(st.text)), true)
	ev.Code, ev.Text = messages.ErrorTurnNotTaken, st.text
	s.publish(ev)
}

// trimForError shortens a text quoted in an error event.
func trimForError(s string) string {
	const max = 80
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

// ---- interrupts ----

func (s *session) onInterrupt(ctx actor.Context, m *messages.Interrupt) {
	switch {
	case s.link.client != nil && s.conv() == "":
		ctx.Respond(&messages.TurnResult{}) // agy has no conversation: nothing runs
	case s.link.turns == nil:
		s.desk.hold(m, ctx.Sender(), m.Deadline)
	default:
		s.interrupt(ctx, m, ctx.Sender())
	}
}

// interrupt hands an interrupt to the turn sender with the conversations
// where agy may wait on prompts (the bound one and its subagents), each from
// its first step that can still change: the turn sender declines them
// first. The open prompts are the harness's to close now: agy shows them
// declined by us.
func (s *session) interrupt(ctx actor.Context, m *messages.Interrupt, sender *actor.PID) {
	stop := &messages.StopRun{Deadline: m.Deadline,
		Conversations: []messages.ConversationFrom{{ConversationID: s.conv(), From: s.convs.root.FirstLive()}}}
	for conv, r := range s.convs.children {
		if !s.convs.done(conv) {
			stop.Conversations = append(stop.Conversations, messages.ConversationFrom{ConversationID: conv, From: r.FirstLive()})
		}
	}
	for _, r := range s.convs.all() {
		for _, p := range r.OpenPrompts() {
			if p.Kind != messages.KindOther { // never declined: agy's terminal answers it
				r.AnswerInFlight(p.ElicitationID, messages.ActionCancel)
			}
		}
	}
	ctx.RequestWithCustomSender(s.link.turns, stop, sender)
}

// onInterruptDone closes agy's dialogs of the prompts the interrupt
// declined, and clears the marks of prompts it did not close.
func (s *session) onInterruptDone(ctx actor.Context, m *interruptDone) {
	if m.gen != s.link.gen {
		return
	}
	for _, d := range m.declined {
		if d.conv == s.conv() {
			s.closeDialog(ctx, &d.prompt, messages.Resolve{Action: messages.ActionCancel})
		}
	}
	for _, r := range s.convs.all() {
		for _, p := range r.OpenPrompts() {
			if !slices.ContainsFunc(m.declined, func(d declinedPrompt) bool { return d.prompt.Key == p.Key }) {
				r.AnswerInFlight(p.ElicitationID, "")
			}
		}
	}
}

// onInterruptNotDone runs again an interrupt that met agy's port gone: at
// once when the session is bound to a new port already, else on the next
// binding (the port loss is on its way).
func (s *session) onInterruptNotDone(ctx actor.Context, m *interruptNotDone) {
	again := &messages.Interrupt{Deadline: m.deadline}
	if m.gen != s.link.gen && s.link.turns != nil {
		s.interrupt(ctx, again, m.reply)
		return
	}
	s.desk.hold(again, m.reply, m.deadline)
}
