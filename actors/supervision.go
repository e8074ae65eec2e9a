package actors

import (
	"errors"
	"fmt"

	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// failure is what a child panics with to report a failure to its supervisor
// (only panics are failures in Proto.Actor). Err says what went wrong; the
// supervisor's decider classifies it.
type failure struct {
	Actor string // the child's kind: "stream", "poller", "rotation", ...
	Err   error
}

func (f *failure) Error() string { return fmt.Sprintf("%s failed: %v", f.Actor, f.Err) }
func (f *failure) Unwrap() error { return f.Err }

// fail reports err to the actor's supervisor. It never returns.
func fail(kind string, err error) {
	panic(&failure{Actor: kind, Err: err})
}

// errBadConfig marks a failure no restart can fix (a spec that cannot work).
var errBadConfig = errors.New("bad configuration")

// verdict is what a supervisor does with a failed child.
type verdict int

const (
	// restartChild: restart the child after a capped exponential backoff,
	// within the restart budget. For transient trouble: a stream that
	// ended or broke, a 5xx, a timeout.
	restartChild verdict = iota
	// rediscover: stop the child and re-run discovery (the session's
	// escalation): the port is gone (connection refused or reset, a
	// different certificate on the port, a server that no longer hosts the
	// conversation).
	rediscover
	// stopChild: stop the child and fail the session with a clear error:
	// bad configuration, or a failure that is not ours to retry.
	stopChild
)

// sessionDecider is the session's supervision policy for its children.
//
//	failure                                    verdict       why
//	rpc.ErrPortGone (refused, reset, new cert) rediscover    agy moved or died: find it again
//	rpc.ErrTrajectoryNotFound                  rediscover    this port no longer hosts the conversation
//	errBadConfig                               stopChild     retrying cannot help; say so
//	anything else (stream end, 5xx, protocol,  restartChild  transient: restart with capped
//	  timeout, a panic in our own code)                      backoff; past the budget, rediscover
func sessionDecider(reason any) verdict {
	err, ok := reason.(error)
	if !ok {
		return restartChild
	}
	switch {
	case errors.Is(err, rpc.ErrPortGone), errors.Is(err, rpc.ErrTrajectoryNotFound):
		return rediscover
	case errors.Is(err, errBadConfig):
		return stopChild
	}
	return restartChild
}

// hostDecider is the host's supervision policy for sessions: a session that
// panics is restarted (its durable state lives outside the actor, so it
// resumes where it was) within the host's restart budget, then stopped; a
// failing session never touches another (one-for-one).
func hostDecider(reason any) actor.Directive {
	if err, ok := reason.(error); ok && errors.Is(err, errBadConfig) {
		return actor.StopDirective
	}
	return actor.RestartDirective
}
