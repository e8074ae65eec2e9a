package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// campaignSeed is the short campaign's seed; BENCH_SEED overrides it to
// reproduce or explore.
func campaignSeed(t *testing.T) int64 {
	if s := os.Getenv("BENCH_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
		return n
	}
	return 7
}

// TestShortCampaign is the short campaign of make test: every fault kind,
// 56 sessions, a few seconds of turns. Any lost, doubled, out-of-order or
// misdelivered item fails it with the seed and the conversation's ground
// truth.
func TestShortCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("campaign skipped in -short")
	}
	seed := campaignSeed(t)
	res, err := Run(context.Background(), Options{
		Sessions: 56, Duration: 3 * time.Second, TurnTimeout: 30 * time.Second, Seed: seed, Faults: AllFaults,
	})
	require.NoError(t, err)
	t.Logf("seed %d: %d turns, %d items, %d prompts, %d rewinds, faults %v, restarts %v, latency p50 %.2fms p99 %.2fms",
		seed, res.Turns, res.ItemsEmitted, res.Prompts, res.Rewinds, res.FaultsInjected, res.Restarts, res.LatencyP50Ms, res.LatencyP99Ms)
	problems := "seed " + strconv.FormatInt(seed, 10) + ":\n" + strings.Join(res.Problems, "\n")
	assert.Zero(t, res.Lost, problems)
	assert.Positive(t, res.Thinking, "the campaign's turns think")
	assert.Zero(t, res.ThinkingLost, problems)
	assert.Zero(t, res.Duplicated, problems)
	assert.Zero(t, res.OutOfOrder, problems)
	assert.Zero(t, res.SeqErrors, problems)
	assert.Zero(t, res.PromptsMisdelivered, problems)
	assert.Zero(t, res.PromptsUnresolved, problems)
	assert.Zero(t, res.StuckTurns, problems)
	assert.Zero(t, res.RewindsUnreported, problems)
	assert.Positive(t, res.Rewinds, "the mix has rewinds")
	assert.Positive(t, res.AgyErrors, "the mix has agy's error steps")
	assert.Positive(t, res.Wakes, "the mix has runs nobody typed")
	assert.LessOrEqual(t, res.GoroutinesAfter, res.GoroutinesBefore, "goroutines leaked")
	assert.Positive(t, res.Turns)
	assert.Positive(t, res.Prompts)
	for _, k := range []string{"drop_stream_after", "restart", "burst_5xx", "slow", "prompt_timeout", "truncated_frame"} {
		assert.Positivef(t, res.FaultsInjected[k], "fault %s never fired", k)
	}
}

func TestMainJSONAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"--sessions", "2", "--duration", "300ms", "--seed", "3", "--faults", "stream-drop", "--idle-sessions", "2", "--frame-cost-frames", "256", "--json"}, &out, &errb)
	require.Contains(t, errb.String(), "seed 3")
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	for _, k := range []string{"sessions", "turns", "items_expected", "items_emitted", "lost", "duplicated", "out_of_order",
		"prompts", "prompts_misdelivered", "prompts_failed_clearly", "faults_injected", "restarts", "goroutines_before",
		"goroutines_after", "seed", "latency_p50_ms", "latency_p99_ms", "latency_max_ms", "poll_latency_p50_ms",
		"frames", "frames_per_s", "harness_cpu_s", "cpu_us_per_frame", "heap_bytes_per_idle_session",
		"goroutines_per_idle_session", "frame_cost_ratio_1000_vs_10", "heap_peak_bytes", "heap_end_bytes"} {
		assert.Contains(t, got, k)
	}
	assert.Equal(t, 0, code, errb.String()+out.String())

	for _, args := range [][]string{
		{"--sessions", "0"},
		{"--faults", "meteor"},
		{"--read-mode", "telepathy"},
		{"extra"},
	} {
		errb.Reset()
		assert.Equal(t, 2, Main(context.Background(), args, &out, &errb), args)
		assert.NotEmpty(t, errb.String())
	}
}

func TestFailedReportsEveryKindOfFault(t *testing.T) {
	assert.False(t, (&Result{GoroutinesBefore: 5, GoroutinesAfter: 5}).Failed())
	for _, r := range []Result{{Lost: 1}, {ThinkingLost: 1}, {Duplicated: 1}, {OutOfOrder: 1}, {PromptsMisdelivered: 1}, {PromptsUnresolved: 1}, {StuckTurns: 1}, {GoroutinesAfter: 1}} {
		assert.True(t, r.Failed(), "%+v", r)
	}
}

// TestCampaignFromEnv runs `agyharness bench` with the arguments in
// BENCH_ARGS (for make soak and long runs before the CLI registers the
// command); skipped when unset.
func TestCampaignFromEnv(t *testing.T) {
	args := os.Getenv("BENCH_ARGS")
	if args == "" {
		t.Skip("BENCH_ARGS not set")
	}
	var out, errb bytes.Buffer
	code := Main(context.Background(), strings.Fields(args), &out, &errb)
	t.Logf("stderr:\n%s\nstdout:\n%s", errb.String(), out.String())
	require.Equal(t, 0, code)
}

// stepIndex reads the index out of an item id of the conversation, and
// nothing out of another conversation's id or a malformed one.
func TestStepIndex(t *testing.T) {
	for _, c := range []struct {
		id   string
		want int
		ok   bool
	}{
		{"conv/12/message", 12, true},
		{"conv/3", 3, true},
		{"conv12/message", 0, false},
		{"other/12/message", 0, false},
		{"conv/x/message", 0, false},
		{"conv", 0, false},
	} {
		got, ok := stepIndex(c.id, "conv")
		assert.Equal(t, c.ok, ok, c.id)
		assert.Equal(t, c.want, got, c.id)
	}
}

// Re-asked prompts and the other prompt kinds are in the mix: the driver
// answers every ask of a compound command, the file permission and the MCP
// elicitation, leaves the browser action to agy (withdrawn when agy moves
// on), and the judge finds every answer where agy echoes it.
func TestCampaignWithReaskedAndOtherPrompts(t *testing.T) {
	if testing.Short() {
		t.Skip("campaign skipped in -short")
	}
	seed := campaignSeed(t)
	res, err := Run(context.Background(), Options{
		Sessions: 4, Duration: 3 * time.Second, TurnTimeout: 30 * time.Second, Seed: seed, TurnKinds: []string{"compound", "asks"},
	})
	require.NoError(t, err)
	problems := "seed " + strconv.FormatInt(seed, 10) + ":\n" + strings.Join(res.Problems, "\n")
	assert.Zero(t, res.Lost, problems)
	assert.Zero(t, res.Duplicated, problems)
	assert.Zero(t, res.PromptsMisdelivered, problems)
	assert.Zero(t, res.PromptsUnresolved, problems)
	assert.Zero(t, res.StuckTurns, problems)
	assert.Positive(t, res.PromptsLeftToAgy, "the browser action was left to agy")
	assert.Greater(t, res.Prompts, res.PromptsLeftToAgy)
}
