package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
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
	// ErrBadAnswer: the answer does not fit the prompt (an unknown option
	// id, a missing answer, several options on a single-select question, a
	// write-in where none is allowed, the wrong kind); nothing was sent.
	ErrBadAnswer = mapper.ErrInvalidResolve
)

// Session is the embedding API of one attached agy session. Its methods are
// safe for concurrent use; each sends a message to the session actor and
// waits for the reply (never longer than its context allows).
type Session struct {
	core     *sessionCore
	host     *Host
	pid      *actor.PID
	events   *Subscription
	attached atomic.Int64 // UnixNano when Attach returned the session; 0 before
}

// ID is the session's id.
func (s *Session) ID() string { return s.core.spec.SessionID }

// ConversationID is the conversation the session is bound to now (it
// changes when agy rotates to a new conversation after /clear).
func (s *Session) ConversationID() string {
	s.core.mu.Lock()
	defer s.core.mu.Unlock()
	return s.core.conversationID
}

// Port is the language-server port the session is bound to now (0 while
// re-discovering).
func (s *Session) Port() int {
	s.core.mu.Lock()
	defer s.core.mu.Unlock()
	return s.core.port
}

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
	s.core.mu.Lock()
	defer s.core.mu.Unlock()
	return slices.Clone(s.core.openIDs)
}

// Events is the session's event stream from its start. The channel closes
// when the session ends. A consumer that falls behind gets deltas
// coalesced, never items dropped.
func (s *Session) Events() <-chan *messages.Event { return s.events.C() }

// Subscribe opens another event stream: the events after afterSeq still in
// the session's bounded log, then the open prompts again, then live events.
// Close it when done.
func (s *Session) Subscribe(ctx context.Context, afterSeq uint64) (*Subscription, error) {
	sub := newSubscription(s.core.cfg.CoalesceAfter, s.core.pumps)
	if _, err := s.request(ctx, &messages.Subscribe{AfterSeq: afterSeq, Sink: sub}); err != nil {
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
	return res.(*messages.TurnResult).Err
}

// Resolve answers an open elicitation. An error means the command was
// refused and nothing was sent; otherwise the outcome arrives as an
// elicitation_resolved event (or an error event).
func (s *Session) Resolve(ctx context.Context, r messages.Resolve) error {
	res, err := s.request(ctx, &messages.ResolveElicitation{Resolve: r})
	if err != nil {
		return err
	}
	return res.(*messages.ResolveAccepted).Err
}

// Interrupt stops the running cascade; it returns once agy reports IDLE.
func (s *Session) Interrupt(ctx context.Context) error {
	res, err := s.request(ctx, &messages.Interrupt{Deadline: deadline(ctx)})
	if err != nil {
		return err
	}
	return res.(*messages.TurnResult).Err
}

// Do runs a driver command (turn, resolve, interrupt, detach): the form the
// CLI and the host receive.
func (s *Session) Do(ctx context.Context, c messages.Command) error {
	switch c.Type {
	case messages.CommandTurn:
		return s.SendTurn(ctx, c.Text, c.Model)
	case messages.CommandResolve:
		return s.Resolve(ctx, messages.Resolve{ElicitationID: c.ElicitationID, Action: c.Action, Answers: c.Answers})
	case messages.CommandInterrupt:
		return s.Interrupt(ctx)
	case messages.CommandDetach:
		return s.Detach(ctx)
	}
	return fmt.Errorf("unknown command type %q (want turn, resolve, interrupt or detach)", c.Type)
}

// Detach stops the session: its children stop, its RPCs are cancelled, and
// its event channels close once drained. It returns when the session has
// stopped.
func (s *Session) Detach(ctx context.Context) error {
	select {
	case <-s.core.done:
		return nil
	default:
	}
	s.core.system.Root.Poison(s.pid)
	select {
	case <-s.core.done:
		s.host.forget(s.ID())
		return nil
	case <-ctx.Done():
		return fmt.Errorf("actors: detach: %w", ctx.Err())
	}
}

// Done is closed when the session has stopped.
func (s *Session) Done() <-chan struct{} { return s.core.done }

// Err says why the session stopped (nil after Detach or Shutdown).
func (s *Session) Err() error { return s.core.Err() }

// Stats are a session's counters.
type Stats struct {
	Events   uint64         // events published
	Restarts map[string]int // child restarts by actor kind
	Rebinds  int            // port re-discoveries after the first binding
	// RPCErrors counts failed RPCs on the bound port by rpc.ErrorClass.
	RPCErrors map[string]int
}

// Stats returns the session's counters.
func (s *Session) Stats() Stats {
	s.core.mu.Lock()
	defer s.core.mu.Unlock()
	r := make(map[string]int, len(s.core.restarts))
	for k, v := range s.core.restarts {
		r[k] = v
	}
	e := make(map[string]int, len(s.core.rpcErrors))
	for k, v := range s.core.rpcErrors {
		e[k] = v
	}
	return Stats{Events: s.core.published, Restarts: r, Rebinds: s.core.rebinds, RPCErrors: e}
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
	case <-s.core.done:
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
	res, err := s.core.system.Root.RequestFuture(s.pid, msg, timeout).Result()
	if err != nil {
		select {
		case <-s.core.done:
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

// sessionCore is the state of a session that outlives any one incarnation
// of its actor (a restart resumes where it was). Only the session actor
// touches the unexported state above mu; the fields under mu are read by
// the embedding API too.
type sessionCore struct {
	spec   Spec
	cfg    Config
	wg     *sync.WaitGroup
	pumps  *pumps
	system *actor.ActorSystem
	// mailbox runs the session actor's mailbox; stopped with the actor
	mailbox *ownGoroutine

	// owned by the session actor
	seq          uint64
	log          []logEntry        // the last cfg.EventLog events: a ring once full
	logStart     int               // index of the oldest event in log, once full
	openRequests []*messages.Event // elicitation_request events of prompts still open, as published
	resolvedIDs  map[string]bool   // elicitations that were open and have been resolved
	sinks        []messages.EventSink
	root         *mapper.Reconciler
	rootConv     string
	models       map[string]rpc.ModelInfo
	children     map[string]*mapper.Reconciler // subagent conversation -> its reconciler
	childrenDone map[string]bool               // subagents mirrored to the end
	orphans      map[string]bool               // children of a root left by a rotation
	gen          messages.Gen
	everBound    bool
	pin          []byte // the certificate first bound on Spec.Port

	mu             sync.Mutex
	pid            *actor.PID
	conversationID string
	port           int
	published      uint64
	restarts       map[string]int
	rpcErrors      map[string]int
	rebinds        int
	openIDs        []string // the ids of openRequests, replaced whole on a change
	lastErr        error
	err            error
	bound          chan struct{}
	boundOnce      sync.Once
	done           chan struct{}
	doneOnce       sync.Once
}

func newSessionCore(spec Spec, cfg Config, wg *sync.WaitGroup, p *pumps, system *actor.ActorSystem) *sessionCore {
	return &sessionCore{
		spec: spec, cfg: cfg, wg: wg, pumps: p, system: system,
		children:     make(map[string]*mapper.Reconciler),
		childrenDone: make(map[string]bool),
		orphans:      make(map[string]bool),
		resolvedIDs:  make(map[string]bool),
		restarts:     make(map[string]int),
		rpcErrors:    make(map[string]int),
		bound:        make(chan struct{}),
		done:         make(chan struct{}),
	}
}

// logEvent keeps ev among the last cfg.EventLog events. Once the log is
// full it is a ring: the newest event overwrites the oldest, in constant
// time (shifting 4,096 pointers per event cost every long session).
func (c *sessionCore) logEvent(ev *messages.Event) {
	e := c.entryOf(ev)
	if len(c.log) < c.cfg.EventLog {
		c.log = append(c.log, e)
		return
	}
	c.log[c.logStart] = e
	c.logStart = (c.logStart + 1) % len(c.log)
}

// logged returns the logged events, oldest first.
func (c *sessionCore) logged() []*messages.Event {
	out := make([]*messages.Event, 0, len(c.log))
	for _, part := range [][]logEntry{c.log[c.logStart:], c.log[:c.logStart]} {
		for i := range part {
			out = append(out, c.eventOf(&part[i]))
		}
	}
	return out
}

// logEntry is an event as the session's log keeps it. A text, reasoning or
// tool output delta, most of what a streaming session publishes, is kept in
// the fields a delta has: 152 bytes instead of a whole event's 584, so a log
// of streamed deltas takes about a third of the room (about 1 MB instead of
// 3 MB for a full log of 4,096). Any other event, and a delta with any
// other field set, is kept whole.
type logEntry struct {
	whole  *messages.Event // nil: a delta kept in the fields below
	typ    messages.EventType
	seq    uint64
	time   time.Time
	id     string
	conv   string
	parent string
	item   string
	delta  string
	call   string // a tool output delta's call_id
}

// entryOf is ev as the log keeps it.
func (c *sessionCore) entryOf(ev *messages.Event) logEntry {
	if !ev.Type.Delta() || ev.SessionID != c.spec.SessionID || !deltaOnly(ev) ||
		(ev.CallID != "" && ev.Type != messages.EventFunctionCallOutputDelta) {
		return logEntry{whole: ev}
	}
	return logEntry{typ: ev.Type, seq: ev.Seq, time: ev.Time, id: ev.ID, conv: ev.ConversationID,
		parent: ev.ParentConversationID, item: ev.ItemID, delta: ev.Delta, call: ev.CallID}
}

// eventOf is the event a log entry keeps (a delta's, made anew).
func (c *sessionCore) eventOf(e *logEntry) *messages.Event {
	if e.whole != nil {
		return e.whole
	}
	return &messages.Event{Type: e.typ, ID: e.id, SessionID: c.spec.SessionID, ConversationID: e.conv,
		ParentConversationID: e.parent, Seq: e.seq, Time: e.time, ItemID: e.item, Delta: e.delta, CallID: e.call}
}

// deltaOnly says whether every field of ev a logEntry does not keep is
// unset (CallID is kept, for tool output deltas). (TestLogKeepsEveryFieldOfAnEvent
// sets each field of Event in turn: a field added to Event must be added here.)
func deltaOnly(ev *messages.Event) bool {
	return ev.State == "" && ev.Text == "" && ev.Origin == "" && ev.Role == "" && ev.Snapshot == "" &&
		ev.Name == "" && ev.Arguments == "" && ev.Output == "" && ev.ExitCode == nil &&
		ev.Title == "" && ev.Locations == nil && ev.Diffs == nil && ev.Hits == nil && ev.HitCount == nil && ev.URL == "" &&
		ev.ElicitationID == "" && ev.Kind == "" && ev.Questions == nil && ev.Command == nil && ev.Resource == nil &&
		ev.Action == "" && ev.By == "" && ev.DeliveredStepIndex == nil &&
		ev.Model == "" && ev.InputTokens == nil && ev.OutputTokens == nil && ev.ThinkingTokens == nil &&
		ev.ResponseTokens == nil && ev.CacheReadTokens == nil && ev.ContextTokens == nil &&
		ev.TotalInputTokens == nil && ev.TotalOutputTokens == nil &&
		ev.From == "" && ev.To == "" && ev.DisplayName == "" && ev.StepType == "" && ev.StepIndex == nil &&
		ev.Message == "" && ev.Retryable == nil
}

// subscribeLocked adds a subscriber before the session actor runs.
func (c *sessionCore) subscribeLocked() *Subscription {
	sub := newSubscription(c.cfg.CoalesceAfter, c.pumps)
	c.sinks = append(c.sinks, sub)
	return sub
}

// countRPCError is the bound clients' rpc.Config.OnError: a metric, called
// from RPC goroutines.
func (c *sessionCore) countRPCError(_ string, err error) {
	c.mu.Lock()
	c.rpcErrors[rpc.ErrorClass(err)]++
	c.mu.Unlock()
}

func (c *sessionCore) setPID(pid *actor.PID) {
	c.mu.Lock()
	c.pid = pid
	c.mu.Unlock()
}

func (c *sessionCore) markBound(conv string, port int) {
	c.mu.Lock()
	c.conversationID, c.port = conv, port
	c.mu.Unlock()
	c.boundOnce.Do(func() { close(c.bound) })
}

func (c *sessionCore) setLastError(err error) {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
}

func (c *sessionCore) lastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// Err is why the session ended, if it did so on its own.
func (c *sessionCore) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// finish ends the session: subscribers drain and close, Done closes.
func (c *sessionCore) finish(err error) {
	c.doneOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		for _, s := range c.sinks {
			s.Finish()
		}
		c.sinks = nil
		close(c.done)
	})
}
