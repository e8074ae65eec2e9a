package httphost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hostTestToken = "host-test-token-0123456789"

// feedSession is a servedSession whose events and subscriptions the test
// feeds.
type feedSession struct {
	id        string
	events    chan *messages.Event
	done      chan struct{}
	published atomic.Uint64
	// stats are the session's counters but Events (published).
	stats    actors.Stats
	open     []string
	attached time.Time
	// subscribe makes a subscription's stream (default: one that stays
	// open, empty, until closed).
	subscribe func(afterSeq uint64) eventStream
	// do answers commands (default: every command is taken).
	do func(c messages.Command) error
}

func (s *feedSession) ID() string                       { return s.id }
func (s *feedSession) ConversationID() string           { return "c1" }
func (s *feedSession) Port() int                        { return 4242 }
func (s *feedSession) Events() <-chan *messages.Event   { return s.events }
func (s *feedSession) Done() <-chan struct{}            { return s.done }
func (s *feedSession) Err() error                       { return nil }
func (s *feedSession) Attached() time.Time              { return s.attached }
func (s *feedSession) OpenElicitations() []string       { return s.open }
func (s *feedSession) Detach(ctx context.Context) error { return nil }
func (s *feedSession) Stats() actors.Stats {
	st := s.stats
	st.Events = s.published.Load()
	return st
}
func (s *feedSession) Do(ctx context.Context, c messages.Command) error {
	if s.do != nil {
		return s.do(c)
	}
	return nil
}
func (s *feedSession) Subscribe(ctx context.Context, afterSeq uint64) (eventStream, error) {
	if s.subscribe != nil {
		return s.subscribe(afterSeq), nil
	}
	return newFeed(nil, false), nil
}

// feed is an eventStream: its events, then (when end) the end of the
// session, or nothing more until Close.
type feed struct {
	ch   chan *messages.Event
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

func newFeed(evs []*messages.Event, end bool) *feed {
	f := &feed{ch: make(chan *messages.Event), done: make(chan struct{})}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for _, ev := range evs {
			select {
			case f.ch <- ev:
			case <-f.done:
				return
			}
		}
		if end {
			close(f.ch)
		}
	}()
	return f
}

func (f *feed) C() <-chan *messages.Event { return f.ch }
func (f *feed) Close() {
	f.once.Do(func() { close(f.done) })
	f.wg.Wait()
}

// feedHost attaches feedSessions, made by newSession, and lists them as
// actors.Host does; end ends one, shutdown every one.
type feedHost struct {
	newSession func(spec actors.Spec) *feedSession
	// refuse, when set, refuses the attach of a spec it returns an error for.
	refuse func(spec actors.Spec) error

	mu       sync.Mutex
	attached []*feedSession
}

func (h *feedHost) Attach(ctx context.Context, spec actors.Spec) (servedSession, error) {
	if h.refuse != nil {
		if err := h.refuse(spec); err != nil {
			return nil, err
		}
	}
	if spec.SessionID == "" {
		spec.SessionID = "s1"
	}
	s := h.newSession(spec)
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.events == nil {
		s.events, s.done = make(chan *messages.Event), make(chan struct{})
		s.attached = time.Now()
		h.attached = append(h.attached, s)
	}
	return s, nil
}

func (h *feedHost) Sessions() []servedSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]servedSession, 0, len(h.attached))
	for _, s := range h.attached {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b servedSession) int { return strings.Compare(a.ID(), b.ID()) })
	return out
}

func (h *feedHost) Session(id string) (servedSession, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.attached {
		if s.id == id {
			return s, true
		}
	}
	return nil, false
}

// end ends a session as actors does: it is done, then its stream closes.
func (h *feedHost) end(s *feedSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attached = slices.DeleteFunc(h.attached, func(a *feedSession) bool { return a == s })
	close(s.done)
	close(s.events)
}

// shutdown ends every session, as Host.Shutdown does.
func (h *feedHost) shutdown() {
	h.mu.Lock()
	all := slices.Clone(h.attached)
	h.mu.Unlock()
	for _, s := range all {
		h.end(s)
	}
}

// runningHost is server.serve running in-process on a loopback port.
type runningHost struct {
	server     *server
	base       string
	cancel     context.CancelFunc
	served     chan error
	hostCtxErr chan error // the error of shutdownHost's context when it was called
	stoppedIn  time.Duration
	client     *http.Client // for request; http.DefaultClient when nil
}

func startHost(t testing.TB, cfg serverConfig) *runningHost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return startHostOn(t, cfg, ln)
}

// startPipeHost serves on in-memory connections (net.Pipe), which a
// synctest bubble can wait on: its requests go through h.client.
func startPipeHost(t *testing.T, cfg serverConfig) *runningHost {
	t.Helper()
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	h := startHostOn(t, cfg, ln)
	tr := &http.Transport{DialContext: ln.dial}
	h.client = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	return h
}

// pipeListener hands out the server's ends of net.Pipe connections.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func startHostOn(t testing.TB, cfg serverConfig, ln net.Listener) *runningHost {
	t.Helper()
	if cfg.token == "" {
		cfg.token = hostTestToken
	}
	if cfg.heartbeat == 0 {
		cfg.heartbeat = time.Hour
	}
	if cfg.attachTimeout == 0 {
		cfg.attachTimeout = 5 * time.Second
	}
	s := newServer(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	scheme := "http://"
	if cfg.tls != nil {
		scheme = "https://"
	}
	h := &runningHost{server: s, base: scheme + ln.Addr().String(), cancel: cancel, served: make(chan error, 1), hostCtxErr: make(chan error, 1)}
	go func() {
		h.served <- s.serve(ctx, ln, nil, func(hctx context.Context) error {
			h.hostCtxErr <- hctx.Err()
			switch host := cfg.host.(type) {
			case *feedHost:
				host.shutdown()
			case actorsHost:
				return host.h.Shutdown(hctx)
			}
			return nil
		})
	}()
	t.Cleanup(func() { h.stop(t) })
	return h
}

// stop ends serve and waits for it.
func (h *runningHost) stop(t testing.TB) {
	t.Helper()
	if h.cancel == nil {
		return
	}
	start := time.Now()
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.served:
		h.stoppedIn = time.Since(start)
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return")
	}
}

func (h *runningHost) request(t testing.TB, method, path, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+hostTestToken)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := http.DefaultClient
	if h.client != nil {
		client = h.client
	}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

// oneSession attaches sess on every request, named by the first.
func oneSession(sess *feedSession) *feedHost {
	return &feedHost{newSession: func(spec actors.Spec) *feedSession {
		if sess.id == "" {
			sess.id = spec.SessionID
		}
		return sess
	}}
}

// rawConn opens a TCP connection to the host.
func (h *runningHost) rawConn(t *testing.T) net.Conn {
	t.Helper()
	_, addr, _ := strings.Cut(h.base, "://")
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reads c until the host closes it (any answer is read and
// returned) or the deadline passes.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) (answer string, closed bool) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), false
	}
	return string(b), true
}

func TestHostCutsOffASlowBodyAndIdleConnections(t *testing.T) {
	h := startHost(t, serverConfig{
		host:              oneSession(&feedSession{}),
		readHeaderTimeout: 200 * time.Millisecond,
		readTimeout:       400 * time.Millisecond,
		idleTimeout:       400 * time.Millisecond,
	})

	// A large Content-Length and one byte, with and without the token.
	for _, auth := range []string{"Authorization: Bearer " + hostTestToken + "\r\n", ""} {
		c := h.rawConn(t)
		_, err := fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", auth)
		require.NoError(t, err)
		answer, closed := closedWithin(t, c, 5*time.Second)
		assert.True(t, closed, "a body that never comes is cut off (auth %t); got %q", auth != "", answer)
	}

	// Headers that never end.
	c := h.rawConn(t)
	_, err := fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	_, closed := closedWithin(t, c, 5*time.Second)
	assert.True(t, closed, "headers that never end are cut off")

	// A keep-alive connection left idle after a request.
	c = h.rawConn(t)
	_, err = fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	_, closed = closedWithin(t, c, 5*time.Second)
	assert.True(t, closed, "an idle keep-alive connection is closed")
}

// In a synctest bubble, on net.Pipe connections: the attach takes 600 ms
// of the bubble's time, exactly.
func TestHostLongRequestsOutliveTheReadTimeout(t *testing.T) {
	synctest.Test(t, testHostLongRequestsOutliveTheReadTimeout)
}

func testHostLongRequestsOutliveTheReadTimeout(t *testing.T) {
	release := make(chan struct{})
	sess := &feedSession{}
	h := startPipeHost(t, serverConfig{
		host: &feedHost{newSession: func(spec actors.Spec) *feedSession {
			<-release // an attach that takes longer than the read timeout
			sess.id = spec.SessionID
			return sess
		}},
		readHeaderTimeout: 100 * time.Millisecond,
		readTimeout:       200 * time.Millisecond,
	})
	go func() {
		time.Sleep(600 * time.Millisecond) // longer than the read timeout: what the test is about
		close(release)
	}()
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242}`, nil)
	assert.Equal(t, http.StatusCreated, res.StatusCode, body)
}

func TestHostCapsConcurrentConnections(t *testing.T) {
	h := startHost(t, serverConfig{host: oneSession(&feedSession{}), maxConns: 2, authGrace: time.Hour})
	request := "GET /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + hostTestToken + "\r\n\r\n"
	// Two token holders' connections take the two slots.
	first, second := h.rawConn(t), h.rawConn(t)
	for _, c := range []net.Conn{first, second} {
		_, err := fmt.Fprint(c, request)
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	// A third waits: no connection without the token to evict.
	third := h.rawConn(t)
	_, err := fmt.Fprint(third, request)
	require.NoError(t, err)
	require.NoError(t, third.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = bufio.NewReader(third).ReadByte()
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "a third connection waits: %v", err)

	require.NoError(t, first.Close())
	require.NoError(t, third.SetReadDeadline(time.Now().Add(5*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(third), nil)
	require.NoError(t, err, "served once a connection is free")
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

// sseIDs reads an SSE body and returns each message's id line ("" when it
// has none) and whether the stream ended with "event: end".
func sseIDs(t *testing.T, body io.Reader, n int) (ids []string, end bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	var id string
	var data, isEnd bool
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if isEnd {
				return ids, true
			}
			if data {
				ids = append(ids, id)
				if len(ids) == n {
					return ids, false
				}
			}
			id, data = "", false
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case line == "event: end":
			isEnd = true
		case strings.HasPrefix(line, "data: "):
			data = true
		}
	}
	return ids, false
}

func TestHostSSEIDsAndLastEventIDBeyondTheLog(t *testing.T) {
	sess := &feedSession{subscribe: func(after uint64) eventStream {
		return newFeed([]*messages.Event{
			{Type: messages.EventStatus, Seq: 4, State: messages.StateRunning},
			{Type: messages.EventMessage, Seq: 5, Text: "hi"},
			{Type: messages.EventElicitationRequest, Seq: 2, ElicitationID: "e"}, // an open prompt, re-sent
		}, true)
	}}
	sess.published.Store(5)
	h := startHost(t, serverConfig{host: oneSession(sess)})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242,"session_id":"s1"}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)

	res, body = h.request(t, "GET", "/v1/sessions/s1/events", "", map[string]string{"Last-Event-ID": "6"})
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "beyond the session's last event: %s", body)
	assert.Contains(t, body, "beyond")
	res, body = h.request(t, "GET", "/v1/sessions/s1/events?after=99", "", nil)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)

	req, err := http.NewRequest("GET", h.base+"/v1/sessions/s1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+hostTestToken)
	req.Header.Set("Last-Event-ID", "3")
	sse, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer sse.Body.Close()
	require.Equal(t, http.StatusOK, sse.StatusCode)
	ids, end := sseIDs(t, sse.Body, 4)
	assert.Equal(t, []string{"4", "5", "5"}, ids, "every event has an id, and it never goes back")
	assert.True(t, end)
}

func TestHostSessionIDsAreCheckedAndLocationEscaped(t *testing.T) {
	h := startHost(t, serverConfig{host: &feedHost{newSession: func(spec actors.Spec) *feedSession {
		return &feedSession{id: spec.SessionID}
	}}})
	for _, id := range []string{"p/q", strings.Repeat("a", 129), "..", ".", "a b", "é"} {
		body, _ := json.Marshal(map[string]any{"port": 4242, "session_id": id})
		res, text := h.request(t, "POST", "/v1/sessions", string(body), nil)
		assert.Equal(t, http.StatusUnprocessableEntity, res.StatusCode, "session_id %q: %s", id, text)
	}
	id := strings.Repeat("a", 120) + "-._Z9"
	res, text := h.request(t, "POST", "/v1/sessions", `{"port":4242,"session_id":"`+id+`"}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, text)
	loc := res.Header.Get("Location")
	assert.Equal(t, "/v1/sessions/"+id, loc)
	res, text = h.request(t, "GET", loc, "", nil)
	assert.Equal(t, http.StatusOK, res.StatusCode, text)
}

func TestHostHeadersAuthAndErrorBodies(t *testing.T) {
	h := startHost(t, serverConfig{host: oneSession(&feedSession{})})
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		res, body := h.request(t, "GET", "/v1/sessions", "", map[string]string{"Authorization": scheme + " " + hostTestToken})
		assert.Equal(t, http.StatusOK, res.StatusCode, "scheme %q: %s", scheme, body)
	}
	for _, bad := range []string{"Basic " + hostTestToken, hostTestToken, "Bearer", "Bearer wrong-token-0123456789"} {
		res, _ := h.request(t, "GET", "/v1/sessions", "", map[string]string{"Authorization": bad})
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "%q", bad)
		assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	}

	res, body := h.request(t, "GET", "/%3Cscript%3Ealert(1)%3C/script%3E", "", nil)
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.NotContains(t, body, "<", "the path is not echoed as markup")
	var e apiError
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	assert.Contains(t, e.Error, "no such endpoint")

	res, body = h.request(t, "GET", "/v1/sessions/%3Cb%3E", "", nil)
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.NotContains(t, body, "<")

	res, _ = h.request(t, "GET", "/healthz", "", nil)
	assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
}

// stuckStream is a subscription that always has another large event.
type stuckStream struct {
	*feed
	sent atomic.Int64
}

func newStuckStream() *stuckStream {
	s := &stuckStream{feed: &feed{ch: make(chan *messages.Event), done: make(chan struct{})}}
	big := strings.Repeat("x", 64<<10)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for seq := uint64(1); ; seq++ {
			select {
			case s.ch <- &messages.Event{Type: messages.EventMessage, Seq: seq, Text: big}:
				s.sent.Add(1)
			case <-s.done:
				return
			}
		}
	}()
	return s
}

func TestHostShutdownWithAStalledSSEClient(t *testing.T) {
	stuck := newStuckStream()
	sess := &feedSession{subscribe: func(after uint64) eventStream {
		if after == 0 {
			return stuck
		}
		return newFeed(nil, false) // a live client's stream: quiet until the end
	}}
	sess.published.Store(1)
	h := startHost(t, serverConfig{host: oneSession(sess), sseEndGrace: 300 * time.Millisecond})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242,"session_id":"s1"}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)

	// A client that asks for the stream and never reads it.
	c := h.rawConn(t)
	_, err := fmt.Fprintf(c, "GET /v1/sessions/s1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", hostTestToken)
	require.NoError(t, err)
	// Its stream stalls once the socket buffers are full.
	var last int64 = -1
	require.Eventually(t, func() bool {
		n := stuck.sent.Load()
		stalled := n > 8 && n == last
		last = n
		return stalled
	}, 20*time.Second, 200*time.Millisecond)

	// A client that reads.
	req, err := http.NewRequest("GET", h.base+"/v1/sessions/s1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+hostTestToken)
	req.Header.Set("Last-Event-ID", "1")
	live, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer live.Body.Close()
	require.Equal(t, http.StatusOK, live.StatusCode)
	ended := make(chan bool, 1)
	go func() {
		_, end := sseIDs(t, live.Body, 1)
		ended <- end
	}()

	h.stop(t)
	assert.Less(t, h.stoppedIn, 3*time.Second, "the stalled client does not hold the shutdown")
	assert.NoError(t, <-h.hostCtxErr, "the host's shutdown has its own budget")
	select {
	case end := <-ended:
		assert.True(t, end, "a stream ends with event: end on shutdown")
	case <-time.After(5 * time.Second):
		t.Fatal("the live stream did not end")
	}
}

// gatedProxy forwards the TCP connections it accepts to target, once
// released: until then a client's TLS handshake waits.
func gatedProxy(t *testing.T, target int) (port int, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	open, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-done:
			c.Close()
			return false
		default:
		}
		conns = append(conns, c)
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !track(c) {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-open:
				case <-done:
					return
				}
				up, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", target))
				if err != nil || !track(up) {
					c.Close()
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _ = io.Copy(up, c)
					up.Close()
				}()
				_, _ = io.Copy(c, up)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		close(done)
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	var once sync.Once
	return ln.Addr().(*net.TCPAddr).Port, func() { once.Do(func() { close(open) }) }
}

func TestHostConcurrentCreatesWithOneSessionID(t *testing.T) {
	fake := agytest.Start(t, agytest.Options{Seed: 5})
	port, release := gatedProxy(t, fake.Port())
	host := actors.NewHost(actors.Config{})
	h := startHost(t, serverConfig{host: actorsHost{host}, attachTimeout: 20 * time.Second})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, host.Shutdown(ctx))
	})
	body := fmt.Sprintf(`{"port":%d,"session_id":"dup"}`, port)

	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", h.base+"/v1/sessions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+hostTestToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		res.Body.Close()
		first <- res.StatusCode
	}()
	// The first attach is under way (agy's port answers nothing yet).
	require.Eventually(t, func() bool { _, ok := host.Session("dup"); return ok }, 10*time.Second, 5*time.Millisecond)
	res, text := h.request(t, "GET", "/v1/sessions/dup", "", nil)
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "a session still attaching is not shown: %s", text)
	_, text = h.request(t, "GET", "/v1/sessions", "", nil)
	assert.JSONEq(t, `{"sessions":[]}`, text)
	for range 2 {
		res, text := h.request(t, "POST", "/v1/sessions", body, nil)
		assert.Equal(t, http.StatusConflict, res.StatusCode, text)
	}
	release()
	select {
	case code := <-first:
		assert.Equal(t, http.StatusCreated, code)
	case <-time.After(30 * time.Second):
		t.Fatal("the first attach did not finish")
	}
}

func TestHostAsksTheSessionAboutItsPrompts(t *testing.T) {
	sess := &feedSession{open: []string{"c1/prompt/2"}, do: func(c messages.Command) error {
		switch c.ElicitationID {
		case "c1/prompt/1":
			return fmt.Errorf("resolve: %w %q: %w", actors.ErrUnknownElicitation, c.ElicitationID, actors.ErrElicitationResolved)
		case "c1/prompt/2":
			return nil
		case "c1/prompt/4":
			return fmt.Errorf("resolve: %w %q: %w", actors.ErrUnknownElicitation, c.ElicitationID, actors.ErrAnswerOnItsWay)
		}
		return fmt.Errorf("resolve: %w %q", actors.ErrUnknownElicitation, c.ElicitationID)
	}}
	h := startHost(t, serverConfig{host: oneSession(sess)})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242,"session_id":"s1"}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)

	res, body = h.request(t, "GET", "/v1/sessions/s1", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	var v SessionView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	assert.Equal(t, []string{"c1/prompt/2"}, v.OpenPrompts, "the session's open prompts")
	assert.Equal(t, sess.attached.UTC(), v.Created, "created when the session attached")

	for eid, want := range map[string]int{
		"c1/prompt/1": http.StatusConflict, // resolved
		"c1/prompt/2": http.StatusAccepted,
		"c1/prompt/3": http.StatusNotFound, // never open
		"c1/prompt/4": http.StatusConflict, // an answer on its way
	} {
		res, body := h.request(t, "POST", eidPath("s1", eid), `{"action":"accept"}`, nil)
		assert.Equal(t, want, res.StatusCode, "%s: %s", eid, body)
		if eid == "c1/prompt/4" {
			assert.Contains(t, body, "already answered: that answer is on its way to agy")
		}
	}
}

func eidPath(sessionID, eid string) string {
	return "/v1/sessions/" + sessionID + "/elicitations/" + url.PathEscape(eid) + "/resolve"
}
