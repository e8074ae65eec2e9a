package actors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// ErrHostClosed is returned by Attach after Shutdown.
var ErrHostClosed = errors.New("actors: host is shut down")

// ErrSessionExists is returned by Attach when Spec.SessionID names a live
// session (or one still attaching).
var ErrSessionExists = errors.New("session exists")

// Spec says which agy a session drives.
type Spec struct {
	// PID of agy, or of the terminal pane that runs it: its loopback
	// listeners and its descendants' are probed. One of PID and Port is
	// required.
	PID int
	// Port is agy's HTTPS language-server port; it skips the PID scan.
	Port int
	// LogFile is a file agy logs to: its last "Language server listening
	// on random port at <N> for HTTPS" line names the port to try first,
	// before the PID scan (agy logs the line again when it moves).
	LogFile string
	// Host is the loopback host to dial (default 127.0.0.1).
	Host string
	// ConversationID binds that conversation; without it the most recently
	// active root conversation is bound. When agy has none (a fresh agy has
	// none until its first turn is typed), the session binds agy's port,
	// reports status no_conversation, and binds agy's first conversation
	// when it appears.
	ConversationID string
	// NewConversation binds only a conversation agy mints after the session
	// attached, never one of an earlier run that agy lists (agy lists every
	// conversation it keeps on disk): for an agy the harness started, whose
	// first turn it types. Needs no ConversationID.
	NewConversation bool
	// WaitConversation bounds how long a session without a conversation
	// waits for agy's first; past it the session ends with an error event.
	// 0 waits as long as the session lives.
	WaitConversation time.Duration
	// Terminal is agy's own terminal when the harness owns it: a fresh
	// agy's first turn is typed there (and every turn with TurnsTUI), and a
	// prompt answered over RPC is closed there with agy's keys. Nil: turns
	// go over RPC only, and a session without a conversation refuses them
	// (ErrNoConversation).
	Terminal Terminal
	// Turns is how turns reach agy (default TurnsRPC; TurnsTUI needs a
	// Terminal).
	Turns TurnMode
	// CloseKeys, when not nil, replaces the keys pressed in Terminal after a
	// prompt was answered over RPC (mapper.CloseKeys: agy's own); an empty,
	// non-nil slice presses none.
	CloseKeys []string
	// CSRFToken goes on every call when agy requires one. Never logged.
	CSRFToken string
	// SessionID names the session (default: a random id).
	SessionID string
	// ReadMode is how the trajectory is read (default ReadBoth).
	ReadMode ReadMode
	// Recorder, when set, receives every frame and snapshot read (for
	// --record and replay).
	Recorder Recorder
	// AgyVersion is agy's version as `agy --version` printed it ("1.2.7"),
	// when the embedder read it (launch and acp do); "" unknown. Stats
	// reports it, and whether it is newer than agyversion.Modeled.
	AgyVersion string
}

// Host is the root supervisor of sessions, and the embedding API: attach
// sessions to running agy processes, list them, shut everything down. A
// session that fails never disturbs another.
type Host struct {
	cfg    Config
	system *actor.ActorSystem
	pid    *actor.PID
	wg     sync.WaitGroup // every goroutine the host's actors start
	pumps  pumps          // the subscriptions' goroutines

	mu       sync.Mutex
	sessions map[string]*Session
	closed   bool
}

// NewHost starts a host. Call Shutdown to stop it.
func NewHost(cfg Config) *Host {
	cfg = cfg.withDefaults()
	logger := cfg.Logger
	system := actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }),
		actor.WithDeadLetterThrottleInterval(50*time.Millisecond),
	)
	h := &Host{cfg: cfg, system: system, sessions: make(map[string]*Session), pumps: pumps{abandon: make(chan struct{})}}
	props := actor.PropsFromProducer(func() actor.Actor { return &hostActor{} },
		actor.WithSupervisor(actor.NewOneForOneStrategy(5, time.Minute, hostDecider)))
	h.pid = system.Root.Spawn(props)
	return h
}

// Attach starts a session on the agy that spec names and returns once the
// session has bound a port that hosts its conversation, or with an error
// when ctx ends first (the session is then stopped). The session keeps
// running, re-discovering agy as it moves, until Detach or Shutdown.
func (h *Host) Attach(ctx context.Context, spec Spec) (*Session, error) {
	if spec.PID <= 0 && spec.Port <= 0 && spec.LogFile == "" {
		return nil, fmt.Errorf("actors: attach: a PID, a port or agy's log file is required")
	}
	if spec.Host != "" && !rpc.IsLoopbackHost(spec.Host) {
		return nil, fmt.Errorf("actors: attach: host %q is not loopback", spec.Host)
	}
	if spec.ReadMode == "" {
		spec.ReadMode = ReadBoth
	}
	if _, err := ParseReadMode(string(spec.ReadMode)); err != nil {
		return nil, fmt.Errorf("actors: attach: unknown read mode %q: want both, stream or poll", spec.ReadMode)
	}
	switch spec.Turns {
	case "":
		spec.Turns = TurnsRPC
	case TurnsRPC:
	case TurnsTUI:
		if spec.Terminal == nil {
			return nil, errors.New("actors: attach: turns typed into agy's terminal need a Terminal")
		}
	default:
		return nil, fmt.Errorf("actors: attach: unknown turn mode %q (want rpc or tui)", spec.Turns)
	}
	if spec.NewConversation && spec.ConversationID != "" {
		return nil, errors.New("actors: attach: NewConversation binds a conversation agy has yet to mint: give no ConversationID")
	}
	if spec.WaitConversation < 0 {
		return nil, fmt.Errorf("actors: attach: negative WaitConversation %s", spec.WaitConversation)
	}
	if spec.SessionID == "" {
		spec.SessionID = newID()
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrHostClosed
	}
	if _, dup := h.sessions[spec.SessionID]; dup {
		h.mu.Unlock()
		return nil, fmt.Errorf("actors: attach: session %q: %w", spec.SessionID, ErrSessionExists)
	}
	core := newSessionShared(spec, h.cfg, &h.wg, &h.pumps, h.system)
	s := &Session{shared: core, host: h}
	s.events = core.firstSubscription()
	h.sessions[spec.SessionID] = s
	h.mu.Unlock()

	core.mailbox = newOwnGoroutine(&h.wg)
	sa := newSession(core)
	props := actor.PropsFromProducer(sa.incarnate, actor.WithDispatcher(core.mailbox))
	res, err := h.system.Root.RequestFuture(h.pid, &spawnSession{props: props, name: "session-" + spec.SessionID}, 5*time.Second).Result()
	if err != nil {
		core.mailbox.stop()
		h.forget(spec.SessionID)
		return nil, fmt.Errorf("actors: attach: %w", err)
	}
	s.pid = res.(*actor.PID)

	select {
	case <-core.bound:
		s.attached.Store(time.Now().UnixNano())
		return s, nil
	case <-core.done:
		s.events.Close() // nobody will read the events of a session never returned
		h.forget(spec.SessionID)
		return nil, fmt.Errorf("actors: attach: %w", core.view.Load().err)
	case <-ctx.Done():
		last := core.view.Load().lastErr
		_ = s.Detach(context.Background())
		s.events.Close()
		h.forget(spec.SessionID)
		if last != nil {
			return nil, fmt.Errorf("actors: attach: %w (last discovery error: %v)", ctx.Err(), last)
		}
		return nil, fmt.Errorf("actors: attach: %w", ctx.Err())
	}
}

// Sessions lists the live sessions, ordered by id.
func (h *Host) Sessions() []*Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Session, 0, len(h.sessions))
	for id, s := range h.sessions {
		select {
		case <-s.shared.done:
			delete(h.sessions, id)
			continue
		default:
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Session) int { return strings.Compare(a.ID(), b.ID()) })
	return out
}

// Session returns the live session with that id.
func (h *Host) Session(id string) (*Session, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sessions[id]
	if !ok {
		return nil, false
	}
	select {
	case <-s.shared.done:
		delete(h.sessions, id)
		return nil, false
	default:
	}
	return s, true
}

func (h *Host) forget(id string) {
	h.mu.Lock()
	delete(h.sessions, id)
	h.mu.Unlock()
}

// Shutdown stops every session (each stops its children and cancels its
// RPCs), waits for every goroutine the host's actors started, then for every
// subscriber to receive its queued events (its channel then closes), then
// stops the actor system. When ctx ends first, the events still queued are
// dropped, every channel is closed, and ctx's error is returned; nothing is
// left running either way.
func (h *Host) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()

	stopped := make(chan struct{})
	go func() {
		_ = h.system.Root.PoisonFuture(h.pid).Wait()
		h.wg.Wait()
		h.pumps.wg.Wait()
		close(stopped)
	}()
	var err error
	select {
	case <-stopped:
	case <-ctx.Done():
		// Consumers that do not read lose what is queued for them.
		close(h.pumps.abandon)
		<-stopped
		err = fmt.Errorf("actors: shutdown: %w (undelivered events dropped)", ctx.Err())
	}
	h.system.Shutdown()
	return err
}

// spawnSession asks the host actor to spawn a session as its child.
// Reply: the session's *actor.PID.
type spawnSession struct {
	props *actor.Props
	name  string
}

// hostActor is the root supervisor. Its one job: own the sessions as
// children under the one-for-one policy of hostDecider.
type hostActor struct{}

// Receive spawns sessions on request.
func (a *hostActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*spawnSession); ok {
		pid, err := ctx.SpawnNamed(m.props, m.name)
		if err != nil {
			pid = ctx.Spawn(m.props)
		}
		ctx.Respond(pid)
	}
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
