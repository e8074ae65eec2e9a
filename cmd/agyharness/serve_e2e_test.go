package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/internal/testcert"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testToken = "test-token-0123456789abcdef"

// hostProc is "agyharness serve" running as a process.
type hostProc struct {
	t    *testing.T
	base string
	cmd  *exec.Cmd
	done chan error
}

var listeningLine = regexp.MustCompile(`listening on (https?://\S+)`)

// startServe runs "agyharness serve" on a free loopback port, with args
// added.
func startServe(t *testing.T, args ...string) *hostProc {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600))
	cmd := exec.Command(harness(t), append([]string{"serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--heartbeat", "100ms"}, args...)...)
	cmd.Env = append(os.Environ(), "AGYHARNESS_LOG=info")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &hostProc{t: t, cmd: cmd}
	ch := lines(stderr)
	var logged bytes.Buffer
	deadline := time.After(wait)
	for h.base == "" {
		select {
		case l, ok := <-ch:
			require.True(t, ok, "serve exited: %s", logged.String())
			logged.WriteString(l + "\n")
			if m := listeningLine.FindStringSubmatch(l); m != nil {
				h.base = m[1]
			}
		case <-deadline:
			t.Fatal("serve did not print its address")
		}
	}
	go func() {
		for l := range ch {
			assert.NotContains(t, l, testToken, "the token is never logged")
		}
	}()
	h.done = reap(t, cmd)
	return h
}

// do sends a request with the token (auth false: without) and decodes a
// JSON answer into out when out is not nil.
func (h *hostProc) do(method, path string, body any, auth bool, out any) int {
	h.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(h.t, err)
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, h.base+path, r)
	require.NoError(h.t, err)
	if auth {
		req.Header.Set("Authorization", "Bearer "+testToken)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(h.t, err)
	if res.StatusCode >= 400 {
		var e apiError
		require.NoError(h.t, json.Unmarshal(raw, &e), "errors are JSON: %s", raw)
		require.NotEmpty(h.t, e.Error)
	}
	if out != nil {
		require.NoError(h.t, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return res.StatusCode
}

// sseEvent is one SSE message: its id line (0 when absent) and event.
type sseEvent struct {
	id uint64
	ev *messages.Event
}

// sseStream is an open GET .../events.
type sseStream struct {
	t      *testing.T
	cancel context.CancelFunc
	ch     chan sseEvent
	pings  chan struct{}
}

func (h *hostProc) events(sessionID string, lastEventID string) *sseStream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", h.base+"/v1/sessions/"+sessionID+"/events", nil)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusOK, res.StatusCode)
	require.Equal(h.t, "text/event-stream", res.Header.Get("Content-Type"))
	s := &sseStream{t: h.t, cancel: cancel, ch: make(chan sseEvent, 4096), pings: make(chan struct{}, 1)}
	go func() {
		defer close(s.ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.ev != nil {
					s.ch <- cur
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, ": ping"):
				select {
				case s.pings <- struct{}{}:
				default:
				}
			case strings.HasPrefix(line, "id: "):
				cur.id, _ = strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
			case strings.HasPrefix(line, "data: ") && line != "data: {}":
				var ev messages.Event
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev) == nil {
					cur.ev = &ev
				}
			}
		}
	}()
	h.t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() {
	s.cancel()
	for range s.ch {
	}
}

func (s *sseStream) until(what string, match func(*messages.Event) bool) []sseEvent {
	s.t.Helper()
	var got []sseEvent
	deadline := time.After(wait)
	for {
		select {
		case e, ok := <-s.ch:
			require.True(s.t, ok, "stream ended waiting for %s", what)
			got = append(got, e)
			if match(e.ev) {
				return got
			}
		case <-deadline:
			s.t.Fatalf("no %s on the stream", what)
		}
	}
}

func eidPath(sessionID, eid string) string {
	return "/v1/sessions/" + sessionID + "/elicitations/" + url.PathEscape(eid) + "/resolve"
}

func TestServeTwoSessionsSSEResume(t *testing.T) {
	fake1 := agytest.Start(t, agytest.Options{Conversation: true, Seed: 11, ChunkDelay: 2 * time.Millisecond})
	fake2 := agytest.Start(t, agytest.Options{Conversation: true, Seed: 12, ChunkDelay: 2 * time.Millisecond})
	h := startServe(t)

	// Auth.
	assert.Equal(t, http.StatusUnauthorized, h.do("GET", "/v1/sessions", nil, false, nil))
	req, _ := http.NewRequest("GET", h.base+"/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer wrong-token")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	assert.Equal(t, http.StatusOK, h.do("GET", "/healthz", nil, false, nil))

	// Bad requests.
	assert.Equal(t, http.StatusBadRequest, h.do("POST", "/v1/sessions", `{"port":`, true, nil))
	assert.Equal(t, http.StatusBadRequest, h.do("POST", "/v1/sessions", `{"prot":1}`, true, nil))
	assert.Equal(t, http.StatusBadRequest, h.do("POST", "/v1/sessions", ``, true, nil))
	assert.Equal(t, http.StatusUnprocessableEntity, h.do("POST", "/v1/sessions", `{}`, true, nil))
	assert.Equal(t, http.StatusUnprocessableEntity, h.do("POST", "/v1/sessions", `{"pid":1,"port":2}`, true, nil))
	assert.Equal(t, http.StatusUnprocessableEntity, h.do("POST", "/v1/sessions", `{"port":2,"read_mode":"x"}`, true, nil))
	big := `{"conversation_id":"` + strings.Repeat("x", maxBody) + `","port":1}`
	assert.Equal(t, http.StatusRequestEntityTooLarge, h.do("POST", "/v1/sessions", big, true, nil))
	assert.Equal(t, http.StatusNotFound, h.do("GET", "/v1/sessions/nope", nil, true, nil))
	assert.Equal(t, http.StatusNotFound, h.do("POST", "/v1/sessions/nope/turns", `{"text":"x"}`, true, nil))

	// Two sessions.
	var s1, s2 sessionView
	require.Equal(t, http.StatusCreated, h.do("POST", "/v1/sessions", map[string]any{"port": fake1.Port()}, true, &s1))
	require.Equal(t, http.StatusCreated, h.do("POST", "/v1/sessions",
		map[string]any{"port": fake2.Port(), "conversation_id": fake2.ConversationID(), "session_id": "second", "read_mode": "poll"}, true, &s2))
	assert.Equal(t, fake1.ConversationID(), s1.ConversationID)
	assert.Equal(t, "second", s2.ID)
	assert.Equal(t, http.StatusConflict, h.do("POST", "/v1/sessions", map[string]any{"port": fake2.Port(), "session_id": "second"}, true, nil))
	var list struct{ Sessions []sessionView }
	require.Equal(t, http.StatusOK, h.do("GET", "/v1/sessions", nil, true, &list))
	assert.Len(t, list.Sessions, 2)

	// Commands that are refused.
	assert.Equal(t, http.StatusUnprocessableEntity, h.do("POST", "/v1/sessions/"+s1.ID+"/turns", `{"text":""}`, true, nil))
	assert.Equal(t, http.StatusUnprocessableEntity, h.do("POST", eidPath(s1.ID, "x/prompt/1"), `{"action":"perhaps"}`, true, nil))
	assert.Equal(t, http.StatusNotFound, h.do("POST", eidPath(s1.ID, "x/prompt/1"), `{"action":"accept"}`, true, nil))

	// Session 1: stream, drop the stream at the first prompt, resume.
	first := h.events(s1.ID, "")
	require.Equal(t, http.StatusAccepted, h.do("POST", "/v1/sessions/"+s1.ID+"/turns", map[string]string{"text": "Show me what you can do"}, true, nil))
	got := first.until("the permission prompt", isType(messages.EventElicitationRequest))
	perm := got[len(got)-1].ev
	require.Equal(t, messages.KindPermission, perm.Kind)
	first.close()
	lastID := uint64(0)
	for _, e := range got {
		if e.id > lastID {
			lastID = e.id
		}
	}
	// serve owns no pane of agy's: allow once and deny only.
	require.Len(t, perm.Choices, 2)
	assert.Equal(t, []string{messages.ChoiceAllowOnce, messages.ChoiceDeny}, []string{perm.Choices[0].ID, perm.Choices[1].ID})
	assert.Equal(t, http.StatusUnprocessableEntity, h.do("POST", eidPath(s1.ID, perm.ElicitationID), `{"choice":"allow_always_settings"}`, true, nil))
	assert.Equal(t, http.StatusUnprocessableEntity, h.do("POST", eidPath(s1.ID, perm.ElicitationID), `{"choice":"always"}`, true, nil))
	require.Equal(t, http.StatusAccepted, h.do("POST", eidPath(s1.ID, perm.ElicitationID), `{"action":"accept"}`, true, nil))

	resumed := h.events(s1.ID, strconv.FormatUint(lastID, 10))
	more := resumed.until("the question", func(ev *messages.Event) bool {
		return ev.Type == messages.EventElicitationRequest && ev.Kind == messages.KindQuestion
	})
	q := more[len(more)-1].ev
	require.Equal(t, http.StatusUnprocessableEntity, h.do("POST", eidPath(s1.ID, q.ElicitationID),
		map[string]any{"action": "accept", "answers": []messages.Answer{{Question: q.Questions[0].Question, SelectedOptionIDs: []string{"7"}}}}, true, nil))
	require.Equal(t, http.StatusAccepted, h.do("POST", eidPath(s1.ID, q.ElicitationID),
		map[string]any{"action": "accept", "answers": []messages.Answer{{Question: q.Questions[0].Question, SelectedOptionIDs: []string{"1"}}}}, true, nil))
	more = append(more, resumed.until("the final message", func(ev *messages.Event) bool {
		return ev.Type == messages.EventMessage && strings.Contains(ev.Text, "single Go file")
	})...)
	more = append(more, resumed.until("idle", isStatus(messages.StateIdle))...)
	select {
	case <-resumed.pings:
	case <-time.After(wait):
		t.Fatal("no heartbeat on an idle stream")
	}
	resumed.close()

	// Everything the session published, from its log.
	all := h.events(s1.ID, "0")
	maxSeq := uint64(0)
	for _, e := range more {
		if e.ev.Seq > maxSeq {
			maxSeq = e.ev.Seq
		}
	}
	full := all.until("the last seq seen", func(ev *messages.Event) bool { return ev.Seq >= maxSeq })
	all.close()

	seen := append(append([]sseEvent{}, got...), more...)
	assert.Equal(t, committedSeqs(full), committedSeqs(seen), "the resumed client missed nothing")
	assert.Equal(t, deltaText(events(full)), deltaText(events(seen)))
	for _, e := range more {
		if e.ev.Seq != 0 { // a re-sent open prompt may carry seq 0 (reported to the actors owner)
			assert.Greater(t, e.ev.Seq, lastID, "resumed after Last-Event-ID")
			break
		}
	}

	// Session 2: decline a permission.
	st2 := h.events("second", "")
	require.Equal(t, http.StatusAccepted, h.do("POST", "/v1/sessions/second/turns", map[string]string{"text": "Read the README"}, true, nil))
	got2 := st2.until("the permission prompt", isType(messages.EventElicitationRequest))
	p2 := got2[len(got2)-1].ev
	require.Equal(t, http.StatusAccepted, h.do("POST", eidPath("second", p2.ElicitationID), `{"action":"decline"}`, true, nil))
	res2 := st2.until("resolved", isType(messages.EventElicitationResolved))
	assert.Equal(t, messages.ActionDecline, res2[len(res2)-1].ev.Action)
	st2.until("idle", isStatus(messages.StateIdle))
	for _, e := range got2 {
		assert.Equal(t, "second", e.ev.SessionID)
		assert.Equal(t, fake2.ConversationID(), e.ev.ConversationID)
	}
	st2.close()

	// Interrupt on an idle session answers once idle.
	assert.Equal(t, http.StatusOK, h.do("POST", "/v1/sessions/second/interrupt", nil, true, nil))

	// Metrics.
	req, _ = http.NewRequest("GET", h.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	metricsText, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		"agyharness_sessions 2",
		"agyharness_sessions_attached_total 2",
		`agyharness_events_total{type="message"}`,
		`agyharness_prompt_open_seconds_bucket{by=`,
		`agyharness_prompt_open_seconds_count{by=`,
		"# TYPE agyharness_event_latency_seconds histogram",
		"agyharness_rebinds_total 0",
		"go_goroutines",
	} {
		assert.Contains(t, string(metricsText), want)
	}

	// Detach one session.
	assert.Equal(t, http.StatusNoContent, h.do("DELETE", "/v1/sessions/second", nil, true, nil))
	require.Eventually(t, func() bool {
		return h.do("GET", "/v1/sessions/second", nil, true, nil) == http.StatusNotFound
	}, wait, 10*time.Millisecond)

	// SIGINT stops the host cleanly.
	require.NoError(t, h.cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-h.done:
		h.done <- err
		assert.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("serve did not stop on SIGINT")
	}
}

func events(es []sseEvent) []*messages.Event {
	out := make([]*messages.Event, len(es))
	for i, e := range es {
		out[i] = e.ev
	}
	return out
}

// committedSeqs are the seqs of every event but deltas (which a lagging
// subscriber may get merged), deduplicated (open prompts are re-sent), and
// without re-sent prompts that carry no seq.
func committedSeqs(es []sseEvent) []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	for _, e := range es {
		if e.ev.Type == messages.EventReasoningDelta || e.ev.Type == messages.EventOutputTextDelta || seen[e.ev.Seq] || e.ev.Seq == 0 {
			continue
		}
		seen[e.ev.Seq] = true
		out = append(out, e.ev.Seq)
	}
	return out
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key as PEM
// files, and returns their paths and a pool that trusts the certificate.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	return testcert.Files(t)
}

func TestServeHTTPS(t *testing.T) {
	certFile, keyFile, pool := selfSignedCert(t)
	h := startServe(t, "--tls-cert", certFile, "--tls-key", keyFile)
	require.True(t, strings.HasPrefix(h.base, "https://"), h.base)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest("GET", h.base+"/v1/sessions", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "bearer "+testToken)
	res, err := client.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	assert.NotNil(t, res.TLS)

	// Plain HTTP gets no answer from the HTTPS port.
	res, err = http.Get("http://" + strings.TrimPrefix(h.base, "https://") + "/healthz")
	if err == nil {
		res.Body.Close()
		assert.NotEqual(t, http.StatusOK, res.StatusCode)
	}
}
