package hostcluster

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/assert"
)

func TestMembershipFollowsTopologyAndEndpoints(t *testing.T) {
	m := newMembership("A", time.Now)
	var changes []string
	m.changed = func(name, state string) { changes = append(changes, name+"="+state) }
	a := &cluster.Member{Id: "A@1", Host: "127.0.0.1", Port: 1}
	b := &cluster.Member{Id: "c@B@2", Host: "127.0.0.1", Port: 2} // etcd's ids carry the cluster
	m.setSelf("A@1")
	m.handle(&cluster.ClusterTopology{Members: []*cluster.Member{a, b}})
	assert.Equal(t, []string{"A=alive", "B=alive"}, sorted(changes))
	st, lost, ok := m.node("B")
	assert.True(t, ok)
	assert.Equal(t, "127.0.0.1:2", st.Address)

	changes = nil
	m.handle(&remote.EndpointTerminatedEvent{Address: "127.0.0.1:2"})
	assert.Equal(t, []string{"B=lost"}, changes)
	select {
	case <-lost:
	default:
		t.Fatal("a broken connection closes the node's lost channel")
	}
	m.handle(&remote.EndpointConnectedEvent{Address: "127.0.0.1:2"})
	st, _, _ = m.node("B")
	assert.Equal(t, StateAlive, st.State)

	m.answered("B", "c@B@2", false)
	st, _, _ = m.node("B")
	assert.Equal(t, StateUnreachable, st.State, "a listing not answered in time")
	m.answered("B", "c@B@2", true)

	m.handle(&cluster.ClusterTopology{Members: []*cluster.Member{a}})
	st, _, _ = m.node("B")
	assert.Equal(t, StateLost, st.State)
	id, alive, gone := m.view()
	assert.Equal(t, "A@1", id)
	assert.Equal(t, uint32(1), alive)
	assert.Equal(t, []string{"c@B@2"}, gone)
	assert.True(t, m.left("c@B@2"))

	// B joins again as a new member.
	m.handle(&cluster.ClusterTopology{Members: []*cluster.Member{a, {Id: "c@B@3", Host: "127.0.0.1", Port: 2}}})
	st, _, _ = m.node("B")
	assert.Equal(t, StateAlive, st.State)
	assert.Equal(t, "c@B@3", st.MemberID)
	assert.False(t, m.left("c@B@3"))
}

func TestRejoinerPicksOneSide(t *testing.T) {
	assert.Equal(t, rejoinNone, rejoiner(false, false, 2, 2, "A", "B"))
	assert.Equal(t, rejoinOther, rejoiner(true, false, 2, 3, "A", "B"), "the one this node dropped")
	assert.Equal(t, rejoinSelf, rejoiner(false, true, 3, 2, "A", "B"), "the one the other dropped")
	// Each dropped the other: the smaller side, then the greater name;
	// both sides decide alike.
	assert.Equal(t, rejoinOther, rejoiner(true, true, 2, 1, "A", "B"))
	assert.Equal(t, rejoinSelf, rejoiner(true, true, 1, 2, "B", "A"))
	assert.Equal(t, rejoinOther, rejoiner(true, true, 1, 1, "A", "B"))
	assert.Equal(t, rejoinSelf, rejoiner(true, true, 1, 1, "B", "A"))
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// topology is a topology event of members given as id, host, port.
func topology(members ...any) *cluster.ClusterTopology {
	var ms []*cluster.Member
	for i := 0; i+2 < len(members)+1 && i < len(members); i += 3 {
		ms = append(ms, &cluster.Member{Id: members[i].(string), Host: members[i+1].(string), Port: int32(members[i+2].(int))})
	}
	return &cluster.ClusterTopology{Members: ms}
}

func TestPeerFilterAdmitsMembersAndGivenHosts(t *testing.T) {
	m := newMembership("A", time.Now)
	f := newPeerFilter([]string{"127.0.0.1", "not a host name"}, m)
	assert.True(t, f.allowed(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5}))
	assert.False(t, f.allowed(&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}))
	m.handle(topology("B@1", "10.1.2.3", 7))
	assert.True(t, f.allowed(&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}), "a member's host")
	m.handle(topology())
	assert.False(t, f.allowed(&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}), "not once it left")
}

func TestQuietHandlerPassesEachMessageOncePerInterval(t *testing.T) {
	var buf strings.Builder
	now := time.Unix(0, 0)
	h := newQuietHandler(slog.NewTextHandler(&buf, nil), 30*time.Second)
	h.now = func() time.Time { return now }
	log := slog.New(h).With("provider", "automanaged")
	log.Error("Bad connection to the node health status")
	log.Error("Bad connection to the node health status")
	log.Error("another")
	now = now.Add(31 * time.Second)
	log.Error("Bad connection to the node health status")
	assert.Equal(t, 2, strings.Count(buf.String(), "Bad connection"))
	assert.Equal(t, 1, strings.Count(buf.String(), "another"))
}

func TestQuietHandlerLogsALeavingGenerationsFailuresAsInfo(t *testing.T) {
	var info, warn strings.Builder
	atInfo := newQuietHandler(slog.NewTextHandler(&info, nil), 30*time.Second)
	atWarn := newQuietHandler(slog.NewTextHandler(&warn, &slog.HandlerOptions{Level: slog.LevelWarn}), 30*time.Second)
	for _, h := range []*quietHandler{atInfo, atWarn} {
		log := slog.New(h)
		log.Error("EndpointWriter lost connection", "address", "127.0.0.1:1")
		h.leave()
		log.Error("Automanaged server stopping..!", "error", "http: Server closed")
		log.Warn("a warning while leaving")
		log.Info("still information")
	}
	assert.Contains(t, info.String(), `level=ERROR msg="EndpointWriter lost connection"`, "before leaving: as logged")
	assert.Contains(t, info.String(), `level=INFO msg="Automanaged server stopping..!" error="http: Server closed" leaving=true`)
	assert.Contains(t, info.String(), `level=INFO msg="a warning while leaving" leaving=true`)
	assert.Contains(t, info.String(), `level=INFO msg="still information"`+"\n", "information is passed on as it is")
	assert.Equal(t, 1, strings.Count(warn.String(), "level="), "a handler at WARN takes the failure before leaving alone:\n%s", warn.String())
	assert.Contains(t, warn.String(), "EndpointWriter lost connection")
}
