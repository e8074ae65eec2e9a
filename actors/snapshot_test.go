package actors

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedAgy answers GetAllCascadeTrajectories with the next summary of
// its script (the last one again once the script is spent) and
// GetCascadeTrajectorySteps with steps. A non-nil gate holds the first
// answer until it is closed.
func scriptedAgy(t *testing.T, conv string, summaries []string, steps string, gate chan struct{}) *rpc.Client {
	t.Helper()
	var mu sync.Mutex
	var gated sync.Once
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/"+rpc.MethodGetAllCascadeTrajectories):
			if gate != nil {
				gated.Do(func() { <-gate })
			}
			mu.Lock()
			s := summaries[0]
			if len(summaries) > 1 {
				summaries = summaries[1:]
			}
			mu.Unlock()
			if s == "503" {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"code":"unavailable","message":"overloaded"}`)
				return
			}
			fmt.Fprintf(w, `{"trajectorySummaries":{%q:%s}}`, conv, s)
		case strings.HasSuffix(r.URL.Path, "/"+rpc.MethodGetCascadeTrajectorySteps):
			fmt.Fprintf(w, `{"steps":%s}`, steps)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client, err := rpc.NewClient(rpc.Config{Port: srv.Listener.Addr().(*net.TCPAddr).Port})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return client
}

// Two IDLE reads around the steps prove the steps were read at rest only if
// nothing moved between them: a whole turn can start and end between the
// two reads, and steps read in its middle (each terminal, the next not yet
// written) would close the turn early. The long soak saw that: idle went
// out before the turn's last answer, which came after the next turn's items.
func TestSnapshotIsIdleOnlyIfNothingMovedAroundIt(t *testing.T) {
	const conv = "c0ffee00-0000-4000-8000-000000000001"
	steps := `[{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":0}}},` +
		`{"type":"CORTEX_STEP_TYPE_RUN_COMMAND","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":1}}}]`
	idle := func(count int, mod string) string {
		return fmt.Sprintf(`{"status":"CASCADE_RUN_STATUS_IDLE","stepCount":%d,"lastModifiedTime":%q}`, count, mod)
	}
	for _, tc := range []struct {
		name      string
		summaries []string
		want      wire.RunStatus
	}{
		{"at rest", []string{idle(2, "2026-11-30T10:00:00Z"), idle(2, "2026-11-30T10:00:00Z")}, wire.RunIdle},
		{"a turn ran between the reads", []string{idle(0, ""), idle(3, "2026-11-30T10:00:05Z")}, ""},
		{"lastModifiedTime moved at rest", []string{idle(2, "2026-11-30T10:00:00Z"), idle(2, "2026-11-30T10:00:05Z")}, wire.RunIdle},
		{"a turn began between the reads", []string{idle(2, "2026-11-30T10:00:00Z"),
			`{"status":"CASCADE_RUN_STATUS_IDLE","stepCount":2,"lastUserInputStepIndex":2,"lastModifiedTime":"2026-11-30T10:00:05Z"}`}, ""},
		{"running", []string{`{"status":"CASCADE_RUN_STATUS_RUNNING","stepCount":2}`}, wire.RunRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := scriptedAgy(t, conv, tc.summaries, steps, nil)
			snap, err := readSnapshot(context.Background(), client, conv, true, &trajectoryWindow{}, nil)
			require.NoError(t, err)
			require.Len(t, snap.steps, 2)
			require.Equal(t, tc.want, snap.status)
		})
	}
}

// A read owed after agy's IDLE is paid only by a read that can tell: one
// whose status reads moved around the steps pays nothing, and the poller
// reads again at once, though the stream is up (going back to its slow
// pace would make the turn wait a whole slow interval, or for ever in
// stream mode, for its idle).
func TestPollerReadsAgainUntilItCanTell(t *testing.T) {
	const conv = "c0ffee00-0000-4000-8000-000000000002"
	steps := `[{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":0}}}]`
	idle := func(count int) string {
		return fmt.Sprintf(`{"status":"CASCADE_RUN_STATUS_IDLE","stepCount":%d}`, count)
	}
	gate := make(chan struct{})
	client := scriptedAgy(t, conv, []string{idle(1), idle(2)}, steps, gate)
	cfg := testCfg()
	cfg.PollFast, cfg.PollSlow = 5*time.Millisecond, time.Hour
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newPoller(child{client: client, conv: conv, cfg: cfg, gen: 1, wg: wg}, ReadBoth, 0, nil)
	})
	// The stream comes up while the first read (owed from the start) runs.
	r.system.Root.Send(r.child, &messages.StreamState{Gen: 1, Up: true})
	close(gate)
	first := expect[*messages.SnapshotRead](r, nil)
	require.Empty(t, first.RunStatus, "the summary moved around the first read: no status")
	second := expect[*messages.SnapshotRead](r, nil)
	require.Equal(t, wire.RunIdle, second.RunStatus, "read again at once, and this one can tell")
}

// A read whose status read after the steps fails is not delivered: the next
// read starts where it did, not after the steps the session never got (a
// subagent's items were lost under 5xx bursts).
func TestAReadNotDeliveredIsReadAgain(t *testing.T) {
	const conv = "c0ffee00-0000-4000-8000-000000000003"
	steps := `[{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"trajectoryId":"t"}}},` +
		`{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"trajectoryId":"t","stepIndex":1}}}]`
	idle := `{"status":"CASCADE_RUN_STATUS_IDLE","stepCount":2}`
	client := scriptedAgy(t, conv, []string{idle, "503", idle}, steps, nil)
	var w trajectoryWindow
	_, err := readSnapshot(context.Background(), client, conv, true, &w, nil)
	require.Error(t, err)
	snap, err := readSnapshot(context.Background(), client, conv, true, &w, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, snap.offset, "read again from where the lost read started")
	assert.Len(t, snap.steps, 2)
	assert.Equal(t, 1, w.from(), "a delivered read moves the window")
}
