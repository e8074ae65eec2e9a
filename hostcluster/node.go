package hostcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Node is this process's membership of a cluster of agyharness hosts, and
// the way to every other node's sessions: list them, create one on a named
// node, send it commands, read its events. Sessions stay on the node that
// attached them; requests for them go to that node's node actor over
// Proto.Actor remote. Its methods are safe for concurrent use.
type Node struct {
	cfg     Config
	host    string // of the remote endpoint
	port    int
	allow   *peerFilter
	members *membership
	wg      sync.WaitGroup // goroutines of the node's actors and streams
	stop    chan struct{}  // closed by Shutdown: stops the refresh loop
	loops   sync.WaitGroup // the refresh loop, joins and rejoins

	mu        sync.Mutex
	gen       *generation
	rejoining bool
	sessions  map[string]cachedSession // session id -> where it was last seen
	figures   map[string]*NodeFigures  // by node name
	closed    bool

	docs documents // snapshots of documents other nodes read in pieces
}

type cachedSession struct {
	node string
	info *clusterpb.SessionInfo
}

// NodeFigures are the counters this node keeps about another (or itself):
// for /metrics.
type NodeFigures struct {
	Sessions  int           // sessions in its last listing
	Requests  uint64        // requests sent to it
	Failures  uint64        // requests that failed or timed out
	Latency   time.Duration // sum of request round trips
	Answered  uint64        // requests that were answered
	StreamsIn uint64        // event streams read from it
}

// Start joins the cluster cfg names and serves cfg.Local to the other
// nodes. It returns once this node is a member (joining takes about a
// second: Proto.Actor waits for its membership to settle).
func Start(cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	host, portText, _ := net.SplitHostPort(cfg.Advertise)
	port, _ := strconv.Atoi(portText)
	// Listen once first: remote panics on a port it cannot take.
	probe, err := net.Listen("tcp", cfg.Advertise)
	if err != nil {
		return nil, fmt.Errorf("hostcluster: remote address: %w", err)
	}
	if port == 0 {
		port = probe.Addr().(*net.TCPAddr).Port
	}
	_ = probe.Close()
	n := &Node{cfg: cfg, host: host, port: port, members: newMembership(cfg.Node, time.Now),
		sessions: make(map[string]cachedSession), figures: make(map[string]*NodeFigures), stop: make(chan struct{})}
	n.members.changed = n.nodeChanged
	if cfg.InsecureNoAuth {
		cfg.Logger.Warn("UNAUTHENTICATED CLUSTER: remote runs without TLS; any process that reaches " + cfg.Advertise +
			" from a member's host can list, create and drive this node's sessions (for a throwaway test only)")
	}
	n.allow = newPeerFilter(append(append([]string{host}, cfg.AllowPeers...), cfg.Provider.hosts()...), n.members)
	if _, err := n.join(); err != nil {
		return nil, err
	}
	n.loops.Add(1)
	go func() {
		defer n.loops.Done()
		n.refreshLoop()
	}()
	return n, nil
}

// generation is one incarnation of this node's membership: an actor
// system with its own member id, remote endpoint, provider and node actor.
// A node that the others dropped (cut off long enough for the provider to
// report it gone) joins again as a new generation: Proto.Actor never
// admits a member id it saw leave.
type generation struct {
	system       *actor.ActorSystem
	cluster      *cluster.Cluster
	actor        *actor.PID
	sub          *eventstream.Subscription
	stopProvider func()
	log          *quietHandler // Proto.Actor's logs, told when the generation leaves

	mu      sync.Mutex
	streams map[*actor.PID]bool // stream actors reading other nodes
	left    bool
}

// track records a stream actor of this generation until untrack; false:
// the generation is leaving (the stream is not to be opened).
func (g *generation) track(pid *actor.PID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.left {
		return false
	}
	g.streams[pid] = true
	return true
}

func (g *generation) untrack(pid *actor.PID) {
	g.mu.Lock()
	delete(g.streams, pid)
	g.mu.Unlock()
}

// join starts a generation on the node's address.
func (n *Node) join() (*generation, error) {
	cfg := n.cfg
	quiet := newQuietHandler(cfg.Logger.Handler(), 30*time.Second)
	logger := slog.New(quiet)
	system := actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }),
		actor.WithDeadLetterThrottleInterval(50*time.Millisecond),
	)
	system.ID = cfg.Node + "@" + incarnation()
	provider, stopProvider, err := cfg.Provider.build(cfg, self{id: system.ID, host: n.host, port: n.port})
	if err != nil {
		return nil, err
	}
	if stopProvider == nil {
		stopProvider = func() {}
	}
	serverOpts := []grpc.ServerOption{grpc.StreamInterceptor(n.allow.stream), grpc.UnaryInterceptor(n.allow.unary)}
	dialOpts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())} // InsecureNoAuth only
	if cfg.ServerTLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(cfg.ServerTLS)))
		dialOpts = []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg.ClientTLS))}
	}
	rc := remote.Configure(n.host, n.port, remote.WithAdvertisedHost(net.JoinHostPort(n.host, strconv.Itoa(n.port))),
		remote.WithServerOptions(serverOpts...), remote.WithDialOptions(dialOpts...))
	rc.MaxRetryCount = 2
	g := &generation{system: system, stopProvider: stopProvider, streams: make(map[*actor.PID]bool), log: quiet}
	g.cluster = cluster.New(system, cluster.Configure(cfg.Cluster, provider, disthash.New(), rc))
	n.mu.Lock()
	n.gen = g // what requests made while it joins go through
	n.mu.Unlock()
	g.sub = system.EventStream.Subscribe(n.members.handle)
	if err := startMember(g.cluster); err != nil {
		system.EventStream.Unsubscribe(g.sub)
		stopProvider()
		return nil, err
	}
	n.members.setSelf(system.ID)
	g.actor, err = system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &nodeActor{name: cfg.Node, local: cfg.Local, window: cfg.Window, wg: &n.wg, members: n.members, rejoin: n.rejoin, docs: &n.docs}
	}), nodeActorName)
	if err != nil {
		n.leave(g)
		return nil, fmt.Errorf("hostcluster: node actor: %w", err)
	}
	cfg.Logger.Info("joined the cluster", "cluster", cfg.Cluster, "node", cfg.Node, "member", system.ID, "address", system.Address())
	return g, nil
}

// leave stops a generation: its node actor (and the streams it feeds),
// then its membership, provider and remote endpoint.
// It runs once per generation: a rejoin that ends with the node closing
// has left the generation it made before Shutdown leaves the current one.
func (n *Node) leave(g *generation) {
	g.mu.Lock()
	if g.left {
		g.mu.Unlock()
		return
	}
	g.left = true
	g.log.leave()
	streams := g.streams
	g.streams = nil
	g.mu.Unlock()
	for pid := range streams {
		g.system.Root.Send(pid, &ownerLost{why: "is out of reach: this node left the cluster"})
	}
	if g.actor != nil {
		_ = g.system.Root.PoisonFuture(g.actor).Wait()
	}
	g.system.EventStream.Unsubscribe(g.sub)
	g.cluster.Shutdown(true)
	g.stopProvider()
}

// current is the generation in use.
func (n *Node) current() *generation {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gen
}

// rejoin replaces the current generation by a new one, once at a time,
// when memberID (the current generation's) was dropped by the cluster.
func (n *Node) rejoin(memberID, why string) {
	n.mu.Lock()
	if n.closed || n.rejoining || n.gen == nil || n.gen.system.ID != memberID {
		n.mu.Unlock()
		return
	}
	n.rejoining = true
	old := n.gen
	n.loops.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.loops.Done()
		n.cfg.Logger.Warn("the cluster dropped this node: joining again", "member", memberID, "why", why)
		n.leave(old)
		for {
			g, err := n.join()
			n.mu.Lock()
			closed := n.closed
			n.rejoining = err != nil && !closed
			n.mu.Unlock()
			if err == nil || closed {
				if err == nil && closed {
					n.leave(g)
				}
				return
			}
			n.cfg.Logger.Warn("joining again failed", "err", err)
			select {
			case <-n.stop:
				n.mu.Lock()
				n.rejoining = false
				n.mu.Unlock()
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// startMember runs Proto.Actor's StartMember, which panics on failure.
func startMember(c *cluster.Cluster) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("hostcluster: joining the cluster: %v", r)
		}
	}()
	c.StartMember()
	return nil
}

func incarnation() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Name is this node's name.
func (n *Node) Name() string { return n.cfg.Node }

// Address is this node's remote address.
func (n *Node) Address() string { return n.current().system.Address() }

// Shutdown leaves the cluster: streams read from other nodes end, streams
// this node feeds end, the provider forgets this node, remote stops. The
// sessions themselves are the Local's to stop.
func (n *Node) Shutdown(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	done := make(chan struct{})
	go func() {
		n.loops.Wait() // a rejoin in progress included
		n.leave(n.current())
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("hostcluster: shutdown: %w", ctx.Err())
	}
}

// Nodes lists the nodes this node knows, itself included.
func (n *Node) Nodes() []NodeStatus { return n.members.list() }

// Figures returns a copy of the per-node counters.
func (n *Node) Figures() map[string]NodeFigures {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]NodeFigures, len(n.figures))
	for k, v := range n.figures {
		out[k] = *v
	}
	return out
}

// ClusterSession is a session of some node, as this node last learned it.
type ClusterSession struct {
	Info *clusterpb.SessionInfo
	// Lost: its node is not alive now; Info is what the node last said.
	Lost bool
}

// Sessions lists the sessions of every node: this node's own, each live
// member's (asked now, for at most AskTimeout), and those last seen on a
// node that is not alive now (Lost), for ForgetLost after it was lost.
func (n *Node) Sessions(ctx context.Context) []ClusterSession {
	var out []ClusterSession
	for _, s := range n.cfg.Local.Sessions() {
		s.Node = n.cfg.Node
		out = append(out, ClusterSession{Info: s})
	}
	answered := n.refresh(ctx)
	forget := make(map[string]bool)
	for _, st := range n.members.list() {
		if st.State == StateLost && time.Since(st.Since) > n.cfg.ForgetLost {
			forget[st.Name] = true
		}
	}
	n.mu.Lock()
	for id, c := range n.sessions {
		if c.node == n.cfg.Node {
			continue
		}
		if forget[c.node] {
			delete(n.sessions, id)
			continue
		}
		out = append(out, ClusterSession{Info: c.info, Lost: !answered[c.node]})
	}
	n.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Info.Id < out[j].Info.Id })
	return out
}

// refresh asks every live member for its sessions and updates the cache;
// it returns the nodes that answered.
func (n *Node) refresh(ctx context.Context) map[string]bool {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.AskTimeout)
	defer cancel()
	var (
		mu  sync.Mutex
		got = make(map[string]bool)
		wg  sync.WaitGroup
	)
	for _, st := range n.members.list() {
		if st.Self || st.State == StateLost {
			continue
		}
		wg.Add(1)
		go func(st NodeStatus) {
			defer wg.Done()
			res, err := n.ask(ctx, st, &clusterpb.ListSessions{Version: ProtocolVersion})
			list, ok := res.(*clusterpb.SessionList)
			if err != nil || !ok || list.Failure != nil {
				return
			}
			n.replaceNode(st.Name, list.Sessions)
			mu.Lock()
			got[st.Name] = true
			mu.Unlock()
		}(st)
	}
	wg.Wait()
	return got
}

// replaceNode makes list the cached sessions of node.
func (n *Node) replaceNode(node string, list []*clusterpb.SessionInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, c := range n.sessions {
		if c.node == node {
			delete(n.sessions, id)
		}
	}
	for _, s := range list {
		s.Node = node
		n.sessions[s.Id] = cachedSession{node: node, info: s}
	}
	n.figure(node).Sessions = len(list)
}

func (n *Node) figure(node string) *NodeFigures {
	f := n.figures[node]
	if f == nil {
		f = &NodeFigures{}
		n.figures[node] = f
	}
	return f
}

// refreshLoop re-reads every member's sessions once a second: a node that
// comes back has its live sessions listed again, and a member that stops
// answering is marked unreachable within about AskTimeout.
func (n *Node) refreshLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-n.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-n.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			n.refresh(ctx)
			if i%probeEvery == 0 {
				n.probeLost(ctx)
			}
			cancel()
		}
	}
}

// probeEvery is how many refreshes pass between probes of lost members
// (for Config.ForgetLost after their loss).
const probeEvery = 3

// probeLost asks each member lost lately whether it is back. One that
// answers is a member the cluster dropped while it was cut off (or one
// that dropped this node): Proto.Actor admits neither member id again, so
// one of the two joins again under a new id. The node that the other
// dropped joins again; when each dropped the other, the one that sees
// fewer members alive (at equal counts, the one with the greater name).
func (n *Node) probeLost(ctx context.Context) {
	selfID, alive, _ := n.members.view()
	var wg sync.WaitGroup
	for _, st := range n.members.list() {
		if st.Self || st.State != StateLost || st.Address == "" || time.Since(st.Since) > n.cfg.ForgetLost {
			continue
		}
		wg.Add(1)
		go func(st NodeStatus) {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, n.cfg.AskTimeout)
			defer cancel()
			res, err := n.askWatching(actx, st, &clusterpb.ListSessions{Version: ProtocolVersion}, nil)
			list, ok := res.(*clusterpb.SessionList)
			if err != nil || !ok || list.MemberId == "" {
				return
			}
			switch rejoiner(n.members.left(list.MemberId), slices.Contains(list.LostMembers, selfID),
				alive, list.AliveMembers, n.cfg.Node, st.Name) {
			case rejoinSelf:
				n.rejoin(selfID, fmt.Sprintf("node %s dropped it", st.Name))
			case rejoinOther:
				n.current().system.Root.Send(actor.NewPID(st.Address, nodeActorName),
					&clusterpb.Rejoin{Version: ProtocolVersion, MemberId: list.MemberId, Reason: fmt.Sprintf("node %s dropped it", n.cfg.Node)})
			}
		}(st)
	}
	wg.Wait()
}

// nodeChanged is membership's hook: a node that becomes alive has its
// sessions read at once.
func (n *Node) nodeChanged(name, state string) {
	n.cfg.Logger.Info("cluster node", "node", name, "state", state)
	if state != StateAlive || name == n.cfg.Node {
		return
	}
	n.mu.Lock()
	closed := n.closed
	if !closed {
		n.loops.Add(1)
	}
	n.mu.Unlock()
	if closed {
		return
	}
	go func() {
		defer n.loops.Done()
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.AskTimeout)
		defer cancel()
		st, _, ok := n.members.node(name)
		if !ok {
			return
		}
		res, err := n.ask(ctx, st, &clusterpb.ListSessions{Version: ProtocolVersion})
		if list, ok := res.(*clusterpb.SessionList); err == nil && ok && list.Failure == nil {
			n.replaceNode(name, list.Sessions)
		}
	}()
}

// ask sends msg to a node's node actor and waits for its answer, ctx, or
// the node's loss. A listing that times out marks the node unreachable.
func (n *Node) ask(ctx context.Context, st NodeStatus, msg any) (any, error) {
	_, lost, _ := n.members.node(st.Name)
	return n.askWatching(ctx, st, msg, lost)
}

// askWatching is ask, given up when lost closes (nil: never).
func (n *Node) askWatching(ctx context.Context, st NodeStatus, msg any, lost <-chan struct{}) (any, error) {
	timeout := n.cfg.AskTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	start := time.Now()
	n.mu.Lock()
	n.figure(st.Name).Requests++
	n.mu.Unlock()
	f := n.current().system.Root.RequestFuture(actor.NewPID(st.Address, nodeActorName), msg, timeout)
	type result struct {
		v   any
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f.Result()
		ch <- result{v, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-lost:
		r.err = nodeLost(st.Name, "left the cluster")
	case <-ctx.Done():
		r.err = ctx.Err()
	}
	n.mu.Lock()
	fig := n.figure(st.Name)
	if r.err != nil {
		fig.Failures++
	} else {
		fig.Answered++
		fig.Latency += time.Since(start)
	}
	n.mu.Unlock()
	if r.err != nil {
		// Only a listing's timeout says the node is unreachable: a command
		// may run as long as its caller allows.
		if _, probe := msg.(*clusterpb.ListSessions); probe &&
			(errors.Is(r.err, actor.ErrTimeout) || errors.Is(r.err, context.DeadlineExceeded)) {
			n.members.answered(st.Name, st.MemberID, false)
		}
		return nil, r.err
	}
	n.members.answered(st.Name, st.MemberID, true)
	return r.v, nil
}

// target is the live node named node, or why not.
func (n *Node) target(node string) (NodeStatus, <-chan struct{}, error) {
	st, lost, ok := n.members.node(node)
	if !ok {
		return st, nil, &Error{Status: http.StatusNotFound, Code: CodeNoNode, Message: fmt.Sprintf("no node %q in the cluster", node)}
	}
	if st.State == StateLost {
		return st, nil, nodeLost(node, "is lost")
	}
	return st, lost, nil
}

// suspectWait bounds a request to a node that did not answer its last
// listing in time: if it does not answer this one either, it is reported
// lost, so the API answers within 2 s.
const suspectWait = 1500 * time.Millisecond

// askNode is ask for a request from the API: bounded by suspectWait when
// the node is unreachable, its timeout then reported as node_lost.
func (n *Node) askNode(ctx context.Context, st NodeStatus, msg any) (any, error) {
	if st.State != StateUnreachable {
		return n.ask(ctx, st, msg)
	}
	sctx, cancel := context.WithTimeout(ctx, suspectWait)
	defer cancel()
	res, err := n.ask(sctx, st, msg)
	if err != nil && ctx.Err() == nil && sctx.Err() != nil {
		return nil, nodeLost(st.Name, "is unreachable: it did not answer in time")
	}
	return res, err
}

// Create attaches a session on the named node (not this one: use Local).
func (n *Node) Create(ctx context.Context, node string, req *clusterpb.CreateSession) (*clusterpb.SessionInfo, error) {
	st, _, err := n.target(node)
	if err != nil {
		return nil, err
	}
	req.Version = ProtocolVersion
	if dl, ok := ctx.Deadline(); ok {
		req.DeadlineUnixNano = dl.UnixNano()
	}
	res, err := n.askNode(ctx, st, req)
	if err != nil {
		return nil, askError(node, err)
	}
	c, ok := res.(*clusterpb.Created)
	if !ok {
		return nil, unexpected(node, res)
	}
	if err := fromFailure(c.Failure); err != nil {
		return nil, err
	}
	c.Session.Node = node
	n.mu.Lock()
	n.sessions[c.Session.Id] = cachedSession{node: node, info: c.Session}
	n.mu.Unlock()
	return c.Session, nil
}

// Locate says which node has session id (not this node: its own sessions
// are the Local's), from what this node last learned or by asking every
// live member. A session last seen on a node that is not alive now is
// reported with a node_lost Error.
func (n *Node) Locate(ctx context.Context, id string) (*clusterpb.SessionInfo, error) {
	lookup := func() (cachedSession, bool) {
		n.mu.Lock()
		defer n.mu.Unlock()
		c, ok := n.sessions[id]
		return c, ok
	}
	c, ok := lookup()
	if !ok {
		n.refresh(ctx)
		if c, ok = lookup(); !ok {
			return nil, notFound(id)
		}
	}
	if _, _, err := n.target(c.node); err != nil {
		if e := (*Error)(nil); errors.As(err, &e) && e.Code == CodeNoNode {
			return c.info, nodeLost(c.node, "left the cluster")
		}
		return c.info, err
	}
	return c.info, nil
}

// Do runs a command on a session of another node.
func (n *Node) Do(ctx context.Context, node, sessionID string, c messages.Command) error {
	st, _, err := n.target(node)
	if err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(ownerDefault)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	res, err := n.askNode(ctx, st, commandMessage(sessionID, c, deadline))
	if err != nil {
		return askError(node, err)
	}
	r, ok := res.(*clusterpb.CommandResult)
	if !ok {
		return unexpected(node, res)
	}
	err = fromFailure(r.Failure)
	if e := (*Error)(nil); errors.As(err, &e) && e.Code == CodeNotFound || err == nil && c.Type == messages.CommandDetach {
		n.mu.Lock()
		delete(n.sessions, sessionID)
		n.mu.Unlock()
	}
	return err
}

// Subscribe opens a session's event stream from another node, after
// afterSeq (the same resume rules as the owner's own API).
func (n *Node) Subscribe(ctx context.Context, node, sessionID string, afterSeq uint64) (*Stream, error) {
	return n.subscribe(ctx, node, sessionID, afterSeq, false)
}

// SubscribeRaw is Subscribe for a consumer that writes the events' JSON on
// (an SSE stream): they come on RawC as the owner encoded them, never
// decoded and encoded again on this node.
func (n *Node) SubscribeRaw(ctx context.Context, node, sessionID string, afterSeq uint64) (*Stream, error) {
	return n.subscribe(ctx, node, sessionID, afterSeq, true)
}

func (n *Node) subscribe(ctx context.Context, node, sessionID string, afterSeq uint64, raw bool) (*Stream, error) {
	st, lost, err := n.target(node)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.figure(node).StreamsIn++
	n.mu.Unlock()
	if st.State == StateUnreachable {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, suspectWait)
		defer cancel()
	}
	return openStream(ctx, n.current(), &n.wg, actor.NewPID(st.Address, nodeActorName), node, sessionID, afterSeq, n.cfg.Window, lost, raw)
}

// askError is err as the caller of a request to node sees it.
func askError(node string, err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, actor.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return &Error{Status: http.StatusGatewayTimeout, Code: CodeTimeout, Message: fmt.Sprintf("node %q did not answer in time", node)}
	case errors.Is(err, actor.ErrDeadLetter):
		return nodeLost(node, "has no node actor (starting or stopping)")
	}
	return &Error{Status: http.StatusBadGateway, Code: CodeFailed, Message: fmt.Sprintf("node %q: %v", node, err)}
}

func unexpected(node string, res any) error {
	return &Error{Status: http.StatusBadGateway, Code: CodeFailed, Message: fmt.Sprintf("node %q answered with %T", node, res)}
}

func (g *generation) root() *actor.RootContext { return g.system.Root }

// Who joins again after a probe (probeLost).
const (
	rejoinNone = iota
	rejoinSelf
	rejoinOther
)

// rejoiner decides who of this node and a lost one that answered joins
// again: the one the other dropped; when each dropped the other, the one
// that sees fewer members alive, and at equal counts the one with the
// greater name (both sides decide alike).
func rejoiner(droppedIt, droppedMe bool, alive, itsAlive uint32, name, its string) int {
	switch {
	case droppedMe && droppedIt:
		if alive < itsAlive || alive == itsAlive && name > its {
			return rejoinSelf
		}
		return rejoinOther
	case droppedMe:
		return rejoinSelf
	case droppedIt:
		return rejoinOther
	}
	return rejoinNone
}
