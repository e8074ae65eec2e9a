package actors

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

const benchConv = "c0ffee00-0000-4000-8000-000000000000"

// benchHistory is a finished trajectory of n steps as a snapshot decodes
// it: turns, answers, commands and checkpoints in turn.
func benchHistory(tb testing.TB, n int) []wire.Step { return benchHistoryOf(tb, n, 0) }

// benchHistoryOf is benchHistory with its first subagents checkpoints
// INVOKE_SUBAGENT steps instead, each of one child conversation.
func benchHistoryOf(tb testing.TB, n, subagents int) []wire.Step {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		meta := `"metadata":{"sourceTrajectoryStepInfo":{"stepIndex":` + strconv.Itoa(i) + `,"trajectoryId":"t","cascadeId":"` + benchConv + `"}}`
		switch i % 4 {
		case 0:
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE",` + meta + `,"userInput":{"userResponse":"turn ` + strconv.Itoa(i) + `"}}`)
		case 1:
			text := strings.Repeat("An answer. ", 20)
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE",` + meta + `,"plannerResponse":{"thinking":"Thinking.","modifiedResponse":"` + text + `","response":"` + text + `"}}`)
		case 2:
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_RUN_COMMAND","status":"CORTEX_STEP_STATUS_DONE",` + meta + `,"runCommand":{"commandLine":"ls","cwd":"/w","combinedOutput":{"full":"a\nb\n"}}}`)
		case 3:
			if i/4 < subagents {
				b.WriteString(`{"type":"CORTEX_STEP_TYPE_INVOKE_SUBAGENT","status":"CORTEX_STEP_STATUS_DONE",` + meta +
					`,"invokeSubagent":{"subagents":[{"role":"helper"}],"results":[{"conversationId":"child-` + strconv.Itoa(i) + `"}]}}`)
				break
			}
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_CHECKPOINT","status":"CORTEX_STEP_STATUS_DONE",` + meta + `}`)
		}
	}
	b.WriteString("]")
	var steps []wire.Step
	if err := json.Unmarshal([]byte(b.String()), &steps); err != nil {
		tb.Fatal(err)
	}
	return steps
}

// benchFrame is the wire JSON of a stream frame carrying one live planner
// step at index.
func benchFrame(tb testing.TB, index int, text string) []byte {
	step := map[string]any{
		"type":   "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
		"status": "CORTEX_STEP_STATUS_GENERATING",
		"metadata": map[string]any{"sourceTrajectoryStepInfo": map[string]any{
			"stepIndex": index, "trajectoryId": "t", "cascadeId": benchConv}},
		"plannerResponse": map[string]any{"thinking": "Thinking.", "modifiedResponse": text},
	}
	b, err := json.Marshal(map[string]any{"update": map[string]any{
		"conversationId": benchConv, "trajectoryId": "t", "status": "CASCADE_RUN_STATUS_RUNNING",
		"mainTrajectoryUpdate": map[string]any{"stepsUpdate": map[string]any{
			"indices": []int{index}, "steps": []any{step}, "totalLength": index + 1}},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkSessionFrame feeds stream frames, each carrying one changed step
// (the live planner step at the end of a trajectory of n steps), through a
// session's whole read path but the socket: the frame's JSON decoded into
// rpc.StreamFrame by rpc.DecodeFrame (what the stream reader does), the session's onFrame (the
// reconciler, publish into the event log and a subscription) and a
// consumer draining the subscription. The cost per frame must not grow
// with the trajectory.
func BenchmarkSessionFrame(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			bs := newBenchSession(benchHistory(b, n-1))
			feedFrames(b, bs, streamedFrames(b, n-1))
			bs.stop()
		})
	}
}

// streamedFrames are the wire JSON of 256 frames of the live planner step
// at index, its text one chunk longer in each.
func streamedFrames(tb testing.TB, index int) [][]byte {
	wires := make([][]byte, 256)
	text := ""
	for v := range wires {
		text += "A streamed chunk of text. "
		wires[v] = benchFrame(tb, index, text)
	}
	return wires
}

// feedFrames times b.N frames through bs's session, the wires in turn (the
// history applied anew to a fresh reconciler before each round): each must
// publish an event.
func feedFrames(b *testing.B, bs *benchSession, wires [][]byte) {
	s, core := bs.s, bs.s.shared
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := i % len(wires)
		if v == 0 && i > 0 {
			b.StopTimer()
			bs.fresh()
			b.StartTimer()
		}
		f, err := rpc.DecodeFrame(wires[v])
		if err != nil {
			b.Fatal(err)
		}
		before := core.events.seq
		s.onFrame(nil, &frameReceived{frame: f, received: time.Now()})
		if core.events.seq == before {
			b.Fatalf("frame %d published nothing", v)
		}
	}
	b.StopTimer()
}

// BenchmarkSessionFrameAfterSubagents is BenchmarkSessionFrame on a
// 4,000-step history that ran that many subagents, each
// mirrored to its end: the cost per frame must not grow with them.
func BenchmarkSessionFrameAfterSubagents(b *testing.B) {
	const n = 4001
	for _, k := range []int{0, 1000} {
		b.Run(fmt.Sprintf("subagents=%d", k), func(b *testing.B) {
			bs := newBenchSession(benchHistoryOf(b, n-1, k))
			s := bs.s
			client, err := rpc.NewClient(rpc.Config{Port: 1}) // never called: the children are done
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			s.link.client = client
			children := s.convs.root.Children()
			if len(children) != k {
				b.Fatalf("%d children, want %d", len(children), k)
			}
			for _, c := range children {
				s.convs.markDone(c.ConversationID)
			}
			feedFrames(b, bs, streamedFrames(b, n-1))
			s.link.client = nil
			bs.stop()
		})
	}
}

// benchSession is a session actor bound to benchConv with a history
// applied, its events drained, outside any actor system: the benchmarks
// drive it directly or through a mailbox of their own.
type benchSession struct {
	s       *session
	wg      *sync.WaitGroup // the host's: counts the goroutines it starts
	drained sync.WaitGroup
	fresh   func() // applies the history again to a new reconciler
}

func newBenchSession(hist []wire.Step) *benchSession {
	bs := &benchSession{wg: &sync.WaitGroup{}}
	core := newSessionShared(Spec{SessionID: "bench"}, Config{}.withDefaults(), bs.wg, &pumps{abandon: make(chan struct{})}, nil)
	sub := core.firstSubscription()
	bs.drained.Go(func() {
		for range sub.C() {
		}
	})
	bs.s = newSession(core).incarnate().(*session)
	bs.fresh = func() {
		bs.s.convs.root = nil
		bs.s.bindConversation(benchConv, false)
		bs.s.apply(nil, benchConv, mapper.FromSnapshot(hist, wire.RunRunning, time.Now()))
	}
	bs.fresh()
	return bs
}

// stop ends the session's event log and waits for everything it started.
func (bs *benchSession) stop() {
	bs.s.shared.finish(nil)
	bs.drained.Wait()
	bs.wg.Wait()
}

// TestSessionFrameBenchmarkPath checks the benchmark's path does what it
// claims: every frame yields exactly one text delta at the consumer.
func TestSessionFrameBenchmarkPath(t *testing.T) {
	var wg sync.WaitGroup
	core := newSessionShared(Spec{SessionID: "bench"}, Config{}.withDefaults(), &wg, &pumps{abandon: make(chan struct{})}, nil)
	sub := core.firstSubscription()
	s := newSession(core).incarnate().(*session)
	s.bindConversation(benchConv, false)
	s.apply(nil, benchConv, mapper.FromSnapshot(benchHistory(t, 9), wire.RunRunning, time.Now()))
	text := ""
	for range 3 {
		text += "chunk "
		f, err := rpc.DecodeFrame(benchFrame(t, 9, text))
		if err != nil {
			t.Fatal(err)
		}
		s.onFrame(nil, &frameReceived{frame: f, received: time.Now()})
	}
	core.finish(nil)
	var deltas []string
	for ev := range sub.C() {
		if ev.Type == messages.EventOutputTextDelta {
			deltas = append(deltas, ev.Delta)
		}
	}
	wg.Wait()
	if strings.Join(deltas, "") != text || len(deltas) != 3 {
		t.Fatalf("deltas %q, want 3 adding up to %q", deltas, text)
	}
}
