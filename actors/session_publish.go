package actors

import (
	"errors"
	"fmt"

	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
)

// publish stamps ev with the time (when it has none), and the event log
// with the session id and the next seq; the log keeps it and hands it to
// every subscriber. It never blocks.
func (s *session) publish(ev *messages.Event) {
	if ev.Time.IsZero() {
		ev.Time = s.now()
	}
	s.shared.events.publish(ev)
	if ev.Type == messages.EventElicitationRequest || ev.Type == messages.EventElicitationResolved {
		open := s.shared.events.openIDs()
		s.shared.publishView(func(v *sessionView) { v.openIDs = open })
	}
}

func (s *session) publishError(ctx actor.Context, msg string, retryable bool) {
	s.publish(s.errorEvent(msg, retryable))
}

// errorEvent is the session's own error event with msg, the next to be
// published.
func (s *session) errorEvent(msg string, retryable bool) *messages.Event {
	return &messages.Event{
		Type: messages.EventError, ID: fmt.Sprintf("%s/error/%d", s.shared.spec.SessionID, s.shared.events.seq+1),
		ConversationID: s.conv(), Message: msg, Retryable: messages.Ptr(retryable),
	}
}

// endWithError ends the session for good: an error event (not retryable)
// with msg, status error, and the session stops with msg as its Err.
func (s *session) endWithError(ctx actor.Context, msg string) {
	s.publishError(ctx, msg, false)
	s.publishStatus(messages.StateError)
	s.endErr = errors.New(msg)
	ctx.Stop(ctx.Self())
}

func (s *session) publishStatus(state string) {
	s.publish(&messages.Event{
		Type: messages.EventStatus, ID: fmt.Sprintf("%s/status/%d", s.shared.spec.SessionID, s.shared.events.seq+1),
		ConversationID: s.conv(), State: state,
	})
}
