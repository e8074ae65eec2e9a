package actors

import (
	"fmt"
	"maps"

	"github.com/asynkron/protoactor-go/actor"
)

// childKinds is the kind ("discovery", "stream", "poller", ...) of each
// child the session spawned and has not stopped, by PID id: what its
// supervision decides by. One incarnation's.
type childKinds map[string]string

// spawn starts a child of the kind its supervision knows it by.
func (s *session) spawn(ctx actor.Context, kind string, produce func() actor.Actor) *actor.PID {
	pid := ctx.Spawn(actor.PropsFromProducer(produce))
	s.kids[pid.Id] = kind
	return pid
}

func (s *session) stopChild(ctx actor.Context, pid *actor.PID) {
	if pid == nil {
		return
	}
	delete(s.kids, pid.Id)
	ctx.Stop(pid)
}

// HandleFailure is the session's supervision strategy for its children; see
// sessionDecider for the policy. It runs on the session's own goroutine.
func (s *session) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, _ any) {
	ctx := sup.(actor.Context)
	kind, ours := s.kids[child.Id]
	if !ours || s.ending != nil {
		// A child already stopped (replaced after a re-discovery) failed on
		// its way out: nothing to restart. Nor while the session is ending
		// (whileEnding): a replacement or a re-discovery spawned now would
		// never be stopped, and the session would never end.
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
		s.shared.publishView(func(v *sessionView) {
			v.restarts = maps.Clone(v.restarts)
			if v.restarts == nil {
				v.restarts = make(map[string]int)
			}
			v.restarts[kind]++
		})
		s.t.after(backoff(n, s.cfg.RestartBackoffMin, s.cfg.RestartBackoffMax), s.self, &restartNow{pid: child, gen: s.link.gen})
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
