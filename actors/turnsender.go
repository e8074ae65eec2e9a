package actors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
)

// turnSender is the actor that writes to agy's cascade. Its one job:
// serialise user turns (*messages.RunTurn: SendUserCascadeMessage with the
// model resolved at run time, docs/ARCHITECTURE.md — explicit, else agy's
// last turn's model, else GetAvailableModels' recommended one; the catalog is cached and read
// again on the model-required error) and run interrupts
// (*messages.StopRun, within Config.InterruptDeadline: agy's cancel
// methods change nothing while a prompt is WAITING, so every WAITING prompt
// of the interrupt's conversations is declined first, then the cancel
// methods run in order until agy reports the cascade IDLE, declining again
// before each). Each reply is a *messages.TurnResult to the original
// requester; the session hears whether agy accepted each turn
// (turnOutcome: it checks that agy then takes it) and which prompts an
// interrupt declined (interruptDone). It never uses SendAgentMessage, which
// records a SYSTEM_MESSAGE instead of a turn.
//
// It reads the catalog once at start and reports it to the session
// (*messages.ModelsLoaded). A lost port is a failure (the session
// re-discovers); other errors are the requester's to see.
type turnSender struct {
	child

	queue   []pendingTurn
	busy    bool
	catalog map[string]wire.ModelInfo // by model enum
}

type pendingTurn struct {
	msg   *messages.RunTurn
	reply *actor.PID
}

// turnSent and catalogRead are the sender's own messages.
type turnSent struct {
	result  *messages.TurnResult
	catalog map[string]wire.ModelInfo
}

type catalogRead struct {
	catalog map[string]wire.ModelInfo
	err     error
}

func newTurnSender(c child) actor.Actor {
	return &turnSender{child: c}
}

// Receive queues turns, runs one at a time, and runs interrupts at once.
func (ts *turnSender) Receive(ctx actor.Context) {
	ts.lifecycle(ctx)
	switch m := ctx.Message().(type) {
	case *actor.Started:
		self := ctx.Self()
		ts.t.run(func(c context.Context) {
			cat, err := readCatalog(c, ts.client)
			ts.t.send(self, &catalogRead{cat, err})
		})
	case *actor.Stopping, *actor.Restarting:
		for _, p := range ts.queue {
			ctx.Send(p.reply, &messages.TurnResult{Err: ErrNotBound})
		}
		ts.queue = nil
	case *catalogRead:
		if m.err == nil && ts.catalog == nil {
			ts.catalog = m.catalog
			ctx.Send(ctx.Parent(), &messages.ModelsLoaded{Gen: ts.gen, Models: m.catalog})
		}
	case *messages.RunTurn:
		ts.queue = append(ts.queue, pendingTurn{msg: m, reply: ctx.Sender()})
		ts.next(ctx)
	case *turnSent:
		ts.busy = false
		if m.catalog != nil && ts.catalog == nil {
			ts.catalog = m.catalog
			ctx.Send(ctx.Parent(), &messages.ModelsLoaded{Gen: ts.gen, Models: m.catalog})
		}
		if errors.Is(m.result.Err, rpc.ErrPortGone) {
			fail("turns", m.result.Err)
		}
		ts.next(ctx)
	case *messages.StopRun:
		reply, session := ctx.Sender(), ctx.Parent()
		root := ctx.ActorSystem().Root
		convs := m.Conversations
		if len(convs) == 0 {
			convs = []messages.ConversationFrom{{ConversationID: ts.conv}}
		}
		ts.t.run(func(c context.Context) {
			declined, err := ts.interrupt(c, convs)
			root.Send(session, &interruptDone{gen: ts.gen, declined: declined})
			if err != nil && (errors.Is(err, rpc.ErrPortGone) || c.Err() != nil) {
				// agy's port went away (or this actor stops as the session
				// moves to a new one): the session runs it again once bound.
				// Declining and cancelling twice changes nothing more.
				root.Send(session, &interruptNotDone{gen: ts.gen, deadline: m.Deadline, reply: reply})
				return
			}
			root.Send(reply, &messages.TurnResult{Err: err})
		})
	}
}

func (ts *turnSender) next(ctx actor.Context) {
	if ts.busy || len(ts.queue) == 0 {
		return
	}
	p := ts.queue[0]
	ts.queue = ts.queue[1:]
	ts.busy = true
	self, catalog, root := ctx.Self(), ts.catalog, ctx.ActorSystem().Root
	session := ctx.Parent()
	ts.t.run(func(c context.Context) {
		res, cat, notSent := ts.send(c, p.msg, catalog)
		if notSent {
			// agy never saw it (its port is gone): the session holds the
			// turn and sends it again once it has found agy.
			root.Send(session, &turnNotSent{msg: p.msg, reply: p.reply})
		} else {
			// The requester gets its answer even if this actor stops meanwhile.
			root.Send(p.reply, res)
			root.Send(session, &turnOutcome{text: p.msg.Text, delivered: res.Err == nil})
		}
		ts.t.send(self, &turnSent{result: res, catalog: cat})
	})
}

// turnNotSent is sent by the turn sender to its session: a turn that
// certainly did not reach agy, to be held until agy is found again.
type turnNotSent struct {
	msg   *messages.RunTurn
	reply *actor.PID
}

// turnOutcome is sent by the turn sender to its session for every turn it
// sent or failed to send (but not for one that never reached agy:
// turnNotSent): whether agy accepted it. In the order the turns were sent.
type turnOutcome struct {
	text      string
	delivered bool
}

// send sends one turn; it returns the catalog when it had to read it, and
// whether the turn certainly never reached agy (then it may be sent again).
func (ts *turnSender) send(ctx context.Context, m *messages.RunTurn, catalog map[string]wire.ModelInfo) (*messages.TurnResult, map[string]wire.ModelInfo, bool) {
	var read map[string]wire.ModelInfo
	model := m.Model
	if model == "" {
		model = m.LastModel
	}
	if model == "" {
		if catalog == nil {
			cat, err := readCatalog(ctx, ts.client)
			if err != nil {
				// Nothing was sent yet: a lost port, or this actor stopping
				// (the session moves to a new port), makes it worth another try.
				retry := errors.Is(err, rpc.ErrPortGone) || errors.Is(err, context.Canceled)
				return &messages.TurnResult{Err: fmt.Errorf("turn: no model given and the catalog is unreadable: %w", err)}, nil, retry
			}
			catalog, read = cat, cat
		}
		model = recommended(catalog)
		if model == "" {
			return &messages.TurnResult{Err: errors.New("turn: no model given and agy lists none")}, read, false
		}
	}
	err := ts.client.SendUserCascadeMessage(ctx, ts.conv, m.Text, model)
	if errors.Is(err, rpc.ErrModelRequired) && m.Model == "" {
		// The model we resolved is not accepted any more: read the catalog again.
		if cat, cerr := readCatalog(ctx, ts.client); cerr == nil {
			read = cat
			if alt := recommended(cat); alt != "" {
				model = alt
				err = ts.client.SendUserCascadeMessage(ctx, ts.conv, m.Text, model)
			}
		}
	}
	if err != nil {
		return &messages.TurnResult{Model: model, Err: fmt.Errorf("turn: %w", err)}, read, rpc.NotDelivered(err)
	}
	return &messages.TurnResult{Model: model}, read, false
}

// interruptNotDone is sent by the turn sender to its session: an interrupt
// that met agy's port gone, to be run again on the port the session finds.
type interruptNotDone struct {
	gen      messages.Gen
	deadline time.Time // the requester's
	reply    *actor.PID
}

// interruptDone is sent by the turn sender to its session when an interrupt
// has run: the prompts it declined, so that their dialogs in agy's terminal
// can be closed, and the session's other marks cleared.
type interruptDone struct {
	gen      messages.Gen
	declined []declinedPrompt
}

// declinedPrompt is a prompt an interrupt declined.
type declinedPrompt struct {
	conv   string
	prompt mapper.Prompt
}

// interrupt declines every WAITING prompt of convs, then tries each cancel
// method (declining again before each: a declined prompt lets the turn go
// on, and it may ask again) until agy reports the cascade IDLE.
func (ts *turnSender) interrupt(ctx context.Context, convs []messages.ConversationFrom) ([]declinedPrompt, error) {
	ctx, cancel := context.WithTimeout(ctx, ts.cfg.InterruptDeadline)
	defer cancel()
	per := ts.cfg.InterruptDeadline / time.Duration(len(rpc.CancelMethods)+1)
	var errs []error
	var declined []declinedPrompt
	for _, method := range rpc.CancelMethods {
		d, derr := ts.declinePrompts(ctx, convs)
		declined = append(declined, d...)
		if derr != nil {
			errs = append(errs, derr)
			if errors.Is(derr, rpc.ErrPortGone) {
				break
			}
		}
		err := ts.client.Cancel(ctx, method, ts.conv)
		if err != nil && !errors.Is(err, rpc.ErrUnimplemented) {
			errs = append(errs, fmt.Errorf("%s: %w", method, err))
			if errors.Is(err, rpc.ErrPortGone) {
				break
			}
			continue
		}
		if err == nil {
			idle, d := ts.settle(ctx, per, method, convs)
			declined = append(declined, d...)
			if idle {
				return declined, nil
			}
		}
	}
	if ts.waitIdle(ctx, per) {
		return declined, nil
	}
	if len(errs) > 0 {
		return declined, fmt.Errorf("interrupt: cascade still running: %w", errors.Join(errs...))
	}
	return declined, errors.New("interrupt: cascade still running after every cancel method")
}

// declinePrompts declines every prompt agy waits on in convs, each read from
// its trajectory index to the trajectory's end, window by window (agy may
// cap one answer): a permission with allow false, a question with no
// responses. A prompt that stopped waiting meanwhile is skipped.
func (ts *turnSender) declinePrompts(ctx context.Context, convs []messages.ConversationFrom) ([]declinedPrompt, error) {
	var declined []declinedPrompt
	var errs []error
	for _, cf := range convs {
		for off, n := cf.From, 0; n < maxWindows; n++ {
			steps, err := ts.client.GetCascadeTrajectoryStepsFrom(ctx, cf.ConversationID, off, nil)
			if err != nil {
				if !errors.Is(err, rpc.ErrTrajectoryNotFound) {
					errs = append(errs, fmt.Errorf("reading %s for its prompts: %w", cf.ConversationID, err))
				}
				break
			}
			if len(steps) == 0 {
				break
			}
			at := mapper.Indexer(steps, off)
			for i := range steps {
				if at(i) < off {
					continue // an answer from before the offset asked: seen already
				}
				p, ok := mapper.PendingInteraction(&steps[i], at(i))
				if !ok {
					continue
				}
				switch done, err := ts.decline(ctx, cf.ConversationID, p, at(i)); {
				case err != nil:
					errs = append(errs, err)
				case done:
					declined = append(declined, declinedPrompt{conv: cf.ConversationID, prompt: *p})
				}
			}
			next := at(len(steps)-1) + 1
			if next <= off || at(0) < off {
				break // the answer did not start at the offset: it was the whole rest
			}
			off = next
		}
	}
	return declined, errors.Join(errs...)
}

// decline declines prompt p at trajectory index idx of conv; done is false
// when it had stopped waiting meanwhile (answered, or timed out), which is
// not an error.
func (ts *turnSender) decline(ctx context.Context, conv string, p *mapper.Prompt, idx int) (done bool, _ error) {
	if p.Kind == messages.KindOther {
		return false, nil // its answer is not known: agy's terminal answers it
	}
	in, err := mapper.BuildInteraction(p, messages.Resolve{Action: messages.ActionCancel}, p.TrajectoryID, idx)
	if err == nil {
		err = ts.client.HandleCascadeUserInteraction(ctx, conv, in)
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, rpc.ErrInputNotRegistered):
		return false, nil
	}
	return false, fmt.Errorf("declining the prompt at step %d of %s: %w", idx, conv, err)
}

// settle waits up to d for the cascade to go IDLE after method's cancel.
// agy's cancel spares a prompt it WAITs on, and one may open after the
// decline before it (the step turned WAITING meanwhile, or asked again):
// while the cascade runs, each look declines what WAITs and cancels with
// method again, rather than waiting d out for the next method.
func (ts *turnSender) settle(ctx context.Context, d time.Duration, method string, convs []messages.ConversationFrom) (idle bool, declined []declinedPrompt) {
	clock := ts.cfg.Clock
	deadline := clock.Now().Add(d)
	for wait := 10 * time.Millisecond; ; wait = min(wait*2, 200*time.Millisecond) {
		if ts.isIdle(ctx) {
			return true, declined
		}
		if dd, err := ts.declinePrompts(ctx, convs); err == nil && len(dd) > 0 {
			declined = append(declined, dd...)
			if err := ts.client.Cancel(ctx, method, ts.conv); err != nil || !clock.Now().Before(deadline) {
				return false, declined
			}
			continue // look again at once
		}
		if clock.Now().Add(wait).After(deadline) || !sleep(ctx, clock, wait) {
			return false, declined
		}
	}
}

// isIdle says whether agy reports the cascade IDLE (a failed read says no).
func (ts *turnSender) isIdle(ctx context.Context) bool {
	s, ok, err := ts.client.TrajectorySummaryOf(ctx, ts.conv)
	return err == nil && ok && (s.Status == wire.RunIdle || s.Status == "")
}

// waitIdle polls the cascade's run status until IDLE or d elapses.
func (ts *turnSender) waitIdle(ctx context.Context, d time.Duration) bool {
	clock := ts.cfg.Clock
	deadline := clock.Now().Add(d)
	for wait := 10 * time.Millisecond; ; wait = min(wait*2, 200*time.Millisecond) {
		if ts.isIdle(ctx) {
			return true
		}
		if clock.Now().Add(wait).After(deadline) || !sleep(ctx, clock, wait) {
			return false
		}
	}
}

func readCatalog(ctx context.Context, c *rpc.Client) (map[string]wire.ModelInfo, error) {
	res, err := c.GetAvailableModels(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]wire.ModelInfo, len(res.Response.Models))
	for key, m := range res.Response.Models {
		if m.Model == "" {
			m.Model = key
		}
		out[m.Model] = m
	}
	return out, nil
}

// recommended is the catalog's recommended model, else its first by name.
func recommended(catalog map[string]wire.ModelInfo) string {
	names := slices.Sorted(maps.Keys(catalog))
	for _, name := range names {
		if catalog[name].Recommended {
			return name
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	return ""
}
