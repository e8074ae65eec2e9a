package actors

import (
	"errors"
	"fmt"
	"slices"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
)

// promptDesk is the session's part that answers agy's prompts: an
// Interaction actor per open prompt, and the answers on their way to agy.
// One incarnation's.
type promptDesk struct {
	interactions map[string]*actor.PID // elicitation id -> Interaction
	// answers are the answers on their way to agy, by elicitation id: the
	// keys that close agy's dialog depend on them (agy may show the prompt
	// answered, and the reconciler close it, before delivery is confirmed).
	answers map[string]answerOnItsWay
	// warned are the interactions (agy's names) a warning was logged for.
	warned map[string]bool
}

// answerOnItsWay is an answer being delivered, with its prompt as it was
// answered.
type answerOnItsWay struct {
	prompt  mapper.Prompt
	resolve messages.Resolve
	root    bool // a prompt of the bound conversation (not a subagent's)
}

func newPromptDesk() promptDesk {
	return promptDesk{interactions: make(map[string]*actor.PID), answers: make(map[string]answerOnItsWay), warned: make(map[string]bool)}
}

func (s *session) ensureInteraction(ctx actor.Context, p *mapper.Prompt) {
	if _, ok := s.prompts.interactions[p.ElicitationID]; ok || s.link.client == nil {
		return
	}
	prompt := *p
	conv := p.Request.ConversationID
	if conv == "" {
		conv = s.conv()
	}
	c := s.childOf(conv)
	s.prompts.interactions[p.ElicitationID] = s.spawn(ctx, "interaction", func() actor.Actor { return newInteraction(c, prompt) })
}

// warnInteraction logs, once per session and kind, a prompt beyond agy's
// permission and question: its answer shape was never recorded (a file
// permission, an MCP elicitation), or is not known at all (kind other).
func (s *session) warnInteraction(ev *messages.Event) {
	if ev.Interaction == "" || s.prompts.warned[ev.Interaction] {
		return
	}
	s.prompts.warned[ev.Interaction] = true
	if ev.Kind == messages.KindOther {
		s.cfg.Logger.Warn("agy asks something the harness cannot answer: it is shown, to be answered in agy's terminal", "interaction", ev.Interaction, "elicitation_id", ev.ElicitationID)
		return
	}
	s.cfg.Logger.Warn("agy asks a kind of prompt whose answer was never recorded live: answered with the shape of agy's schema", "interaction", ev.Interaction, "kind", ev.Kind, "elicitation_id", ev.ElicitationID)
}

// stopInteraction stops the Interaction of a prompt that closed.
func (s *session) stopInteraction(ctx actor.Context, elicitationID string) {
	if pid, ok := s.prompts.interactions[elicitationID]; ok {
		s.stopChild(ctx, pid)
		delete(s.prompts.interactions, elicitationID)
	}
}

func (s *session) onResolve(ctx actor.Context, r messages.Resolve) error {
	if r.ElicitationID == "" {
		return errors.New("resolve: elicitation_id is required")
	}
	p, ok := s.convs.findPrompt(r.ElicitationID)
	if !ok && s.shared.events.resolved[r.ElicitationID] {
		return fmt.Errorf("resolve: %w %q: %w", ErrUnknownElicitation, r.ElicitationID, ErrElicitationResolved)
	}
	if !ok {
		return fmt.Errorf("resolve: %w %q", ErrUnknownElicitation, r.ElicitationID)
	}
	rec := s.convs.reconcilerOf(r.ElicitationID)
	if a := rec.InFlight(r.ElicitationID); a != "" {
		// Sent once: a second answer would land on whatever agy asks next
		// on that step, or be reported as the one agy took.
		return fmt.Errorf("resolve: %w %q: %w", ErrUnknownElicitation, r.ElicitationID, ErrAnswerOnItsWay)
	}
	if err := r.ApplyChoice(); err != nil {
		return fmt.Errorf("resolve: %w: %w", mapper.ErrInvalidResolve, err)
	}
	if r.Choice != "" && !slices.ContainsFunc(p.Request.Choices, func(c messages.Choice) bool { return c.ID == r.Choice }) {
		if messages.ChoiceAlways(r.Choice) {
			return fmt.Errorf("resolve: %w: choice %q is not offered for %s: agy's \"always\" rows are given in its terminal dialog, which only a session that owns agy's pane can answer (launch, acp)", mapper.ErrInvalidResolve, r.Choice, r.ElicitationID)
		}
		return fmt.Errorf("resolve: %w: choice %q is not offered for %s", mapper.ErrInvalidResolve, r.Choice, r.ElicitationID)
	}
	// Check the answer against the prompt now, so a bad command changes nothing.
	if _, err := mapper.BuildInteraction(p, r, p.TrajectoryID, p.StepIndex); err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	pid, ok := s.prompts.interactions[r.ElicitationID]
	if !ok {
		return ErrNotBound
	}
	rec.AnswerInFlight(r.ElicitationID, r.Action)
	rec.ChoiceInFlight(r.ElicitationID, r.Choice)
	if messages.ChoiceAlways(r.Choice) && rec == s.convs.root && s.link.terminal != nil && s.paneOwned() {
		s.answerInDialog(ctx, p, r)
		return nil
	}
	s.prompts.answers[r.ElicitationID] = answerOnItsWay{prompt: *p, resolve: r, root: rec == s.convs.root}
	s.record("delivering", s.conv(), answerRecord{ElicitationID: r.ElicitationID, Action: r.Action, Choice: r.Choice}, s.now())
	ctx.Send(pid, &messages.DeliverAnswer{Gen: s.link.gen, Resolve: r})
	return nil
}

func (s *session) onAnswerDelivered(ctx actor.Context, m *messages.AnswerDelivered) {
	t := s.now()
	s.record("resolved", s.conv(), answerRecord{ElicitationID: m.ElicitationID, Action: m.Action, StepIndex: &m.StepIndex}, t)
	if m.Reasked {
		s.skipDialog(m.ElicitationID)
		// agy may park the next ask without a stream frame: read it now.
		s.readNow(ctx)
	}
	s.answered(ctx, m.ElicitationID)
	if ev, ok := s.convs.reconcilerOf(m.ElicitationID).MarkResolved(m.ElicitationID, m.Action, m.StepIndex, t); ok {
		s.publish(&ev)
	}
	s.stopInteraction(ctx, m.ElicitationID)
}

func (s *session) onAnswerFailed(ctx actor.Context, m *messages.AnswerFailed) {
	delete(s.prompts.answers, m.ElicitationID)
	s.convs.reconcilerOf(m.ElicitationID).AnswerInFlight(m.ElicitationID, "")
	s.record("delivering", s.conv(), answerRecord{ElicitationID: m.ElicitationID}, s.now())
	s.publishError(ctx, fmt.Sprintf("answer to %s not delivered: %v", m.ElicitationID, m.Err), m.Retryable)
}

// answered closes agy's dialog of a prompt our answer reached, once:
// whichever comes first of the delivery's confirmation and agy showing it.
// Not when its step has asked again since: agy's dialog shows the new ask,
// which the keys would answer unasked (docs/DECISIONS.md, "A prompt asked
// again on the same step").
func (s *session) answered(ctx actor.Context, elicitationID string) {
	if a, ok := s.prompts.answers[elicitationID]; ok {
		delete(s.prompts.answers, elicitationID)
		if a.root && !s.convs.reconcilerOf(elicitationID).Superseded(elicitationID) {
			s.closeDialog(ctx, &a.prompt, a.resolve)
		}
	}
}

// skipDialog forgets the keys of an answer whose step asked again at once:
// agy's dialog moved on to the new ask.
func (s *session) skipDialog(elicitationID string) {
	if _, ok := s.prompts.answers[elicitationID]; ok {
		delete(s.prompts.answers, elicitationID)
		s.cfg.Logger.Debug("agy asked again on the same step: its dialog shows the new ask, no keys pressed", "elicitation_id", elicitationID)
	}
}

// closeDialog presses the keys that close agy's own dialog for a prompt of
// the bound conversation answered over RPC (Spec.CloseKeys, else agy's).
// agy keeps its dialog open after an RPC answer, and a turn typed next
// would land in it. Subagents' prompts are not known to show in agy's
// terminal: none is closed.
func (s *session) closeDialog(ctx actor.Context, p *mapper.Prompt, r messages.Resolve) {
	if s.link.terminal == nil || p == nil {
		return
	}
	if keys := s.shared.spec.CloseKeys; keys != nil {
		if len(keys) > 0 {
			ctx.Send(s.link.terminal, &pressKeys{keys: keys, why: "close the dialog of " + p.ElicitationID})
		}
		return
	}
	// The keys are worked out as they are pressed, from the rows the pane
	// shows; a bad option id is refused here, so nothing is sent.
	if _, err := mapper.CloseKeys(p, r, ""); err != nil {
		s.publishError(ctx, fmt.Sprintf("agy's dialog for %s is left open in its terminal: %v", p.ElicitationID, err), false)
		return
	}
	ctx.Send(s.link.terminal, &pressKeys{dialog: &dialogAnswer{prompt: *p, resolve: r}, why: "close the dialog of " + p.ElicitationID})
}

// answerInDialog gives an "always" choice (agy's dialog rows 2 and 3) with
// agy's keys in its pane, and sends no RPC answer: agy's RPC answer has no
// "always" that anyone recorded, and an RPC allow would close the step as
// allowed once and leave the keys to land on whatever the dialog shows next
// (docs/DECISIONS.md "agy's options 2 and 3"). The trajectory confirms it
// (the step leaves WAITING: elicitation_resolved by the harness with the
// choice). If the keys cannot be pressed, or agy has not moved within
// Config.TypedTurnTimeout, the answer goes over RPC as allowed once, and an
// error event says the grant was not given.
func (s *session) answerInDialog(ctx actor.Context, p *mapper.Prompt, r messages.Resolve) {
	s.record("delivering", s.conv(), answerRecord{ElicitationID: r.ElicitationID, Action: r.Action, Choice: r.Choice}, s.now())
	ctx.Send(s.link.terminal, &pressKeys{dialog: &dialogAnswer{prompt: *p, resolve: r}, why: "give " + r.Choice + " for " + p.ElicitationID})
	s.t.after(s.cfg.TypedTurnTimeout, ctx.Self(), &dialogAnswerDue{elicitationID: r.ElicitationID, resolve: r})
}

// dialogAnswerDue: the time an "always" answer given in agy's dialog had to
// show in the trajectory is up.
type dialogAnswerDue struct {
	elicitationID string
	resolve       messages.Resolve
}

// onDialogPressed: the keys of an answer in agy's dialog were not pressed.
// An "always" answer falls back to the RPC (allowed once); the keys that
// close a dialog after an RPC answer are only reported.
func (s *session) onDialogPressed(ctx actor.Context, m *dialogPressed) {
	if messages.ChoiceAlways(m.resolve.Choice) {
		s.alwaysFallback(ctx, m.elicitationID, m.resolve, m.err)
		return
	}
	s.publishError(ctx, fmt.Sprintf("agy's dialog for %s is left open in its terminal: %v", m.elicitationID, m.err), false)
}

// onDialogAnswerDue falls back to the RPC when agy still waits on a prompt
// whose "always" answer was given in its dialog.
func (s *session) onDialogAnswerDue(ctx actor.Context, m *dialogAnswerDue) {
	s.alwaysFallback(ctx, m.elicitationID, m.resolve, fmt.Errorf("agy did not take the answer within %s", s.cfg.TypedTurnTimeout))
}

// alwaysFallback delivers an "always" answer over RPC as allowed once, if
// its prompt is still open and has no answer on its way yet.
func (s *session) alwaysFallback(ctx actor.Context, id string, r messages.Resolve, why error) {
	rec := s.convs.reconcilerOf(id)
	p, ok := rec.Prompt(id)
	if !ok {
		return // agy took it
	}
	if _, busy := s.prompts.answers[id]; busy {
		return
	}
	pid, ok := s.prompts.interactions[id]
	if !ok {
		return
	}
	s.publishError(ctx, fmt.Sprintf("%s for %s was not given in agy's dialog (%v): allowed once over RPC instead, and nothing is allowed always", r.Choice, id, why), false)
	once := messages.Resolve{ElicitationID: id, Action: messages.ActionAccept, Choice: messages.ChoiceAllowOnce}
	s.record("delivering", s.conv(), answerRecord{ElicitationID: id, Action: once.Action, Choice: once.Choice}, s.now())
	rec.AnswerInFlight(id, once.Action)
	rec.ChoiceInFlight(id, once.Choice)
	s.prompts.answers[id] = answerOnItsWay{prompt: *p, resolve: once, root: rec == s.convs.root}
	ctx.Send(pid, &messages.DeliverAnswer{Gen: s.link.gen, Resolve: once})
}
