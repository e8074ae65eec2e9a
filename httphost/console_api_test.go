package httphost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/hostcluster"
	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTicketsAreSingleUseAndExpire(t *testing.T) {
	now := time.Unix(1000, 0)
	tk := tickets{now: func() time.Time { return now }}
	a, err := tk.mint()
	require.NoError(t, err)
	assert.True(t, tk.use(a), "a fresh ticket is good")
	assert.False(t, tk.use(a), "a ticket is good once")
	b, err := tk.mint()
	require.NoError(t, err)
	now = now.Add(ticketTTL)
	assert.False(t, tk.use(b), "an expired ticket is refused")
	assert.False(t, tk.use(""), "no ticket")
	assert.False(t, tk.use("nope"))
}

// TestTicketsReopenTheirOwnStreamAlone: a ticket that opened a stream
// reopens that stream (a browser's own reconnect), ending the one still
// open with it, up to ticketTTL after its stream ended; never another
// stream, and never a sign-in.
func TestTicketsReopenTheirOwnStreamAlone(t *testing.T) {
	now := time.Unix(1000, 0)
	tk := tickets{now: func() time.Time { return now }}
	a, err := tk.mint()
	require.NoError(t, err)
	cancelled := 0
	release, ok := tk.open(a, "/v1/board", func() { cancelled++ })
	require.True(t, ok, "a fresh ticket opens a stream")
	now = now.Add(time.Hour)
	release2, ok := tk.open(a, "/v1/board", func() { cancelled++ })
	require.True(t, ok, "its stream reopens while it is open, however long")
	assert.Equal(t, 1, cancelled, "the reopen ends the stream still open with it")
	release() // the first stream's end, after the reopen: changes nothing
	release2()
	now = now.Add(ticketTTL - time.Second)
	release3, ok := tk.open(a, "/v1/board", func() {})
	require.True(t, ok, "within ticketTTL of its stream's end")
	release3()
	now = now.Add(ticketTTL)
	_, ok = tk.open(a, "/v1/board", func() {})
	assert.False(t, ok, "ticketTTL after its stream's end")

	b, err := tk.mint()
	require.NoError(t, err)
	release, ok = tk.open(b, "/v1/sessions/s1/events", func() {})
	require.True(t, ok)
	release()
	assert.False(t, tk.use(b), "a ticket that opened a stream is no sign-in code")
	c, err := tk.mint()
	require.NoError(t, err)
	release, ok = tk.open(c, "/v1/sessions/s1/events", func() {})
	require.True(t, ok)
	release()
	_, ok = tk.open(c, "/v1/sessions/s2/events", func() {})
	assert.False(t, ok, "another stream")
	_, ok = tk.open(c, "/v1/sessions/s1/events", func() {})
	assert.False(t, ok, "a ticket shown for another stream is spent")
}

func TestHostTicketOpensOneEventStream(t *testing.T) {
	h := startHost(t, serverConfig{host: oneSession(&feedSession{})})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)

	res, body = h.request(t, "POST", "/v1/tickets", "", nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	var minted struct {
		Ticket    string `json:"ticket"`
		ExpiresIn int    `json:"expires_in"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &minted))
	require.NotEmpty(t, minted.Ticket)
	assert.Positive(t, minted.ExpiresIn)

	get := func(path string) *http.Response {
		res, err := http.Get(h.base + path) // no Authorization header
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	first := get("/v1/sessions/s1/events?ticket=" + minted.Ticket)
	assert.Equal(t, http.StatusOK, first.StatusCode)
	assert.Equal(t, "text/event-stream", first.Header.Get("Content-Type"))
	first.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, get("/v1/sessions/s1/events?ticket=forged").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, get("/v1/sessions?ticket="+minted.Ticket).StatusCode, "a ticket opens event streams only")
	assert.Equal(t, http.StatusUnauthorized, get("/v1/board?ticket="+minted.Ticket).StatusCode, "and only the stream it opened")
	assert.Equal(t, http.StatusUnauthorized, get("/v1/sessions/s1/events?ticket="+minted.Ticket).StatusCode, "spent by that")
	res2, _ := h.request(t, "POST", "/v1/tickets", "", map[string]string{"Authorization": "Bearer wrong"})
	assert.Equal(t, http.StatusUnauthorized, res2.StatusCode, "minting needs the token")
}

// TestHostTicketStreamResumesWithLastEventID: what a browser's EventSource
// does when its connection drops, with a plain HTTP client: the same URL
// (its ticket, its first ?after=) with Last-Event-ID: the events after
// that id, none twice, and the reopen ends the stream still open.
func TestHostTicketStreamResumesWithLastEventID(t *testing.T) {
	var log []*messages.Event
	for i := uint64(1); i <= 10; i++ {
		log = append(log, &messages.Event{Type: messages.EventMessage, Seq: i, Text: fmt.Sprint("m", i)})
	}
	sess := &feedSession{subscribe: func(after uint64) eventStream { return newFeed(log[after:], false) }}
	sess.published.Store(10)
	h := startHost(t, serverConfig{host: oneSession(sess)})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242,"session_id":"s1"}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	res, body = h.request(t, "POST", "/v1/tickets", "", nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	var minted struct{ Ticket string }
	require.NoError(t, json.Unmarshal([]byte(body), &minted))
	url := h.base + "/v1/sessions/s1/events?after=2&ticket=" + minted.Ticket

	open := func(lastEventID string) (*http.Response, *bufio.Reader) {
		req, err := http.NewRequest("GET", url, nil)
		require.NoError(t, err)
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		require.Equal(t, http.StatusOK, res.StatusCode)
		return res, bufio.NewReader(res.Body)
	}
	// frames reads n events' ids, and whether the stream gave a retry.
	frames := func(r *bufio.Reader, n int) (ids []string, retry bool) {
		id := ""
		for len(ids) < n {
			line, err := r.ReadString('\n')
			require.NoError(t, err, "after ids %v", ids)
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "retry: "):
				retry = true
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case line == "" && id != "":
				ids, id = append(ids, id), ""
			}
		}
		return ids, retry
	}

	first, r := open("")
	ids, retry := frames(r, 3)
	assert.Equal(t, []string{"3", "4", "5"}, ids, "after ?after=2")
	assert.True(t, retry, "an EventSource is told its reconnection delay")
	first.Body.Close() // the connection drops

	second, r := open("5")
	ids, _ = frames(r, 2)
	assert.Equal(t, []string{"6", "7"}, ids, "Last-Event-ID wins over the URL's ?after=: nothing twice, nothing lost")

	_, r3 := open("7")
	ids, _ = frames(r3, 3)
	assert.Equal(t, []string{"8", "9", "10"}, ids)
	_, err := io.Copy(io.Discard, second.Body)
	assert.NoError(t, err, "the reopen ended the stream still open with the ticket")
}

func TestTranscriptFoldsDeltasIntoTheirItems(t *testing.T) {
	tr := newTranscript()
	seq := uint64(0)
	add := func(ev messages.Event) {
		seq++
		ev.Seq = seq
		tr.add(&ev)
	}
	add(messages.Event{Type: messages.EventStatus, State: messages.StateRunning})
	add(messages.Event{Type: messages.EventUserMessage, Text: "hi"})
	add(messages.Event{Type: messages.EventReasoningDelta, ItemID: "r1", Delta: "thin"})
	add(messages.Event{Type: messages.EventReasoningDelta, ItemID: "r1", Delta: "king"})
	add(messages.Event{Type: messages.EventOutputTextDelta, ItemID: "m1", Delta: "Hel"})
	add(messages.Event{Type: messages.EventOutputTextDelta, ItemID: "m1", Delta: "lo"})
	add(messages.Event{Type: messages.EventFunctionCall, CallID: "c1", Name: "run_command"})
	add(messages.Event{Type: messages.EventFunctionCallOutputDelta, CallID: "c1", ItemID: "o1", Delta: "a\n"})
	add(messages.Event{Type: messages.EventFunctionCallOutputDelta, CallID: "c1", ItemID: "o1", Snapshot: "x\n"})
	add(messages.Event{Type: messages.EventFunctionCallOutputDelta, CallID: "c1", ItemID: "o1", Delta: "y\n"})

	snap := tr.snapshot("s")
	require.Len(t, snap.Events, 5)
	assert.Equal(t, uint64(10), snap.Through)
	assert.Equal(t, messages.StateRunning, snap.State)
	assert.Equal(t, "thinking", snap.Events[1].Snapshot, "reasoning deltas add up")
	assert.Equal(t, uint64(4), snap.Events[1].Seq, "a folded delta carries its last seq")
	assert.Equal(t, "Hello", snap.Events[2].Snapshot)
	assert.Empty(t, snap.Events[2].Delta)
	assert.Equal(t, "x\ny\n", snap.Events[4].Snapshot, "a snapshot restarts the text")

	add(messages.Event{Type: messages.EventMessage, ItemID: "m1", Text: "Hello"})
	add(messages.Event{Type: messages.EventFunctionCallOutput, CallID: "c1", Output: "x\ny\n"})
	snap = tr.snapshot("s")
	var types []messages.EventType
	for _, ev := range snap.Events {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []messages.EventType{messages.EventUserMessage, messages.EventReasoningDelta,
		messages.EventFunctionCall, messages.EventMessage, messages.EventFunctionCallOutput}, types,
		"a complete item replaces its deltas")
}

func TestTranscriptIsBounded(t *testing.T) {
	old := maxTranscript
	maxTranscript = 10_000
	t.Cleanup(func() { maxTranscript = old })
	tr := newTranscript()
	for i := range 200 {
		tr.add(&messages.Event{Type: messages.EventUserMessage, Seq: uint64(i + 1), Text: strings.Repeat("x", 500)})
	}
	snap := tr.snapshot("s")
	assert.True(t, snap.Truncated)
	assert.Less(t, len(snap.Events), 20)
	assert.Equal(t, uint64(200), snap.Events[len(snap.Events)-1].Seq, "the newest are kept")
}

// readSSE reads "event:"/"data:" frames from an SSE body.
func readSSE(t *testing.T, res *http.Response) <-chan [2]string {
	ch := make(chan [2]string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		event, data := "message", ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data != "" {
					ch <- [2]string{event, data}
				}
				event, data = "message", ""
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

func nextFrame(t *testing.T, ch <-chan [2]string, what string, match func(event, data string) bool) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-ch:
			require.True(t, ok, "stream ended before %s", what)
			if match(f[0], f[1]) {
				return f[1]
			}
		case <-deadline:
			t.Fatalf("no %s on the board", what)
		}
	}
}

func TestHostBoardStreamsSessionRows(t *testing.T) {
	sess := &feedSession{}
	host := oneSession(sess)
	h := startHost(t, serverConfig{host: host})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)

	req, err := http.NewRequest("GET", h.base+"/v1/board", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+hostTestToken)
	bres, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer bres.Body.Close()
	frames := readSSE(t, bres)
	row := func(data string) BoardRow {
		var r BoardRow
		require.NoError(t, json.Unmarshal([]byte(data), &r))
		return r
	}
	first := row(nextFrame(t, frames, "the session's row", func(e, _ string) bool { return e == "session" }))
	assert.Equal(t, "s1", first.ID)
	assert.Equal(t, BoardStarting, first.State)
	nextFrame(t, frames, "ready", func(e, _ string) bool { return e == "ready" })

	now := time.Now().UTC()
	for _, ev := range []*messages.Event{
		{Type: messages.EventUserMessage, Seq: 1, Time: now, Text: "fix\n the   build"},
		{Type: messages.EventUserMessage, Seq: 2, Time: now, Text: "second turn"},
		{Type: messages.EventStatus, Seq: 3, Time: now, State: messages.StateWaiting},
		{Type: messages.EventElicitationRequest, Seq: 4, Time: now, ElicitationID: "e1"},
		{Type: messages.EventUsage, Seq: 5, Time: now, Model: "MODEL_A"},
	} {
		sess.events <- ev
	}
	got := row(nextFrame(t, frames, "the model", func(e, d string) bool { return e == "session" && row(d).Model == "MODEL_A" }))
	assert.Equal(t, "fix the build", got.Title, "the first turn, white space folded")
	assert.Equal(t, messages.StateWaiting, got.State)
	assert.Equal(t, 1, got.OpenPrompts)
	assert.Equal(t, uint64(5), got.Events)

	host.end(sess)
	gone := nextFrame(t, frames, "the session gone", func(e, _ string) bool { return e == "gone" })
	assert.JSONEq(t, `{"id":"s1"}`, gone)
}

func TestHostTranscriptAndModelsOfARealSession(t *testing.T) {
	fake := agytest.Start(t, agytest.Options{Conversation: true, Seed: 3, ChunkDelay: time.Millisecond})
	ah := actors.NewHost(actors.Config{})
	h := startHost(t, serverConfig{host: actorsHost{ah}})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":`+strconv.Itoa(fake.Port())+`,"conversation_id":"`+fake.ConversationID()+`","session_id":"r1"}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	res, body = h.request(t, "POST", "/v1/sessions/r1/turns", `{"text":"Show me what you can do"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)

	var tr Transcript
	require.Eventually(t, func() bool {
		res, body := h.request(t, "GET", "/v1/sessions/r1/transcript", "", nil)
		if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &tr) != nil {
			return false
		}
		for _, ev := range tr.Events {
			if ev.Type == messages.EventMessage {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the reply reaches the transcript")
	assert.Equal(t, "r1", tr.SessionID)
	assert.Positive(t, tr.Through)
	seen := map[uint64]bool{}
	for _, ev := range tr.Events {
		assert.False(t, seen[ev.Seq], "seq %d twice", ev.Seq)
		seen[ev.Seq] = true
		assert.LessOrEqual(t, ev.Seq, tr.Through)
	}

	var models struct{ Models []ModelView }
	require.Eventually(t, func() bool {
		_, body := h.request(t, "GET", "/v1/sessions/r1/models", "", nil)
		return json.Unmarshal([]byte(body), &models) == nil && len(models.Models) > 0
	}, 10*time.Second, 50*time.Millisecond, "agy's models are listed")
	assert.Len(t, models.Models, len(agytest.DefaultModels()))
	for _, m := range models.Models {
		assert.NotEmpty(t, m.Model)
	}
}

// stubCluster is a clusterAPI whose other nodes' sessions the test sets.
type stubCluster struct {
	mu       sync.Mutex
	sessions []hostcluster.ClusterSession
	// docs are the documents Read answers, by session id and what.
	docs map[string][]byte
}

func (c *stubCluster) set(s ...hostcluster.ClusterSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions = s
}
func (c *stubCluster) Name() string                                { return "A" }
func (c *stubCluster) Nodes() []hostcluster.NodeStatus             { return nil }
func (c *stubCluster) Figures() map[string]hostcluster.NodeFigures { return nil }
func (c *stubCluster) Sessions(context.Context) []hostcluster.ClusterSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sessions)
}
func (c *stubCluster) Create(context.Context, string, *clusterpb.CreateSession) (*clusterpb.SessionInfo, error) {
	return nil, errors.New("no")
}
func (c *stubCluster) Locate(_ context.Context, id string) (*clusterpb.SessionInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cs := range c.sessions {
		if cs.Info.Id == id {
			return cs.Info, nil
		}
	}
	return nil, &hostcluster.Error{Status: http.StatusNotFound, Code: hostcluster.CodeNotFound, Message: "no session"}
}
func (c *stubCluster) Do(context.Context, string, string, messages.Command) error {
	return errors.New("no")
}
func (c *stubCluster) Read(_ context.Context, node, id, what string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.docs[id+"/"+what]
	if !ok || node != "B" {
		return nil, &hostcluster.Error{Status: http.StatusNotFound, Code: hostcluster.CodeNotFound, Message: "no session"}
	}
	return d, nil
}
func (c *stubCluster) Subscribe(context.Context, string, string, uint64) (*hostcluster.Stream, error) {
	return nil, errors.New("no")
}
func (c *stubCluster) SubscribeRaw(context.Context, string, string, uint64) (*hostcluster.Stream, error) {
	return nil, errors.New("no")
}

func TestHostBoardShowsOtherNodesSessions(t *testing.T) {
	old := clusterBoardEvery
	clusterBoardEvery = 20 * time.Millisecond
	t.Cleanup(func() { clusterBoardEvery = old })
	cl := &stubCluster{}
	cl.set(hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "b1", Node: "B", OpenElicitations: []string{"e"}}})
	s := newServer(serverConfig{host: &feedHost{}, token: hostTestToken, heartbeat: time.Hour})
	s.cluster = cl
	srv := httptest.NewServer(s.handler())
	t.Cleanup(func() { s.stop(); srv.Close(); s.wait() })

	req, err := http.NewRequest("GET", srv.URL+"/v1/board", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+hostTestToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	frames := readSSE(t, res)
	var row BoardRow
	require.NoError(t, json.Unmarshal([]byte(nextFrame(t, frames, "B's session", func(e, _ string) bool { return e == "session" })), &row))
	assert.Equal(t, BoardRow{ID: "b1", Node: "B", State: SessionLive, OpenPrompts: 1, Created: time.Unix(0, 0).UTC(), LastActivity: time.Unix(0, 0).UTC()}, row)
	nextFrame(t, frames, "ready", func(e, _ string) bool { return e == "ready" })

	// B's own row of its session: its state, model, title, activity.
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	cl.set(hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "b1", Node: "B", OpenElicitations: []string{"e"},
		State: messages.StateWaiting, Model: "MODEL_B", Title: "fix the build", LastActivityUnixNano: at.UnixNano()}})
	require.NoError(t, json.Unmarshal([]byte(nextFrame(t, frames, "B's row", func(e, _ string) bool { return e == "session" })), &row))
	assert.Equal(t, BoardRow{ID: "b1", Node: "B", State: messages.StateWaiting, Model: "MODEL_B", Title: "fix the build", OpenPrompts: 1,
		Created: time.Unix(0, 0).UTC(), LastActivity: at}, row)
	// What B sends is bounded as B bounds it: a state no row has is live.
	cl.set(hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "b1", Node: "B", State: "<b>pwned</b>",
		Title: strings.Repeat("t", 5000), Model: strings.Repeat("m", 5000)}})
	require.NoError(t, json.Unmarshal([]byte(nextFrame(t, frames, "B's odd row", func(e, _ string) bool { return e == "session" })), &row))
	assert.Equal(t, SessionLive, row.State)
	assert.Equal(t, maxTitle, utf8.RuneCountInString(row.Title))
	assert.Equal(t, maxRemoteModel, utf8.RuneCountInString(row.Model))

	cl.set(hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "b1", Node: "B"}, Lost: true})
	require.NoError(t, json.Unmarshal([]byte(nextFrame(t, frames, "B lost", func(e, _ string) bool { return e == "session" })), &row))
	assert.Equal(t, SessionNodeLost, row.State)
	cl.set()
	assert.JSONEq(t, `{"id":"b1"}`, nextFrame(t, frames, "B's session gone", func(e, _ string) bool { return e == "gone" }))
}

// TestClusterLocalServesRowsAndDocuments: what a node serves the others
// of its sessions: each with its board row, and its transcript and models
// as its own API answers them.
func TestClusterLocalServesRowsAndDocuments(t *testing.T) {
	sess := &feedSession{}
	host := oneSession(sess)
	h := startHost(t, serverConfig{host: host})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, ev := range []*messages.Event{
		{Type: messages.EventUserMessage, Seq: 1, Time: at, Text: "fix the build"},
		{Type: messages.EventStatus, Seq: 2, Time: at, State: messages.StateWaiting},
		{Type: messages.EventUsage, Seq: 3, Time: at, Model: "MODEL_A"},
	} {
		sess.events <- ev
	}
	ready := make(chan struct{})
	close(ready)
	l := &clusterLocal{s: h.server, ready: ready}
	require.Eventually(t, func() bool {
		list := l.Sessions()
		return len(list) == 1 && list[0].Model == "MODEL_A"
	}, 5*time.Second, 10*time.Millisecond, "the row reaches the listing")
	info := l.Sessions()[0]
	assert.Equal(t, messages.StateWaiting, info.State)
	assert.Equal(t, "fix the build", info.Title)
	assert.Equal(t, at.UnixNano(), info.LastActivityUnixNano)

	ctx := context.Background()
	raw, err := l.Read(ctx, "s1", hostcluster.ReadTranscript)
	require.NoError(t, err)
	var tr Transcript
	require.NoError(t, json.Unmarshal(raw, &tr))
	assert.Equal(t, "s1", tr.SessionID)
	assert.Equal(t, uint64(3), tr.Through)
	raw, err = l.Read(ctx, "s1", hostcluster.ReadModels)
	require.NoError(t, err)
	assert.JSONEq(t, `{"models":[]}`, string(raw))
	var e *hostcluster.Error
	_, err = l.Read(ctx, "nope", hostcluster.ReadTranscript)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusNotFound, e.Status)
	_, err = l.Read(ctx, "s1", "../../metrics")
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusUnprocessableEntity, e.Status)
}

// TestHostServesAnotherNodesTranscriptAndModels: a session of another
// node has its transcript and models read from its node, checked.
func TestHostServesAnotherNodesTranscriptAndModels(t *testing.T) {
	cl := &stubCluster{docs: map[string][]byte{
		"b1/transcript": []byte(`{"session_id":"b1","through":7,"state":"idle","truncated":false,"events":[{"type":"user_message","seq":1,"text":"hi"}]}`),
		"b1/models":     []byte(`{"models":[{"model":"MODEL_B","display_name":"B's"}]}`),
		"b2/transcript": []byte(`{"session_id":"b1","through":7,"events":[]}`),
		"b2/models":     []byte(`{"models":[`),
	}}
	cl.set(hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "b1", Node: "B"}},
		hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "b2", Node: "B"}},
		hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "c1", Node: "C"}})
	s := newServer(serverConfig{host: &feedHost{}, token: hostTestToken, heartbeat: time.Hour})
	s.cluster = cl
	srv := httptest.NewServer(s.handler())
	t.Cleanup(func() { s.stop(); srv.Close(); s.wait() })
	get := func(path string) (int, string) {
		req, err := http.NewRequest("GET", srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+hostTestToken)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	code, body := get("/v1/sessions/b1/transcript")
	require.Equal(t, http.StatusOK, code, body)
	var tr Transcript
	require.NoError(t, json.Unmarshal([]byte(body), &tr))
	assert.Equal(t, uint64(7), tr.Through)
	require.Len(t, tr.Events, 1)
	assert.Equal(t, "hi", tr.Events[0].Text)
	code, body = get("/v1/sessions/b1/models")
	require.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"models":[{"model":"MODEL_B","display_name":"B's"}]}`, body)

	code, body = get("/v1/sessions/b2/transcript")
	assert.Equal(t, http.StatusBadGateway, code, "another session's transcript: %s", body)
	code, body = get("/v1/sessions/b2/models")
	assert.Equal(t, http.StatusBadGateway, code, "not JSON: %s", body)
	code, body = get("/v1/sessions/c1/transcript")
	assert.Equal(t, http.StatusNotFound, code, "the node's refusal crosses: %s", body)
}

// TestClusterLocalPassesAResolvesChoice: a resolve from another node
// reaches the session with its choice (a permission's row).
func TestClusterLocalPassesAResolvesChoice(t *testing.T) {
	got := make(chan messages.Command, 1)
	sess := &feedSession{do: func(c messages.Command) error { got <- c; return nil }}
	h := startHost(t, serverConfig{host: oneSession(sess)})
	res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242}`, nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	ready := make(chan struct{})
	close(ready)
	l := &clusterLocal{s: h.server, ready: ready}
	require.NoError(t, l.Do(context.Background(), "s1", messages.Command{Type: messages.CommandResolve,
		ElicitationID: "c1/3", Action: "decline", Choice: messages.ChoiceDeny}))
	c := <-got
	assert.Equal(t, messages.ChoiceDeny, c.Choice)
	assert.Equal(t, "c1/3", c.ElicitationID)
}
