package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agyharness/agyharness/hostcluster"
	"github.com/agyharness/agyharness/internal/loopport"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clusterNodeProc is "agyharness serve --cluster" as a process: a hostProc
// that also keeps its log, to find data races in this module's code.
type clusterNodeProc struct {
	*hostProc
	name string

	mu  sync.Mutex
	log bytes.Buffer
}

var nodeLine = regexp.MustCompile(`node (\S+) of cluster (\S+) at (\S+)`)

var (
	certDirsMu sync.Mutex
	certDirs   = map[*testing.T]string{}
)

// nodeCerts makes node name's certificate with `agyharness cluster certs`,
// in a directory of the test's whose CA every node of the test shares, and
// returns serve's flags for it.
func nodeCerts(t *testing.T, name string) []string {
	t.Helper()
	certDirsMu.Lock()
	dir, ok := certDirs[t]
	if !ok {
		dir = filepath.Join(t.TempDir(), "certs")
		certDirs[t] = dir
		t.Cleanup(func() {
			certDirsMu.Lock()
			delete(certDirs, t)
			certDirsMu.Unlock()
		})
	}
	certDirsMu.Unlock()
	out, err := exec.Command(harness(t), "cluster", "certs", "--out", dir, "--node", name+"=127.0.0.1").CombinedOutput()
	require.NoError(t, err, "cluster certs: %s", out)
	return []string{"--remote-tls-cert", filepath.Join(dir, name+".pem"), "--remote-tls-key", filepath.Join(dir, name+"-key.pem"),
		"--remote-tls-ca", filepath.Join(dir, "ca.pem")}
}

// startClusterNode runs a serve process that joins a cluster, with mutual
// TLS on remote unless args choose (--remote-tls-* or
// --insecure-cluster-no-auth).
func startClusterNode(t *testing.T, name string, args ...string) *clusterNodeProc {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600))
	if !slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--remote-tls-") || a == "--insecure-cluster-no-auth"
	}) {
		args = append(args, nodeCerts(t, name)...)
	}
	cmd := exec.Command(harness(t), append([]string{"serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile,
		"--heartbeat", "100ms", "--node", name}, args...)...)
	cmd.Env = append(os.Environ(), "AGYHARNESS_LOG=info")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	n := &clusterNodeProc{hostProc: &hostProc{t: t, cmd: cmd}, name: name}
	ch := lines(stderr)
	deadline := time.After(wait)
	joined := false
	for n.base == "" || !joined {
		select {
		case l, ok := <-ch:
			require.True(t, ok, "serve %s exited: %s", name, n.logText())
			n.logLine(l)
			if m := listeningLine.FindStringSubmatch(l); m != nil {
				n.base = m[1]
			}
			if nodeLine.MatchString(l) {
				joined = true
			}
		case <-deadline:
			t.Fatalf("serve %s did not join: %s", name, n.logText())
		}
	}
	go func() {
		for l := range ch {
			n.logLine(l)
		}
	}()
	t.Cleanup(func() { // runs after reap's: the node has exited
		n.checkRaces(t)
		if t.Failed() {
			log := strings.Split(n.logText(), "\n")
			t.Logf("node %s, the end of its log:\n%s", name, strings.Join(log[max(0, len(log)-80):], "\n"))
		}
	})
	n.done = reap(t, cmd)
	return n
}

func (n *clusterNodeProc) logLine(l string) {
	assert.NotContains(n.t, l, testToken, "the token is never logged")
	n.mu.Lock()
	n.log.WriteString(l + "\n")
	n.mu.Unlock()
}

func (n *clusterNodeProc) logText() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}

// raceAccess is the first frame of an access in a data race report.
var raceAccess = regexp.MustCompile(`(?m)^\s*(?:Previous )?(?:[Rr]ead|[Ww]rite|Atomic \S+) at \S+ by [^\n]*\n\s*(\S+)`)

// checkRaces fails on a data race report where this module's code made
// one of the two accesses. (The pinned Proto.Actor cluster and remote race
// among themselves, through our calls too: those are not this module's to
// fix.)
func (n *clusterNodeProc) checkRaces(t *testing.T) {
	for _, report := range strings.Split(n.logText(), "WARNING: DATA RACE")[1:] {
		report, _, _ = strings.Cut(report, "==================")
		for _, m := range raceAccess.FindAllStringSubmatch(report, -1) {
			if strings.HasPrefix(m[1], "github.com/agyharness/agyharness/") || strings.HasPrefix(m[1], "main.") {
				t.Errorf("node %s: data race in agyharness code:\n%s", n.name, report)
				break
			}
		}
	}
}

// kill sends SIGKILL and waits for the process to end.
func (n *clusterNodeProc) kill() {
	require.NoError(n.t, n.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case err := <-n.done:
		n.done <- err
	case <-time.After(wait):
		n.t.Fatalf("node %s did not die", n.name)
	}
}

// freeLoopbackPort is a loopback port to name to a server before it binds it.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	return freeLoopbackPorts(t, 1)[0]
}

// freeLoopbackPorts is n distinct such ports (loopport: outside the
// kernel's ephemeral range, so no other bind or connection takes one
// meanwhile).
func freeLoopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := loopport.Pick(n)
	require.NoError(t, err)
	return ports
}

type nodesView struct {
	Nodes []struct {
		hostcluster.NodeStatus
		Sessions int `json:"sessions"`
	} `json:"nodes"`
}

func (n *clusterNodeProc) nodeStates() map[string]string {
	var v nodesView
	require.Equal(n.t, http.StatusOK, n.do("GET", "/v1/nodes", nil, true, &v))
	out := map[string]string{}
	for _, st := range v.Nodes {
		out[st.Name] = st.State
	}
	return out
}

func (n *clusterNodeProc) memberID(node string) string {
	var v nodesView
	require.Equal(n.t, http.StatusOK, n.do("GET", "/v1/nodes", nil, true, &v))
	for _, st := range v.Nodes {
		if st.Name == node {
			return st.MemberID
		}
	}
	return ""
}

func (n *clusterNodeProc) sessions() map[string]sessionView {
	var list struct{ Sessions []sessionView }
	require.Equal(n.t, http.StatusOK, n.do("GET", "/v1/sessions", nil, true, &list))
	out := map[string]sessionView{}
	for _, v := range list.Sessions {
		out[v.ID] = v
	}
	return out
}

func TestClusterOfThreeAutomanagedNodes(t *testing.T) {
	ports := freeLoopbackPorts(t, 3)
	peers := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1], ports[2])
	var nodes []*clusterNodeProc
	for i, name := range []string{"A", "B", "C"} {
		nodes = append(nodes, startClusterNode(t, name, "--cluster", "e2e", "--cluster-provider", "automanaged",
			"--peers", peers, "--provider-port", strconv.Itoa(ports[i])))
	}
	checkThreeNodes(t, nodes[0], nodes[1], nodes[2])
}

func TestClusterOfThreeEtcdNodes(t *testing.T) {
	endpoint := startEtcdServer(t)
	var nodes []*clusterNodeProc
	for _, name := range []string{"A", "B", "C"} {
		nodes = append(nodes, startClusterNode(t, name, "--cluster", "e2e", "--cluster-provider", "etcd",
			"--etcd-endpoints", endpoint))
	}
	checkThreeNodes(t, nodes[0], nodes[1], nodes[2])
}

// checkThreeNodes is the proof on one machine: sessions created
// through A on B and C; turns and answers through C to a session on B;
// events of a session on A read through B, complete and in order; B killed
// with SIGKILL: A and C keep working and report B's sessions lost.
func checkThreeNodes(t *testing.T, a, b, c *clusterNodeProc) {
	all := []*clusterNodeProc{a, b, c}
	for _, n := range all {
		require.Eventually(t, func() bool {
			st := n.nodeStates()
			return st["A"] == hostcluster.StateAlive && st["B"] == hostcluster.StateAlive && st["C"] == hostcluster.StateAlive
		}, wait, 50*time.Millisecond, "node %s sees A, B and C alive", n.name)
		assert.Equal(t, http.StatusUnauthorized, n.do("GET", "/v1/nodes", nil, false, nil), "each node checks the token")
		assert.Equal(t, http.StatusUnauthorized, n.do("GET", "/v1/sessions/b1/events", nil, false, nil))
	}

	// Each node drives its own fake agys.
	fakeA := agytest.Start(t, agytest.Options{Conversation: true, Seed: 21, ChunkDelay: 2 * time.Millisecond})
	fakeB := agytest.Start(t, agytest.Options{Conversation: true, Seed: 22, ChunkDelay: 2 * time.Millisecond})
	fakeC := agytest.Start(t, agytest.Options{Conversation: true, Seed: 23, ChunkDelay: 2 * time.Millisecond})

	// Sessions created through A on B and C (and on A itself).
	var vb, vc, va sessionView
	require.Equal(t, http.StatusCreated, a.do("POST", "/v1/sessions", map[string]any{"node": "B", "port": fakeB.Port(), "session_id": "b1"}, true, &vb))
	assert.Equal(t, "B", vb.Node)
	assert.Equal(t, fakeB.ConversationID(), vb.ConversationID)
	require.Equal(t, http.StatusCreated, a.do("POST", "/v1/sessions", map[string]any{"node": "C", "port": fakeC.Port(), "session_id": "c1"}, true, &vc))
	assert.Equal(t, "C", vc.Node)
	require.Equal(t, http.StatusCreated, a.do("POST", "/v1/sessions", map[string]any{"port": fakeA.Port(), "session_id": "a1"}, true, &va))
	assert.Equal(t, "A", va.Node)
	// The owner's refusals cross as they are.
	assert.Equal(t, http.StatusConflict, a.do("POST", "/v1/sessions", map[string]any{"node": "B", "port": fakeB.Port(), "session_id": "b1"}, true, nil))
	assert.Equal(t, http.StatusNotFound, a.do("POST", "/v1/sessions", map[string]any{"node": "Z", "port": fakeB.Port()}, true, nil))
	assert.Equal(t, http.StatusUnprocessableEntity, a.do("POST", "/v1/sessions", map[string]any{"node": "B", "port": 0}, true, nil))

	for _, n := range all {
		got := n.sessions()
		require.Len(t, got, 3, "node %s lists every session", n.name)
		for id, node := range map[string]string{"a1": "A", "b1": "B", "c1": "C"} {
			assert.Equal(t, node, got[id].Node, "node %s: %s", n.name, id)
			assert.Equal(t, sessionLive, got[id].State)
		}
	}
	var one sessionView
	require.Equal(t, http.StatusOK, c.do("GET", "/v1/sessions/b1", nil, true, &one))
	assert.Equal(t, "B", one.Node)

	// Turns and answers through C to the session on B.
	onC := c.events("b1", "")
	require.Equal(t, http.StatusAccepted, c.do("POST", "/v1/sessions/b1/turns", map[string]string{"text": "Show me what you can do"}, true, nil))
	got := onC.until("the permission prompt", isType(messages.EventElicitationRequest))
	perm := got[len(got)-1].ev
	require.Equal(t, messages.KindPermission, perm.Kind)
	assert.Equal(t, "b1", perm.SessionID)
	require.Equal(t, http.StatusAccepted, c.do("POST", eidPath("b1", perm.ElicitationID), `{"action":"accept"}`, true, nil))
	more := onC.until("the question", func(ev *messages.Event) bool {
		return ev.Type == messages.EventElicitationRequest && ev.Kind == messages.KindQuestion
	})
	q := more[len(more)-1].ev
	require.Equal(t, http.StatusUnprocessableEntity, c.do("POST", eidPath("b1", q.ElicitationID),
		map[string]any{"action": "accept", "answers": []messages.Answer{{Question: q.Questions[0].Question, SelectedOptionIDs: []string{"7"}}}}, true, nil),
		"B's own check of the answer, through C")
	require.Equal(t, http.StatusAccepted, c.do("POST", eidPath("b1", q.ElicitationID),
		map[string]any{"action": "accept", "answers": []messages.Answer{{Question: q.Questions[0].Question, SelectedOptionIDs: []string{"1"}}}}, true, nil))
	onC.until("idle", isStatus(messages.StateIdle))
	onC.close()
	assert.Positive(t, fakeB.Calls("SendUserCascadeMessage"), "the turn reached the agy of B")

	// Events of a session on A read through B: complete and in order.
	onA := a.events("a1", "")
	onB := b.events("a1", "")
	require.Equal(t, http.StatusAccepted, b.do("POST", "/v1/sessions/a1/turns", map[string]string{"text": "Read the README"}, true, nil))
	fromB := onB.until("the permission prompt", isType(messages.EventElicitationRequest))
	p2 := fromB[len(fromB)-1].ev
	require.Equal(t, http.StatusAccepted, b.do("POST", eidPath("a1", p2.ElicitationID), `{"action":"decline"}`, true, nil))
	fromB = append(fromB, onB.until("idle", isStatus(messages.StateIdle))...)
	lastB := fromB[len(fromB)-1].ev.Seq
	fromA := onA.until("what B read", func(ev *messages.Event) bool { return ev.Seq >= lastB })
	assert.Equal(t, committedSeqs(fromA), committedSeqs(fromB), "B read what A published")
	assert.Equal(t, deltaText(events(fromA)), deltaText(events(fromB)))
	for i := 1; i < len(fromB); i++ {
		assert.Greater(t, fromB[i].ev.Seq, fromB[i-1].ev.Seq, "in order, none doubled")
	}
	// Resume through B from the middle.
	mid := fromB[len(fromB)/2].id
	resumed := b.events("a1", strconv.FormatUint(mid, 10))
	rest := resumed.until("idle", isStatus(messages.StateIdle))
	assert.Equal(t, mid+1, rest[0].ev.Seq, "resumed after Last-Event-ID")
	assert.Equal(t, fromB[len(fromB)-1].ev.Seq, rest[len(rest)-1].ev.Seq)
	resumed.close()
	onA.close()
	onB.close()

	// Metrics have per-node figures.
	res, body := getText(t, a, "/metrics")
	require.Equal(t, http.StatusOK, res)
	assert.Contains(t, body, `agyharness_cluster_node_up{node="B",state="alive"} 1`)
	assert.Contains(t, body, `agyharness_cluster_requests_total{node="B",outcome="answered"}`)

	// B killed: A and C keep working and report B's sessions lost.
	watchB := c.events("b1", "")
	watchB.until("the replayed log", func(ev *messages.Event) bool { return ev.Type == messages.EventStatus })
	b.kill()
	ended := watchB.until("node_lost", func(ev *messages.Event) bool {
		return ev.Type == messages.EventError && strings.HasPrefix(ev.Message, "node_lost")
	})
	assert.NotEmpty(t, ended)
	for _, n := range []*clusterNodeProc{a, c} {
		start := time.Now()
		got := n.sessions()
		assert.Less(t, time.Since(start), 2*time.Second, "node %s answers within 2 s", n.name)
		assert.Equal(t, sessionNodeLost, got["b1"].State, "node %s reports B's session lost", n.name)
		assert.Equal(t, sessionLive, got["a1"].State)
		assert.Equal(t, sessionLive, got["c1"].State)
		start = time.Now()
		assert.Equal(t, http.StatusServiceUnavailable, n.do("POST", "/v1/sessions/b1/turns", map[string]string{"text": "hello?"}, true, nil))
		assert.Less(t, time.Since(start), 2*time.Second)
		assert.NotEqual(t, hostcluster.StateAlive, n.nodeStates()["B"])
	}
	onCa := c.events("a1", "")
	require.Equal(t, http.StatusAccepted, c.do("POST", "/v1/sessions/a1/turns", map[string]string{"text": "What is 2+2?"}, true, nil))
	onCa.until("idle", isStatus(messages.StateIdle))
	onCa.close()
	assert.Equal(t, http.StatusNoContent, a.do("DELETE", "/v1/sessions/c1", nil, true, nil), "A detaches a session on C")
}

func getText(t *testing.T, n *clusterNodeProc, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", n.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, b.String()
}

// startEtcdServer runs Debian's etcd (etcd-server) on loopback ports with
// its data in a temporary directory and returns its client endpoint; the
// test is skipped where etcd is not installed (.ci/run installs it).
func startEtcdServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed (apt-get install etcd-server)")
	}
	ports := freeLoopbackPorts(t, 2)
	client := fmt.Sprintf("127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin, "--name", "e2e", "--data-dir", t.TempDir(),
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e2e="+peer, "--log-level", "error")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	require.Eventually(t, func() bool {
		res, err := http.Get("http://" + client + "/health")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, wait, 50*time.Millisecond, "etcd answers on %s", client)
	return client
}

// A node cut off (stopped with SIGSTOP: its connections stay open, it
// answers nothing) is reported lost within 2 s; when it comes back
// (SIGCONT) after the provider dropped it, it joins again and its live
// sessions are listed and driven again.
func TestClusterNodeCutOffAndBack(t *testing.T) {
	ports := freeLoopbackPorts(t, 2)
	peers := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	a := startClusterNode(t, "A", "--cluster", "cut", "--cluster-provider", "automanaged", "--peers", peers, "--provider-port", strconv.Itoa(ports[0]))
	b := startClusterNode(t, "B", "--cluster", "cut", "--cluster-provider", "automanaged", "--peers", peers, "--provider-port", strconv.Itoa(ports[1]))
	require.Eventually(t, func() bool { return a.nodeStates()["B"] == hostcluster.StateAlive }, wait, 50*time.Millisecond)
	fakeB := agytest.Start(t, agytest.Options{Conversation: true, Seed: 31, ChunkDelay: 2 * time.Millisecond})
	require.Equal(t, http.StatusCreated, a.do("POST", "/v1/sessions", map[string]any{"node": "B", "port": fakeB.Port(), "session_id": "b1"}, true, nil))
	stream := a.events("b1", "")
	stream.until("the first status", isType(messages.EventStatus))

	require.NoError(t, b.cmd.Process.Signal(syscall.SIGSTOP))
	cut := time.Now()
	stream.until("node_lost", func(ev *messages.Event) bool {
		return ev.Type == messages.EventError && strings.HasPrefix(ev.Message, "node_lost")
	})
	t.Logf("the stream ended %s after B was cut off", time.Since(cut))
	require.Eventually(t, func() bool {
		start := time.Now()
		got := a.sessions()
		require.Less(t, time.Since(start), 2*time.Second, "A answers within 2 s")
		return got["b1"].State == sessionNodeLost
	}, wait, 50*time.Millisecond)
	start := time.Now()
	assert.Equal(t, http.StatusServiceUnavailable, a.do("POST", "/v1/sessions/b1/turns", map[string]string{"text": "hello?"}, true, nil))
	assert.Less(t, time.Since(start), 2*time.Second)

	// Cut off until the provider drops B: Proto.Actor never admits its
	// member id again, so B must join again under a new one.
	require.Eventually(t, func() bool { return a.nodeStates()["B"] == hostcluster.StateLost }, wait, 100*time.Millisecond)
	before := a.memberID("B")
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGCONT))
	back := time.Now()
	require.Eventually(t, func() bool { return a.sessions()["b1"].State == sessionLive }, wait, 100*time.Millisecond,
		"B's session is listed live again")
	t.Logf("B's session was listed again %s after B came back", time.Since(back))
	assert.NotEqual(t, before, a.memberID("B"), "B joined again as a new member")
	again := a.events("b1", "")
	require.Equal(t, http.StatusAccepted, a.do("POST", "/v1/sessions/b1/turns", map[string]string{"text": "What is 2+2?"}, true, nil))
	again.until("a message", isType(messages.EventMessage))
	again.close()
}

func TestServeClusterRefusesToStartWithoutMutualTLS(t *testing.T) {
	port := freeLoopbackPort(t)
	cluster := []string{"--cluster", "plain", "--cluster-provider", "automanaged",
		"--peers", fmt.Sprintf("127.0.0.1:%d", port), "--provider-port", strconv.Itoa(port)}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness(t), append([]string{"serve", "--listen", "127.0.0.1:0", "--node", "A"}, cluster...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "serve --cluster without TLS material ends: %s", out)
	assert.Equal(t, exitUsage, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "--cluster needs mutual TLS")
	assert.Contains(t, string(out), "agyharness cluster certs")

	// Explicitly unauthenticated, it starts, and says so.
	n := startClusterNode(t, "A", append(cluster, "--insecure-cluster-no-auth")...)
	assert.Equal(t, hostcluster.StateAlive, n.nodeStates()["A"])
	assert.Contains(t, n.logText(), "UNAUTHENTICATED CLUSTER")
}

// startEtcdTLSServer runs etcd with TLS on its client endpoint, client
// certificates required, and auth enabled: user agy (password agy-secret)
// may read and write under /agyharness. It returns the endpoint and serve's
// --etcd-* flags for user agy (its password in a file).
func startEtcdTLSServer(t *testing.T) (endpoint string, flags []string) {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed (apt-get install etcd-server)")
	}
	ctl, err := exec.LookPath("etcdctl")
	if err != nil {
		t.Skip("etcdctl is not installed (apt-get install etcd-client)")
	}
	dir := t.TempDir()
	ca, files, err := hostcluster.WriteCerts(filepath.Join(dir, "etcd-certs"), []hostcluster.CertNode{
		{Name: "etcd", Hosts: []string{"127.0.0.1"}}, {Name: "client", Hosts: []string{"127.0.0.1"}}}, time.Hour, false)
	require.NoError(t, err)
	server, client := files[0], files[1]
	ports := freeLoopbackPorts(t, 2)
	endpoint = fmt.Sprintf("127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin, "--name", "e2e", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", "https://"+endpoint, "--advertise-client-urls", "https://"+endpoint,
		"--cert-file", server.Cert, "--key-file", server.Key, "--client-cert-auth", "--trusted-ca-file", ca,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e2e="+peer, "--log-level", "error")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	etcdctl := func(args ...string) error {
		c := exec.Command(ctl, append([]string{"--endpoints", "https://" + endpoint, "--cacert", ca,
			"--cert", client.Cert, "--key", client.Key, "--dial-timeout", "2s"}, args...)...)
		c.Env = append(os.Environ(), "ETCDCTL_API=3")
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("etcdctl %v: %v: %s", args, err, out)
		}
		return nil
	}
	require.Eventually(t, func() bool { return etcdctl("endpoint", "health") == nil }, wait, 100*time.Millisecond, "etcd answers on %s", endpoint)
	for _, args := range [][]string{
		{"user", "add", "root:root-secret"},
		{"user", "add", "agy:agy-secret"},
		{"role", "add", "agyharness"},
		{"role", "grant-permission", "agyharness", "--prefix=true", "readwrite", "/agyharness"},
		{"user", "grant-role", "agy", "agyharness"},
		{"auth", "enable"},
	} {
		require.NoError(t, etcdctl(args...))
	}
	password := filepath.Join(dir, "password")
	require.NoError(t, os.WriteFile(password, []byte("agy-secret\n"), 0o600))
	return endpoint, []string{"--etcd-endpoints", endpoint, "--etcd-tls-ca", ca, "--etcd-tls-cert", client.Cert,
		"--etcd-tls-key", client.Key, "--etcd-user", "agy", "--etcd-password-file", password}
}

func TestClusterOnEtcdWithTLSAndAuth(t *testing.T) {
	_, etcdFlags := startEtcdTLSServer(t)
	cluster := append([]string{"--cluster", "secure", "--cluster-provider", "etcd"}, etcdFlags...)
	a := startClusterNode(t, "A", cluster...)
	b := startClusterNode(t, "B", cluster...)
	for _, n := range []*clusterNodeProc{a, b} {
		require.Eventually(t, func() bool {
			st := n.nodeStates()
			return st["A"] == hostcluster.StateAlive && st["B"] == hostcluster.StateAlive
		}, wait, 50*time.Millisecond, "node %s sees A and B alive", n.name)
	}

	// A wrong password: the node does not join.
	wrong := filepath.Join(t.TempDir(), "wrong")
	require.NoError(t, os.WriteFile(wrong, []byte("guess\n"), 0o600))
	bad := slices.Clone(cluster)
	bad[slices.Index(bad, "--etcd-password-file")+1] = wrong
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	out, err := exec.CommandContext(ctx, harness(t), append(append([]string{"serve", "--listen", "127.0.0.1:0", "--node", "C"}, bad...),
		nodeCerts(t, "C")...)...).CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, exitFailure, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "authentication failed", "%s", out)
}
