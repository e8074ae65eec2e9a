package actors

import (
	"errors"
	"fmt"

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
	// Check the answer against the prompt now, so a bad command changes nothing.
	if _, err := mapper.BuildInteraction(p, r, p.TrajectoryID, p.StepIndex); err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	pid, ok := s.prompts.interactions[r.ElicitationID]
	if !ok {
		return ErrNotBound
	}
	rec := s.convs.reconcilerOf(r.ElicitationID)
	rec.AnswerInFlight(r.ElicitationID, r.Action)
	s.prompts.answers[r.ElicitationID] = answerOnItsWay{prompt: *p, resolve: r, root: rec == s.convs.root}
	s.record("delivering", s.conv(), answerRecord{ElicitationID: r.ElicitationID, Action: r.Action}, s.now())
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
	keys := s.shared.spec.CloseKeys
	if keys == nil {
		var err error
		if keys, err = mapper.CloseKeys(p, r); err != nil {
			s.publishError(ctx, fmt.Sprintf("agy's dialog for %s is left open in its terminal: %v", p.ElicitationID, err), false)
			return
		}
	}
	if len(keys) > 0 {
		ctx.Send(s.link.terminal, &pressKeys{keys: keys, why: "close the dialog of " + p.ElicitationID})
	}
}
