package mapper

import (
	"encoding/json"
	"testing"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFailedPlannerStepIsAnError(t *testing.T) {
	var failed wire.Step
	require.NoError(t, json.Unmarshal([]byte(`{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_ERROR",
		"metadata":{"sourceTrajectoryStepInfo":{"trajectoryId":"t","stepIndex":1}},
		"error":{"userErrorMessage":"model provider unavailable: quota exceeded","shortError":"quota"}}`), &failed))
	steps := func() Observation {
		return FromSnapshot([]wire.Step{roundTrip(userStep("go", "")), failed}, wire.RunRunning, at(0))
	}
	r := newTestReconciler()
	evs := r.Apply(steps())
	e := findEvent(t, evs, messages.EventError)
	assert.Equal(t, "agy's turn failed: model provider unavailable: quota exceeded", e.Message)
	require.NotNil(t, e.Retryable)
	assert.False(t, *e.Retryable)
	// Once, however often it is seen.
	assert.NotContains(t, types(r.Apply(steps())), "error")

	var bare wire.Step
	require.NoError(t, json.Unmarshal([]byte(`{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_ERROR"}`), &bare))
	r2 := newTestReconciler()
	e = findEvent(t, r2.Apply(FromSnapshot([]wire.Step{roundTrip(userStep("go", "")), bare}, wire.RunRunning, at(0))), messages.EventError)
	assert.Contains(t, e.Message, "the model returned an error")
}
