package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
)

// interaction is the actor of one open prompt (a question or a permission
// request agy is WAITING on). Its one job: get the driver's answer to the
// freshest WAITING step of that prompt.
//
// The session spawns it when the reconciler emits the prompt's
// elicitation_request, and sends it *messages.DeliverAnswer once the driver
// answers. Delivery re-reads the trajectory, finds the freshest WAITING step
// with the prompt's key (agy re-opens a timed-out prompt at a higher step
// index), and calls HandleCascadeUserInteraction there. Outcomes:
//   - accepted: *messages.AnswerDelivered to the session (which emits
//     elicitation_resolved and stops the actor);
//   - "input not registered" and the step is no longer WAITING: it timed
//     out; wait (up to Config.PromptRetryWait) for agy's retry step and
//     deliver there;
//   - "input not registered" with the step still WAITING: a shape error;
//     *messages.AnswerFailed (not retryable) with a clear error;
//   - a lost port: wait for the session to find agy again
//     (*clientChanged) and deliver there; the answer is kept;
//   - transient (5xx, timeouts): retry with capped backoff up to
//     Config.DeliveryAttempts, then AnswerFailed (retryable).
//
// When the prompt leaves WAITING without us (answered in agy's terminal, or
// gone), the session sees it in the trajectory, emits elicitation_resolved
// and stops the actor.
type interaction struct {
	child
	prompt mapper.Prompt

	answer     *messages.Resolve
	attempts   int
	busy       bool
	waitSince  time.Time // when we started waiting for a retry step
	waitClient bool      // the port is gone: deliver when the session sends a new client
}

// deliveryOutcome is sent by the delivery goroutine to the actor.
type deliveryOutcome struct {
	step      int
	reasked   bool // the step asked again right after the answer
	err       error
	waitRetry bool   // the prompt timed out or is not WAITING: wait for agy's retry
	shape     bool   // agy refused the payload for a step that is WAITING
	gone      bool   // the prompt's step no longer asks it (mapper.NoLongerAsked)
	agyAnswer string // then: the action agy recorded for it ("" none)
}

type deliverAgain struct{}

func newInteraction(c child, prompt mapper.Prompt) actor.Actor {
	return &interaction{child: c, prompt: prompt}
}

// Receive waits for the answer, then delivers it.
func (in *interaction) Receive(ctx actor.Context) {
	in.lifecycle(ctx)
	switch m := ctx.Message().(type) {
	case *clientChanged:
		in.client, in.gen = m.client, m.gen
		if in.waitClient {
			in.waitClient = false
			in.deliver(ctx)
		}
	case *messages.DeliverAnswer:
		r := m.Resolve
		in.answer = &r
		in.attempts = 0
		in.waitSince = time.Time{}
		in.deliver(ctx)
	case *deliverAgain:
		in.deliver(ctx)
	case *deliveryOutcome:
		in.onOutcome(ctx, m)
	}
}

func (in *interaction) deliver(ctx actor.Context) {
	if in.busy || in.answer == nil {
		return
	}
	in.busy = true
	self, client, prompt, answer, conv := ctx.Self(), in.client, in.prompt, *in.answer, in.conv
	in.t.run(func(c context.Context) {
		in.t.send(self, deliverOnce(c, client, conv, &prompt, answer))
	})
}

// deliverOnce is one attempt: re-read the steps from the prompt's (agy asks
// a timed-out prompt again at a higher index), find the freshest WAITING
// step, answer it at its trajectory index.
func deliverOnce(ctx context.Context, c *rpc.Client, conv string, p *mapper.Prompt, answer messages.Resolve) *deliveryOutcome {
	steps, err := c.GetCascadeTrajectoryStepsFrom(ctx, conv, p.StepIndex, nil)
	if err != nil {
		return &deliveryOutcome{err: err}
	}
	if answer, gone := mapper.NoLongerAsked(p, steps, p.StepIndex); gone {
		// Answered (an earlier attempt of ours may have landed, its reply
		// lost with the port), cancelled, or rewound away: never sent on.
		return &deliveryOutcome{step: p.StepIndex, gone: true, agyAnswer: answer}
	}
	idx, step, ok := mapper.FreshestWaiting(steps, p.StepIndex, p.Key)
	if !ok || mapper.AskedSince(p, idx, step) {
		// Not WAITING, or its step asks something later now (answered in
		// agy's terminal): an answer to it must not land on another ask.
		return &deliveryOutcome{waitRetry: true, err: errors.New("the prompt is not WAITING in agy")}
	}
	payload, err := mapper.BuildInteraction(p, answer, step.TrajectoryID(), idx)
	if err != nil {
		return &deliveryOutcome{step: idx, err: err, shape: true}
	}
	err = c.HandleCascadeUserInteraction(ctx, conv, payload)
	if err == nil {
		return &deliveryOutcome{step: idx, reasked: askedAgain(ctx, c, conv, idx, step)}
	}
	if !errors.Is(err, rpc.ErrInputNotRegistered) {
		return &deliveryOutcome{step: idx, err: err}
	}
	// The overloaded 500: a timed-out step, or a payload agy cannot place.
	// The step's status tells which.
	again, rerr := c.GetCascadeTrajectoryStepsFrom(ctx, conv, idx, nil)
	if rerr != nil {
		return &deliveryOutcome{step: idx, err: rerr}
	}
	if len(again) > 0 && mapper.Indexer(again, idx)(0) == idx && again[0].Status == wire.StatusWaiting {
		return &deliveryOutcome{step: idx, err: fmt.Errorf("agy refused the answer for WAITING step %d: %w", idx, err), shape: true}
	}
	return &deliveryOutcome{step: idx, err: err, waitRetry: true}
}

// askedAgain reads the step at idx right after an answer to it: whether
// agy keeps it WAITING asking something new (mapper.AskedAgain). A failed
// read says no.
func askedAgain(ctx context.Context, c *rpc.Client, conv string, idx int, before *wire.Step) bool {
	steps, err := c.GetCascadeTrajectoryStepsFrom(ctx, conv, idx, nil)
	if err != nil || len(steps) == 0 || mapper.Indexer(steps, idx)(0) != idx {
		return false
	}
	return mapper.AskedAgain(before, &steps[0])
}

func (in *interaction) onOutcome(ctx actor.Context, o *deliveryOutcome) {
	in.busy = false
	id := in.prompt.ElicitationID
	switch {
	case o.gone && o.agyAnswer != "" && accepts(o.agyAnswer) == accepts(in.answer.Action):
		// agy took this answer (most likely our own earlier attempt).
		ctx.Send(ctx.Parent(), &messages.AnswerDelivered{Gen: in.gen, ElicitationID: id, Action: in.answer.Action, StepIndex: o.step})
		in.answer = nil
	case o.gone:
		ctx.Send(ctx.Parent(), &messages.AnswerFailed{Gen: in.gen, ElicitationID: id,
			Err: fmt.Errorf("agy no longer asks it (%s at step %d): the answer was not sent", goneHow(o.agyAnswer), o.step)})
		in.answer = nil
	case o.err == nil:
		ctx.Send(ctx.Parent(), &messages.AnswerDelivered{Gen: in.gen, ElicitationID: id, Action: in.answer.Action, StepIndex: o.step, Reasked: o.reasked})
		in.answer = nil
	case o.shape:
		ctx.Send(ctx.Parent(), &messages.AnswerFailed{Gen: in.gen, ElicitationID: id, Err: o.err, Retryable: false})
		in.answer = nil
	case o.waitRetry:
		now := in.cfg.Clock.Now()
		if in.waitSince.IsZero() {
			in.waitSince = now
		}
		if now.Sub(in.waitSince) > in.cfg.PromptRetryWait {
			ctx.Send(ctx.Parent(), &messages.AnswerFailed{Gen: in.gen, ElicitationID: id,
				Err: fmt.Errorf("agy did not re-open the prompt within %s: %w", in.cfg.PromptRetryWait, o.err)})
			in.answer = nil
			return
		}
		in.t.after(in.cfg.PollFast, ctx.Self(), &deliverAgain{})
	case errors.Is(o.err, rpc.ErrPortGone):
		// Not the answer's fault: it goes out again on the port the session
		// finds next (the session itself gives up if agy stays gone). Tell
		// the session, in case it has not noticed yet.
		in.waitClient = true
		ctx.Send(ctx.Parent(), &messages.PortLost{Gen: in.gen, Err: o.err})
	default:
		in.attempts++
		if in.attempts >= in.cfg.DeliveryAttempts {
			ctx.Send(ctx.Parent(), &messages.AnswerFailed{Gen: in.gen, ElicitationID: id,
				Err: fmt.Errorf("after %d attempts: %w", in.attempts, o.err), Retryable: true})
			in.answer = nil
			return
		}
		in.t.after(backoff(in.attempts, in.cfg.RestartBackoffMin, in.cfg.RestartBackoffMax), ctx.Self(), &deliverAgain{})
	}
}

// accepts says whether an action lets the prompt's tool go on.
func accepts(action string) bool { return action == messages.ActionAccept }

// goneHow says how a prompt that agy no longer asks ended, from the
// action agy recorded for it.
func goneHow(agyAnswer string) string {
	if agyAnswer == "" {
		return "cancelled, or rewound away"
	}
	return "answered " + agyAnswer + " elsewhere"
}
