package agytest_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// TestChildSummariesAreTypedCascade: agy 1.1.9 lists a subagent with a
// root's trajectoryType; only trajectoryMetadata tells it from a root. The
// legacy shape types it SUBAGENT.
func TestChildSummariesAreTypedCascade(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		opts := fast(script(agytest.Subagents(1, "task", agytest.Say("ok", 1)), agytest.Say("done", 1)))
		opts.LegacySubagents = legacy
		srv, c, conv := start(t, opts)
		send(t, c, conv, "delegate")
		waitIdle(t, srv, conv)
		all, err := c.GetAllCascadeTrajectories(testCtx(t))
		require.NoError(t, err)
		require.Len(t, all.TrajectorySummaries, 2)
		for id, s := range all.TrajectorySummaries {
			if id == conv {
				assert.Equal(t, conv, s.TrajectoryMetadata.RootConversationID)
				continue
			}
			assert.Equal(t, conv, s.TrajectoryMetadata.ParentConversationID)
			want := "CORTEX_TRAJECTORY_TYPE_CASCADE"
			if legacy {
				want = "CORTEX_TRAJECTORY_TYPE_SUBAGENT"
			}
			assert.Equal(t, want, s.TrajectoryType)
		}
	}
}

// TestRevertToCascadeStepCutsTheTrajectory: the steps from the index on
// are gone and the next turn's steps take their indices; a running
// conversation is refused; RewindMarksCleared keeps them CLEARED.
func TestRevertToCascadeStepCutsTheTrajectory(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Say("ok", 1))))
	ctx := testCtx(t)
	send(t, c, conv, "one")
	waitIdle(t, srv, conv)
	at := len(srv.Steps(conv))
	send(t, c, conv, "two")
	waitIdle(t, srv, conv)
	require.NoError(t, c.RevertToCascadeStep(ctx, conv, at))
	steps := srv.Steps(conv)
	require.Len(t, steps, at)
	send(t, c, conv, "three")
	waitIdle(t, srv, conv)
	steps = srv.Steps(conv)
	require.Equal(t, wire.StepUserInput, steps[at].Type)
	assert.Equal(t, "three", steps[at].UserInput.UserResponse, "the new turn takes the freed index")
	assert.Error(t, c.RevertToCascadeStep(ctx, conv, len(steps)+3), "out of range")

	opts := fast(script(agytest.Say("ok", 1)))
	opts.RewindMarksCleared = true
	srv, c, conv = start(t, opts)
	send(t, c, conv, "one")
	waitIdle(t, srv, conv)
	n := len(srv.Steps(conv))
	require.NoError(t, srv.Rewind(conv, 1))
	steps = srv.Steps(conv)
	require.Len(t, steps, n)
	for _, st := range steps[1:] {
		assert.Equal(t, wire.StatusCleared, st.Status)
	}
}

// TestProviderErrorSteps: a quota asks for three ERROR_MESSAGE steps two
// indices apart, the last one final (its text the error's own).
func TestProviderErrorSteps(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.ProviderErr(agytest.ProviderQuota))))
	send(t, c, conv, "hello")
	waitIdle(t, srv, conv)
	var at []int
	var last map[string]any
	for i, st := range srv.Steps(conv) {
		if st.Type == "CORTEX_STEP_TYPE_ERROR_MESSAGE" {
			at = append(at, i)
			var b struct {
				ErrorMessage map[string]any `json:"errorMessage"`
			}
			require.NoError(t, json.Unmarshal(st.Raw, &b))
			last = b.ErrorMessage
		}
	}
	require.Len(t, at, 3)
	assert.Equal(t, at[0]+2, at[1])
	assert.Equal(t, at[1]+2, at[2])
	e := last["error"].(map[string]any)
	assert.Equal(t, e["shortError"], e["modelErrorMessage"])
	assert.Equal(t, true, last["shouldShowUser"])
	assert.Contains(t, e["details"], "QUOTA_EXHAUSTED")
}

// TestBackgroundTaskWakesAgy: a background task's notification is a
// SYSTEM_MESSAGE and an answer after the turn, with no user turn; the
// switch turns it off.
func TestBackgroundTaskWakesAgy(t *testing.T) {
	for _, off := range []bool{false, true} {
		opts := fast(script(agytest.Task(agytest.TaskAction{Line: "make", After: 1, Reply: "Built."}), agytest.Say("Started, and this takes a few chunks to say.", 8)))
		opts.NoBackgroundWakes = off
		srv, c, conv := start(t, opts)
		send(t, c, conv, "build")
		waitIdle(t, srv, conv)
		n := len(srv.Steps(conv))
		if off {
			// A wake due 1ms after the turn would run before or behind
			// this next turn, which streams for longer: none is there.
			send(t, c, conv, "again")
			waitIdle(t, srv, conv)
			for _, st := range srv.Steps(conv) {
				assert.NotEqual(t, wire.StepSystemMessage, st.Type)
			}
			continue
		}
		require.Eventually(t, func() bool {
			steps := srv.Steps(conv)
			return len(steps) > n && srv.RunStatus(conv) == wire.RunIdle && steps[len(steps)-1].Status.Terminal()
		}, 10*time.Second, 5*time.Millisecond)
		woken := srv.Steps(conv)[n:]
		require.Equal(t, wire.StepSystemMessage, woken[0].Type)
		assert.Contains(t, string(woken[0].Raw), "task_notification")
		for _, st := range woken {
			assert.NotEqual(t, wire.StepUserInput, st.Type, "nobody typed")
		}
	}
}

// TestAtRestWaitsForADueWake: a conversation idle after a turn whose
// background task's notification is due is not at rest; once the woken run
// is over, it is, with the run's steps there.
func TestAtRestWaitsForADueWake(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Task(agytest.TaskAction{Line: "make", After: 1000, Reply: "Built."}), agytest.Say("Started.", 1))))
	send(t, c, conv, "build")
	// The turn's own run over (its reply written, agy idle): a WaitIdle alone
	// can return before the turn has begun.
	require.Eventually(t, func() bool {
		steps := srv.Steps(conv)
		return len(steps) > 0 && srv.RunStatus(conv) == wire.RunIdle &&
			slices.ContainsFunc(steps, func(st wire.Step) bool { return st.Type == wire.StepPlannerResponse })
	}, 10*time.Second, time.Millisecond)
	assert.False(t, srv.AtRest(conv), "a wake is due")
	require.Eventually(t, func() bool { return srv.AtRest(conv) }, 10*time.Second, 5*time.Millisecond)
	steps := srv.Steps(conv)
	require.Equal(t, wire.StepPlannerResponse, steps[len(steps)-1].Type)
	require.Equal(t, wire.StepSystemMessage, steps[len(steps)-2].Type, "at rest after the woken run")
	assert.True(t, steps[len(steps)-1].Status.Terminal())
	assert.False(t, srv.AtRest("no-such-conversation"))
}
