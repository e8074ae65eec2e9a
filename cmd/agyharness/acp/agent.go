package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/agystart"
	"github.com/agyharness/agyharness/messages"
	sdk "github.com/coder/acp-go-sdk"
)

// Options configure an Agent. Zero fields take the defaults written beside
// them.
type Options struct {
	// Host runs the harness sessions (required). The caller shuts it down
	// after Serve returns.
	Host *actors.Host
	// AttachPort, when set, attaches every session to agy's language server
	// on that port instead of launching agy.
	AttachPort int
	// AttachPID, when set (and AttachPort is not), attaches every session to
	// the agy with that PID (or the terminal pane running it).
	AttachPID int
	// CSRFToken goes on every RPC to agy when it requires one.
	CSRFToken string
	// Launcher starts agy for session/new and session/load when neither
	// AttachPort nor AttachPID is set. Default: Tmux{} (agy in a tmux
	// session). A new session's first prompt is typed into the agy it
	// launched (a fresh agy has no conversation before it), and binds the
	// conversation agy mints for it; session/load launches agy on the
	// session's conversation (agy --conversation ID).
	Launcher Launcher
	// Turns is how prompts after a session's first reach an agy the
	// adapter launched: actors.TurnsRPC (default) or actors.TurnsTUI (typed
	// into agy's terminal; not with AttachPort or AttachPID).
	Turns actors.TurnMode
	// SessionDir keeps, one file per session, the conversation of each
	// session whose id is not its conversation's (a session opened on a
	// fresh agy), so that session/load finds it after the adapter started
	// again. "": kept in memory only.
	SessionDir string
	// Logger receives the adapter's logs (never stdout). Default: discard.
	Logger *slog.Logger

	// AttachTimeout bounds finding agy's language server for a new or
	// loaded session. Default 60s.
	AttachTimeout time.Duration
	// HistoryTimeout bounds reading a session's history (replayed on
	// session/load, skipped on session/new): the history ends when agy is
	// idle or asks something; a conversation still running when the session
	// opens goes live after this long. Default 10s.
	HistoryTimeout time.Duration
	// CancelDeadline bounds a cancelled prompt: it returns cancelled once agy
	// is idle, or after this long. Default 10s.
	CancelDeadline time.Duration
	// RequestTimeout bounds one harness command (sending a turn, answering
	// a prompt, reading the model catalog). Default 30s.
	RequestTimeout time.Duration
	// ContextWindow is the size reported in usage_update (agy's RPC does not
	// report a model's context window). Default 1,048,576 tokens.
	ContextWindow int
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.AttachTimeout, 60*time.Second)
	def(&o.HistoryTimeout, 10*time.Second)
	def(&o.CancelDeadline, 10*time.Second)
	def(&o.RequestTimeout, 30*time.Second)
	if o.ContextWindow <= 0 {
		o.ContextWindow = 1 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Launcher == nil {
		o.Launcher = Tmux{}
	}
	if o.Turns == "" {
		o.Turns = actors.TurnsRPC
	}
	return o
}

// Agent is agy as an ACP agent: it implements the SDK's Agent interface
// (and session/load, session/set_model). Create it with NewAgent and run it
// with Serve.
type Agent struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // lives until Serve returns: updates are sent with it
	cancel context.CancelFunc

	mu         sync.Mutex
	conn       *sdk.AgentSideConnection
	clientCaps sdk.ClientCapabilities
	sessions   map[string]*session
	closed     bool

	store *sessionStore // the conversations of sessions opened on a fresh agy
}

var (
	_ sdk.Agent       = (*Agent)(nil)
	_ sdk.AgentLoader = (*Agent)(nil)
)

// NewAgent checks opts and returns an agent ready to Serve.
func NewAgent(opts Options) (*Agent, error) {
	if opts.Host == nil {
		return nil, errors.New("acp: Options.Host is required")
	}
	if opts.AttachPort < 0 || opts.AttachPort > 65535 {
		return nil, fmt.Errorf("acp: attach port %d is out of range", opts.AttachPort)
	}
	if opts.AttachPID < 0 {
		return nil, fmt.Errorf("acp: attach pid %d is invalid", opts.AttachPID)
	}
	switch opts.Turns {
	case "", actors.TurnsRPC:
	case actors.TurnsTUI:
		if opts.AttachPort != 0 || opts.AttachPID != 0 {
			return nil, errors.New("acp: turns typed into agy's terminal need an agy the adapter launches (not --attach-port or --attach-pid)")
		}
	default:
		return nil, fmt.Errorf("acp: unknown turn mode %q (want rpc or tui)", opts.Turns)
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Agent{opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel, sessions: make(map[string]*session), store: newSessionStore(opts.SessionDir)}, nil
}

// Serve speaks ACP on in/out until the client disconnects (in reaches EOF)
// or ctx ends, then closes every session (detaching from agy and stopping
// the agy processes it launched). It returns nil when the client
// disconnected, else ctx's error. When ctx ends first, the SDK's reader
// keeps waiting on in until the caller closes it (a process simply exits).
// An Agent serves once.
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	a.mu.Lock()
	if a.conn != nil || a.closed {
		a.mu.Unlock()
		return errors.New("acp: an Agent serves once")
	}
	// Handlers take a.mu to read conn, so none runs before it is set. The
	// SDK starts reading at once and reads its logger unsynchronized, so
	// its reader waits at the gate until the logger is set.
	// The SDK ends the connection on a line over its scanner's size: the
	// limiter answers such a line itself, between the SDK's writes.
	lw := &lockedWriter{w: out}
	gate := &gatedReader{r: limitLines(in, lw, a.log), open: make(chan struct{})}
	a.conn = sdk.NewAgentSideConnection(a, lw, gate)
	a.conn.SetLogger(a.log)
	close(gate.open)
	done := a.conn.Done()
	a.mu.Unlock()

	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	a.close()
	return err
}

// close ends every session and stops new ones.
func (a *Agent) close() {
	a.mu.Lock()
	a.closed = true
	sessions := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		sessions = append(sessions, s)
	}
	a.sessions = map[string]*session{}
	a.mu.Unlock()
	a.cancel()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
}

func (a *Agent) connection() *sdk.AgentSideConnection {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

func (a *Agent) session(id sdk.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[string(id)]
	if !ok {
		return nil, sdk.NewInvalidParams(map[string]any{"sessionId": string(id), "error": "unknown session (open it with session/new or session/load)"})
	}
	return s, nil
}

// Initialize implements sdk.Agent.
func (a *Agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.mu.Lock()
	a.clientCaps = p.ClientCapabilities
	a.mu.Unlock()
	title := "agy (Google Antigravity) through agyharness"
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  sdk.PromptCapabilities{EmbeddedContext: true},
			SessionCapabilities: sdk.SessionCapabilities{Close: &sdk.SessionCloseCapabilities{}},
		},
		AgentInfo:   &sdk.Implementation{Name: "agyharness", Title: &title, Version: "0.1.0"},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate implements sdk.Agent: agy signs in through its own CLI, so
// there is nothing to authenticate here.
func (a *Agent) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// NewSession implements sdk.Agent: launch or attach to agy. An attached
// agy's current conversation is bound, and is the session's id; a launched
// agy (or an attached one without a conversation) has none until the
// session's first prompt, and the session gets an id of its own.
func (a *Agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	s, err := a.open(ctx, p.Cwd, "", false)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	opts, models := s.modelState()
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.id), ConfigOptions: opts, Models: models}, nil
}

// LoadSession implements sdk.AgentLoader: bind the session's conversation
// (the one an earlier session of that id followed, or the conversation
// with that id) and replay its history before answering.
func (a *Agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if p.SessionId == "" {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "sessionId is required"})
	}
	s, err := a.open(ctx, p.Cwd, string(p.SessionId), true)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	opts, models := s.modelState()
	return sdk.LoadSessionResponse{ConfigOptions: opts, Models: models}, nil
}

// checkCwd refuses a session's cwd that is not an absolute path (ACP
// requires one) to an existing directory: agy would run elsewhere.
func checkCwd(cwd string) error {
	shown := cwd
	if r := []rune(shown); len(r) > 200 {
		shown = string(r[:200]) + "…"
	}
	why := ""
	switch {
	case cwd == "":
		why = "cwd is required (an absolute path)"
	case !filepath.IsAbs(cwd):
		why = fmt.Sprintf("cwd %q is not an absolute path (ACP requires one)", shown)
	default:
		fi, err := os.Stat(cwd)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			why = fmt.Sprintf("cwd %q does not exist", shown)
		case err != nil:
			why = fmt.Sprintf("cwd %q cannot be used: %v", shown, errors.Unwrap(err))
		case !fi.IsDir():
			why = fmt.Sprintf("cwd %q is not a directory", shown)
		default:
			return nil
		}
	}
	e := sdk.NewInvalidParams(map[string]any{"cwd": shown, "error": why})
	e.Message = "Invalid params: " + why
	return e
}

// open starts a harness session on agy (attached or launched), waits until
// its history is read (replaying it when replay is set) and registers it.
// sessionID is the session to load ("" for a new one).
func (a *Agent) open(ctx context.Context, cwd, sessionID string, replay bool) (*session, error) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, sdk.NewInternalError(map[string]any{"error": "the agent is shutting down"})
	}
	a.mu.Unlock()
	if err := checkCwd(cwd); err != nil {
		return nil, err
	}

	conversationID := sessionID
	if c, ok := a.store.conversation(sessionID); ok {
		conversationID = c
	}
	spec := actors.Spec{Port: a.opts.AttachPort, PID: a.opts.AttachPID, ConversationID: conversationID, CSRFToken: a.opts.CSRFToken}
	var launched *Launched
	if spec.Port == 0 && spec.PID == 0 {
		l, err := a.opts.Launcher.Launch(ctx, cwd, conversationID)
		if err != nil {
			return nil, sdk.NewInternalError(map[string]any{"error": err.Error()})
		}
		launched = l
		spec.PID = l.PID
		spec.Terminal = l.Terminal
		spec.Turns = a.opts.Turns
		// A fresh agy lists the conversations of earlier runs: bind only
		// the one it mints for this session's first prompt.
		spec.NewConversation = conversationID == ""
		spec.AgyVersion = l.Version
		a.log.Info("launched agy", "where", l.Name, "pid", l.PID, "cwd", cwd, "conversation", conversationID)
	}
	hs, err := a.attachLaunched(ctx, spec, launched)
	if err != nil {
		if launched != nil {
			a.stopLaunched(launched)
		}
		if serr := startupError(err); serr != nil {
			return nil, serr
		}
		return nil, sdk.NewInternalError(map[string]any{"error": fmt.Sprintf("attaching to agy: %v", err)})
	}
	id := sessionID
	if id == "" {
		id = hs.ConversationID()
	}
	if id == "" {
		id = newSessionID() // agy has no conversation yet
	}
	s := newSession(a, id, hs, launched, replay)
	if err := s.start(ctx); err != nil {
		s.close()
		return nil, err
	}

	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		s.close()
		return nil, sdk.NewInternalError(map[string]any{"error": "the agent is shutting down"})
	}
	old := a.sessions[s.id]
	a.sessions[s.id] = s
	a.mu.Unlock()
	if old != nil {
		// The same conversation opened again (the client reopened its
		// thread): the newer binding wins.
		old.close()
	}
	a.log.Info("session open", "session", s.id, "port", hs.Port(), "replayed", replay)
	return s, nil
}

// attachLaunched attaches a session within AttachTimeout and, for an agy
// the adapter launched, waits until it takes turns (Launched.Ready) at the
// same time: agy's startup failing (a trust dialog, a sign-in screen) ends
// the attach with that error, as agy may not serve its language server
// before it is answered.
func (a *Agent) attachLaunched(ctx context.Context, spec actors.Spec, l *Launched) (*actors.Session, error) {
	rctx, rcancel := context.WithTimeout(ctx, a.opts.AttachTimeout)
	defer rcancel()
	actx, cancel := context.WithCancelCause(rctx)
	defer cancel(nil)
	ready := make(chan error, 1)
	if l != nil && l.Ready != nil {
		go func() {
			err := l.Ready(rctx)
			if err != nil {
				cancel(err)
			}
			ready <- err
		}()
	} else {
		ready <- nil
	}
	hs, err := a.opts.Host.Attach(actx, spec)
	if err != nil {
		if cause := context.Cause(actx); startupError(cause) != nil {
			return nil, cause
		}
		return nil, err
	}
	if err := <-ready; err != nil {
		dctx, dcancel := context.WithTimeout(context.Background(), a.opts.RequestTimeout)
		defer dcancel()
		_ = hs.Detach(dctx)
		drain(dctx, hs.Events()) // nobody reads the events of a session never opened
		return nil, err
	}
	return hs, nil
}

// drain reads events until they end (the session stopped) or ctx does.
func drain(ctx context.Context, events <-chan *messages.Event) {
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// startupError is the ACP error for an agy that will not take prompts
// (err an *agystart.Error): auth_required when agy is not signed in, else
// an internal error whose message says what the person must do. Nil for
// any other error.
func startupError(err error) *sdk.RequestError {
	var se *agystart.Error
	if !errors.As(err, &se) {
		return nil
	}
	data := map[string]any{"error": se.Message, "code": se.Code}
	if se.Code == agystart.CodeNotSignedIn {
		return sdk.NewAuthRequired(data)
	}
	e := sdk.NewInternalError(data)
	e.Message = "agy cannot take prompts: " + se.Message
	return e
}

func (a *Agent) stopLaunched(l *Launched) {
	if l == nil || l.Stop == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.RequestTimeout)
	defer cancel()
	if err := l.Stop(ctx); err != nil {
		a.log.Warn("stopping launched agy", "where", l.Name, "err", err)
	}
}

// Prompt implements sdk.Agent.
func (a *Agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text := promptText(p.Prompt)
	if text == "" {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": "the prompt has no text"})
	}
	return s.prompt(ctx, text)
}

// Cancel implements sdk.Agent. The SDK has already cancelled the running
// prompt's context, which makes that prompt interrupt agy; this only logs.
func (a *Agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	a.log.Info("cancel requested", "session", string(p.SessionId))
	return nil
}

// CloseSession implements sdk.Agent: detach, and stop the agy it launched.
func (a *Agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.mu.Lock()
	s, ok := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	if ok {
		s.close()
	}
	return sdk.CloseSessionResponse{}, nil
}

// ListSessions implements sdk.Agent; the capability is not advertised.
func (a *Agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
}

// ResumeSession implements sdk.Agent; the capability is not advertised.
func (a *Agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

// SetSessionMode implements sdk.Agent; agy has no session modes over RPC.
func (a *Agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}

// SetSessionConfigOption implements sdk.Agent: the "model" option picks the
// model of the next turns.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "only the \"model\" option exists, and it takes a value id"})
	}
	if v.ConfigId != modelConfigID {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown config option %q (want %q)", v.ConfigId, modelConfigID)})
	}
	s, err := a.session(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	if err := s.setModel(string(v.Value)); err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	opts, _ := s.modelState()
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

// UnstableSetSessionModel handles session/set_model, the older (unstable)
// model selector some clients still use.
func (a *Agent) UnstableSetSessionModel(ctx context.Context, p sdk.UnstableSetSessionModelRequest) (sdk.UnstableSetSessionModelResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	if err := s.setModel(string(p.ModelId)); err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	return sdk.UnstableSetSessionModelResponse{}, nil
}

// elicitationForms reports whether the client renders elicitation forms.
func (a *Agent) elicitationForms() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.clientCaps.Elicitation
	return e != nil && e.Form != nil
}

// gatedReader blocks reads until open is closed.
type gatedReader struct {
	r    io.Reader
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}
