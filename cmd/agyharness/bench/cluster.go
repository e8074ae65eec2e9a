package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/internal/loopport"
	"github.com/agyharness/agyharness/messages"
)

// drivenSession is the session a driver drives: an *actors.Session in this
// process, or one reached through a cluster node's HTTP API.
type drivenSession interface {
	SendTurn(ctx context.Context, text, model string) error
	Resolve(ctx context.Context, r messages.Resolve) error
	Interrupt(ctx context.Context) error
	ConversationID() string
	Done() <-chan struct{}
	Err() error
	Stats() actors.Stats
}

// ClusterFigures are a cluster campaign's own figures (bench --cluster).
type ClusterFigures struct {
	Nodes int `json:"nodes"`
	// Route is how each session was driven: "cross", through a node
	// other than its own, or "local", through its own node's API.
	Route string `json:"route"`
	// Command latency: a turn's, an answer's or an interrupt's HTTP round
	// trip through the driving node (to the owner, to agy, and back).
	CommandLatencyP50Ms float64 `json:"command_latency_p50_ms"`
	CommandLatencyP99Ms float64 `json:"command_latency_p99_ms"`
	CommandSamples      int     `json:"command_samples"`
	// The same by command: turns answer once agy took the turn, answers
	// once agy took the answer, interrupts once the session is idle.
	TurnLatencyP99Ms      float64 `json:"turn_latency_p99_ms"`
	ResolveLatencyP99Ms   float64 `json:"resolve_latency_p99_ms"`
	InterruptLatencyP99Ms float64 `json:"interrupt_latency_p99_ms"`
	// NodesDriveCPUS is the nodes' CPU (every serve process) over the
	// driving window, and CPUUsPerEvent that over the events delivered.
	NodesDriveCPUS      float64 `json:"nodes_drive_cpu_s"`
	NodesCPUUsPerEvent  float64 `json:"nodes_cpu_us_per_event"`
	SessionsPerNode     int     `json:"sessions_per_node"`
	NodeMaxRSSMiB       float64 `json:"node_max_rss_mib"`
	CreateLatencyP50Ms  float64 `json:"create_latency_p50_ms"`
	CreateLatencyP99Ms  float64 `json:"create_latency_p99_ms"`
	ListLatencyMs       float64 `json:"list_latency_ms"`
	ListedSessions      int     `json:"listed_sessions"`
	NodeProblemsInLogs  int     `json:"node_log_errors"`
	ProviderDescription string  `json:"provider"`
}

// clusterNode is one serve process of the campaign.
type clusterNode struct {
	name string
	base string
	cmd  *exec.Cmd
	done chan error

	logEnded chan struct{} // closed once its log is read to its end

	mu     sync.Mutex
	errors int      // ERROR lines in its log
	tail   []string // its log's last lines (maxTailLines, each clipped)
}

// What a node's start failure quotes of its log.
const (
	maxTailLines = 5
	maxTailLine  = 400
)

var (
	listeningAt = regexp.MustCompile(`listening on (https?://\S+)`)
	joinedAs    = regexp.MustCompile(`node (\S+) of cluster (\S+) at (\S+)`)
)

// startClusterNodes runs n serve processes that form a cluster with the
// automanaged provider on loopback; with mutualTLS, their remote runs over
// mutual TLS with certificates `harness cluster certs` writes in dir.
func startClusterNodes(ctx context.Context, harness string, n int, token string, dir string, mutualTLS bool, profileDir string, trace bool) ([]*clusterNode, error) {
	if profileDir != "" {
		if err := os.MkdirAll(profileDir, 0o700); err != nil {
			return nil, fmt.Errorf("bench: --cluster-profile: %w", err)
		}
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	certDir := filepath.Join(dir, "certs")
	remoteAuth := func(name string) []string { return []string{"--insecure-cluster-no-auth"} }
	if mutualTLS {
		args := []string{"cluster", "certs", "--out", certDir}
		for i := range n {
			args = append(args, "--node", fmt.Sprintf("n%d=127.0.0.1", i+1))
		}
		if out, err := exec.CommandContext(ctx, harness, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("bench: cluster certs: %v: %s", err, out)
		}
		remoteAuth = func(name string) []string {
			return []string{"--remote-tls-cert", filepath.Join(certDir, name+".pem"),
				"--remote-tls-key", filepath.Join(certDir, name+"-key.pem"), "--remote-tls-ca", filepath.Join(certDir, "ca.pem")}
		}
	}
	// The provider ports are named to every node before any binds its own.
	picked, err := loopport.Pick(n)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	ports := make([]string, n)
	peers := make([]string, n)
	for i, p := range picked {
		ports[i] = strconv.Itoa(p)
		peers[i] = "127.0.0.1:" + ports[i]
	}
	var nodes []*clusterNode
	stopAll := func() { stopClusterNodes(nodes) }
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		cmd := exec.CommandContext(ctx, harness, append([]string{"serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile,
			"--max-connections", "100000", "--cluster", "bench", "--cluster-provider", "automanaged",
			"--peers", strings.Join(peers, ","), "--provider-port", ports[i], "--node", name}, append(remoteAuth(name), profileArgs(profileDir, name, trace)...)...)...)
		cmd.Env = append(os.Environ(), "AGYHARNESS_LOG="+nodeLogLevel(profileDir))
		cmd.Stdout = io.Discard
		stderr, err := cmd.StderrPipe()
		if err != nil {
			stopAll()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			stopAll()
			return nil, fmt.Errorf("bench: start node %s: %w", name, err)
		}
		node := &clusterNode{name: name, cmd: cmd, done: make(chan error, 1), logEnded: make(chan struct{})}
		nodes = append(nodes, node)
		found := make(chan string, 1)
		logs, err := nodeLog(profileDir, name, stderr)
		if err != nil {
			stopAll()
			return nil, err
		}
		go node.readLog(logs, found)
		go func() {
			<-node.logEnded // Wait closes the pipe: read the log to its end first
			node.done <- cmd.Wait()
		}()
		select {
		case node.base = <-found:
		case err := <-node.done:
			node.done <- err
			stopAll()
			return nil, fmt.Errorf("bench: node %s exited: %v; the end of its log: %s", name, err, node.lastLines())
		case <-time.After(30 * time.Second):
			stopAll()
			return nil, fmt.Errorf("bench: node %s did not join the cluster", name)
		}
	}
	return nodes, nil
}

// readLog takes the node's address from its log, then counts its errors.
func (c *clusterNode) readLog(r io.Reader, found chan<- string) {
	defer close(c.logEnded)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var base string
	joined := false
	for sc.Scan() {
		l := sc.Text()
		if m := listeningAt.FindStringSubmatch(l); m != nil {
			base = m[1]
		}
		if joinedAs.MatchString(l) {
			joined = true
		}
		if base != "" && joined && found != nil {
			found <- base
			found = nil
		}
		c.mu.Lock()
		if strings.Contains(l, "level=ERROR") {
			c.errors++
		}
		if len(c.tail) == maxTailLines {
			c.tail = slices.Delete(c.tail, 0, 1)
		}
		c.tail = append(c.tail, clipTo(l, maxTailLine))
		c.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r) // past a line over the scanner's limit: the node must not block on a full pipe
}

// lastLines is the end of the node's log, each line quoted, or "(empty)".
func (c *clusterNode) lastLines() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tail) == 0 {
		return "(empty)"
	}
	quoted := make([]string, len(c.tail))
	for i, l := range c.tail {
		quoted[i] = strconv.Quote(l)
	}
	return strings.Join(quoted, "; ")
}

func stopClusterNodes(nodes []*clusterNode) {
	for _, n := range nodes {
		_ = n.cmd.Process.Signal(os.Interrupt)
	}
	for _, n := range nodes {
		select {
		case err := <-n.done:
			n.done <- err
		case <-time.After(20 * time.Second):
			_ = n.cmd.Process.Kill()
		}
	}
}

// processCPU is a process's CPU so far (Linux: /proc/PID/stat), and its
// resident set.
func processCPU(pid int) (time.Duration, float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 22 {
		return 0, 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	rss, _ := strconv.ParseInt(f[21], 10, 64)
	const ticks = 100 // USER_HZ
	return time.Duration(ut+st) * time.Second / ticks, float64(rss*int64(os.Getpagesize())) / (1 << 20)
}

// httpAPI is a node's HTTP API, as the campaign's drivers use it.
type httpAPI struct {
	base   string
	token  string
	client *http.Client

	mu      sync.Mutex
	latency []time.Duration            // command round trips
	byKind  map[string][]time.Duration // the same by commandKind
}

func (a *httpAPI) call(ctx context.Context, method, path string, body any, want int, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	res, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return &commandError{status: res.StatusCode, msg: e.Error}
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// commandError is a refusal by the API.
type commandError struct {
	status int
	msg    string
}

func (e *commandError) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

// command is call for a driver command, timed.
func (a *httpAPI) command(ctx context.Context, method, path string, body any, want int) error {
	start := time.Now()
	err := a.call(ctx, method, path, body, want, nil)
	if err == nil {
		a.mu.Lock()
		took := time.Since(start)
		a.latency = append(a.latency, took)
		if a.byKind == nil {
			a.byKind = make(map[string][]time.Duration)
		}
		a.byKind[commandKind(path)] = append(a.byKind[commandKind(path)], took)
		a.mu.Unlock()
	}
	return err
}

// httpSession is a session driven through a node's HTTP API: commands as
// requests, events from its SSE stream.
type httpSession struct {
	api    *httpAPI
	id     string
	conv   string
	events chan *messages.Event
	done   chan struct{}
	cancel context.CancelFunc
	mu     sync.Mutex
	err    error
}

func (s *httpSession) path() string { return "/v1/sessions/" + s.id }

func (s *httpSession) SendTurn(ctx context.Context, text, model string) error {
	return s.api.command(ctx, http.MethodPost, s.path()+"/turns", map[string]string{"text": text, "model": model}, http.StatusAccepted)
}

func (s *httpSession) Resolve(ctx context.Context, r messages.Resolve) error {
	return s.api.command(ctx, http.MethodPost, s.path()+"/elicitations/"+url.PathEscape(r.ElicitationID)+"/resolve",
		map[string]any{"action": r.Action, "answers": r.Answers}, http.StatusAccepted)
}

func (s *httpSession) Interrupt(ctx context.Context) error {
	return s.api.command(ctx, http.MethodPost, s.path()+"/interrupt", nil, http.StatusOK)
}

func (s *httpSession) ConversationID() string { return s.conv }
func (s *httpSession) Done() <-chan struct{}  { return s.done }
func (s *httpSession) Stats() actors.Stats    { return actors.Stats{} }

func (s *httpSession) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// read reads the SSE stream from the session's first event until it ends
// or close is called.
func (s *httpSession) read(ctx context.Context) {
	defer close(s.done)
	defer close(s.events)
	fail := func(err error) {
		if ctx.Err() == nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.api.base+s.path()+"/events", nil)
	if err != nil {
		fail(err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+s.api.token)
	res, err := s.api.client.Do(req)
	if err != nil {
		fail(err)
		return
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		fail(fmt.Errorf("events: %s", res.Status))
		return
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "{}" {
			continue
		}
		ev := new(messages.Event)
		if err := json.Unmarshal([]byte(data), ev); err != nil {
			fail(fmt.Errorf("events: %v", err))
			return
		}
		if ev.Type == messages.EventError && strings.HasPrefix(ev.Message, "node_lost") {
			fail(errors.New(ev.Message))
		}
		select {
		case s.events <- ev:
		case <-ctx.Done():
			return
		}
	}
	fail(fmt.Errorf("events: the stream ended: %v", sc.Err()))
}

func (s *httpSession) close() {
	s.cancel()
	for range s.events {
	}
}

// runCluster is the campaign on a cluster (Options.Cluster): the fakes in
// this process, Cluster serve processes, each session attached on node
// i mod Cluster and driven, commands and events, through the next node
// (or through its own with ClusterLocal). The checks are the campaign's.
func runCluster(ctx context.Context, o Options) (*Result, error) {
	if len(o.Faults) > 0 || o.ExternalFakes || o.Floor || o.IdleSessions > 0 || o.PollSessions > 0 {
		return nil, errors.New("bench: --cluster runs without faults (--faults none), external fakes, idle or poll-only sessions")
	}
	if o.ClusterTrace && o.ClusterProfile == "" {
		return nil, errors.New("bench: --cluster-trace needs --cluster-profile DIR")
	}
	harness := o.Harness
	if harness == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("bench: the harness binary: %w", err)
		}
		harness = exe
	}
	route := "cross"
	if o.ClusterLocal {
		route = "local"
	}
	res := &Result{Seed: o.Seed, Sessions: o.Sessions, ReadMode: string(actors.ReadBoth), FaultsInjected: map[string]int{},
		Restarts: map[string]int{}, GroundTruthChecked: true, CPUIncludesFakes: true,
		Cluster: &ClusterFigures{Nodes: o.Cluster, Route: route, SessionsPerNode: (o.Sessions + o.Cluster - 1) / o.Cluster,
			ProviderDescription: "automanaged, loopback, mutual TLS"}}
	if o.ClusterNoTLS {
		res.Cluster.ProviderDescription = "automanaged, loopback, no TLS"
	}
	res.GoroutinesBefore = runtime.NumGoroutine()
	start := time.Now()
	cpuBefore := cpuTime()
	dir, err := os.MkdirTemp("", "agyharness-bench-cluster-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(dir)
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	nodes, err := startClusterNodes(ctx, harness, o.Cluster, token, dir, !o.ClusterNoTLS, o.ClusterProfile, o.ClusterTrace)
	if err != nil {
		return nil, err
	}
	stopProfile := func() {}
	if o.ClusterProfile != "" {
		if stopProfile, err = startCPUProfile(filepath.Join(o.ClusterProfile, "bench.cpu.pprof")); err != nil {
			stopClusterNodes(nodes)
			return nil, err
		}
	}
	defer func() { stopProfile() }() // on an early return; twice is harmless
	transport := &http.Transport{MaxIdleConnsPerHost: 4096}
	client := &http.Client{Transport: transport}
	apis := make([]*httpAPI, len(nodes))
	for i, n := range nodes {
		apis[i] = &httpAPI{base: n.base, token: token, client: client}
	}
	var drivers []*driver
	var sessions []*httpSession
	cleanup := func() {
		for _, s := range sessions {
			s.close()
		}
		for _, d := range drivers {
			d.close()
		}
		stopClusterNodes(nodes)
		transport.CloseIdleConnections()
	}
	if err := waitClusterFormed(ctx, apis, o.Cluster); err != nil {
		cleanup()
		return nil, err
	}

	sc := campaignScenario()
	var createLat []time.Duration
	for i := range o.Sessions {
		live := liveMixFor(o, i, "")
		live.coldStart = false // a fresh agy's first turn is typed into a terminal this process cannot reach over HTTP
		f, err := startFake(o, sc, i, "", live)
		if err != nil {
			cleanup()
			return nil, err
		}
		owner := i % o.Cluster
		via := (owner + 1) % o.Cluster
		if o.ClusterLocal {
			via = owner
		}
		api := apis[via]
		var view struct {
			ID             string `json:"id"`
			ConversationID string `json:"conversation_id"`
			Node           string `json:"node"`
		}
		cctx, cancel := context.WithTimeout(ctx, o.TurnTimeout)
		began := time.Now()
		err = api.call(cctx, http.MethodPost, "/v1/sessions", map[string]any{"node": nodes[owner].name, "port": f.port,
			"session_id": fmt.Sprintf("s%04d", i)}, http.StatusCreated, &view)
		cancel()
		if err != nil {
			f.close()
			cleanup()
			return nil, fmt.Errorf("bench: create session %d on %s through %s: %w", i, nodes[owner].name, nodes[via].name, err)
		}
		createLat = append(createLat, time.Since(began))
		if view.Node != nodes[owner].name {
			res.problem("session %d: created on %s, want %s", i, view.Node, nodes[owner].name)
		}
		sctx, scancel := context.WithCancel(ctx)
		s := &httpSession{api: api, id: view.ID, conv: view.ConversationID, events: make(chan *messages.Event, 1024),
			done: make(chan struct{}), cancel: scancel}
		go s.read(sctx)
		sessions = append(sessions, s)
		d := &driver{i: i, turnWait: o.TurnTimeout, mode: actors.ReadBoth, kinds: o.TurnKinds, rng: newRand(o.Seed, i),
			srv: f.srv, fake: f, s: s, reqs: make(chan *messages.Event, 64), wake: make(chan struct{}, 1)}
		d.consum.Add(1)
		go d.consume(s.events, 0)
		drivers = append(drivers, d)
	}
	res.Cluster.CreateLatencyP50Ms, res.Cluster.CreateLatencyP99Ms, _ = percentiles(createLat)

	// A listing of every session through the first node.
	var list struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	began := time.Now()
	if err := apis[0].call(ctx, http.MethodGet, "/v1/sessions", nil, http.StatusOK, &list); err != nil {
		res.problem("listing: %v", err)
	}
	res.Cluster.ListLatencyMs = float64(time.Since(began).Microseconds()) / 1000
	res.Cluster.ListedSessions = len(list.Sessions)
	if len(list.Sessions) != o.Sessions {
		res.problem("listing through %s: %d sessions, want %d", nodes[0].name, len(list.Sessions), o.Sessions)
	}

	nodesBefore := make([]time.Duration, len(nodes))
	for i, n := range nodes {
		nodesBefore[i], _ = processCPU(n.cmd.Process.Pid)
	}
	res.driveAll(ctx, drivers, o.Duration)
	for i, n := range nodes {
		cpu, rss := processCPU(n.cmd.Process.Pid)
		res.Cluster.NodesDriveCPUS += (cpu - nodesBefore[i]).Seconds()
		res.Cluster.NodeMaxRSSMiB = max(res.Cluster.NodeMaxRSSMiB, rss)
	}

	settle := time.Now().Add(o.Settle)
	for _, d := range drivers {
		d.waitSettled(settle)
	}
	for _, d := range drivers {
		d.check(res)
	}
	var cmdLat []time.Duration
	byKind := make(map[string][]time.Duration)
	for _, a := range apis {
		a.mu.Lock()
		cmdLat = append(cmdLat, a.latency...)
		for k, l := range a.byKind {
			byKind[k] = append(byKind[k], l...)
		}
		a.mu.Unlock()
	}
	_, res.Cluster.TurnLatencyP99Ms, _ = percentiles(byKind["turn"])
	_, res.Cluster.ResolveLatencyP99Ms, _ = percentiles(byKind["resolve"])
	_, res.Cluster.InterruptLatencyP99Ms, _ = percentiles(byKind["interrupt"])
	res.Cluster.CommandLatencyP50Ms, res.Cluster.CommandLatencyP99Ms, _ = percentiles(cmdLat)
	res.Cluster.CommandSamples = len(cmdLat)
	cleanup()
	for _, n := range nodes {
		n.mu.Lock()
		res.Cluster.NodeProblemsInLogs += n.errors
		n.mu.Unlock()
	}
	if res.problemsDropped > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("... and %d more", res.problemsDropped))
	}
	res.DurationS = time.Since(start).Seconds()
	res.HarnessCPUS = (cpuTime() - cpuBefore).Seconds()

	var lat, streamLat, streamedLat []time.Duration
	var frameBytes int64
	for _, d := range drivers {
		lat = append(lat, d.latencies.xs...)
		fr, b := d.srv.FramesWritten()
		res.Frames += fr
		frameBytes += b
		all, streamed := fakeLatencies(d, d.srv.TextTimes())
		streamLat = append(streamLat, all...)
		streamedLat = append(streamedLat, streamed...)
	}
	res.perFrame(frameBytes)
	if o.ClusterProfile != "" {
		if err := writeLatencies(o.ClusterProfile, drivers, start); err != nil {
			res.problem("--cluster-profile: %v", err)
		}
	}
	if res.Events > 0 {
		res.Cluster.NodesCPUUsPerEvent = res.Cluster.NodesDriveCPUS * 1e6 / float64(res.Events)
	}
	res.InternalLatencyP50Ms, res.InternalLatencyP99Ms, _ = percentiles(lat)
	res.LatencyP50Ms, res.LatencyP99Ms, res.LatencyMaxMs = percentiles(streamLat)
	res.LatencySamples = len(streamLat)
	res.StreamedLatencyP50Ms, res.StreamedLatencyP99Ms, _ = percentiles(streamedLat)
	res.StreamedLatencySamples = len(streamedLat)
	stopProfile() // its goroutine is not the campaign's
	res.GoroutinesAfter = settleGoroutines(res.GoroutinesBefore, 5*time.Second)
	return res, nil
}

// waitClusterFormed waits until every node sees every node alive.
func waitClusterFormed(ctx context.Context, apis []*httpAPI, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range apis {
		for {
			var v struct {
				Nodes []struct {
					State string `json:"state"`
				} `json:"nodes"`
			}
			alive := 0
			if err := a.call(ctx, http.MethodGet, "/v1/nodes", nil, http.StatusOK, &v); err == nil {
				for _, st := range v.Nodes {
					if st.State == "alive" {
						alive++
					}
				}
			}
			if alive == n {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bench: the cluster did not form: %s sees %d of %d nodes alive", a.base, alive, n)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
