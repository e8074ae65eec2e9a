// Package actors is the supervision tree that drives agy sessions, and the
// embedding API (Host, Session).
//
//	Host (root supervisor; one-for-one: a crashing session never touches another)
//	└── session <id>          single writer of the session's events; owns the reconcilers
//	    ├── discovery         finds and verifies agy's port (PortFound / DiscoveryStalled)
//	    ├── streamReader      StreamAgentStateUpdates -> frameReceived (and whether frames flow); fails when the stream ends
//	    ├── poller            GetCascadeTrajectorySteps: fast while the stream is down, slow always, every PollActive while a turn's frames stop
//	    ├── rotationWatcher   GetAllCascadeTrajectories -> ConversationRotated (/clear)
//	    ├── turnSender        serialised turns (model resolved at run time) and interrupts
//	    ├── interaction <id>  one per open prompt: answer -> freshest WAITING step
//	    └── subagent <conv>   one per child conversation, mirrored into the session
//
// Actors talk only by messages, never changed after they are sent: the
// tree's protocol in package messages (plain values), and a few of this
// package's own, unexported: those an actor sends itself (its timers), and
// those that carry a live object and so can never cross a node (a frame
// whose bytes its stream lends, the session's client, a subscription). Each
// of those is declared in the file of the actor that sends it (the
// session's own at the top of session.go). Nothing blocks inside
// Receive: RPCs run in goroutines each actor owns (tasks), under a context
// it cancels when it stops, and their results come back as messages tagged
// with the session's generation, so a late message from an old child is
// ignored. Each child embeds child, which starts and stops its tasks with
// its incarnation. Each parent's supervision policy is a named decider
// (sessionDecider, hostDecider) with its table in supervision.go.
//
// Each piece of state has one writer. The session actor alone writes its
// state, in parts it owns, each in its own file (session.go says which); the
// embedding API reads what it shares (sessionShared): a view it publishes,
// its event log, the signals it closes. Timers,
// periodic reads, backoffs and the spans the actors measure run on
// Config.Clock, which tests move forward.
//
// Embedding:
//
//	host := actors.NewHost(actors.Config{})
//	defer host.Shutdown(context.Background())
//	s, err := host.Attach(ctx, actors.Spec{PID: agyPID})
//	for ev := range s.Events() { ... }
package actors
