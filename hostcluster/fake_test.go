package hostcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/internal/loopport"
	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/require"
)

// fakeLocal is a node's own sessions, scripted: a session's events are
// whatever the test publishes, and a turn publishes a user_message.
type fakeLocal struct {
	mu       sync.Mutex
	sessions map[string]*fakeSession
}

type fakeSession struct {
	id     string
	events []*messages.Event
	subs   []*fakeStream
	ended  bool
	// handed counts events given to any subscriber's channel
	handed atomic.Int64
	// docs are the session's documents (Read), by what; reads counts the
	// documents taken.
	docs  map[string][]byte
	reads int
}

type fakeStream struct {
	ch   chan *messages.Event
	done chan struct{}
	once sync.Once
	q    chan *messages.Event
}

func (s *fakeStream) C() <-chan *messages.Event { return s.ch }
func (s *fakeStream) Close()                    { s.once.Do(func() { close(s.done) }) }

func newFakeLocal() *fakeLocal { return &fakeLocal{sessions: make(map[string]*fakeSession)} }

func (f *fakeLocal) add(id string) *fakeSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &fakeSession{id: id}
	f.sessions[id] = s
	return s
}

// publish appends an event to a session and sends it to its subscribers.
func (f *fakeLocal) publish(id string, ev *messages.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	ev.Seq = uint64(len(s.events) + 1)
	ev.SessionID = id
	s.events = append(s.events, ev)
	for _, sub := range s.subs {
		sub.q <- ev
	}
}

// end ends a session: its streams close after their events.
func (f *fakeLocal) end(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	s.ended = true
	for _, sub := range s.subs {
		close(sub.q)
	}
	s.subs = nil
	delete(f.sessions, id)
}

func (f *fakeLocal) Sessions() []*clusterpb.SessionInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*clusterpb.SessionInfo
	for id, s := range f.sessions {
		out = append(out, &clusterpb.SessionInfo{Id: id, Events: uint64(len(s.events))})
	}
	return out
}

func (f *fakeLocal) Attach(ctx context.Context, req *clusterpb.CreateSession) (*clusterpb.SessionInfo, error) {
	if req.Port == 9 {
		return nil, &Error{Status: http.StatusBadGateway, Code: CodeFailed, Message: "attach: no agy on port 9"}
	}
	id := req.SessionId
	if id == "" {
		id = fmt.Sprintf("s-%d", req.Port)
	}
	f.mu.Lock()
	_, dup := f.sessions[id]
	f.mu.Unlock()
	if dup {
		return nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Message: "session exists"}
	}
	f.add(id)
	return &clusterpb.SessionInfo{Id: id, Port: req.Port}, nil
}

func (f *fakeLocal) Do(ctx context.Context, id string, c messages.Command) error {
	f.mu.Lock()
	_, ok := f.sessions[id]
	f.mu.Unlock()
	if !ok {
		return notFound(id)
	}
	switch c.Type {
	case messages.CommandTurn:
		if c.Text == "slow" {
			<-ctx.Done()
			return ctx.Err()
		}
		f.publish(id, &messages.Event{Type: messages.EventUserMessage, Text: c.Text, Origin: messages.OriginHarness})
	case messages.CommandDetach:
		f.end(id)
	}
	return nil
}

// Subscribe hands the events after afterSeq, then live ones, through an
// unbuffered channel: what it has handed is what the reader pulled.
func (f *fakeLocal) Subscribe(ctx context.Context, id string, after uint64) (LocalStream, uint64, error) {
	f.mu.Lock()
	s, ok := f.sessions[id]
	if !ok {
		f.mu.Unlock()
		return nil, 0, notFound(id)
	}
	published := uint64(len(s.events))
	if after > published {
		f.mu.Unlock()
		return nil, 0, &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: "beyond the last event"}
	}
	st := &fakeStream{ch: make(chan *messages.Event), done: make(chan struct{}), q: make(chan *messages.Event, 1<<16)}
	for _, ev := range s.events[after:] {
		st.q <- ev
	}
	s.subs = append(s.subs, st)
	f.mu.Unlock()
	go func() {
		defer close(st.ch)
		for {
			var ev *messages.Event
			select {
			case e, ok := <-st.q:
				if !ok {
					return
				}
				ev = e
			case <-st.done:
				return
			}
			select {
			case st.ch <- ev:
				s.handed.Add(1)
			case <-st.done:
				return
			}
		}
	}()
	return st, published, nil
}

// setDoc makes a session's document.
func (f *fakeLocal) setDoc(id, what string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	if s.docs == nil {
		s.docs = make(map[string][]byte)
	}
	s.docs[what] = data
}

func (f *fakeLocal) Read(ctx context.Context, id, what string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sessions[id]
	if !ok {
		return nil, notFound(id)
	}
	s.reads++
	return s.docs[what], nil
}

// freePort is a loopback port to name to a server before it binds it.
func freePort(t *testing.T) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts is n distinct such ports (loopport: outside the kernel's
// ephemeral range, so no other bind or connection takes one meanwhile).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := loopport.Pick(n)
	require.NoError(t, err)
	return ports
}

// testNodes starts nodes on loopback with the automanaged provider, each
// with its own fakeLocal, and waits until each sees every other alive.
func testNodes(t *testing.T, names ...string) ([]*Node, []*fakeLocal) {
	t.Helper()
	return testNodesTuned(t, nil, names...)
}

// testNodesTuned is testNodes with each node's Config changed by tune.
func testNodesTuned(t *testing.T, tune func(*Config), names ...string) ([]*Node, []*fakeLocal) {
	t.Helper()
	ports := freePorts(t, len(names))
	peers := make([]string, len(names))
	for i := range names {
		peers[i] = fmt.Sprintf("127.0.0.1:%d", ports[i])
	}
	providers := make([]Provider, len(names))
	for i := range names {
		providers[i] = Automanaged{Port: ports[i], Peers: peers, Refresh: 100 * time.Millisecond}
	}
	if tune == nil {
		return startTestNodes(t, providers, names)
	}
	return startTestNodes(t, providers, names, tune)
}

// testEtcdNodes starts nodes that find each other in etcd.
func testEtcdNodes(t *testing.T, endpoint string, names ...string) ([]*Node, []*fakeLocal) {
	t.Helper()
	providers := make([]Provider, len(names))
	for i := range names {
		providers[i] = Etcd{Endpoints: []string{endpoint}, Prefix: "/test-" + t.Name()}
	}
	return startTestNodes(t, providers, names)
}

// testCerts writes a CA and a certificate for 127.0.0.1 per node name in a
// temporary directory, as `agyharness cluster certs` does, and returns
// each node's mutual TLS.
func testCerts(t *testing.T, names ...string) (server, client map[string]*tls.Config) {
	t.Helper()
	var nodes []CertNode
	for _, name := range names {
		nodes = append(nodes, CertNode{Name: name, Hosts: []string{"127.0.0.1"}})
	}
	ca, files, err := WriteCerts(t.TempDir(), nodes, time.Hour, false)
	require.NoError(t, err)
	server, client = map[string]*tls.Config{}, map[string]*tls.Config{}
	for _, f := range files {
		server[f.Node], client[f.Node], err = LoadMutualTLS(f.Cert, f.Key, ca)
		require.NoError(t, err)
	}
	return server, client
}

// startTestNodes starts nodes with mutual TLS on remote (the default a
// node requires), then tune's changes.
func startTestNodes(t *testing.T, providers []Provider, names []string, tune ...func(*Config)) ([]*Node, []*fakeLocal) {
	t.Helper()
	nodes := make([]*Node, len(names))
	locals := make([]*fakeLocal, len(names))
	serverTLS, clientTLS := testCerts(t, names...)
	for i, name := range names {
		locals[i] = newFakeLocal()
		cfg := Config{Cluster: "test", Node: name, Advertise: "127.0.0.1:0", Local: locals[i], Provider: providers[i],
			ServerTLS: serverTLS[name], ClientTLS: clientTLS[name]}
		for _, f := range tune {
			f(&cfg)
		}
		n, err := Start(cfg)
		require.NoError(t, err)
		nodes[i] = n
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			require.NoError(t, n.Shutdown(ctx))
		})
	}
	for _, n := range nodes {
		waitFor(t, 15*time.Second, func() bool {
			alive := 0
			for _, st := range n.Nodes() {
				if st.State == StateAlive {
					alive++
				}
			}
			return alive == len(names)
		}, "node %s sees every node alive: %+v", n.Name(), n.Nodes())
	}
	return nodes, locals
}

func waitFor(t *testing.T, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not in %s: "+msg, append([]any{within}, args...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startEtcd runs Debian's etcd (etcd-server) on loopback ports with its
// data in a temporary directory, and returns its client endpoint. The test
// is skipped where etcd is not installed (.ci/run installs it).
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed (apt-get install etcd-server)")
	}
	ports := freePorts(t, 2)
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin, "--name", "test", "--data-dir", t.TempDir(),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "test="+peer, "--log-level", "error")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitFor(t, 20*time.Second, func() bool {
		res, err := http.Get(client + "/health")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, "etcd answers on %s", client)
	return strings.TrimPrefix(client, "http://")
}
