package agytest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// A conversation with a history has its finished turns at indices 0 to
// N-1, in windows of GetCascadeTrajectorySteps, whole in a stream's first
// frame, and in the ground truth; a turn sent next starts at index N.
func TestHistoryStepsAreServedLikeStoredOnes(t *testing.T) {
	const n = 1001
	opts := fast(script(agytest.Say("fresh reply", 2)))
	opts.HistorySteps = n
	srv, c, conv := start(t, opts)
	ctx := testCtx(t)

	steps, err := c.GetCascadeTrajectoryStepsFrom(ctx, conv, 0, nil)
	require.NoError(t, err)
	require.Len(t, steps, agytest.DefaultMaxStepsPerRead)
	assert.Equal(t, wire.StepUserInput, steps[0].Type)
	assert.Equal(t, "history turn 0", steps[0].UserInput.UserResponse)
	assert.Equal(t, wire.StepPlannerResponse, steps[1].Type)
	assert.Equal(t, "history reply 0", steps[1].PlannerResponse.Response)
	tail, err := c.GetCascadeTrajectoryStepsFrom(ctx, conv, 600, nil)
	require.NoError(t, err)
	require.Len(t, tail, n-600)
	assert.Equal(t, wire.Int(n-1), tail[len(tail)-1].Metadata.SourceTrajectoryStepInfo.StepIndex)
	assert.Len(t, srv.GroundTruth(conv), n)

	st, err := c.StreamAgentStateUpdates(ctx, conv, "")
	require.NoError(t, err)
	defer st.Close()
	first, err := st.Next()
	require.NoError(t, err)
	su := first.Update.MainTrajectoryUpdate.StepsUpdate
	require.Len(t, su.Steps, n)
	require.Len(t, su.Indices, n)
	assert.Equal(t, wire.Int(n), su.TotalLength)
	assert.Equal(t, "history reply 499", su.Steps[999].PlannerResponse.ModifiedResponse)

	require.NoError(t, c.SendUserCascadeMessage(ctx, conv, "next", model))
	require.NoError(t, srv.WaitIdle(ctx, conv))
	all := srv.Steps(conv)
	require.Greater(t, len(all), n)
	assert.Equal(t, "next", all[n].UserInput.UserResponse)
	sum, err := c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	assert.Equal(t, wire.Int(len(all)), sum.TrajectorySummaries[conv].StepCount)
}
