package mapper

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// prompt tracks the prompt a step asks (see "Prompts" in the package doc).
func (r *Reconciler) prompt(index int, s *wire.Step, st *slot) {
	if st.prompt == nil {
		if s.RequestedInteraction == nil {
			return
		}
		switch {
		case s.Status == wire.StatusWaiting:
		case s.Status.Terminal() && s.Status != wire.StatusError:
			// A retry that ended before we saw it wait: it resolves the open
			// prompt asking the same thing. Otherwise it is history.
		default:
			return
		}
		fresh, ok := promptOf(s, index)
		if !ok {
			return
		}
		if p := r.openPrompt(fresh.Key); p != nil {
			st.prompt = p
			if index > p.StepIndex {
				p.StepIndex, p.Created = index, fresh.Created
				if fresh.TrajectoryID != "" {
					p.TrajectoryID = fresh.TrajectoryID
				}
			}
		} else if s.Status == wire.StatusWaiting {
			if fresh.Kind == messages.KindQuestion && s.Metadata.ToolCall == nil {
				// A streamed copy: it lacks toolCall, the only source of the
				// multi-select and write-in flags. Ask the driver once a
				// polled copy has them (AwaitingDetail tells the session to
				// read one now), rather than ask a question wrongly.
				r.awaitingDetail = true
				return
			}
			r.openOn(index, s, st, fresh)
			return
		} else {
			return
		}
		st.asks, st.askSig, st.askCount = 1, askSignature(s), answeredCount(s)
		st.sigs = map[string]bool{st.askSig: true}
	}
	p := st.prompt
	if index == p.StepIndex && s.Status == wire.StatusWaiting && r.reasked(s, st) {
		// The same step asks again (agy 1.1.7 on: each segment of `a && b`,
		// a sandbox escape): the prompt it asked before is answered, and
		// this is a new one.
		fresh, ok := promptOf(s, index)
		if !ok {
			return
		}
		p.superseded = true
		if !p.closed {
			r.closeAnswered(p, s, index)
		}
		r.openOn(index, s, st, fresh)
		return
	}
	if p.closed || index != p.StepIndex {
		return // closed already, or an older step of a retried prompt
	}
	if p.Kind == messages.KindQuestion && s.Metadata.ToolCall != nil && s.RequestedInteraction != nil && s.RequestedInteraction.AskQuestion != nil {
		// Streamed copies drop toolCall, the only source of the multi-select
		// and write-in flags: a polled copy brings them back, for validating
		// answers and for re-sending the request to a re-attached driver.
		p.Questions = questionsOf(s)
		p.Request.Questions = p.Questions
	}
	switch {
	case s.Status == wire.StatusWaiting:
		p.timedOut = false
	case s.Status == wire.StatusError:
		p.timedOut = true // agy may ask again at a higher index
	case s.Status == wire.StatusDone:
		r.closeAnswered(p, s, index)
	case s.Status.Terminal():
		if p.inFlight == messages.ActionCancel || p.inFlight == messages.ActionDecline {
			// Our decline reached it, and the turn was cancelled before
			// agy showed the answer (an interrupt).
			r.closePrompt(p, p.inFlight, messages.ByHarness, messages.Ptr(index))
			return
		}
		r.closePrompt(p, messages.ActionCancel, messages.ByExpired, nil)
	case len(s.CompletedInteractions) > 0:
		// Answered (by us, or in agy's own terminal) and now running.
		r.closeAnswered(p, s, index)
	}
}

// openOn opens the prompt a WAITING step at index asks, as the slot's next
// ask: its first (id c/prompt/i), or its n-th on the same step (c/prompt/i.n).
func (r *Reconciler) openOn(index int, s *wire.Step, st *slot, fresh *Prompt) {
	fresh.Request.CallID = st.callID
	if fresh.Kind == messages.KindPermission && fresh.Interaction == "" && isTool(s) {
		// What the tool would touch or change, from the waiting copy.
		d := callDetailOf(rowOf(s.Type), viewOf(s))
		fresh.Request.Locations, fresh.Request.Diffs = d.locations, d.diffs
	}
	st.asks++
	sig := askSignature(s)
	st.askSig = sig
	if st.sigs == nil {
		st.sigs = make(map[string]bool)
	}
	st.sigs[sig] = true
	st.askCount = max(st.askCount, answeredCount(s))
	fresh.Answered = answeredCount(s)
	suffix := ""
	if st.asks > 1 {
		suffix = "." + strconv.Itoa(st.asks)
	}
	r.openNew(fresh, suffix)
	st.prompt = r.prompts[len(r.prompts)-1]
}

// reasked reports whether a WAITING copy of a step that asked before asks
// something new: its request or its count of answered decisions changed
// since the slot's last ask, to a state never seen on this slot, and the
// count did not go back (a copy read before the last ask is stale).
func (r *Reconciler) reasked(s *wire.Step, st *slot) bool {
	sig := askSignature(s)
	if sig == st.askSig || st.sigs[sig] {
		return false
	}
	return answeredCount(s) >= st.askCount
}

// AskedAgain reports whether after, a copy of the step before read after
// an answer to it, is WAITING asking something new on the same step.
func AskedAgain(before, after *wire.Step) bool {
	if before == nil || after == nil || after.Status != wire.StatusWaiting || after.RequestedInteraction == nil {
		return false
	}
	return askSignature(after) != askSignature(before) && answeredCount(after) >= answeredCount(before)
}

// AskedSince reports whether step, the WAITING copy of p's step at index
// read at delivery, asks a later ask than p: agy shows more of the step's
// decisions answered than when p was asked (p was answered, in agy's
// terminal, and the same step asks again). An answer to p must not go there.
func AskedSince(p *Prompt, index int, step *wire.Step) bool {
	return p != nil && step != nil && index == p.StepIndex && answeredCount(step) > p.Answered
}

// Superseded reports whether the step of a prompt has asked something new
// since (agy asks again on the same step): agy's dialog then shows the new
// ask, and the keys closing the prompt's would answer that one.
// A closed prompt is let go of at the end of the Apply that closed it, so
// the answer then comes from its step's slot: asked more times than the
// prompt's count (its id's ".n", 1 without).
func (r *Reconciler) Superseded(elicitationID string) bool {
	if p, ok := r.promptIDs[elicitationID]; ok {
		return p.superseded
	}
	_, rest, ok := strings.Cut(elicitationID, "/prompt/")
	if !ok {
		return false
	}
	idx, n := rest, 1
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		var err error
		if n, err = strconv.Atoi(rest[i+1:]); err != nil {
			return false
		}
		idx = rest[:i]
	}
	index, err := strconv.Atoi(idx)
	if err != nil {
		return false
	}
	sl := r.slots[index]
	if sl == nil || !strings.HasPrefix(elicitationID, r.idBase(index)+"/prompt/") {
		return false // another epoch's step, or out of the window
	}
	return sl.asks > n
}

// askSignature identifies one ask of a step: what it requests (its
// requestedInteraction's bytes) and how many
// decisions of the step agy shows answered (its completedInteractions and
// permission grants). agy keeps a compound command's step WAITING while it
// asks segment after segment; each answer it records changes the counts.
func askSignature(s *wire.Step) string {
	_, raw := interactionOf(s)
	return string(raw) + "\x1d" + strconv.Itoa(len(s.CompletedInteractions)) + "\x1d" + strconv.Itoa(grantCount(s))
}

// answeredCount is how many decisions of a step agy shows answered.
func answeredCount(s *wire.Step) int {
	return max(len(s.CompletedInteractions), grantCount(s))
}

// grantCount is the length of a step's permissions.permissionGrants.
func grantCount(s *wire.Step) int {
	if len(s.Permissions) == 0 {
		return 0
	}
	var v struct {
		Grants []json.RawMessage `json:"permissionGrants"`
	}
	if json.Unmarshal(s.Permissions, &v) != nil {
		return 0
	}
	return len(v.Grants)
}

// AwaitingDetail reports whether the last Apply saw a question prompt in a
// streamed copy without the tool call that carries its multi-select flags:
// its elicitation_request waits for a polled copy, which the caller should
// read now.
func (r *Reconciler) AwaitingDetail() bool { return r.awaitingDetail }

// openNew opens a prompt and reports it: elicitation_request, then waiting.
// suffix is "" for a step's first ask, ".n" for its n-th.
func (r *Reconciler) openNew(p *Prompt, suffix string) {
	p.ElicitationID = r.idBase(p.StepIndex) + "/prompt/" + strconv.Itoa(p.StepIndex) + suffix
	req := p.Request
	h := r.event(messages.EventElicitationRequest, p.ElicitationID+"/request")
	req.Type, req.ID, req.ConversationID, req.ParentConversationID, req.Time = h.Type, h.ID, h.ConversationID, h.ParentConversationID, h.Time
	req.ElicitationID = p.ElicitationID
	if p.Kind == messages.KindPermission {
		req.Choices = PermissionChoices(p, r.cfg.PaneOwned)
	}
	p.Request = req
	ps := &promptState{Prompt: *p}
	r.prompts = append(r.prompts, ps)
	r.promptIDs[p.ElicitationID] = ps
	r.emit(p.Request)
	r.setState(messages.StateWaiting, p.StepIndex)
}

// answeredAction reads the action of an answer agy echoed in
// completedInteractions: a permission is accept when allowed, else decline;
// a question answered is accept, one answered with no responses declined.
func answeredAction(s *wire.Step, kind string) string {
	if kind == messages.KindElicitation {
		for i := len(s.CompletedInteractions) - 1; i >= 0; i-- {
			if resp := s.CompletedInteractions[i].Response; resp != nil && resp.Elicitation != nil {
				switch resp.Elicitation.Action {
				case messages.ActionDecline, messages.ActionCancel:
					return resp.Elicitation.Action
				}
				break
			}
		}
		return messages.ActionAccept
	}
	if kind != messages.KindPermission {
		for i := len(s.CompletedInteractions) - 1; i >= 0; i-- {
			if resp := s.CompletedInteractions[i].Response; resp != nil && resp.AskQuestion != nil {
				if resp.AskQuestion.Declined() {
					return messages.ActionDecline
				}
				break
			}
		}
		return messages.ActionAccept
	}
	for i := len(s.CompletedInteractions) - 1; i >= 0; i-- {
		resp := s.CompletedInteractions[i].Response
		if resp == nil {
			continue
		}
		if (resp.Permission != nil && resp.Permission.Allow) || (resp.FilePermission != nil && resp.FilePermission.Allow) {
			return messages.ActionAccept
		}
		return messages.ActionDecline
	}
	// No echo: a command that ran to DONE was allowed.
	return messages.ActionAccept
}

func (r *Reconciler) openPrompt(key string) *promptState {
	for _, p := range r.prompts {
		if !p.closed && p.Key == key {
			return p
		}
	}
	return nil
}

func (r *Reconciler) openCount() int {
	n := 0
	for _, p := range r.prompts {
		if !p.closed {
			n++
		}
	}
	return n
}

// expireBehind closes prompts that timed out and were not asked again before
// the conversation moved on: a later user turn, or a later tool step that
// ended without asking the same thing.
func (r *Reconciler) expireBehind(index int, s *wire.Step) {
	for _, p := range r.prompts {
		if p.closed || !p.timedOut || index <= p.StepIndex {
			continue
		}
		moved := s.Type == wire.StepUserInput ||
			(isTool(s) && s.Status.Terminal() && PromptKey(s) != p.Key)
		if moved {
			r.closePrompt(p, messages.ActionCancel, messages.ByExpired, nil)
		}
	}
}

// closeAnswered closes a prompt agy shows answered: by the harness when an
// answer of ours was in flight (the trajectory can show it before the
// delivery's reply arrives) and agy shows it, else in agy's own terminal.
// An answer agy shows that is not ours (accepted where ours declined, or the
// other way round: agy's terminal, or agy's own timeout, answered first) is
// not the harness's, in flight or not. A decline and a cancel count alike:
// agy records a permission's answer as allowed or not.
func (r *Reconciler) closeAnswered(p *promptState, s *wire.Step, index int) {
	shown := answeredAction(s, p.Kind)
	if p.inFlight != "" && (p.inFlight == messages.ActionAccept) == (shown == messages.ActionAccept) {
		r.closePrompt(p, p.inFlight, messages.ByHarness, messages.Ptr(index))
		return
	}
	r.closePrompt(p, shown, messages.ByTerminal, messages.Ptr(index))
}

// AnswerInFlight records that the harness is delivering an answer with
// action to the prompt (action "" when that delivery failed): if agy shows
// the prompt answered before MarkResolved, the harness answered it. Not for
// a prompt of kind other: the harness has no answer for one (an interrupt
// never declines it), so whoever ends it is agy's terminal or agy moving on.
func (r *Reconciler) AnswerInFlight(elicitationID, action string) {
	if p, ok := r.promptIDs[elicitationID]; ok && !p.closed && p.Kind != messages.KindOther {
		p.inFlight = action
	}
}

// InFlight is the action of the answer the harness is delivering to the
// open prompt elicitationID (AnswerInFlight), "" when none is.
func (r *Reconciler) InFlight(elicitationID string) string {
	if p, ok := r.promptIDs[elicitationID]; ok && !p.closed {
		return p.inFlight
	}
	return ""
}

// ChoiceInFlight records the permission choice (messages.Choice*) of the
// answer AnswerInFlight records: the prompt's elicitation_resolved by the
// harness carries it.
func (r *Reconciler) ChoiceInFlight(elicitationID, choice string) {
	if p, ok := r.promptIDs[elicitationID]; ok && !p.closed {
		p.choice = choice
	}
}

// closePrompt reports a prompt closed (not by the harness: MarkResolved does
// that) and goes back to running when it was the last one open.
func (r *Reconciler) closePrompt(p *promptState, action, by string, delivered *int) {
	p.closed = true
	e := r.event(messages.EventElicitationResolved, p.ElicitationID+"/resolved")
	e.ElicitationID = p.ElicitationID
	e.Action = action
	e.By = by
	if by == messages.ByHarness {
		e.Choice = p.choice
	}
	e.DeliveredStepIndex = delivered
	r.emit(e)
	if !r.closingTurn && !r.idleBound() {
		r.resumeIfClear()
	}
}

// resumeIfClear reports running when no prompt is open any more.
func (r *Reconciler) resumeIfClear() {
	if r.state == messages.StateWaiting && r.openCount() == 0 {
		r.setState(messages.StateRunning, r.known)
	}
}

// OpenPrompts lists the open prompts in the order they opened (copies), for
// re-sending to a re-attached driver.
func (r *Reconciler) OpenPrompts() []*Prompt {
	var out []*Prompt
	for _, p := range r.prompts {
		if !p.closed {
			c := p.Prompt
			out = append(out, &c)
		}
	}
	return out
}

// Prompt returns (a copy of) the open prompt with this elicitation id, with
// the freshest step index seen; false if unknown or closed.
func (r *Reconciler) Prompt(elicitationID string) (*Prompt, bool) {
	p, ok := r.promptIDs[elicitationID]
	if !ok || p.closed {
		return nil, false
	}
	c := p.Prompt
	return &c, true
}

// MarkResolved records that the harness delivered an answer to the prompt
// at deliveredStepIndex: the prompt closes, and its elicitation_resolved (by
// harness) is returned for the session to publish; false if the prompt is
// unknown or already closed. The reconciler never reports it terminal or
// expired afterwards, and reports running on the next Apply if no prompt is
// left open.
func (r *Reconciler) MarkResolved(elicitationID, action string, deliveredStepIndex int, t time.Time) (messages.Event, bool) {
	p, ok := r.promptIDs[elicitationID]
	if !ok || p.closed {
		return messages.Event{}, false
	}
	p.closed = true
	if deliveredStepIndex > p.StepIndex {
		p.StepIndex = deliveredStepIndex
	}
	e := r.event(messages.EventElicitationResolved, p.ElicitationID+"/resolved")
	e.Time = t
	e.ElicitationID = p.ElicitationID
	e.Action = action
	e.By = messages.ByHarness
	e.Choice = p.choice
	e.DeliveredStepIndex = messages.Ptr(deliveredStepIndex)
	r.resume = true
	return e, true
}
