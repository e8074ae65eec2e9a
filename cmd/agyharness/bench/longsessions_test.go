package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLongSessionsReportHeapPerActiveSession runs a small long-sessions
// run through the command line: every turn of every session is taken, and
// the heap per active session is printed, in the JSON and in the readable
// report, beside the conversation's length and the turns.
func TestLongSessionsReportHeapPerActiveSession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fakeagy")
	}
	args := []string{"--long-sessions", "2", "--history-steps", "300", "--turns-per-session", "5", "--chunk-delay", "1ms",
		"--faults", "none", "--frame-cost=false", "--seed", "4"}
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main(context.Background(), append(args, "--json"), &out, &errb), errb.String())
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	require.Contains(t, got, "heap_bytes_per_active_session")
	// A number; its sign is not checked: in a test binary the heap
	// before may still hold what earlier tests let go of.
	assert.IsType(t, float64(0), got["heap_bytes_per_active_session"])
	assert.EqualValues(t, 300, got["history_steps"])
	assert.EqualValues(t, 5, got["turns_per_session"])
	assert.EqualValues(t, 10, got["turns"], "every turn taken")
	assert.EqualValues(t, 0, got["stuck_turns"])
	assert.EqualValues(t, 2, got["sessions"])

	out.Reset()
	require.Equal(t, 0, Main(context.Background(), args, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "active session: ")
	assert.Contains(t, out.String(), "heap bytes after 5 turns on 300 history steps")
}

func TestLongSessionsOptionsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--long-sessions", "2"}, // faults default to all
		{"--long-sessions", "-1", "--faults", "none"},
		{"--long-sessions", "2", "--faults", "none", "--turns-per-session", "0"},
		{"--history-steps", "10", "--faults", "none"}, // no --long-sessions
		{"--long-sessions", "2", "--faults", "none", "--idle-sessions", "1"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, Main(context.Background(), args, &out, &errb), args)
		assert.NotEmpty(t, errb.String(), args)
	}
}

func TestTheHeapSamplerSeesTheLiveHeap(t *testing.T) {
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i) // in use, not only reserved
	}
	runtime.GC()
	// The sampler reads once as it starts, before it can see the stop.
	p := startHeapSampler(time.Hour).peaks()
	runtime.KeepAlive(big)
	assert.GreaterOrEqual(t, p.live, uint64(64<<20), "the live heap holds the 64 MiB")
	assert.GreaterOrEqual(t, p.objects, uint64(64<<20), "and so do its objects")
}
