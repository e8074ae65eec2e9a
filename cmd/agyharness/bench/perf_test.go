package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

func TestTextVersionOfDeltas(t *testing.T) {
	ev := &messages.Event{Type: messages.EventOutputTextDelta, ID: "c/3/text@10", ItemID: "c/3/message", ConversationID: "c", Delta: "abcd"}
	v, ok := textVersion(ev)
	require.True(t, ok)
	assert.Equal(t, agytest.TextVersion{ConversationID: "c", StepIndex: 3, Length: 14}, v)

	ev.ID = "c/3/text#1@4"
	v, ok = textVersion(ev)
	require.True(t, ok, "a delta after a snapshot")
	assert.Equal(t, 8, v.Length)

	for _, bad := range []*messages.Event{
		{Type: messages.EventOutputTextDelta, ID: "c/3/text#1", ItemID: "c/3/message", ConversationID: "c", Snapshot: "x"},
		{Type: messages.EventReasoningDelta, ID: "c/3/reasoning@0", ItemID: "c/3/reasoning", ConversationID: "c", Delta: "x"},
		{Type: messages.EventOutputTextDelta, ID: "c/3/text", ItemID: "c/3/message", ConversationID: "c", Delta: "x"},
		{Type: messages.EventOutputTextDelta, ID: "c/x/text@0", ItemID: "c/x/message", ConversationID: "c", Delta: "x"},
	} {
		_, ok := textVersion(bad)
		assert.False(t, ok, "%+v", bad)
	}
}

func TestFakeLatenciesStreamFromWritePollFromChange(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ev := &messages.Event{Type: messages.EventOutputTextDelta, ID: "c/1/text@0", ItemID: "c/1/message", ConversationID: "c", Delta: "abc", Seq: 1}
	times := map[agytest.TextVersion]agytest.VersionTimes{
		{ConversationID: "c", StepIndex: 1, Length: 3}: {Changed: t0, Written: t0.Add(2 * time.Millisecond)},
	}
	d := &driver{mode: actors.ReadStream, wake: make(chan struct{}, 1)}
	d.receive(ev, t0.Add(5*time.Millisecond))
	d.receive(&messages.Event{Type: messages.EventError, Seq: 2}, t0)
	all, streamed := fakeLatencies(d, times)
	assert.Equal(t, []time.Duration{3 * time.Millisecond}, all)
	assert.Equal(t, all, streamed, "measured from the frame's write")
	d.mode = actors.ReadPoll
	all, streamed = fakeLatencies(d, times)
	assert.Equal(t, []time.Duration{5 * time.Millisecond}, all)
	assert.Empty(t, streamed)
	// A stream session that got the version from a read before the frame
	// is measured from the change, and is not among the streamed.
	d.mode = actors.ReadBoth
	d.deltas.xs[0].at = t0.Add(time.Millisecond)
	all, streamed = fakeLatencies(d, times)
	assert.Equal(t, []time.Duration{time.Millisecond}, all)
	assert.Empty(t, streamed)
	all, streamed = fakeLatencies(d, nil)
	assert.Empty(t, all, "no times, no samples")
	assert.Empty(t, streamed)
}

func TestFrameCostIsMeasuredAtEverySize(t *testing.T) {
	costs, err := frameCost(256, 1)
	require.NoError(t, err)
	for _, n := range frameCostSizes {
		assert.Positive(t, costs[n], "steps=%d", n)
	}
}

// TestStreamAndPollSessionsSideBySide runs stream and poll-only sessions in
// one campaign and checks both latencies, the frame counts and the CPU per
// frame are measured.
func TestStreamAndPollSessionsSideBySide(t *testing.T) {
	res, err := Run(context.Background(), Options{
		Sessions: 4, PollSessions: 2, Duration: 600 * time.Millisecond, TurnTimeout: 10 * time.Second,
		Seed: 5, TurnKinds: []string{"long"}, FrameCost: true, FrameCostFrames: 256,
	})
	require.NoError(t, err)
	assert.False(t, res.Failed(), "%v", res.Problems)
	assert.True(t, res.GroundTruthChecked)
	assert.True(t, res.CPUIncludesFakes)
	assert.Equal(t, 2, res.PollSessions)
	assert.Positive(t, res.LatencySamples)
	assert.Positive(t, res.StreamedLatencySamples)
	assert.LessOrEqual(t, res.StreamedLatencySamples, res.LatencySamples, "the streamed are some of the streaming sessions' deltas")
	assert.Positive(t, res.PollLatencySamples)
	assert.Positive(t, res.PollLatencyP50Ms)
	assert.Positive(t, res.Frames)
	assert.Positive(t, res.FrameBytesAvg)
	assert.Positive(t, res.FramesPerS)
	assert.Positive(t, res.CPUUsPerFrame)
	require.NotNil(t, res.FrameCostRatio)
	assert.Positive(t, *res.FrameCostRatio)
}

// TestExternalFakes runs the fakes in a fakeagy process: frames, latency
// and idle figures still come back, the ground truth is not checked, and
// this process's CPU is its own.
func TestExternalFakes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fakeagy")
	}
	res, err := Run(context.Background(), Options{
		Sessions: 2, PollSessions: 1, Duration: 600 * time.Millisecond, TurnTimeout: 10 * time.Second,
		Seed: 9, TurnKinds: []string{"long"}, ExternalFakes: true, IdleSessions: 3, IdleCPUWindow: 300 * time.Millisecond,
	})
	require.NoError(t, err)
	assert.False(t, res.Failed(), "%v", res.Problems)
	assert.True(t, res.ExternalFakes)
	assert.False(t, res.GroundTruthChecked)
	assert.False(t, res.CPUIncludesFakes)
	assert.Positive(t, res.Turns)
	assert.Positive(t, res.Frames)
	assert.Positive(t, res.LatencySamples)
	assert.Positive(t, res.PollLatencySamples)
	require.NotNil(t, res.HeapBytesPerIdle)
	require.NotNil(t, res.GoroutinesPerIdle)
	assert.Positive(t, *res.GoroutinesPerIdle)
	// Three idle sessions may take no CPU tick in 300 ms: only the
	// measurement's presence and sign are checked here.
	require.NotNil(t, res.CPUUsPerIdleSessionS, "the idle window was asked for")
	assert.GreaterOrEqual(t, *res.CPUUsPerIdleSessionS, 0.0)
}

// TestFloorReadsTheSameFrames runs a floor campaign: no harness, bare
// readers that take every frame the fakes write and end every turn, with
// the frames decoded and, with --floor-raw, not.
func TestFloorReadsTheSameFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fakeagy")
	}
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw=%v", raw), func(t *testing.T) {
			res, err := Run(context.Background(), Options{
				Sessions: 2, Duration: 600 * time.Millisecond, TurnTimeout: 10 * time.Second,
				Seed: 3, ExternalFakes: true, Floor: true, FloorRaw: raw,
			})
			require.NoError(t, err)
			assert.False(t, res.Failed(), "%v", res.Problems)
			assert.True(t, res.Floor)
			assert.Equal(t, raw, res.FloorRaw)
			assert.GreaterOrEqual(t, res.Turns, 2, "every reader ended at least one turn")
			assert.Greater(t, res.Frames, int64(100*res.Turns), "an essay is 100 chunks")
			assert.Equal(t, res.Frames, int64(res.Events), "the readers took every frame written")
			assert.Greater(t, res.FrameBytesAvg, 2000.0)
			assert.Positive(t, res.CPUUsPerFrame)
			assert.Zero(t, res.LatencySamples, "a floor run measures no latency")
		})
	}
}

// TestSettleWaitsForLateFrames: settle returns only once the readers have
// gone quiet, so frames a fake writes after a turn's IDLE are taken; and it
// returns at its limit, or as soon as its context ends, when they never go
// quiet. In a synctest bubble: the times settle takes are exact.
func TestSettleWaitsForLateFrames(t *testing.T) {
	synctest.Test(t, testSettleWaitsForLateFrames)
}

func testSettleWaitsForLateFrames(t *testing.T) {
	readers := []*floorReader{{}, {}}
	late := make(chan struct{})
	go func() {
		defer close(late)
		for i := range 20 {
			readers[i%2].frames.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	settle(context.Background(), readers, 500*time.Millisecond, time.Minute)
	assert.Equal(t, 550*time.Millisecond, time.Since(start), "quiet from the tick after the last frame (ticks of 50 ms)")
	select {
	case <-late:
	default:
		t.Fatal("settle returned while frames were still coming")
	}
	assert.Equal(t, int64(10), readers[0].frames.Load())
	assert.Equal(t, int64(10), readers[1].frames.Load())

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				readers[0].frames.Add(1)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	start = time.Now()
	settle(context.Background(), readers, time.Second, 100*time.Millisecond)
	assert.Equal(t, 100*time.Millisecond, time.Since(start), "never quiet: returns at the limit")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	settle(ctx, readers, time.Second, time.Minute)
	assert.Zero(t, time.Since(start), "never quiet, ctx ended: returns at once")
	close(stop)
	<-done
}

// TestRawRunStatus finds a frame's run status in its bytes as the decoder
// would read it, on frames the fake writes.
func TestRawRunStatus(t *testing.T) {
	for _, st := range []wire.RunStatus{wire.RunRunning, wire.RunIdle, ""} {
		payload, err := json.Marshal(map[string]any{"update": map[string]any{"conversationId": "c", "status": st,
			"mainTrajectoryUpdate": map[string]any{"stepsUpdate": map[string]any{"steps": []any{map[string]any{"status": "CORTEX_STEP_STATUS_DONE"}}}}}})
		require.NoError(t, err)
		f, err := rpc.DecodeFrame(payload)
		require.NoError(t, err)
		require.Equal(t, st, f.Update.Status)
		assert.Equal(t, st, rawRunStatus(payload), "%s", payload)
	}
}

func TestFloorPicksTheRecommendedModel(t *testing.T) {
	assert.Equal(t, "MODEL_B", firstRecommended(map[string]wire.ModelInfo{
		"a": {Model: "MODEL_A"}, "b": {Model: "MODEL_B", Recommended: true}, "c": {Model: "MODEL_C", Recommended: true},
	}))
	assert.Equal(t, "MODEL_A", firstRecommended(map[string]wire.ModelInfo{"b": {Model: "MODEL_B"}, "a": {Model: "MODEL_A"}}), "none recommended: the first by name")
	assert.Equal(t, "bare", firstRecommended(map[string]wire.ModelInfo{"bare": {Recommended: true}}), "no enum: the name")
	assert.Empty(t, firstRecommended(nil))
}

func TestPerfOptionsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--external-fakes"}, // faults default to all
		{"--sessions", "2", "--poll-sessions", "3"},
		{"--poll-sessions", "-1"},
		{"--turn-kinds", "sonnet"},
		{"--idle-sessions", "-2"},
		{"--idle-sessions", "1", "--idle-cpu-window", "-1s"},
		{"--floor", "--faults", "none"},                         // no --external-fakes
		{"--floor-raw", "--external-fakes", "--faults", "none"}, // no --floor
		{"--floor", "--external-fakes", "--faults", "none", "--poll-sessions", "1"},
		{"--floor", "--external-fakes", "--faults", "none", "--idle-sessions", "1"},
		{"--floor", "--external-fakes", "--faults", "none", "--turn-kinds", "long"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, Main(context.Background(), args, &out, &errb), args)
		assert.NotEmpty(t, errb.String(), args)
	}
}

func TestDefaultIntervalsLeaveTheActorsDefaults(t *testing.T) {
	fast := campaignHostConfig(Options{})
	assert.Equal(t, 500*time.Millisecond, fast.PollSlow)
	def := campaignHostConfig(Options{DefaultIntervals: true})
	assert.Zero(t, def.PollSlow, "zero: NewHost fills the actors' default")
	assert.Zero(t, def.PollFast)
	assert.Zero(t, def.RotationInterval)
}

func TestHelpOnStdoutBadFlagOnStderr(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 0, Main(context.Background(), []string{"--help"}, &out, &errb))
	assert.Contains(t, out.String(), "Usage: agyharness bench")
	assert.Contains(t, out.String(), "-external-fakes")
	assert.Contains(t, out.String(), "Example:")
	out.Reset()
	errb.Reset()
	assert.Equal(t, 2, Main(context.Background(), []string{"--no-such-flag"}, &out, &errb))
	assert.Contains(t, errb.String(), "no-such-flag")
}

// TestStatusListPrintsItsFigures runs --status-list short: both counts'
// CPU per session per second, idle and streaming, each round's, and the
// ratios, in the JSON and the text.
func TestStatusListPrintsItsFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fakeagy")
	}
	defer func(d, a time.Duration) { bindingSettle, attachSpread = d, a }(bindingSettle, attachSpread)
	bindingSettle, attachSpread = 50*time.Millisecond, 400*time.Millisecond
	args := []string{"--sessions", "2", "--status-list", "2,40", "--idle-cpu-window", "200ms", "--duration", "300ms",
		"--chunk-delay", "2ms", "--faults", "none", "--frame-cost=false"}
	var out, errOut bytes.Buffer
	began := time.Now()
	require.Equal(t, 0, Main(context.Background(), append(args, "--json"), &out, &errOut), errOut.String())
	// Each round attaches its second session half an attachSpread after
	// its first.
	assert.GreaterOrEqual(t, time.Since(began), 2*statusListPairs*attachSpread/2, "attaches paced")
	var res map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	for _, key := range []string{"status_list_cpu_ratio_idle", "status_list_cpu_ratio_streaming"} {
		require.Contains(t, res, key)
		assert.Positive(t, res[key], key)
	}
	per, ok := res["status_list_cpu_us_per_session_s"].(map[string]any)
	require.True(t, ok, out.String())
	for _, n := range []string{"2", "40"} {
		c, ok := per[n].(map[string]any)
		require.True(t, ok, n)
		for _, k := range []string{"idle", "streaming"} {
			rounds, ok := c[k].([]any)
			require.True(t, ok, k)
			assert.Len(t, rounds, statusListPairs, "one figure a round")
		}
		assert.Positive(t, c["streaming_median"], n)
	}
	var r Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	var text bytes.Buffer
	require.NoError(t, report(&text, &r, false))
	assert.Contains(t, text.String(), "40 listed conversations: ")
	assert.Contains(t, text.String(), "status list CPU ratio, largest count over smallest: idle ")
}
