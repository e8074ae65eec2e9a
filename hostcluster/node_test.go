// These tests run several nodes in one process. The pinned Proto.Actor
// remote races with itself there (each remote sets grpc's global logger as
// it starts; its block list and endpoint manager race too), so they are
// built without -race: `make test` runs them in a run of their own. Each
// node of the serve test in cmd/agyharness runs in its own process, built
// with -race, and the stream and feeder actors are race-tested in one
// actor system (stream_test.go).

//go:build !race

package hostcluster

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNodesFormAClusterAndListEachOthersSessions(t *testing.T) {
	nodes, locals := testNodes(t, "A", "B")
	locals[1].add("on-b")
	locals[0].add("on-a")

	ctx := context.Background()
	got := map[string]string{}
	for _, s := range nodes[0].Sessions(ctx) {
		assert.False(t, s.Lost)
		got[s.Info.Id] = s.Info.Node
	}
	assert.Equal(t, map[string]string{"on-a": "A", "on-b": "B"}, got)

	for _, st := range nodes[1].Nodes() {
		assert.Equal(t, StateAlive, st.State, st.Name)
		assert.Equal(t, st.Name == "B", st.Self)
	}
}

func TestNodesFormAClusterOnEtcd(t *testing.T) {
	endpoint := startEtcd(t)
	nodes, locals := testEtcdNodes(t, endpoint, "A", "B", "C")
	locals[2].add("on-c")
	ctx := context.Background()
	for _, n := range nodes[:2] {
		got := n.Sessions(ctx)
		require.Len(t, got, 1)
		assert.Equal(t, "C", got[0].Info.Node)
		assert.False(t, got[0].Lost)
	}

	// A node that leaves is lost to the others, and its sessions with it.
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, nodes[2].Shutdown(sctx))
	waitFor(t, 10*time.Second, func() bool {
		st, _, _ := nodes[0].members.node("C")
		return st.State == StateLost
	}, "C lost to A")
	got := nodes[1].Sessions(ctx)
	require.Len(t, got, 1)
	assert.True(t, got[0].Lost)
}

func TestCreateAndCommandOnAnotherNode(t *testing.T) {
	nodes, locals := testNodes(t, "A", "B")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	info, err := nodes[0].Create(ctx, "B", &clusterpb.CreateSession{Port: 4242, SessionId: "s1"})
	require.NoError(t, err)
	assert.Equal(t, "B", info.Node)
	assert.Equal(t, int32(4242), info.Port)

	_, err = nodes[0].Create(ctx, "B", &clusterpb.CreateSession{Port: 4242, SessionId: "s1"})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusConflict, e.Status, "the owner's refusal crosses as it is")

	_, err = nodes[0].Create(ctx, "B", &clusterpb.CreateSession{Port: 9})
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Message, "no agy on port 9")

	_, err = nodes[0].Create(ctx, "Z", &clusterpb.CreateSession{Port: 1})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeNoNode, e.Code)

	located, err := nodes[0].Locate(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, "B", located.Node)

	require.NoError(t, nodes[0].Do(ctx, "B", "s1", messages.Command{Type: messages.CommandTurn, Text: "hello"}))
	locals[1].mu.Lock()
	require.Len(t, locals[1].sessions["s1"].events, 1)
	assert.Equal(t, "hello", locals[1].sessions["s1"].events[0].Text)
	locals[1].mu.Unlock()

	err = nodes[0].Do(ctx, "B", "nope", messages.Command{Type: messages.CommandInterrupt})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusNotFound, e.Status)

	// A caller's deadline reaches the owner.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	err = nodes[0].Do(short, "B", "s1", messages.Command{Type: messages.CommandTurn, Text: "slow"})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)

	require.NoError(t, nodes[0].Do(ctx, "B", "s1", messages.Command{Type: messages.CommandDetach}))
	_, err = nodes[0].Locate(ctx, "s1")
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeNotFound, e.Code)
}

func TestStreamDeliversEveryEventInOrderAndResumes(t *testing.T) {
	nodes, locals := testNodes(t, "A", "B")
	locals[1].add("s")
	for i := 0; i < 10; i++ {
		locals[1].publish("s", &messages.Event{Type: messages.EventOutputTextDelta, Delta: "x"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	st, err := nodes[0].Subscribe(ctx, "B", "s", 4)
	require.NoError(t, err)
	assert.Equal(t, uint64(10), st.Published())
	go func() {
		for i := 0; i < 1000; i++ {
			locals[1].publish("s", &messages.Event{Type: messages.EventOutputTextDelta, Delta: "y"})
		}
		locals[1].end("s")
	}()
	want := uint64(5)
	for ev := range st.C() {
		require.Equal(t, want, ev.Seq, "in order, none lost or doubled")
		want++
	}
	assert.Equal(t, uint64(1011), want)
	assert.NoError(t, st.Err(), "the session ended")

	_, err = nodes[0].Subscribe(ctx, "B", "s", 0)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusNotFound, e.Status)
}

func TestSlowReaderHoldsTheOwnerToTheWindow(t *testing.T) {
	nodes, locals := testNodes(t, "A", "B")
	sess := locals[1].add("s")
	for i := 0; i < 5000; i++ {
		locals[1].publish("s", &messages.Event{Type: messages.EventOutputTextDelta, Delta: "z"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := nodes[0].Subscribe(ctx, "B", "s", 0)
	require.NoError(t, err)
	defer st.Close()

	read := 0
	for read < 100 {
		<-st.C()
		read++
	}
	// The owner pulls what the window lets it, and no more.
	window := int64(nodes[0].cfg.Window)
	time.Sleep(300 * time.Millisecond) // let an owner that ignored credit run ahead
	assert.LessOrEqual(t, sess.handed.Load(), int64(read)+window+1)
	for read < 5000 {
		ev := <-st.C()
		read++
		require.Equal(t, uint64(read), ev.Seq)
	}
}

func TestStreamOfADeadNodeEndsWithNodeLost(t *testing.T) {
	nodes, locals := testNodes(t, "A", "B")
	locals[1].add("s")
	locals[1].publish("s", &messages.Event{Type: messages.EventStatus, State: messages.StateRunning})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	located, err := nodes[0].Locate(ctx, "s")
	require.NoError(t, err)
	st, err := nodes[0].Subscribe(ctx, located.Node, "s", 0)
	require.NoError(t, err)
	first := <-st.C()
	assert.Equal(t, uint64(1), first.Seq)

	start := time.Now()
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	require.NoError(t, nodes[1].Shutdown(sctx))
	var last *messages.Event
	for ev := range st.C() {
		last = ev
	}
	require.NotNil(t, last)
	assert.Equal(t, messages.EventError, last.Type)
	assert.Contains(t, last.Message, "node_lost")
	assert.Equal(t, uint64(1), last.Seq, "the error repeats the last seq")
	assert.True(t, errors.Is(st.Err(), ErrNodeLost))
	t.Logf("stream ended %s after the owner began to stop", time.Since(start))

	// Its sessions are reported lost, and requests for them fail at once.
	waitFor(t, 10*time.Second, func() bool {
		for _, s := range nodes[0].Sessions(ctx) {
			if s.Info.Id == "s" {
				return s.Lost
			}
		}
		return false
	}, "B's session listed as lost")
	start = time.Now()
	err = nodes[0].Do(ctx, "B", "s", messages.Command{Type: messages.CommandInterrupt})
	assert.True(t, errors.Is(err, ErrNodeLost), "%v", err)
	assert.Less(t, time.Since(start), 100*time.Millisecond)
}

func TestSessionsOfANodeLostLongAgoAreForgotten(t *testing.T) {
	nodes, locals := testNodesTuned(t, func(c *Config) { c.ForgetLost = 2 * time.Second }, "A", "B")
	locals[1].add("b1")
	ctx := context.Background()
	require.Len(t, nodes[0].Sessions(ctx), 1)
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, nodes[1].Shutdown(sctx))
	waitFor(t, 10*time.Second, func() bool {
		got := nodes[0].Sessions(ctx)
		return len(got) == 1 && got[0].Lost
	}, "B's session listed lost")
	waitFor(t, 10*time.Second, func() bool { return len(nodes[0].Sessions(ctx)) == 0 }, "B's session forgotten")
}
