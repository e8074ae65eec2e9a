package actors

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/stretchr/testify/require"
)

const benchConv = "c0ffee00-0000-4000-8000-000000000000"

// benchHistory is a finished trajectory of n steps as a snapshot decodes
// it: turns, answers, commands and checkpoints in turn.
func benchHistory(tb testing.TB, n int) []rpc.Step {
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
		default:
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_CHECKPOINT","status":"CORTEX_STEP_STATUS_DONE",` + meta + `}`)
		}
	}
	b.WriteString("]")
	var steps []rpc.Step
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
	const versions = 256
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			hist := benchHistory(b, n-1)
			wires := make([][]byte, versions)
			text := ""
			for v := range wires {
				text += "A streamed chunk of text. "
				wires[v] = benchFrame(b, n-1, text)
			}
			var wg sync.WaitGroup
			core := newSessionCore(Spec{SessionID: "bench"}, Config{}.withDefaults(), &wg, &pumps{abandon: make(chan struct{})}, nil)
			sub := core.subscribeLocked()
			var drained sync.WaitGroup
			drained.Go(func() {
				for range sub.C() {
				}
			})
			s := newSession(core).(*session)
			fresh := func() {
				core.root = nil
				s.bindConversation(benchConv)
				s.apply(nil, benchConv, mapper.FromSnapshot(hist, rpc.RunRunning, time.Now()))
			}
			fresh()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v := i % versions
				if v == 0 && i > 0 {
					b.StopTimer()
					fresh()
					b.StartTimer()
				}
				f, err := rpc.DecodeFrame(wires[v])
				if err != nil {
					b.Fatal(err)
				}
				before := core.seq
				s.onFrame(nil, &messages.FrameReceived{Frame: f, Received: time.Now()})
				if core.seq == before {
					b.Fatalf("frame %d published nothing", v)
				}
			}
			b.StopTimer()
			core.finish(nil)
			drained.Wait()
			wg.Wait()
		})
	}
}

// TestSessionFrameBenchmarkPath checks the benchmark's path does what it
// claims: every frame yields exactly one text delta at the consumer.
func TestSessionFrameBenchmarkPath(t *testing.T) {
	var wg sync.WaitGroup
	core := newSessionCore(Spec{SessionID: "bench"}, Config{}.withDefaults(), &wg, &pumps{abandon: make(chan struct{})}, nil)
	sub := core.subscribeLocked()
	s := newSession(core).(*session)
	s.bindConversation(benchConv)
	s.apply(nil, benchConv, mapper.FromSnapshot(benchHistory(t, 9), rpc.RunRunning, time.Now()))
	text := ""
	for range 3 {
		text += "chunk "
		f, err := rpc.DecodeFrame(benchFrame(t, 9, text))
		if err != nil {
			t.Fatal(err)
		}
		s.onFrame(nil, &messages.FrameReceived{Frame: f, Received: time.Now()})
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

// TestEventLogKeepsTheLastEventsInOrder publishes past the log's bound and
// checks a resuming subscriber gets exactly the last EventLog events, in
// seq order.
func TestEventLogKeepsTheLastEventsInOrder(t *testing.T) {
	var wg sync.WaitGroup
	p := &pumps{abandon: make(chan struct{})}
	core := newSessionCore(Spec{SessionID: "log"}, Config{EventLog: 5}.withDefaults(), &wg, p, nil)
	s := newSession(core).(*session)
	for i := range 13 {
		s.publish(&messages.Event{Type: messages.EventStatus, ID: fmt.Sprint("e", i)})
		if i == 3 {
			require.Len(t, core.logged(), 4, "below the bound the log grows")
		}
	}
	sub := newSubscription(100, p)
	s.onSubscribe(&messages.Subscribe{AfterSeq: 9, Sink: sub})
	core.finish(nil)
	sub.Finish()
	var seqs []uint64
	for ev := range sub.C() {
		seqs = append(seqs, ev.Seq)
	}
	wg.Wait()
	require.Equal(t, []uint64{10, 11, 12, 13}, seqs)
	var all []uint64
	for _, ev := range core.logged() {
		all = append(all, ev.Seq)
	}
	require.Equal(t, []uint64{9, 10, 11, 12, 13}, all)
}

// TestLogKeepsEveryFieldOfAnEvent logs a delta with each field of Event
// set in turn (and one with none of the others): a resuming subscriber
// gets each exactly as published, whether the log kept it in a delta's
// fields or whole. A field added to Event and not to deltaOnly fails here.
func TestLogKeepsEveryFieldOfAnEvent(t *testing.T) {
	var wg sync.WaitGroup
	core := newSessionCore(Spec{SessionID: "log"}, Config{}.withDefaults(), &wg, &pumps{abandon: make(chan struct{})}, nil)
	delta := func() *messages.Event {
		return &messages.Event{Type: messages.EventOutputTextDelta, ID: "c/3/text@10", SessionID: "log", ConversationID: "c",
			Seq: 1, Time: time.Unix(1700000000, 5), ItemID: "c/3/message", Delta: "more text"}
	}
	plain := delta()
	core.logEvent(plain)
	require.Nil(t, core.log[0].whole, "a plain delta is kept in a delta's fields")
	require.Equal(t, plain, core.logged()[0])

	typ := reflect.TypeFor[messages.Event]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		ev := delta()
		v := reflect.ValueOf(ev).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			if f.Name == "Type" {
				v.SetString(string(messages.EventReasoningDelta))
			} else {
				v.SetString(v.String() + "x")
			}
		case reflect.Uint64:
			v.SetUint(v.Uint() + 1)
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		case reflect.Struct:
			v.Set(reflect.ValueOf(time.Unix(1800000000, 0)))
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", f.Name, v.Kind())
		}
		core.log, core.logStart = nil, 0
		core.logEvent(ev)
		require.Equal(t, ev, core.logged()[0], "with %s set", f.Name)
	}
}

// TestFullLogOfDeltas: a session's log full of streamed deltas (4,096, the
// default) holds about 1 MB, not the 3 MB of whole events it held before.
func TestFullLogOfDeltas(t *testing.T) {
	var wg sync.WaitGroup
	cfg := Config{}.withDefaults()
	core := newSessionCore(Spec{SessionID: "log"}, cfg, &wg, &pumps{abandon: make(chan struct{})}, nil)
	text := strings.Repeat("a sentence of a long answer, ", 3)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	for i := range cfg.EventLog {
		core.logEvent(&messages.Event{Type: messages.EventOutputTextDelta, ID: benchConv + "/41/text@" + strconv.Itoa(i*len(text)),
			SessionID: "log", ConversationID: benchConv, Seq: uint64(i + 1), Time: time.Now(), ItemID: benchConv + "/41/message",
			Delta: strings.Clone(text)})
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapAlloc) - int64(before)
	t.Logf("a log of %d deltas holds %d bytes (%d a delta)", cfg.EventLog, held, held/int64(cfg.EventLog))
	require.Less(t, held, int64(2<<20), "whole events: 3.3 MB")
	runtime.KeepAlive(core)
}
