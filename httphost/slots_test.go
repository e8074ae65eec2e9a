package httphost

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// get sends a GET on c (HTTP/1.1, keep-alive) and reads its answer.
func get(t *testing.T, c net.Conn, br *bufio.Reader, path, token string) (*http.Response, error) {
	t.Helper()
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", path, auth); err != nil {
		return nil, err
	}
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res, nil
}

func TestHostUnauthenticatedConnectionsDoNotStarveATokenHolder(t *testing.T) {
	// The grace is long: room is made by evicting, not by the grace.
	h := startHost(t, serverConfig{host: oneSession(&feedSession{}), maxConns: 4, authGrace: time.Hour})
	// More connections without the token than there are slots: some say
	// nothing, some got a /healthz answer and hold the connection.
	var idle []net.Conn
	for i := range 12 {
		c := h.rawConn(t)
		if i%2 == 1 {
			res, err := get(t, c, bufio.NewReader(c), "/healthz", "")
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode)
		}
		idle = append(idle, c)
	}

	client := &http.Client{Timeout: 3 * time.Second}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest("GET", h.base+"/v1/sessions", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+hostTestToken)
	start := time.Now()
	res, err := client.Do(req)
	require.NoError(t, err, "the token holder is served, not left waiting for a slot")
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	t.Logf("served in %v", time.Since(start))

	// The slots the token holder got were the oldest unauthenticated ones.
	_, closed := closedWithin(t, idle[0], 5*time.Second)
	assert.True(t, closed, "the oldest connection without the token was evicted")
}

func TestHostUnauthorizedClosesTheConnection(t *testing.T) {
	h := startHost(t, serverConfig{host: oneSession(&feedSession{}), authGrace: time.Hour})
	for _, token := range []string{"", "wrong-token-0123456789"} {
		c := h.rawConn(t)
		br := bufio.NewReader(c)
		res, err := get(t, c, br, "/v1/sessions", token)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		assert.True(t, res.Close, "the 401 says Connection: close (token %q)", token)

		// The connection cannot take another guess.
		_, _ = fmt.Fprintf(c, "GET /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", hostTestToken)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err = br.ReadByte()
		// EOF, or a reset when the host closes with the guess unread.
		assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET),
			"the host closed the connection after its 401 (token %q): %v", token, err)
	}

	// A token holder's connection goes on across requests.
	c := h.rawConn(t)
	br := bufio.NewReader(c)
	for range 3 {
		res, err := get(t, c, br, "/v1/sessions", hostTestToken)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, res.StatusCode)
		assert.False(t, res.Close)
	}
}

func TestHostClosesAConnectionThatShowsNoTokenInTime(t *testing.T) {
	h := startHost(t, serverConfig{host: oneSession(&feedSession{}), authGrace: 300 * time.Millisecond})

	silent := h.rawConn(t)
	healthz := h.rawConn(t)
	hbr := bufio.NewReader(healthz)
	res, err := get(t, healthz, hbr, "/healthz", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	holder := h.rawConn(t)
	br := bufio.NewReader(holder)
	res, err = get(t, holder, br, "/v1/sessions", hostTestToken)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)

	// Well before the read-header (10 s) and idle (2 min) timeouts.
	for name, c := range map[string]net.Conn{"a silent connection": silent, "a /healthz connection": healthz} {
		_, closed := closedWithin(t, c, 5*time.Second)
		assert.True(t, closed, "%s is closed after the grace", name)
	}
	// Both were opened after the token holder's; its connection, past the
	// grace, still serves.
	res, err = get(t, holder, br, "/v1/sessions", hostTestToken)
	require.NoError(t, err, "the token holder's connection outlives the grace")
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

func TestHostSSEStreamOutlivesTheGrace(t *testing.T) {
	certFile, keyFile, pool := selfSignedCert(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	for name, tlsConfig := range map[string]*tls.Config{
		"http":  nil,
		"https": {Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}},
	} {
		t.Run(name, func(t *testing.T) {
			evs := make(chan *messages.Event)
			sess := &feedSession{subscribe: func(after uint64) eventStream {
				return &feed{ch: evs, done: make(chan struct{})}
			}}
			h := startHost(t, serverConfig{host: oneSession(sess), authGrace: 200 * time.Millisecond, tls: tlsConfig})
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			defer client.CloseIdleConnections()
			do := func(method, path, body string) *http.Response {
				req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+hostTestToken)
				res, err := client.Do(req)
				require.NoError(t, err)
				return res
			}
			res := do("POST", "/v1/sessions", `{"port":4242,"session_id":"s1"}`)
			res.Body.Close()
			require.Equal(t, http.StatusCreated, res.StatusCode)

			stream := do("GET", "/v1/sessions/s1/events", "")
			defer stream.Body.Close()
			require.Equal(t, http.StatusOK, stream.StatusCode)
			// A connection opened after the stream's is closed at the end of
			// its grace; the stream's grace is over by then too.
			late := h.rawConn(t)
			_, closed := closedWithin(t, late, 5*time.Second)
			require.True(t, closed, "a connection without the token is closed after the grace")

			got := make(chan []string, 1)
			go func() { ids, _ := sseIDs(t, stream.Body, 1); got <- ids }()
			select {
			case evs <- &messages.Event{Type: messages.EventMessage, Seq: 1, Text: "after the grace"}:
			case <-time.After(5 * time.Second):
				t.Fatal("the stream took no event")
			}
			select {
			case ids := <-got:
				assert.Equal(t, []string{"1"}, ids, "the stream delivers after the grace")
			case <-time.After(5 * time.Second):
				t.Fatal("the stream delivered nothing")
			}
		})
	}
}

func TestSlotListenerClosesABusyConnectionOnlyOnceIdle(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := newSlotListener(inner, 4, 50*time.Millisecond)
	defer l.Close()
	client, err := net.Dial("tcp", inner.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	c, err := l.Accept()
	require.NoError(t, err)
	defer c.Close()
	sc := c.(*slotConn)

	sc.setBusy(true) // a request without the token is being answered
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return sc.expired
	}, 5*time.Second, 5*time.Millisecond, "the grace ends")
	_, closed := closedWithin(t, client, 100*time.Millisecond)
	assert.False(t, closed, "the answer in progress is not cut")

	sc.setBusy(false) // answered
	_, closed = closedWithin(t, client, 5*time.Second)
	assert.True(t, closed, "closed once idle")
	l.mu.Lock()
	assert.Equal(t, 0, l.active, "its slot is free")
	l.mu.Unlock()
}

func TestSlotListenerEvictsTheOldestIdleUnauthenticatedConnection(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := newSlotListener(inner, 3, time.Hour)
	defer l.Close()
	accept := func() (client net.Conn, sc *slotConn) {
		client, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { client.Close() })
		c, err := l.Accept()
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return client, c.(*slotConn)
	}
	authed, a := accept()
	a.authenticated()
	busy, b := accept()
	b.setBusy(true) // a request without the token is being answered
	idle, _ := accept()

	accept() // every slot taken: one goes
	_, closed := closedWithin(t, idle, 5*time.Second)
	assert.True(t, closed, "the idle connection without the token made room")
	for name, c := range map[string]net.Conn{"authenticated": authed, "busy": busy} {
		_, closed := closedWithin(t, c, 100*time.Millisecond)
		assert.False(t, closed, "the %s connection stays", name)
	}
	l.mu.Lock()
	assert.Equal(t, 3, l.active)
	l.mu.Unlock()
}
