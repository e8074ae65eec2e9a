package actors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agyharness/agyharness/agyversion"
	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
)

// Errors of the embedding API, for errors.Is.
var (
	// ErrSessionEnded: the session has stopped.
	ErrSessionEnded = errors.New("actors: session ended")
	// ErrNotBound: the session is (re)discovering agy's port; try again.
	ErrNotBound = errors.New("not connected to agy (discovering its language server); try again")
	// ErrUnknownElicitation: no open elicitation has that id (never
	// opened, or already resolved or withdrawn).
	ErrUnknownElicitation = errors.New("no open elicitation")
	// ErrElicitationResolved: the elicitation was open once and has been
	// resolved (by anyone) or withdrawn. Errors that wrap it wrap
	// ErrUnknownElicitation too.
	ErrElicitationResolved = errors.New("already resolved")
	// ErrAnswerOnItsWay: an answer to the elicitation is already on its
	// way to agy (an earlier Resolve's, or an interrupt's decline); a second
	// one is not sent. Errors that wrap it wrap ErrElicitationResolved and
	// ErrUnknownElicitation too.
	ErrAnswerOnItsWay = fmt.Errorf("an answer to it is already on its way to agy (%w)", ErrElicitationResolved)
	// ErrBadAnswer: the answer does not fit the prompt (an unknown option
	// id, a missing answer, several options on a single-select question, a
	// write-in where none is allowed, the wrong kind); nothing was sent.
	ErrBadAnswer = mapper.ErrInvalidResolve
)

// Session is the embedding API of one attached agy session. Its methods are
// safe for concurrent use. The requests (SendTurn, Resolve, Interrupt, Do,
// Subscribe) send a message to the session actor and wait for its reply
// (never longer than their context allows); ConversationID, Port,
// OpenElicitations, Stats and Err read what the session actor last
// published.
type Session struct {
	shared   *sessionShared
	host     *Host
	pid      *actor.PID
	events   *Subscription
	attached atomic.Int64 // UnixNano when Attach returned the session; 0 before
}

// ID is the session's id.
func (s *Session) ID() string { return s.shared.spec.SessionID }

// ConversationID is the conversation the session is bound to now (it
// changes when agy rotates to a new conversation after /clear).
func (s *Session) ConversationID() string { return s.shared.view.Load().conversationID }

// Port is the language-server port the session is bound to now (0 while
// re-discovering).
func (s *Session) Port() int { return s.shared.view.Load().port }

// Attached is when Attach returned the session; zero while it is still
// attaching (Host.Sessions lists it from the start).
func (s *Session) Attached() time.Time {
	if n := s.attached.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// OpenElicitations lists the ids of the prompts open now, in the order
// they opened.
func (s *Session) OpenElicitations() []string {
	return slices.Clone(s.shared.view.Load().openIDs)
}

// Models is agy's model catalog (what a turn may name as its model),
// ordered by model enum; nil until the session has read it.
func (s *Session) Models() []wire.ModelInfo {
	return slices.Clone(s.shared.view.Load().modelList)
}

// Events is the session's event stream from its start. The channel closes
// when the session ends. A consumer that falls behind gets deltas
// coalesced, never items dropped.
func (s *Session) Events() <-chan *messages.Event { return s.events.C() }

// Subscribe opens another event stream: the events after afterSeq still in
// the session's bounded log, then the open prompts again, then live events.
// Close it when done.
func (s *Session) Subscribe(ctx context.Context, afterSeq uint64) (*Subscription, error) {
	sub := newSubscription(s.shared.cfg.CoalesceAfter, s.shared.pumps)
	if _, err := s.request(ctx, &subscribe{afterSeq: afterSeq, sub: sub}); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// SendTurn sends a user turn to agy. model "" picks the model of agy's last
// turn, else agy's recommended model. While the session re-discovers agy
// (agy moved to another port) the turn waits for it, until ctx ends; it is
// never sent after SendTurn has returned an error.
func (s *Session) SendTurn(ctx context.Context, text, model string) error {
	if text == "" {
		return fmt.Errorf("actors: turn: text is empty")
	}
	res, err := s.request(ctx, &messages.SendTurn{Text: text, Model: model, Deadline: deadline(ctx)})
	if err != nil {
		return err
	}
	return named(res.(*messages.TurnResult).Err)
}

// Resolve answers an open elicitation. An error means the command was
// refused and nothing was sent; otherwise the outcome arrives as an
// elicitation_resolved event (or an error event).
func (s *Session) Resolve(ctx context.Context, r messages.Resolve) error {
	res, err := s.request(ctx, &messages.ResolveElicitation{Resolve: r})
	if err != nil {
		return err
	}
	return named(res.(*messages.ResolveAccepted).Err)
}

// Interrupt stops the running cascade; it returns once agy reports IDLE.
func (s *Session) Interrupt(ctx context.Context) error {
	res, err := s.request(ctx, &messages.Interrupt{Deadline: deadline(ctx)})
	if err != nil {
		return err
	}
	return named(res.(*messages.TurnResult).Err)
}

// named gives an error of the session actor's the package's name, as it
// leaves the package (the actor's own errors do not carry it).
func named(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("actors: %w", err)
}

// Do runs a driver command (turn, resolve, interrupt, detach): the form the
// CLI and the host receive.
func (s *Session) Do(ctx context.Context, c messages.Command) error {
	switch c.Type {
	case messages.CommandTurn:
		return s.SendTurn(ctx, c.Text, c.Model)
	case messages.CommandResolve:
		return s.Resolve(ctx, messages.Resolve{ElicitationID: c.ElicitationID, Action: c.Action, Answers: c.Answers, Content: c.Content, Choice: c.Choice})
	case messages.CommandInterrupt:
		return s.Interrupt(ctx)
	case messages.CommandDetach:
		return s.Detach(ctx)
	}
	return fmt.Errorf("actors: unknown command type %q (want turn, resolve, interrupt or detach)", c.Type)
}

// Detach stops the session: its children stop, its RPCs are cancelled, and
// its event channels close once drained. It returns when the session has
// stopped.
func (s *Session) Detach(ctx context.Context) error {
	select {
	case <-s.shared.done:
		return nil
	default:
	}
	s.shared.system.Root.Poison(s.pid)
	select {
	case <-s.shared.done:
		s.host.forget(s.ID())
		return nil
	case <-ctx.Done():
		return fmt.Errorf("actors: detach: %w", ctx.Err())
	}
}

// Done is closed when the session has stopped.
func (s *Session) Done() <-chan struct{} { return s.shared.done }

// Err says why the session stopped (nil after Detach or Shutdown).
func (s *Session) Err() error { return named(s.shared.view.Load().err) }

// Stats are a session's counters.
type Stats struct {
	Events   uint64         // events published
	Restarts map[string]int // child restarts by actor kind
	Rebinds  int            // port re-discoveries after the first binding
	// RPCErrors counts failed RPCs on the bound port by rpc.ErrorClass.
	RPCErrors map[string]int
	// AgyVersion is Spec.AgyVersion: agy's version, "" unknown.
	AgyVersion string
	// AgyVersionNewer: AgyVersion is newer than the newest version whose
	// behaviour the harness models (agyversion.Modeled).
	AgyVersionNewer bool
}

// Stats returns the session's counters.
func (s *Session) Stats() Stats {
	v := s.shared.view.Load()
	r := make(map[string]int, len(v.restarts))
	maps.Copy(r, v.restarts)
	return Stats{Events: s.shared.events.published.Load(), Restarts: r, Rebinds: v.rebinds, RPCErrors: s.shared.rpcErrors.counts(),
		AgyVersion: s.shared.spec.AgyVersion, AgyVersionNewer: agyversion.Newer(s.shared.spec.AgyVersion)}
}

// ModelDisplayName is model's display name in agy's model catalog
// (GetAvailableModels, read once the session is bound to a conversation),
// or "" while the catalog is not read or does not name it.
func (s *Session) ModelDisplayName(model string) string {
	return s.shared.view.Load().models[model].DisplayName
}

// requestTimeout bounds a request whose context has no deadline.
const requestTimeout = time.Minute

// deadline is when a request made under ctx gives up.
func deadline(ctx context.Context) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(requestTimeout)
}

func (s *Session) request(ctx context.Context, msg any) (any, error) {
	select {
	case <-s.shared.done:
		return nil, ErrSessionEnded
	default:
	}
	timeout := requestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	res, err := s.shared.system.Root.RequestFuture(s.pid, msg, timeout).Result()
	if err != nil {
		select {
		case <-s.shared.done:
			return nil, ErrSessionEnded
		default:
		}
		if errors.Is(err, actor.ErrTimeout) {
			err = context.DeadlineExceeded
		}
		return nil, fmt.Errorf("actors: %T: %w", msg, err)
	}
	return res, nil
}

// sessionShared is what a session's actor and its embedding API share:
// the spec and config, set when the session is made and never written
// after; and what the API reads, each with one writer, the session actor:
// the event log (its subscribers and its count, events.published), the
// view it publishes, the signals it closes, and the failed RPCs its
// clients count.
type sessionShared struct {
	spec   Spec
	cfg    Config
	wg     *sync.WaitGroup
	pumps  *pumps
	system *actor.ActorSystem
	// mailbox runs the session actor's mailbox; stopped with the actor
	mailbox *ownGoroutine

	events    eventLog
	view      atomic.Pointer[sessionView]
	bound     chan struct{} // closed when the session first binds agy's port
	done      chan struct{} // closed when the session has stopped
	finished  bool
	rpcErrors rpcErrorCounts
}

// sessionView is what the embedding API reads of a session: a snapshot the
// session actor publishes (sessionShared.view) whenever one of its fields
// changes. Nothing in a published view is written again, its map included.
type sessionView struct {
	conversationID string
	port           int            // 0 while re-discovering
	restarts       map[string]int // child restarts by actor kind
	rebinds        int
	openIDs        []string // the ids of the open prompts' requests, in the order they opened
	lastErr        error    // the last error of discovery, or of the lost port
	err            error    // why the session ended (set when it stops)

	// models is agy's model catalog by model enum (nil: not read yet);
	// modelList is the same, sorted by enum.
	models    map[string]wire.ModelInfo
	modelList []wire.ModelInfo
}

func newSessionShared(spec Spec, cfg Config, wg *sync.WaitGroup, p *pumps, system *actor.ActorSystem) *sessionShared {
	c := &sessionShared{
		spec: spec, cfg: cfg, wg: wg, pumps: p, system: system,
		events: newEventLog(spec.SessionID, cfg.EventLog, cfg.EventLogBytes),
		bound:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	c.view.Store(&sessionView{})
	return c
}

// firstSubscription subscribes to the session's events from its start. It
// is called once, before the session actor starts.
func (c *sessionShared) firstSubscription() *Subscription {
	sub := newSubscription(c.cfg.CoalesceAfter, c.pumps)
	c.events.subscribe(sub, 0)
	return sub
}

// publishView publishes a new view: the current one changed by change.
// Only the session actor calls it.
func (c *sessionShared) publishView(change func(v *sessionView)) {
	v := *c.view.Load()
	change(&v)
	c.view.Store(&v)
}

// finish ends the session: subscribers drain and close, Done closes. Only
// the session actor calls it.
func (c *sessionShared) finish(err error) {
	if c.finished {
		return
	}
	c.finished = true
	c.publishView(func(v *sessionView) { v.err = err })
	c.events.close()
	close(c.done)
}

// countRPCError is the bound clients' rpc.Config.OnError.
func (c *sessionShared) countRPCError(_ string, err error) { c.rpcErrors.add(rpc.ErrorClass(err)) }

// rpcErrorCounts counts failed RPCs by rpc.ErrorClass: a metric the
// session's clients count from their RPC goroutines, and Stats reads.
type rpcErrorCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *rpcErrorCounts) add(class string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = make(map[string]int)
	}
	e.n[class]++
}

// counts returns a copy of the counts.
func (e *rpcErrorCounts) counts() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.n))
	maps.Copy(out, e.n)
	return out
}
