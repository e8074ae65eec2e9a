package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

// maxBody bounds every request body.
const maxBody = 1 << 20

// hostAPI is what the HTTP host needs of an *actors.Host.
type hostAPI interface {
	Attach(ctx context.Context, spec actors.Spec) (servedSession, error)
}

// servedSession is what the HTTP host needs of an *actors.Session.
type servedSession interface {
	sessionAPI
	Port() int
	Done() <-chan struct{}
	Subscribe(ctx context.Context, afterSeq uint64) (eventStream, error)
	Stats() actors.Stats
}

// eventStream is a subscription: *actors.Subscription.
type eventStream interface {
	C() <-chan *messages.Event
	Close()
}

// actorsHost and actorsSession adapt the embedding API to those interfaces.
type actorsHost struct{ h *actors.Host }

func (a actorsHost) Attach(ctx context.Context, spec actors.Spec) (servedSession, error) {
	s, err := a.h.Attach(ctx, spec)
	if err != nil {
		return nil, err
	}
	return actorsSession{s}, nil
}

type actorsSession struct{ *actors.Session }

func (a actorsSession) Subscribe(ctx context.Context, afterSeq uint64) (eventStream, error) {
	return a.Session.Subscribe(ctx, afterSeq)
}

// serverConfig configures a server. Zero durations take the defaults
// written beside them (withDefaults).
type serverConfig struct {
	host          hostAPI
	token         string
	log           *slog.Logger
	heartbeat     time.Duration
	attachTimeout time.Duration

	// readHeaderTimeout bounds reading a request's headers (10s), and
	// readTimeout its headers and body (30s): a client that stops sending
	// is cut off. A handler that runs longer (an attach, a turn waiting for
	// agy) lifts the read deadline once it has read the body.
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	// idleTimeout closes a keep-alive connection with no request (2m).
	idleTimeout time.Duration
	// maxConns caps the connections served at once; more wait to be
	// accepted. 0: no cap.
	maxConns int
	// sseWriteTimeout bounds each write of an SSE stream (30s): a client
	// that stops reading is cut off. sseEndGrace is how long a stream has
	// to take its "event: end" when the server stops (1s).
	sseWriteTimeout time.Duration
	sseEndGrace     time.Duration
	// httpShutdown bounds waiting for requests in flight when the server
	// stops (5s); the sessions' detach then has hostShutdown of its own
	// (10s).
	httpShutdown time.Duration
	hostShutdown time.Duration
	// tls, when set, serves HTTPS.
	tls *tls.Config
}

// server is the multi-session HTTP host (DESIGN.md section 6). Each
// attached session has a watcher goroutine that reads its event stream
// from the start, for metrics and to know which prompts are open, and
// forgets the session when its stream ends.
type server struct {
	cfg       serverConfig
	log       *slog.Logger
	tokenHash [32]byte
	base      context.Context // parent of every request's context; cancelled by stop
	cancel    context.CancelFunc
	wg        sync.WaitGroup // watchers
	metrics   *metrics

	mu       sync.Mutex
	sessions map[string]*served
}

// served is one session and what its watcher learned.
type served struct {
	sess    servedSession
	created time.Time
	// under server.mu
	open     map[string]time.Time // open elicitation id -> when it was asked
	resolved map[string]bool      // elicitations that were closed
}

func (c serverConfig) withDefaults() serverConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.readHeaderTimeout, 10*time.Second)
	def(&c.readTimeout, 30*time.Second)
	def(&c.idleTimeout, 2*time.Minute)
	def(&c.sseWriteTimeout, 30*time.Second)
	def(&c.sseEndGrace, time.Second)
	def(&c.httpShutdown, 5*time.Second)
	def(&c.hostShutdown, 10*time.Second)
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

func newServer(cfg serverConfig) *server {
	base, cancel := context.WithCancel(context.Background())
	cfg = cfg.withDefaults()
	return &server{
		cfg: cfg, log: cfg.log,
		tokenHash: sha256.Sum256([]byte(cfg.token)),
		base:      base, cancel: cancel,
		metrics:  newMetrics(),
		sessions: make(map[string]*served),
	}
}

// stop ends every SSE stream and request context.
func (s *server) stop() { s.cancel() }

// wait waits for the session watchers (they end when their sessions do).
func (s *server) wait() { s.wg.Wait() }

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", s.auth(http.HandlerFunc(s.serveMetrics)))
	mux.Handle("POST /v1/sessions", s.auth(http.HandlerFunc(s.createSession)))
	mux.Handle("GET /v1/sessions", s.auth(http.HandlerFunc(s.listSessions)))
	mux.Handle("GET /v1/sessions/{id}", s.auth(s.withSession(s.getSession)))
	mux.Handle("DELETE /v1/sessions/{id}", s.auth(s.withSession(s.deleteSession)))
	mux.Handle("GET /v1/sessions/{id}/events", s.auth(s.withSession(s.events)))
	mux.Handle("POST /v1/sessions/{id}/turns", s.auth(s.withSession(s.turn)))
	mux.Handle("POST /v1/sessions/{id}/elicitations/{eid}/resolve", s.auth(s.withSession(s.resolve)))
	mux.Handle("POST /v1/sessions/{id}/interrupt", s.auth(s.withSession(s.interrupt)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.EscapedPath())
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// An SSE stream that ended on this connection left its write
		// deadline behind.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		mux.ServeHTTP(w, r)
	})
}

// ---- plumbing ----

type apiError struct {
	Error string `json:"error"`
}

// writeJSON writes v with <, > and & escaped (\u003c…): an error that
// quotes the request cannot be read as markup.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// bodyRead lifts the read deadline of a request whose body is read (or
// that has none): the handler may then run longer than the server's read
// timeout (an attach, a turn waiting for agy).
func bodyRead(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}

// auth checks the bearer token in constant time (over digests, so the
// token's length does not leak either).
func (s *server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearerToken(r.Header.Get("Authorization"))
		h := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(h[:], s.tokenHash[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agyharness"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken is the token of an "Authorization: Bearer T" header; the
// scheme is case-insensitive (RFC 9110, section 11.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

type sessionHandler func(w http.ResponseWriter, r *http.Request, sv *served)

func (s *server) withSession(h sessionHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		s.mu.Lock()
		sv, ok := s.sessions[id]
		s.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q", id))
			return
		}
		h(w, r, sv)
	})
}

// decodeBody reads a size-limited JSON body into v, refusing unknown
// fields. It writes the error response itself and reports whether to go on.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body := http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("more than one JSON value in the body")
		}
	}
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case err == nil:
		bodyRead(w)
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		writeError(w, http.StatusRequestTimeout, "request body not received in time")
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", maxBody))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "request body is empty: send a JSON object")
	default:
		writeError(w, http.StatusBadRequest, "malformed JSON body: "+err.Error())
	}
	return false
}

// commandStatus maps a session's refusal of a command to a status.
func commandStatus(err error) int {
	switch {
	case errors.Is(err, actors.ErrSessionEnded), errors.Is(err, actors.ErrUnknownElicitation):
		return http.StatusNotFound
	case errors.Is(err, actors.ErrBadAnswer):
		return http.StatusUnprocessableEntity
	case errors.Is(err, actors.ErrNotBound):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// ---- handlers ----

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := len(s.sessions)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "sessions": n})
}

// createRequest is POST /v1/sessions' body.
type createRequest struct {
	PID            int    `json:"pid,omitempty"`
	Port           int    `json:"port,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	CSRFToken      string `json:"csrf_token,omitempty"`
	ReadMode       string `json:"read_mode,omitempty"`
	SessionID      string `json:"session_id,omitempty"`
}

// sessionView is a session as the API shows it.
type sessionView struct {
	ID             string         `json:"id"`
	ConversationID string         `json:"conversation_id"`
	Port           int            `json:"port"`
	Created        time.Time      `json:"created"`
	Events         uint64         `json:"events"`
	Rebinds        int            `json:"rebinds"`
	Restarts       map[string]int `json:"restarts"`
	OpenPrompts    []string       `json:"open_elicitations"`
}

func (s *server) view(sv *served) sessionView {
	st := sv.sess.Stats()
	s.mu.Lock()
	open := make([]string, 0, len(sv.open))
	for id := range sv.open {
		open = append(open, id)
	}
	s.mu.Unlock()
	return sessionView{
		ID: sv.sess.ID(), ConversationID: sv.sess.ConversationID(), Port: sv.sess.Port(),
		Created: sv.created, Events: st.Events, Rebinds: st.Rebinds, Restarts: st.Restarts,
		OpenPrompts: open,
	}
}

func (s *server) createSession(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if (req.PID > 0) == (req.Port > 0) || req.PID < 0 || req.Port < 0 || req.Port > 65535 {
		writeError(w, http.StatusUnprocessableEntity, `give exactly one of "pid" and "port" (positive; port at most 65535)`)
		return
	}
	spec := actors.Spec{PID: req.PID, Port: req.Port, ConversationID: req.ConversationID,
		CSRFToken: req.CSRFToken, SessionID: req.SessionID, ReadMode: actors.ReadMode(req.ReadMode)}
	switch spec.ReadMode {
	case "", actors.ReadBoth, actors.ReadStream, actors.ReadPoll:
	default:
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf(`"read_mode" %q: want both, stream or poll`, req.ReadMode))
		return
	}
	if spec.SessionID != "" && !validSessionID(spec.SessionID) {
		writeError(w, http.StatusUnprocessableEntity, `"session_id": 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" and "-" (not "." or "..")`)
		return
	}
	if spec.SessionID != "" {
		s.mu.Lock()
		_, dup := s.sessions[spec.SessionID]
		s.mu.Unlock()
		if dup {
			writeError(w, http.StatusConflict, fmt.Sprintf("session %q exists", spec.SessionID))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.attachTimeout)
	defer cancel()
	sess, err := s.cfg.host.Attach(ctx, spec)
	if err != nil {
		if errors.Is(err, actors.ErrSessionExists) { // another request is attaching it
			writeError(w, http.StatusConflict, fmt.Sprintf("session %q exists", spec.SessionID))
			return
		}
		// Never echo the request: it may hold a CSRF token.
		s.log.Warn("attach failed", "pid", req.PID, "port", req.Port, "err", err)
		status := http.StatusBadGateway
		if errors.Is(err, actors.ErrHostClosed) {
			status = http.StatusServiceUnavailable
		}
		writeError(w, status, "attach: "+err.Error())
		return
	}
	sv := s.track(sess)
	w.Header().Set("Location", "/v1/sessions/"+url.PathEscape(sess.ID()))
	writeJSON(w, http.StatusCreated, s.view(sv))
}

var sessionIDChars = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// validSessionID: a session id is a path segment of the API.
func validSessionID(id string) bool {
	return sessionIDChars.MatchString(id) && id != "." && id != ".."
}

// track registers a session and starts its watcher.
func (s *server) track(sess servedSession) *served {
	sv := &served{sess: sess, created: time.Now().UTC(), open: make(map[string]time.Time), resolved: make(map[string]bool)}
	s.mu.Lock()
	s.sessions[sess.ID()] = sv
	s.mu.Unlock()
	s.metrics.attached()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watch(sv)
	}()
	return sv
}

// watch reads a session's events from the start until the session ends:
// counts them, times prompts, and keeps the open-prompt set.
func (s *server) watch(sv *served) {
	for ev := range sv.sess.Events() {
		s.metrics.event(ev)
		s.mu.Lock()
		switch ev.Type {
		case messages.EventElicitationRequest:
			if !sv.resolved[ev.ElicitationID] {
				sv.open[ev.ElicitationID] = ev.Time
			}
		case messages.EventElicitationResolved:
			if asked, ok := sv.open[ev.ElicitationID]; ok {
				s.metrics.promptLatency(ev.By, ev.Time.Sub(asked))
			}
			delete(sv.open, ev.ElicitationID)
			sv.resolved[ev.ElicitationID] = true
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	delete(s.sessions, sv.sess.ID())
	s.mu.Unlock()
	s.metrics.ended(sv.sess.Stats())
	if err := sv.sess.Err(); err != nil {
		s.log.Warn("session ended", "session", sv.sess.ID(), "err", err)
	} else {
		s.log.Info("session ended", "session", sv.sess.ID())
	}
}

func (s *server) listSessions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	all := make([]*served, 0, len(s.sessions))
	for _, sv := range s.sessions {
		all = append(all, sv)
	}
	s.mu.Unlock()
	views := make([]sessionView, 0, len(all))
	for _, sv := range all {
		views = append(views, s.view(sv))
	}
	sortViews(views)
	writeJSON(w, http.StatusOK, map[string]any{"sessions": views})
}

func sortViews(v []sessionView) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j].ID < v[j-1].ID; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

func (s *server) getSession(w http.ResponseWriter, r *http.Request, sv *served) {
	writeJSON(w, http.StatusOK, s.view(sv))
}

func (s *server) deleteSession(w http.ResponseWriter, r *http.Request, sv *served) {
	bodyRead(w)
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := sv.sess.Detach(ctx); err != nil {
		writeError(w, http.StatusGatewayTimeout, "detach: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// turnRequest is POST .../turns' body.
type turnRequest struct {
	Text  string `json:"text"`
	Model string `json:"model,omitempty"`
}

func (s *server) turn(w http.ResponseWriter, r *http.Request, sv *served) {
	var req turnRequest
	if !decodeBody(w, r, &req) {
		return
	}
	c := messages.Command{Type: messages.CommandTurn, Text: req.Text, Model: req.Model}
	if err := checkCommand(c); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	if err := sv.sess.Do(r.Context(), c); err != nil {
		writeError(w, commandStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "sent"})
}

// resolveRequest is POST .../elicitations/{eid}/resolve's body.
type resolveRequest struct {
	Action  string            `json:"action"`
	Answers []messages.Answer `json:"answers,omitempty"`
}

func (s *server) resolve(w http.ResponseWriter, r *http.Request, sv *served) {
	eid := r.PathValue("eid")
	var req resolveRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res := messages.Resolve{ElicitationID: eid, Action: req.Action, Answers: req.Answers}
	if err := checkResolve(res); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	s.mu.Lock()
	done := sv.resolved[eid]
	s.mu.Unlock()
	if done {
		writeError(w, http.StatusConflict, fmt.Sprintf("elicitation %q is already resolved", eid))
		return
	}
	// The session has the last word on whether the prompt is open and the
	// answer fits it (the watcher may lag behind the client's own stream).
	if err := sv.sess.Do(r.Context(), messages.Command{Type: messages.CommandResolve, ElicitationID: eid, Action: req.Action, Answers: req.Answers}); err != nil {
		writeError(w, commandStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "accepted"})
}

func (s *server) interrupt(w http.ResponseWriter, r *http.Request, sv *served) {
	if r.ContentLength > 0 {
		var empty struct{}
		if !decodeBody(w, r, &empty) {
			return
		}
	}
	bodyRead(w)
	if err := sv.sess.Do(r.Context(), messages.Command{Type: messages.CommandInterrupt}); err != nil {
		writeError(w, commandStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "idle"})
}

// events streams a session's events as SSE: "id: <seq>" and "data: <event
// JSON>". Last-Event-ID (or ?after=N) resumes after that seq from the
// session's bounded log; a seq beyond the session's last event is refused
// (the client holds an id of another session, or of one that was
// restarted). Open prompts are re-sent with the id already reached, so a
// client's Last-Event-ID never moves backwards. Heartbeat comments keep
// proxies from closing an idle stream. A client that stops reading is cut
// off (sseWriteTimeout); when the server stops, every stream ends with
// "event: end".
func (s *server) events(w http.ResponseWriter, r *http.Request, sv *served) {
	bodyRead(w) // a GET: the stream outlives the server's read timeout
	var after uint64
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	if last != "" {
		v, err := strconv.ParseUint(strings.TrimSpace(last), 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Last-Event-ID %q is not a seq", last))
			return
		}
		after = v
	}
	sub, err := sv.sess.Subscribe(r.Context(), after)
	if err != nil {
		writeError(w, commandStatus(err), err.Error())
		return
	}
	defer sub.Close()
	// Every event the client saw was published before Subscribe returned.
	if n := sv.sess.Stats().Events; after > n {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Last-Event-ID %d is beyond the session's last event (%d): reconnect without it", after, n))
		return
	}
	out := newSSEWriter(w, s.cfg.sseWriteTimeout)
	defer out.finish()
	stopWatch := context.AfterFunc(s.base, func() { out.stopping(s.cfg.sseEndGrace) })
	defer stopWatch()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if out.write(": agyharness events\n\n") != nil {
		return
	}

	tick := time.NewTicker(s.cfg.heartbeat)
	defer tick.Stop()
	const end = "event: end\ndata: {}\n\n"
	lastID := after
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				_ = out.write(end)
				return
			}
			b, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			lastID = max(lastID, ev.Seq)
			if out.write(fmt.Sprintf("id: %d\ndata: %s\n\n", lastID, b)) != nil {
				return
			}
		case <-tick.C:
			if out.write(": ping\n\n") != nil {
				return
			}
		case <-r.Context().Done():
			if s.base.Err() != nil { // the server stops
				_ = out.write(end)
			}
			return
		}
	}
}

// sseWriter writes an SSE stream, each write under a deadline. Once the
// server stops, every write (the one in progress included) has until a
// grace deadline, so a client that does not read cannot hold the shutdown.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	mu       sync.Mutex
	stopAt   time.Time // zero until the server stops
	finished bool      // the handler returned: rc is not to be used
}

func newSSEWriter(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// write writes msg and flushes it.
func (o *sseWriter) write(msg string) error {
	o.mu.Lock()
	deadline := time.Now().Add(o.timeout)
	if !o.stopAt.IsZero() {
		deadline = o.stopAt
	}
	err := o.rc.SetWriteDeadline(deadline)
	o.mu.Unlock()
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := io.WriteString(o.w, msg); err != nil {
		return err
	}
	return o.rc.Flush()
}

// stopping gives the stream grace to end (called by the server's stop, on
// another goroutine).
func (o *sseWriter) stopping(grace time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished {
		return
	}
	o.stopAt = time.Now().Add(grace)
	_ = o.rc.SetWriteDeadline(o.stopAt) // ends a write in progress too
}

// finish marks the handler done.
func (o *sseWriter) finish() {
	o.mu.Lock()
	o.finished = true
	o.mu.Unlock()
}
