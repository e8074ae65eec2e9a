package agytest

import (
	"slices"
	"strconv"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// prompt is the open WAITING interaction of a conversation. The answer
// arrives on answer (capacity 1) from HandleCascadeUserInteraction or the
// terminal; whoever first moves the step out of WAITING under the
// conversation's lock wins (answer or timeout), the other gives way.
type prompt struct {
	idx       int
	questions []QuestionSpec // nil for a permission prompt
	answer    chan wire.InteractionResponse
	// unstreamed: agy parks this prompt without a stream frame; only a
	// read of the steps shows it WAITING (Options.UnstreamedPrompts).
	unstreamed bool
	// req is what the step asks now; next what it asks after req is
	// allowed, on the same step (agy 1.1.7 on asks each segment of a
	// compound command in turn), with rearm recording an allowed ask on
	// the step before the next one is asked. Guarded by the
	// conversation's lock.
	req  *wire.Interaction
	next []*wire.Interaction
	// kind is an InteractAction's ("" for a permission or a question);
	// wait, when set, is how long it waits before agy moves on (CANCELED,
	// no retry) instead of Options.PromptTimeout.
	kind  string
	wait  time.Duration
	rearm func(f *fakeStep, asked *wire.Interaction, ans wire.InteractionResponse, next *wire.Interaction)
}

// askSeq is what a step asks in turn: reqs[0], then, once it is allowed,
// reqs[1] on the same step, and so on; rearm records each allowed ask but
// the last on the step (nil when there is a single ask).
type askSeq struct {
	kind  string
	wait  time.Duration
	reqs  []*wire.Interaction
	rearm func(f *fakeStep, asked *wire.Interaction, ans wire.InteractionResponse, next *wire.Interaction)
}

// prompt opens a WAITING interaction on step idx and waits for its answer.
// When it expires the step turns ERROR and agy's retry opens the same prompt
// as a new step at the next index; prompt returns the index it was answered at.
func (t *turnRun) prompt(idx int, req *wire.Interaction, extra map[string]any, questions []QuestionSpec) (wire.InteractionResponse, int, error) {
	ans, idx, _, err := t.promptSeq(idx, askSeq{reqs: []*wire.Interaction{req}}, extra, questions)
	return ans, idx, err
}

// promptSeq is prompt for a step that asks seq.reqs in turn on the same
// step: an allowed ask but the last re-arms the step WAITING on the next
// (a denied one ends the sequence). It returns the last answer, the index
// it came at, and what that answer was to.
func (t *turnRun) promptSeq(idx int, seq askSeq, extra map[string]any, questions []QuestionSpec) (wire.InteractionResponse, int, *wire.Interaction, error) {
	reqs := seq.reqs
	for {
		req := reqs[0]
		expireNow := t.srv.takeFault(FaultPromptTimeout)
		p := &prompt{questions: questions, answer: make(chan wire.InteractionResponse, 1), req: req, next: reqs[1:], rearm: seq.rearm, kind: seq.kind, wait: seq.wait}
		t.flush()
		c := t.c
		c.mu.Lock()
		p.idx = idx
		p.unstreamed = rngFor(t.srv.opts.Seed, c.id, "unstreamed", strconv.Itoa(idx)).Float64() < t.srv.opts.UnstreamedPrompts
		f := c.steps[idx]
		f.step.Status = wire.StatusWaiting
		f.step.RequestedInteraction = req
		for k, v := range extra {
			f.setExtra(k, v)
		}
		c.prompt = p
		c.touchLocked(idx)
		c.mu.Unlock()

		ans, answered, err := t.await(p, expireNow)
		if err != nil || answered {
			c.mu.Lock()
			asked := p.req
			c.mu.Unlock()
			return ans, idx, asked, err
		}
		if p.wait > 0 {
			return wire.InteractionResponse{}, idx, nil, errMovedOn // agy moved on
		}
		// agy retries the timed-out prompt as a fresh step, asking what
		// was left.
		c.mu.Lock()
		retry := c.steps[idx].clone()
		reqs = append([]*wire.Interaction{p.req}, p.next...)
		c.mu.Unlock()
		retry.step.Status = wire.StatusPending
		retry.step.RequestedInteraction = nil
		retry.step.CompletedInteractions = nil
		delete(retry.extra, "requestedInteraction") // asked again when it turns WAITING
		delete(retry.extra, "completedInteractions")
		retry.step.Metadata.CreatedAt = timestamp(time.Now())
		retry.step.Metadata.CompletedAt = ""
		if err := t.pause(); err != nil {
			return wire.InteractionResponse{}, idx, nil, err
		}
		idx = t.add(retry)
	}
}

// await waits for p's answer, its expiry or the turn's end. It reports
// answered=false when the prompt expired.
func (t *turnRun) await(p *prompt, expireNow bool) (wire.InteractionResponse, bool, error) {
	var expired <-chan time.Time
	d := t.srv.opts.PromptTimeout
	if p.wait > 0 {
		d = p.wait
	}
	switch {
	case expireNow:
		ch := make(chan time.Time)
		close(ch)
		expired = ch
	case d > 0:
		timer := time.NewTimer(d)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case ans := <-p.answer:
		return ans, true, nil
	case <-expired:
		if !t.c.expire(p) {
			return <-p.answer, true, nil // answered just before the timer fired
		}
		return wire.InteractionResponse{}, false, nil
	case <-t.ctx.Done():
		return wire.InteractionResponse{}, false, t.ctx.Err()
	}
}

// expire times out p if it is still open: its step turns ERROR.
func (c *conversation) expire(p *prompt) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prompt != p {
		return false
	}
	c.prompt = nil
	f := c.steps[p.idx]
	f.step.Status = wire.StatusError
	if p.wait > 0 {
		f.step.Status = wire.StatusCanceled
	}
	f.step.Metadata.CompletedAt = timestamp(time.Now())
	c.touchLocked(p.idx)
	return true
}

// answer delivers an interaction, validated as agy validates it: the ids
// inside the interaction must name this trajectory's step that is WAITING
// now, else the overloaded "input not registered for step N". From the
// terminal the open prompt is answered whatever the ids say.
func (c *conversation) answer(resp wire.InteractionResponse, fromTerminal bool) *connectError {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.prompt
	if fromTerminal {
		if p == nil {
			return errorf(rpc.CodeUnknown, "no open prompt in conversation %s", c.id)
		}
		resp.TrajectoryID = c.trajectoryID
		resp.StepIndex = wire.Int(p.idx)
	}
	idx := int(resp.StepIndex)
	if resp.TrajectoryID != c.trajectoryID || p == nil || p.idx != idx || c.steps[idx].step.Status != wire.StatusWaiting {
		return errorf(rpc.CodeUnknown, "input not registered for step %d", idx)
	}
	if p.kind != "" {
		if err := checkKindAnswer(p.kind, &resp, idx, fromTerminal); err != nil {
			return err
		}
	} else if p.questions == nil {
		if resp.Permission == nil {
			return errorf(rpc.CodeUnknown, "step %d expects a permission response", idx)
		}
		resp.AskQuestion = nil
	} else {
		if resp.AskQuestion == nil {
			return errorf(rpc.CodeUnknown, "step %d expects an askQuestion response", idx)
		}
		if err := validateAnswers(p.questions, resp.AskQuestion.Responses, idx); err != nil {
			return err
		}
		resp.Permission = nil
	}
	f := c.steps[idx]
	if len(p.next) > 0 && resp.Permission != nil && resp.Permission.Allow {
		// The next segment is asked on the same step, which stays WAITING.
		next := p.next[0]
		p.rearm(f, p.req, resp, next)
		f.step.RequestedInteraction = next
		p.req, p.next = next, p.next[1:]
		c.touchLocked(idx)
		return nil
	}
	f.step.Status = wire.StatusRunning
	c.prompt = nil
	c.touchLocked(idx)
	p.answer <- resp
	return nil
}

func validateAnswers(qs []QuestionSpec, rs []wire.QuestionResponse, idx int) *connectError {
	if len(rs) == 0 {
		return nil // {"responses":[]} declines the question: the step leaves WAITING
	}
	answered := map[string]bool{}
	for _, r := range rs {
		qi := slices.IndexFunc(qs, func(q QuestionSpec) bool { return q.Question == r.Question })
		if qi < 0 {
			return errorf(rpc.CodeUnknown, "step %d: response to unknown question %q (quote the question verbatim)", idx, r.Question)
		}
		q := qs[qi]
		if answered[q.Question] {
			return errorf(rpc.CodeUnknown, "step %d: question %q answered twice", idx, q.Question)
		}
		answered[q.Question] = true
		if len(r.SelectedOptionIDs) == 0 && r.WriteInResponse == "" {
			return errorf(rpc.CodeUnknown, "step %d: question %q has no selected option", idx, q.Question)
		}
		if len(r.SelectedOptionIDs) > 1 && !q.MultiSelect {
			return errorf(rpc.CodeUnknown, "step %d: question %q takes a single option", idx, q.Question)
		}
		if r.WriteInResponse != "" && !q.AllowWriteIn {
			return errorf(rpc.CodeUnknown, "step %d: question %q takes no write-in", idx, q.Question)
		}
		for _, id := range r.SelectedOptionIDs {
			n, err := strconv.Atoi(id)
			if err != nil || n < 1 || n > len(q.Options) || strconv.Itoa(n) != id {
				return errorf(rpc.CodeUnknown, "step %d: question %q has no option id %q (ids are \"1\"..\"%d\")", idx, q.Question, id, len(q.Options))
			}
		}
	}
	for _, q := range qs {
		if !answered[q.Question] {
			return errorf(rpc.CodeUnknown, "step %d: question %q not answered", idx, q.Question)
		}
	}
	return nil
}
