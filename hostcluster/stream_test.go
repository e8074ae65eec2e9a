package hostcluster

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownerRig is a node actor serving a fakeLocal, and a reader, in one actor
// system: the stream and feeder actors without remote between them.
type ownerRig struct {
	system *actor.ActorSystem
	node   *actor.PID
	local  *fakeLocal
	wg     *sync.WaitGroup
}

func newOwnerRig(t *testing.T, window int) *ownerRig {
	t.Helper()
	system := actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }),
		actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	r := &ownerRig{system: system, local: newFakeLocal(), wg: &sync.WaitGroup{}}
	r.node = system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &nodeActor{name: "B", local: r.local, window: window, wg: r.wg}
	}))
	t.Cleanup(func() {
		_ = system.Root.PoisonFuture(r.node).Wait()
		r.wg.Wait()
		system.Shutdown()
	})
	return r
}

func (r *ownerRig) open(t *testing.T, id string, after uint64, window int, lost <-chan struct{}) (*Stream, error) {
	return r.openAs(t, id, after, window, lost, false)
}

func (r *ownerRig) openAs(t *testing.T, id string, after uint64, window int, lost <-chan struct{}, raw bool) (*Stream, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return openStream(ctx, rigHome{r.system}, r.wg, r.node, "B", id, after, window, lost, raw)
}

// rigHome is the rig's actor system as a stream's home.
type rigHome struct{ system *actor.ActorSystem }

func (h rigHome) root() *actor.RootContext { return h.system.Root }
func (h rigHome) track(*actor.PID) bool    { return true }
func (h rigHome) untrack(*actor.PID)       {}

func TestStreamActorsDeliverEveryEventInOrder(t *testing.T) {
	r := newOwnerRig(t, 16)
	r.local.add("s")
	for i := 0; i < 50; i++ {
		r.local.publish("s", &messages.Event{Type: messages.EventOutputTextDelta, Delta: "a"})
	}
	st, err := r.open(t, "s", 20, 16, nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(50), st.Published())
	go func() {
		for i := 0; i < 2000; i++ {
			r.local.publish("s", &messages.Event{Type: messages.EventOutputTextDelta, Delta: "b"})
		}
		r.local.end("s")
	}()
	want := uint64(21)
	for ev := range st.C() {
		require.Equal(t, want, ev.Seq)
		want++
	}
	assert.Equal(t, uint64(2051), want, "every event, once")
	assert.NoError(t, st.Err())
}

// In a synctest bubble: once every goroutine is blocked (synctest.Wait), an
// owner that ignored credit would have pulled all it could.
func TestStreamHoldsTheOwnerToItsWindow(t *testing.T) {
	synctest.Test(t, testStreamHoldsTheOwnerToItsWindow)
}

func testStreamHoldsTheOwnerToItsWindow(t *testing.T) {
	// Time stops when the bubble's test returns: the last cleanup lets
	// Proto.Actor's dead-letter throttle timers run out first.
	t.Cleanup(func() { time.Sleep(time.Minute) })
	r := newOwnerRig(t, 32)
	sess := r.local.add("s")
	for i := 0; i < 1000; i++ {
		r.local.publish("s", &messages.Event{Type: messages.EventOutputTextDelta, Delta: "a"})
	}
	st, err := r.open(t, "s", 0, 32, nil)
	require.NoError(t, err)
	defer st.Close()
	for i := 0; i < 10; i++ {
		<-st.C()
	}
	synctest.Wait()
	assert.LessOrEqual(t, sess.handed.Load(), int64(10+32+1))
	for i := 11; i <= 1000; i++ {
		ev := <-st.C()
		require.Equal(t, uint64(i), ev.Seq)
	}
}

func TestStreamEndsWithNodeLostWhenTheOwnerGoes(t *testing.T) {
	r := newOwnerRig(t, 16)
	r.local.add("s")
	r.local.publish("s", &messages.Event{Type: messages.EventStatus, State: messages.StateRunning})
	r.local.publish("s", &messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	lost := make(chan struct{})
	st, err := r.open(t, "s", 0, 16, lost)
	require.NoError(t, err)
	for i := 1; i <= 2; i++ {
		ev := <-st.C()
		require.Equal(t, uint64(i), ev.Seq)
	}
	close(lost)
	ev, ok := <-st.C()
	require.True(t, ok)
	assert.Equal(t, messages.EventError, ev.Type)
	assert.Contains(t, ev.Message, "node_lost")
	assert.Equal(t, uint64(2), ev.Seq)
	require.NotNil(t, ev.Retryable)
	assert.True(t, *ev.Retryable)
	_, ok = <-st.C()
	assert.False(t, ok)
	assert.True(t, errors.Is(st.Err(), ErrNodeLost))
}

func TestClosingAStreamStopsItsFeeder(t *testing.T) {
	r := newOwnerRig(t, 16)
	r.local.add("s")
	st, err := r.open(t, "s", 0, 16, nil)
	require.NoError(t, err)
	r.local.mu.Lock()
	sub := r.local.sessions["s"].subs[0]
	r.local.mu.Unlock()
	st.Close()
	select {
	case <-sub.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the owner's subscription was not closed")
	}
	_, ok := <-st.C()
	assert.False(t, ok)
}

func TestStreamRefusedByTheOwnerCrossesAsItsError(t *testing.T) {
	r := newOwnerRig(t, 16)
	_, err := r.open(t, "nope", 0, 16, nil)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusNotFound, e.Status)

	r.local.add("s")
	_, err = r.open(t, "s", 5, 16, nil)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusBadRequest, e.Status, "Last-Event-ID beyond the session's last event")
}

func TestNodeActorRefusesAnotherProtocolVersion(t *testing.T) {
	r := newOwnerRig(t, 16)
	res, err := r.system.Root.RequestFuture(r.node, &clusterpb.ListSessions{Version: ProtocolVersion + 1}, 5*time.Second).Result()
	require.NoError(t, err)
	list := res.(*clusterpb.SessionList)
	require.NotNil(t, list.Failure)
	assert.Equal(t, CodeVersion, list.Failure.Code)

	res, err = r.system.Root.RequestFuture(r.node, &clusterpb.Command{Version: 0, SessionId: "s", Type: "turn"}, 5*time.Second).Result()
	require.NoError(t, err)
	assert.Equal(t, CodeVersion, res.(*clusterpb.CommandResult).Failure.Code)
}

// A raw stream hands on the owner's JSON of each event, byte for byte, in
// order, and ends with node_lost as JSON too.
func TestRawStreamPassesTheOwnersJSON(t *testing.T) {
	r := newOwnerRig(t, 16)
	r.local.add("s")
	var want [][]byte
	for i := 0; i < 40; i++ {
		ev := &messages.Event{Type: messages.EventOutputTextDelta, ItemID: "i1", Delta: "a\nb <\"c\">"}
		r.local.publish("s", ev)
		b, err := json.Marshal(ev) // publish set its seq
		require.NoError(t, err)
		want = append(want, b)
	}
	lost := make(chan struct{})
	st, err := r.openAs(t, "s", 0, 16, lost, true)
	require.NoError(t, err)
	assert.Nil(t, st.C(), "a raw stream has no decoded channel")
	for i, w := range want {
		got := <-st.RawC()
		require.Equal(t, uint64(i+1), got.Seq)
		require.Equal(t, string(w), string(got.JSON))
	}
	close(lost)
	last, ok := <-st.RawC()
	require.True(t, ok)
	var ev messages.Event
	require.NoError(t, json.Unmarshal(last.JSON, &ev))
	assert.Equal(t, messages.EventError, ev.Type)
	assert.Contains(t, ev.Message, "node_lost")
	assert.Equal(t, uint64(40), last.Seq)
	_, ok = <-st.RawC()
	assert.False(t, ok)
}

// What another node sends is checked before it is written on as an SSE
// data line: one JSON object, no line break.
func TestRawStreamRefusesWhatIsNotOneLineOfJSON(t *testing.T) {
	a := &streamActor{raw: true}
	for _, bad := range []string{
		"{\"seq\":1}\n\nevent: end\ndata: {}",
		"{\"seq\":1,\r\"type\":\"status\"}",
		"[1,2]",
		"{\"seq\":1",
		"",
		"{\"seq\":\"one\"}",
	} {
		_, err := a.item([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
	it, err := a.item([]byte(`{"seq":7,"type":"status"}`))
	require.NoError(t, err)
	assert.Equal(t, uint64(7), it.seq)
}

// BenchmarkReaderPerEvent is the reading node's work on one event of a
// stream before its SSE line is written: decoded (a decode here, and the
// SSE writer's json.Marshal) against raw (the check, and the bytes as
// they came). docs/PERFORMANCE.md, "Across nodes with mutual TLS".
func BenchmarkReaderPerEvent(b *testing.B) {
	retry := true
	ev := &messages.Event{Type: messages.EventOutputTextDelta, ID: "d-c1-4-@1200", SessionID: "s0042", Seq: 4711,
		Time: time.Now().UTC(), ConversationID: "0f6c1b8e-6a3e-4f52-9d6e-1b2f3c4d5e6f", ItemID: "0f6c1b8e-6a3e-4f52-9d6e-1b2f3c4d5e6f/4",
		Delta: "The harness reads each frame of the language server's stream, maps it to the steps it changed, and publishes ", Retryable: &retry}
	raw, err := json.Marshal(ev)
	require.NoError(b, err)
	for _, mode := range []struct {
		name string
		raw  bool
	}{{"decoded", false}, {"raw", true}} {
		b.Run(mode.name, func(b *testing.B) {
			a := &streamActor{raw: mode.raw}
			b.ReportAllocs()
			for b.Loop() {
				it, err := a.item(raw)
				if err != nil {
					b.Fatal(err)
				}
				if it.ev != nil {
					if _, err := json.Marshal(it.ev); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
