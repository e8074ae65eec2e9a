package httphost

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/hostcluster"
	"github.com/agyharness/agyharness/messages"
)

// MaxBody bounds every request body.
const MaxBody = 1 << 20

// hostAPI is what the HTTP host needs of an *actors.Host: the one
// registry of sessions.
type hostAPI interface {
	Attach(ctx context.Context, spec actors.Spec) (servedSession, error)
	// Sessions lists the live sessions, those still attaching too, ordered
	// by id.
	Sessions() []servedSession
	// Session is the live session with that id, attaching or not.
	Session(id string) (servedSession, bool)
}

// servedSession is what the HTTP host needs of an *actors.Session.
type servedSession interface {
	ID() string
	ConversationID() string
	Events() <-chan *messages.Event
	Do(ctx context.Context, c messages.Command) error
	Detach(ctx context.Context) error
	Err() error
	Port() int
	Done() <-chan struct{}
	Subscribe(ctx context.Context, afterSeq uint64) (eventStream, error)
	Stats() actors.Stats
	// Attached is zero while the session is attaching: the API shows it
	// only once its POST has answered.
	Attached() time.Time
	OpenElicitations() []string
}

// eventStream is a subscription: *actors.Subscription.
type eventStream interface {
	C() <-chan *messages.Event
	Close()
}

// rawEventStream is an eventStream whose events come already encoded
// (a session of another node: hostcluster.Stream opened raw); C is nil.
type rawEventStream interface {
	RawC() <-chan hostcluster.RawEvent
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

func (a actorsHost) Sessions() []servedSession {
	all := a.h.Sessions()
	out := make([]servedSession, len(all))
	for i, s := range all {
		out[i] = actorsSession{s}
	}
	return out
}

func (a actorsHost) Session(id string) (servedSession, bool) {
	s, ok := a.h.Session(id)
	if !ok {
		return nil, false
	}
	return actorsSession{s}, true
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
	// maxConns caps the connections served at once. 0: no cap. A
	// connection that shows no valid token within authGrace (authGrace, 5s)
	// of being accepted is closed, and so is the oldest such connection
	// when every slot is taken; connections with the token beyond the cap
	// wait to be accepted (slotListener).
	maxConns  int
	authGrace time.Duration
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
	// noConsole leaves the web console out.
	noConsole bool
}

// server is the multi-session HTTP host (docs/HTTP.md). The
// sessions, and what each knows of its prompts, are the host's and the
// sessions' own (hostAPI). Each session the server attached has a watcher
// goroutine that reads its event stream from the start, for the metrics.
type server struct {
	cfg       serverConfig
	log       *slog.Logger
	tokenHash [32]byte
	base      context.Context // parent of every request's context; cancelled by stop
	cancel    context.CancelFunc
	wg        sync.WaitGroup // watchers
	metrics   *metrics

	// cluster is this host's node of a cluster (nil: not in one); set
	// before the server serves.
	cluster clusterAPI

	once sync.Once
	mux  http.Handler // handler(), built on the first request of ServeHTTP

	board       *board      // every session's row, kept by the watchers
	transcripts transcripts // every attached session's, kept by the watchers
	tickets     tickets     // single-use tickets of the event streams
	signins     tickets     // one-time sign-in codes of the console
}

func (c serverConfig) withDefaults() serverConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.readHeaderTimeout, 10*time.Second)
	def(&c.readTimeout, 30*time.Second)
	def(&c.authGrace, authGrace)
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
		metrics: newMetrics(cfg.host),
		board:   newBoard(),
		signins: tickets{ttl: signInTTL},
	}
}

// stop ends every SSE stream and request context.
func (s *server) stop() { s.cancel() }

// wait waits for the session watchers (they end when their sessions do).
func (s *server) wait() { s.wg.Wait() }

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", s.auth(s.metrics.handler()))
	mux.Handle("POST /v1/sessions", s.auth(http.HandlerFunc(s.createSession)))
	mux.Handle("GET /v1/sessions", s.auth(http.HandlerFunc(s.listSessions)))
	mux.Handle("GET /v1/sessions/{id}", s.auth(s.withSession(s.getSession)))
	mux.Handle("DELETE /v1/sessions/{id}", s.auth(s.withSession(s.deleteSession)))
	mux.Handle("GET /v1/sessions/{id}/events", s.authOrTicket(s.withSession(s.events)))
	mux.Handle("GET /v1/sessions/{id}/transcript", s.auth(s.withSession(s.getTranscript)))
	mux.Handle("GET /v1/sessions/{id}/models", s.auth(s.withSession(s.getModels)))
	mux.Handle("GET /v1/board", s.authOrTicket(http.HandlerFunc(s.boardStream)))
	mux.Handle("POST /v1/tickets", s.auth(http.HandlerFunc(s.mintTicket)))
	mux.Handle("POST /v1/sessions/{id}/turns", s.auth(s.withSession(s.turn)))
	mux.Handle("POST /v1/sessions/{id}/elicitations/{eid}/resolve", s.auth(s.withSession(s.resolve)))
	mux.Handle("POST /v1/sessions/{id}/interrupt", s.auth(s.withSession(s.interrupt)))
	if !s.cfg.noConsole {
		index, assets := consoleHandler()
		mux.Handle("GET /{$}", index)
		mux.Handle("GET /console/", assets)
		mux.HandleFunc("POST /v1/signin", s.signIn)
	}
	if s.cluster != nil {
		mux.Handle("GET /v1/nodes", s.auth(http.HandlerFunc(s.nodes)))
	}
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
	Code  string `json:"code,omitempty"`
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
// token's length does not leak either). The valid token marks the
// connection as a token holder's (slotListener); a 401 closes the
// connection, so each guess costs a new one.
func (s *server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearerToken(r.Header.Get("Authorization"))
		h := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(h[:], s.tokenHash[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agyharness"`)
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		markAuthenticated(r)
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

type sessionHandler func(w http.ResponseWriter, r *http.Request, sess servedSession)

func (s *server) withSession(h sessionHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		sess, ok := s.cfg.host.Session(id)
		if !ok && s.cluster != nil && !fromCluster(r) {
			s.remoteSession(w, r, id, h)
			return
		}
		if !ok || sess.Attached().IsZero() {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q", id))
			return
		}
		h(w, r, sess)
	})
}

// attachedSessions lists the sessions the API shows: attached (not still
// attaching), not ended, ordered by id.
func attachedSessions(host hostAPI) []servedSession {
	return slices.DeleteFunc(host.Sessions(), func(sess servedSession) bool { return sess.Attached().IsZero() })
}

// decodeBody reads a size-limited JSON body into v, refusing unknown
// fields. It writes the error response itself and reports whether to go on.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body := http.MaxBytesReader(w, r.Body, MaxBody)
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
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", MaxBody))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "request body is empty: send a JSON object")
	default:
		writeError(w, http.StatusBadRequest, "malformed JSON body: "+err.Error())
	}
	return false
}

// commandStatus maps a session's refusal of a command to a status.
func commandStatus(err error) int {
	var owner interface{ HTTPStatus() int } // a refusal from the session's node
	if errors.As(err, &owner) {
		return owner.HTTPStatus()
	}
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
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "sessions": len(attachedSessions(s.cfg.host))})
}

// createRequest is POST /v1/sessions' body.
type createRequest struct {
	PID            int    `json:"pid,omitempty"`
	Port           int    `json:"port,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	CSRFToken      string `json:"csrf_token,omitempty"`
	ReadMode       string `json:"read_mode,omitempty"`
	SessionID      string `json:"session_id,omitempty"`
	// Node creates the session on that node of the cluster.
	Node string `json:"node,omitempty"`
}

// SessionView is a session as the API shows it.
type SessionView struct {
	ID             string         `json:"id"`
	ConversationID string         `json:"conversation_id"`
	Port           int            `json:"port"`
	Created        time.Time      `json:"created"`
	Events         uint64         `json:"events"`
	Rebinds        int            `json:"rebinds"`
	Restarts       map[string]int `json:"restarts"`
	OpenPrompts    []string       `json:"open_elicitations"`
	// In a cluster: the session's node, and live or node_lost.
	Node  string `json:"node,omitempty"`
	State string `json:"state,omitempty"`
}

func view(sess servedSession) SessionView {
	st := sess.Stats()
	open := sess.OpenElicitations()
	if open == nil {
		open = []string{} // [] in JSON, not null
	}
	return SessionView{
		ID: sess.ID(), ConversationID: sess.ConversationID(), Port: sess.Port(),
		Created: sess.Attached().UTC(), Events: st.Events, Rebinds: st.Rebinds, Restarts: st.Restarts,
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
	if _, err := actors.ParseReadMode(req.ReadMode); err != nil && req.ReadMode != "" {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf(`"read_mode": %v`, err))
		return
	}
	if spec.SessionID != "" && !validSessionID(spec.SessionID) {
		writeError(w, http.StatusUnprocessableEntity, `"session_id": 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" and "-" (not "." or "..")`)
		return
	}
	if req.Node != "" && s.createOnNode(w, r, req) {
		return
	}
	if spec.SessionID != "" {
		if _, dup := s.cfg.host.Session(spec.SessionID); dup {
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
	s.watch(sess)
	w.Header().Set("Location", "/v1/sessions/"+url.PathEscape(sess.ID()))
	writeJSON(w, http.StatusCreated, s.withNode(view(sess)))
}

var sessionIDChars = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// validSessionID: a session id is a path segment of the API.
func validSessionID(id string) bool {
	return sessionIDChars.MatchString(id) && id != "." && id != ".."
}

// watch starts the session's watcher: it reads the session's events from
// the start for the metrics until the session ends.
func (s *server) watch(sess servedSession) {
	s.metrics.attached()
	t := s.transcripts.start(sess.ID())
	v := view(sess)
	s.board.add(BoardRow{ID: v.ID, ConversationID: v.ConversationID, Port: v.Port, Created: v.Created,
		OpenPrompts: len(v.OpenPrompts), LastActivity: v.Created, Events: v.Events})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.transcripts.end(sess.ID(), t)
		defer s.board.remove(sess.ID())
		s.metrics.follow(sess, func(ev *messages.Event) {
			t.add(ev)
			s.board.event(sess.ID(), ev)
		})
		if err := sess.Err(); err != nil {
			s.log.Warn("session ended", "session", sess.ID(), "err", err)
		} else {
			s.log.Info("session ended", "session", sess.ID())
		}
	}()
}

func (s *server) listSessions(w http.ResponseWriter, r *http.Request) {
	if s.cluster != nil {
		s.listClusterSessions(w, r)
		return
	}
	all := attachedSessions(s.cfg.host)
	views := make([]SessionView, len(all))
	for i, sess := range all {
		views[i] = view(sess)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": views})
}

func (s *server) getSession(w http.ResponseWriter, r *http.Request, sess servedSession) {
	writeJSON(w, http.StatusOK, s.withNode(view(sess)))
}

func (s *server) deleteSession(w http.ResponseWriter, r *http.Request, sess servedSession) {
	bodyRead(w)
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := sess.Detach(ctx); err != nil {
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

func (s *server) turn(w http.ResponseWriter, r *http.Request, sess servedSession) {
	var req turnRequest
	if !decodeBody(w, r, &req) {
		return
	}
	c := messages.Command{Type: messages.CommandTurn, Text: req.Text, Model: req.Model}
	if err := CheckCommand(c); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	if err := sess.Do(r.Context(), c); err != nil {
		writeError(w, commandStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "sent"})
}

// resolveRequest is POST .../elicitations/{eid}/resolve's body.
type resolveRequest struct {
	Action  string            `json:"action"`
	Answers []messages.Answer `json:"answers,omitempty"`
	Choice  string            `json:"choice,omitempty"`
	Content json.RawMessage   `json:"content,omitempty"`
}

func (s *server) resolve(w http.ResponseWriter, r *http.Request, sess servedSession) {
	eid := r.PathValue("eid")
	var req resolveRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res := messages.Resolve{ElicitationID: eid, Action: req.Action, Answers: req.Answers, Content: req.Content, Choice: req.Choice}
	if err := CheckResolve(res); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	// The session says whether the prompt is open, or was and is resolved,
	// and whether the answer fits it.
	err := sess.Do(r.Context(), messages.Command{Type: messages.CommandResolve, ElicitationID: eid, Action: req.Action, Answers: req.Answers, Choice: req.Choice})
	switch {
	case errors.Is(err, actors.ErrAnswerOnItsWay):
		writeError(w, http.StatusConflict, fmt.Sprintf("elicitation %q is already answered: that answer is on its way to agy", eid))
		return
	case errors.Is(err, actors.ErrElicitationResolved):
		writeError(w, http.StatusConflict, fmt.Sprintf("elicitation %q is already resolved", eid))
		return
	case err != nil:
		writeError(w, commandStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "accepted"})
}

func (s *server) interrupt(w http.ResponseWriter, r *http.Request, sess servedSession) {
	if r.ContentLength > 0 {
		var empty struct{}
		if !decodeBody(w, r, &empty) {
			return
		}
	}
	bodyRead(w)
	if err := sess.Do(r.Context(), messages.Command{Type: messages.CommandInterrupt}); err != nil {
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
func (s *server) events(w http.ResponseWriter, r *http.Request, sess servedSession) {
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
	sub, err := sess.Subscribe(r.Context(), after)
	if err != nil {
		writeError(w, commandStatus(err), err.Error())
		return
	}
	defer sub.Close()
	// Every event the client saw was published before Subscribe returned.
	if n := sess.Stats().Events; after > n {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Last-Event-ID %d is beyond the session's last event (%d): reconnect without it", after, n))
		return
	}
	out, stop, ok := s.openSSE(w, r, "events")
	defer stop()
	if !ok {
		return
	}

	tick := time.NewTicker(s.cfg.heartbeat)
	defer tick.Stop()
	const end = "event: end\ndata: {}\n\n"
	lastID := after
	evC, rawC := sub.C(), (<-chan hostcluster.RawEvent)(nil)
	if r, ok := sub.(rawEventStream); ok && r.RawC() != nil {
		evC, rawC = nil, r.RawC()
	}
	for {
		select {
		case re, ok := <-rawC: // one JSON object on one line, checked by hostcluster
			if !ok {
				_ = out.write(end)
				return
			}
			lastID = max(lastID, re.Seq)
			if out.write(fmt.Sprintf("id: %d\ndata: %s\n\n", lastID, re.JSON)) != nil {
				return
			}
		case ev, ok := <-evC:
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

// openSSE answers 200 with an event stream and writes its first comment
// (": agyharness NAME"), with the reconnection delay (sseRetry) for a
// stream opened with a ticket (an EventSource). The stream's writes end when the host stops,
// after its grace; stop finishes it. ok is false when the first write
// failed (the client is gone).
func (s *server) openSSE(w http.ResponseWriter, r *http.Request, name string) (out *sseWriter, stop func(), ok bool) {
	out = newSSEWriter(w, s.cfg.sseWriteTimeout)
	stopWatch := context.AfterFunc(s.base, func() { out.stopping(s.cfg.sseEndGrace) })
	stop = func() { stopWatch(); out.finish() }
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	first := ": agyharness " + name + "\n"
	if r.Context().Value(ticketKey{}) != nil {
		first += fmt.Sprintf("retry: %d\n", sseRetry)
	}
	return out, stop, out.write(first+"\n") == nil
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
