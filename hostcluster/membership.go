package hostcluster

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
)

// Node states, as GET /v1/nodes shows them.
const (
	// StateAlive: a member whose endpoint answers.
	StateAlive = "alive"
	// StateUnreachable: a member that did not answer its last question in
	// time (cut off, or overloaded); its sessions are reported lost until
	// it answers again.
	StateUnreachable = "unreachable"
	// StateLost: no longer a member (it left, died, or its connection
	// broke).
	StateLost = "lost"
)

// NodeStatus is a node as this node sees it.
type NodeStatus struct {
	Name     string    `json:"name"`
	Address  string    `json:"address"`
	MemberID string    `json:"member_id"`
	State    string    `json:"state"`
	Self     bool      `json:"self"`
	Since    time.Time `json:"since"` // when it entered State
}

// membership follows the cluster's members by node name, from the
// cluster's topology events (the provider's view) and remote's endpoint
// events (a broken connection), and from questions that went unanswered.
// It is written from event-stream callbacks and the node's goroutines, so
// it holds a mutex; readers get copies.
type membership struct {
	self    string // this node's name
	now     func() time.Time
	changed func(name, state string) // called without the lock held

	mu     sync.Mutex
	selfID string // this node's member id now
	nodes  map[string]*memberEntry
}

type memberEntry struct {
	status     NodeStatus
	inTopology bool
	terminated bool          // its endpoint broke since it joined
	unanswered bool          // its last question timed out
	lost       chan struct{} // closed when it is lost
	lostClosed bool
}

func newMembership(self string, now func() time.Time) *membership {
	return &membership{self: self, now: now, nodes: make(map[string]*memberEntry)}
}

// nodeOfMember is the node name in a member id: the system id is
// "<node>@<incarnation>", and etcd prefixes "<cluster>@".
func nodeOfMember(id string) string {
	parts := strings.Split(id, "@")
	if len(parts) < 2 {
		return id
	}
	return parts[len(parts)-2]
}

// handle takes an event of the actor system's event stream.
func (m *membership) handle(evt any) {
	var changes [][2]string
	m.mu.Lock()
	switch e := evt.(type) {
	case *cluster.ClusterTopology:
		present := make(map[string]*cluster.Member, len(e.Members))
		for _, mem := range e.Members {
			present[nodeOfMember(mem.Id)] = mem
		}
		for name, mem := range present {
			ent := m.entry(name)
			if ent.status.MemberID != mem.Id {
				ent.status.MemberID, ent.status.Address = mem.Id, mem.Address()
				ent.terminated, ent.unanswered = false, false
			}
			ent.inTopology = true
		}
		for name, ent := range m.nodes {
			if present[name] == nil {
				ent.inTopology = false
			}
		}
	case *remote.EndpointTerminatedEvent:
		for name, ent := range m.nodes {
			if name != m.self && ent.status.Address == e.Address {
				ent.terminated = true
			}
		}
	case *remote.EndpointConnectedEvent:
		for _, ent := range m.nodes {
			if ent.status.Address == e.Address {
				ent.terminated = false
			}
		}
	default:
		m.mu.Unlock()
		return
	}
	changes = m.settle()
	m.mu.Unlock()
	m.notify(changes)
}

// answered records whether a question to name was answered in time.
func (m *membership) answered(name, memberID string, ok bool) {
	m.mu.Lock()
	ent := m.nodes[name]
	if ent == nil || ent.status.MemberID != memberID {
		m.mu.Unlock()
		return
	}
	ent.unanswered = !ok
	changes := m.settle()
	m.mu.Unlock()
	m.notify(changes)
}

func (m *membership) entry(name string) *memberEntry {
	ent := m.nodes[name]
	if ent == nil {
		ent = &memberEntry{status: NodeStatus{Name: name, Self: name == m.self, State: StateLost, Since: m.now()},
			lost: make(chan struct{}), lostClosed: true}
		close(ent.lost)
		m.nodes[name] = ent
	}
	return ent
}

// settle recomputes every node's state; under mu.
func (m *membership) settle() [][2]string {
	var changes [][2]string
	for name, ent := range m.nodes {
		state := StateLost
		switch {
		case ent.inTopology && !ent.terminated && !ent.unanswered:
			state = StateAlive
		case ent.inTopology && !ent.terminated:
			state = StateUnreachable
		}
		if state == ent.status.State {
			continue
		}
		ent.status.State, ent.status.Since = state, m.now()
		// A node that is only slow to answer keeps its streams.
		switch {
		case state != StateLost && ent.lostClosed:
			ent.lost, ent.lostClosed = make(chan struct{}), false
		case state == StateLost && !ent.lostClosed:
			close(ent.lost)
			ent.lostClosed = true
		}
		changes = append(changes, [2]string{name, state})
	}
	return changes
}

func (m *membership) notify(changes [][2]string) {
	if m.changed == nil {
		return
	}
	for _, c := range changes {
		m.changed(c[0], c[1])
	}
}

// setSelf records this node's member id (a new one on each join).
func (m *membership) setSelf(id string) {
	m.mu.Lock()
	m.selfID = id
	m.mu.Unlock()
}

// view is what a listing tells the asking node of this one's membership:
// its member id, how many members it sees alive, and the member ids it saw
// leave.
func (m *membership) view() (selfID string, alive uint32, lost []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ent := range m.nodes {
		switch {
		case ent.status.State == StateAlive:
			alive++
		case !ent.inTopology && ent.status.MemberID != "" && !ent.status.Self:
			lost = append(lost, ent.status.MemberID)
		}
	}
	return m.selfID, alive, lost
}

// left reports whether memberID is a member this node saw leave.
func (m *membership) left(memberID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ent := range m.nodes {
		if ent.status.MemberID == memberID {
			return !ent.inTopology
		}
	}
	return false
}

// node returns a node's status and a channel closed once it is lost.
func (m *membership) node(name string) (NodeStatus, <-chan struct{}, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ent := m.nodes[name]
	if ent == nil {
		return NodeStatus{}, nil, false
	}
	return ent.status, ent.lost, true
}

// list returns every node known, by name.
func (m *membership) list() []NodeStatus {
	m.mu.Lock()
	out := make([]NodeStatus, 0, len(m.nodes))
	for _, ent := range m.nodes {
		out = append(out, ent.status)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
