package agytest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// Options configure a fake language server. The zero value is a usable
// server that starts as a fresh agy does: no conversation until the first
// turn is typed (TypeTurn), DefaultScenario, seed 0. Every quirk of agy is
// on by default; the options below turn some of them off or dial them.
type Options struct {
	// Conversation starts the server with one root conversation, active
	// (as an agy whose first turn was already typed). Without it the server
	// has none until TypeTurn mints one, as a fresh agy has none until a
	// turn is typed into its terminal.
	Conversation bool
	// EarlierRuns adds that many root conversations of earlier runs: idle,
	// a finished turn each, last active hours ago. agy keeps conversations
	// on disk per HOME and lists them all, so a fresh agy lists these, not
	// one of its own.
	EarlierRuns int
	// EarlierSubagents makes one in four of the EarlierRuns conversations
	// (the 4th, 8th, ...) a subagent child of the root conversation before
	// it, as agy lists every child it keeps: its parentConversationId and
	// rootConversationId name that root. The children are idle and never
	// rotation targets; the roots are as without it.
	EarlierSubagents bool
	// CancelStopsPrompts makes the cancel methods stop a turn parked on a
	// WAITING prompt. agy does not: CancelCascadeSteps answers 200 and the
	// WAITING step stays WAITING (the prompt must be declined first).
	CancelStopsPrompts bool
	// UnstreamedPrompts is the probability that a WAITING prompt is never
	// streamed: agy may send no frame while a prompt is parked, so only
	// GetCascadeTrajectorySteps shows it. 0 means 0.5; negative means never;
	// 1 means always.
	UnstreamedPrompts float64
	// MaxStepsPerRead caps the steps of one GetCascadeTrajectorySteps
	// answer: a longer trajectory is only ever seen in windows (stepOffset).
	// A third-party client reports a cap near 600 (not verified). 0 means
	// 600; negative means no cap.
	MaxStepsPerRead int
	// MovingModifiedTime makes every trajectory summary carry the time of
	// the read as lastModifiedTime, as if agy touched conversations at
	// rest. No agy build is known to; it tests that idle never hinges on
	// that field. Off by default.
	MovingModifiedTime bool
	// Seed drives all randomness (ids, usage numbers, which turns report
	// IDLE early, 5xx codes): the same seed and the same calls give the
	// same trajectory.
	Seed int64
	// CSRFToken, when set, must arrive on every call as x-codeium-csrf-token;
	// otherwise the call fails unauthenticated (401; streams: in the
	// end-of-stream envelope).
	CSRFToken string
	// PromptTimeout is how long a WAITING prompt waits before it turns ERROR
	// and agy retries it at a higher stepIndex. 0 means 5 minutes; negative
	// means never.
	PromptTimeout time.Duration
	// ChunkDelay is the pause between streamed changes of a turn. 0 means
	// 15ms; negative means none.
	ChunkDelay time.Duration
	// Scenario is what the agent does on each turn; nil means DefaultScenario().
	Scenario *Scenario
	// Models is GetAvailableModels' catalog; nil means DefaultModels().
	// The recommended one (else the first) runs terminal turns by default.
	Models []wire.ModelInfo
	// Logger receives the server's debug log; nil discards it.
	Logger *slog.Logger
	// AgyLog, when set, receives agy's own log lines ("Language server
	// listening on random port at <N> for HTTPS", then the HTTP line) when
	// the server starts and each time it restarts on a new port, as agy
	// writes them to its log file (sessions find the port there:
	// actors.Spec.LogFile).
	AgyLog io.Writer
	// Host is the loopback address to listen on; "" means 127.0.0.1.
	Host string
	// IdleBeforeFlush is the probability that a turn reports IDLE on its
	// streams before the last step's final copy (which then comes in a later
	// frame or only through GetCascadeTrajectorySteps). 0 means 0.5;
	// negative means never; 1 means always.
	IdleBeforeFlush float64
	// CancelNoop lists cancel methods that answer 200 but do not stop
	// generation, as in agy builds where only some of them work.
	CancelNoop []string
	// NoReask asks a compound command's permission once, for the whole
	// line, as agy did before 1.1.7. By default a command with top-level
	// "&&" is asked segment by segment on the same step: once a segment is
	// allowed, the step stays WAITING asking for the next (recorded in its
	// completedInteractions and permissions.permissionGrants).
	NoReask bool
	// HistorySteps starts the conversation of Options.Conversation with
	// that many finished steps (a user turn and its reply each two), made
	// from their index when sent and never stored: a conversation of a
	// million steps costs the fake 8 bytes a step. A stream's first frame
	// carries them all, as agy's does (far over 16 MiB for a million).
	HistorySteps int
	// HistoryStepBytes pads each reply of the history to about that many
	// bytes, for answers over a reader's limit.
	HistoryStepBytes int
	// RecordTimes records when every live planner text version changed
	// and was first streamed (TextTimes), for latency benchmarks. It costs
	// a map entry per version.
	RecordTimes bool
	// NoBackgroundWakes keeps a finished background task (Action.Task)
	// from waking agy: no SYSTEM_MESSAGE step, no run nobody typed.
	NoBackgroundWakes bool
	// RewindMarksCleared makes a rewind (Rewind, RevertToCascadeStep) keep
	// the rewound steps with status CLEARED, new steps after them, instead
	// of cutting the trajectory back so new steps take the freed indices.
	// Nobody recorded which agy does; both are handled.
	RewindMarksCleared bool
	// LegacySubagents makes subagents as agy sent them before 1.1.9: child
	// summaries typed SUBAGENT, and the INVOKE_SUBAGENT step RUNNING until
	// every child is idle, without its list of subagents.
	LegacySubagents bool
}

// DefaultMaxStepsPerRead is the cap on one GetCascadeTrajectorySteps answer
// when Options.MaxStepsPerRead is 0.
const DefaultMaxStepsPerRead = 600

// DefaultModels is the model catalog when Options.Models is nil.
func DefaultModels() []wire.ModelInfo {
	return []wire.ModelInfo{
		{Model: "MODEL_PLACEHOLDER_M20", DisplayName: "Gemini 3.1 Pro (Medium)", Recommended: true, SupportsThinking: true, ThinkingBudget: 8192},
		{Model: "MODEL_PLACEHOLDER_M132", DisplayName: "Gemini 3.1 Pro (High)", SupportsThinking: true, ThinkingBudget: 32768},
		{Model: "MODEL_PLACEHOLDER_M187", DisplayName: "Gemini 3.1 Pro (Low)", SupportsThinking: true, ThinkingBudget: 1024},
		{Model: "MODEL_PLACEHOLDER_M26", DisplayName: "Claude Opus 4.6 (Thinking)", SupportsThinking: true, ThinkingBudget: 16384},
	}
}

func (o Options) normalized() (Options, error) {
	if o.PromptTimeout == 0 {
		o.PromptTimeout = 5 * time.Minute
	}
	if o.ChunkDelay == 0 {
		o.ChunkDelay = 15 * time.Millisecond
	}
	if o.Scenario == nil {
		o.Scenario = DefaultScenario()
	}
	if err := o.Scenario.validate(); err != nil {
		return o, fmt.Errorf("agytest: scenario: %w", err)
	}
	if o.Models == nil {
		o.Models = DefaultModels()
	}
	if len(o.Models) == 0 {
		return o, errors.New("agytest: empty model catalog")
	}
	for i, m := range o.Models {
		if !strings.HasPrefix(m.Model, "MODEL_") {
			return o, fmt.Errorf("agytest: model %d: %q is not a MODEL_* enum name", i, m.Model)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if ip := net.ParseIP(o.Host); o.Host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return o, fmt.Errorf("agytest: host %q is not a loopback address", o.Host)
	}
	switch {
	case o.IdleBeforeFlush == 0:
		o.IdleBeforeFlush = 0.5
	case o.IdleBeforeFlush < 0:
		o.IdleBeforeFlush = 0
	}
	switch {
	case o.UnstreamedPrompts == 0:
		o.UnstreamedPrompts = 0.5
	case o.UnstreamedPrompts < 0:
		o.UnstreamedPrompts = 0
	}
	switch {
	case o.MaxStepsPerRead == 0:
		o.MaxStepsPerRead = DefaultMaxStepsPerRead
	case o.MaxStepsPerRead < 0:
		o.MaxStepsPerRead = 0
	}
	if o.HistorySteps < 0 || o.HistoryStepBytes < 0 {
		return o, fmt.Errorf("agytest: HistorySteps %d or HistoryStepBytes %d is negative", o.HistorySteps, o.HistoryStepBytes)
	}
	if o.HistorySteps > 0 && !o.Conversation {
		return o, errors.New("agytest: HistorySteps needs Conversation")
	}
	if o.EarlierRuns < 0 {
		return o, fmt.Errorf("agytest: EarlierRuns %d is negative", o.EarlierRuns)
	}
	for _, m := range o.CancelNoop {
		if !slices.Contains(rpc.CancelMethods, m) {
			return o, fmt.Errorf("agytest: CancelNoop: %q is not a cancel method", m)
		}
	}
	return o, nil
}

// Server is a fake agy language server: HTTPS (self-signed, HTTP/2) on a
// random loopback port and plain HTTP next to it, hosting conversations that
// run a scenario. Safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // canceled by Close: stops every turn
	cancel context.CancelFunc

	wgMu     sync.Mutex
	wg       sync.WaitGroup // turn workers and in-flight handlers
	stopping bool
	serveWG  sync.WaitGroup // Serve loops

	mu        sync.Mutex
	closed    bool
	rng       *mrand.Rand // root conversation ids
	convs     map[string]*conversation
	order     []string
	active    string
	subsByID  map[string]*subscriber
	faults    []*Fault
	faultRNG  *mrand.Rand
	calls     map[string]int
	injected  map[string]int
	ls        *listeners
	restarted chan struct{} // closed when the current listeners go away

	timing timing // frame counts; text version times when RecordTimes
}

type listeners struct {
	https, http         *http.Server
	httpsPort, httpPort int
}

// NewServer starts a fake language server, listening at once.
func NewServer(opts Options) (*Server, error) {
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:      o,
		log:       o.Logger,
		ctx:       ctx,
		cancel:    cancel,
		rng:       rngFor(o.Seed, "server"),
		faultRNG:  rngFor(o.Seed, "faults"),
		convs:     map[string]*conversation{},
		subsByID:  map[string]*subscriber{},
		calls:     map[string]int{},
		injected:  map[string]int{},
		restarted: make(chan struct{}),
	}
	s.timing.versions = map[TextVersion]VersionTimes{}
	s.mu.Lock()
	s.addEarlierRunsLocked(o.EarlierRuns)
	if o.Conversation {
		c := s.newRootLocked()
		c.startWithHistory(o.HistorySteps)
		s.active = c.id
	}
	active := s.active
	s.mu.Unlock()
	ls, err := s.listen(0)
	if err != nil {
		cancel()
		return nil, err
	}
	s.ls = ls
	s.log.Info("fake language server listening", "https", ls.httpsPort, "http", ls.httpPort, "conversation", active)
	s.logPorts(ls)
	return s, nil
}

// logPorts writes agy's log lines for ls to Options.AgyLog.
func (s *Server) logPorts(ls *listeners) {
	if w := s.opts.AgyLog; w != nil {
		fmt.Fprintf(w, "Language server listening on random port at %d for HTTPS\nLanguage server listening on random port at %d for HTTP\n", ls.httpsPort, ls.httpPort)
	}
}

// Start is NewServer for tests: it fails tb on error and closes the server
// in tb.Cleanup.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := NewServer(opts)
	if err != nil {
		tb.Fatalf("agytest: start: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func (s *Server) newRootLocked() *conversation {
	c := newConversation(s, uuidFrom(s.rng), uuidFrom(s.rng))
	s.registerLocked(c)
	return c
}

func (s *Server) registerLocked(c *conversation) {
	s.convs[c.id] = c
	s.order = append(s.order, c.id)
}

// spawn registers a goroutine the server owns; false once Close began.
func (s *Server) spawn() bool {
	s.wgMu.Lock()
	defer s.wgMu.Unlock()
	if s.stopping {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) listen(avoid int) (*listeners, error) {
	cert, err := selfSignedCert()
	if err != nil {
		return nil, err
	}
	var tlsLn net.Listener
	for range 5 {
		tlsLn, err = net.Listen("tcp", net.JoinHostPort(s.opts.Host, "0"))
		if err != nil {
			return nil, fmt.Errorf("agytest: listen https: %w", err)
		}
		if port(tlsLn) != avoid {
			break
		}
		_ = tlsLn.Close()
		tlsLn = nil
	}
	if tlsLn == nil {
		return nil, errors.New("agytest: listen https: no new port")
	}
	// agy's plain-HTTP port is usually the next one up.
	plainLn, err := net.Listen("tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(port(tlsLn)+1)))
	if err != nil {
		plainLn, err = net.Listen("tcp", net.JoinHostPort(s.opts.Host, "0"))
		if err != nil {
			_ = tlsLn.Close()
			return nil, fmt.Errorf("agytest: listen http: %w", err)
		}
	}
	quiet := log.New(io.Discard, "", 0)
	hs := &http.Server{
		Handler:           s,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          quiet,
		Protocols:         new(http.Protocols),
	}
	hs.Protocols.SetHTTP1(true)
	hs.Protocols.SetHTTP2(true)
	ps := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: quiet, Protocols: new(http.Protocols)}
	ps.Protocols.SetHTTP1(true)
	ps.Protocols.SetUnencryptedHTTP2(true)
	ls := &listeners{https: hs, http: ps, httpsPort: port(tlsLn), httpPort: port(plainLn)}
	s.serveWG.Add(2)
	go func() {
		defer s.serveWG.Done()
		_ = hs.ServeTLS(tlsLn, "", "")
	}()
	go func() {
		defer s.serveWG.Done()
		_ = ps.Serve(plainLn)
	}()
	return ls, nil
}

func (l *listeners) close() {
	_ = l.https.Close()
	_ = l.http.Close()
}

func port(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

// selfSignedCert makes a fresh certificate for the loopback names, as agy
// makes one per start.
func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("agytest: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("agytest: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("agytest: certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// Port is the HTTPS port (the one to use).
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ls == nil {
		return 0
	}
	return s.ls.httpsPort
}

// HTTPPort is the plain-HTTP port.
func (s *Server) HTTPPort() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ls == nil {
		return 0
	}
	return s.ls.httpPort
}

// Close stops the listeners, every stream, every turn, and waits for every
// goroutine the server started. Ordering: listeners and their connections
// first (open streams die as on a crash), then turns, then the wait.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ls, gone := s.ls, s.restarted
	s.ls = nil
	s.mu.Unlock()
	if ls != nil {
		ls.close()
	}
	close(gone)
	s.cancel()
	s.wgMu.Lock()
	s.stopping = true
	s.wgMu.Unlock()
	s.wg.Wait()
	s.serveWG.Wait()
	return nil
}

// Restart is agy's port churn: the listeners close (open streams die), a
// new certificate is made and the server listens on a new HTTPS port (plain
// HTTP next to it). Conversations and running turns are kept. It returns
// the new HTTPS port.
func (s *Server) Restart() (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, errClosed
	}
	old, gone := s.ls, s.restarted
	s.ls = nil
	s.restarted = make(chan struct{})
	s.injected[FaultRestart.String()]++
	s.mu.Unlock()
	old.close()
	close(gone)
	ls, err := s.listen(old.httpsPort)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		ls.close()
		return 0, errClosed
	}
	s.ls = ls
	s.log.Info("fake language server restarted", "https", ls.httpsPort, "http", ls.httpPort)
	s.logPorts(ls)
	return ls.httpsPort, nil
}

// lookup returns a hosted conversation, or nil.
func (s *Server) lookup(id string) *conversation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.convs[id]
}

// activeConv is the conversation agy's terminal shows, minting one when
// there is none yet (a fresh agy mints its conversation on the first turn
// typed).
func (s *Server) activeConv() *conversation {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.convs[s.active]; c != nil {
		return c
	}
	c := s.newRootLocked()
	s.active = c.id
	s.log.Debug("first turn typed: conversation minted", "conversation", c.id)
	return c
}

func (s *Server) recommendedModel() string {
	for _, m := range s.opts.Models {
		if m.Recommended {
			return m.Model
		}
	}
	return s.opts.Models[0].Model
}

// ConversationID is the active root conversation, the one agy's terminal
// shows: "" until the first turn is typed (unless Options.Conversation); it
// changes on Clear.
func (s *Server) ConversationID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// Conversations lists every hosted conversation id, subagent children
// included, in creation order.
func (s *Server) Conversations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// Clear is /clear in agy's terminal: a new root conversation becomes active
// and the old one stays reachable. Streams following the old active
// conversation follow the new one (their next frame names it and carries
// its snapshot), as agy's stream names the active conversation. It returns
// the new id.
func (s *Server) Clear() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.convs[s.active]
	c := s.newRootLocked()
	s.active = c.id
	if old == nil {
		s.log.Debug("clear", "to", c.id)
		return c.id
	}
	old.mu.Lock()
	c.mu.Lock()
	for sub := range old.subs {
		delete(old.subs, sub)
		c.subs[sub] = struct{}{}
		sub.follow(c)
	}
	c.mu.Unlock()
	old.mu.Unlock()
	s.log.Debug("clear", "from", old.id, "to", c.id)
	return c.id
}

// Resume makes a root conversation the server hosts (one of an earlier
// run) the one agy's terminal shows, as `agy --conversation ID` starts on
// it: turns typed go there. It is meant for a server's start.
func (s *Server) Resume(conversationID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[conversationID]
	if c == nil || c.parentID != "" {
		return fmt.Errorf("agytest: no root conversation %s to resume", conversationID)
	}
	s.active = c.id
	return nil
}

// startCascade mints a new root conversation without making it active: agy's
// terminal never shows a conversation made with StartCascade. id is the
// caller's choice of id ("" to mint one).
func (s *Server) startCascade(id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		return s.newRootLocked().id, nil
	}
	if s.convs[id] != nil {
		return "", fmt.Errorf("cascade %s exists", id)
	}
	c := newConversation(s, id, uuidFrom(s.rng))
	s.registerLocked(c)
	return id, nil
}

func (s *Server) spawnChildren(parent *conversation, ids []string, a SubagentAction, model string) ([]*conversation, error) {
	rng := rngFor(s.opts.Seed, parent.id, "children", ids[0])
	var children []*conversation
	s.mu.Lock()
	for _, id := range ids {
		ch := newConversation(s, id, uuidFrom(rng))
		ch.parentID = parent.id
		ch.rootID = parent.rootID
		if s.opts.LegacySubagents {
			ch.trajectoryType = trajectoryTypeSubagent
		} // else typed CASCADE like a root, as agy 1.1.9 lists them: only trajectoryMetadata tells
		s.registerLocked(ch)
		children = append(children, ch)
	}
	s.mu.Unlock()
	parent.mu.Lock()
	parent.children = append(parent.children, children...)
	parent.mu.Unlock()
	script := &TurnScript{Actions: a.Actions}
	task := a.Task
	if task == "" {
		task = "Help with the parent task."
	}
	for _, ch := range children {
		if err := ch.enqueue(&turnRequest{text: task, model: model, source: wire.SourceSystem, script: script}); err != nil {
			return nil, err
		}
	}
	return children, nil
}

// TypeTurn is a person typing a turn in agy's own terminal: a USER_INPUT in
// the active conversation on the terminal's model (the turn script's model,
// else the last one used, else the recommended one), then the scenario. The
// first turn typed into a fresh server mints its conversation.
func (s *Server) TypeTurn(text string) error {
	if strings.TrimSpace(text) == "" {
		return errors.New("agytest: empty turn")
	}
	return s.activeConv().enqueue(&turnRequest{text: text, source: wire.SourceUserExplicit})
}

// AnswerFromTerminal answers the open WAITING prompt of a conversation as
// agy's terminal would (the ids in answer are ignored).
func (s *Server) AnswerFromTerminal(conversationID string, answer wire.InteractionResponse) error {
	c := s.lookup(conversationID)
	if c == nil {
		return fmt.Errorf("agytest: no conversation %s", conversationID)
	}
	if err := c.answer(answer, true); err != nil {
		return fmt.Errorf("agytest: answer from terminal: %s", err.msg)
	}
	return nil
}

// OpenPrompt returns the conversation's current WAITING step, if any.
func (s *Server) OpenPrompt(conversationID string) (wire.Step, bool) {
	c := s.lookup(conversationID)
	if c == nil {
		return wire.Step{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prompt == nil {
		return wire.Step{}, false
	}
	return c.steps[c.prompt.idx].decoded(), true
}

// Steps returns the conversation's current trajectory, decoded as a client
// decodes GetCascadeTrajectorySteps.
func (s *Server) Steps(conversationID string) []wire.Step {
	if c := s.lookup(conversationID); c != nil {
		return c.snapshot()
	}
	return nil
}

// GroundTruth returns every step the conversation committed (reached a
// terminal status), in commit order, as it was at that moment.
func (s *Server) GroundTruth(conversationID string) []wire.Step {
	if c := s.lookup(conversationID); c != nil {
		return c.groundTruth()
	}
	return nil
}

// AtRest reports whether the conversation is IDLE with no turn running or
// queued and no background task's notification due (false when not
// hosted): its trajectory changes only when a client acts.
func (s *Server) AtRest(conversationID string) bool {
	if c := s.lookup(conversationID); c != nil {
		return c.atRest()
	}
	return false
}

// RunStatus is the conversation's cascade run status ("" when not hosted).
func (s *Server) RunStatus(conversationID string) wire.RunStatus {
	if c := s.lookup(conversationID); c != nil {
		return c.runStatus()
	}
	return ""
}

// WaitIdle blocks until the conversation has no running or queued turn.
func (s *Server) WaitIdle(ctx context.Context, conversationID string) error {
	c := s.lookup(conversationID)
	if c == nil {
		return fmt.Errorf("agytest: no conversation %s", conversationID)
	}
	return c.waitIdle(ctx)
}

// Calls reports how many times a method was called (unknown paths count
// under their last path element).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// LastUserInput is the index of the last USER_INPUT step of steps (the
// step a /rewind of the last turn goes back to), or -1 when there is none.
func LastUserInput(steps []wire.Step) int {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Type == wire.StepUserInput {
			return i
		}
	}
	return -1
}
