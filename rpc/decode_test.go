package rpc_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// plannerJSON is a DONE planner step at index i with text, as agy writes it.
func plannerJSON(i int, text string) string {
	b, _ := json.Marshal(text)
	return `{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"trajectoryId":"` +
		traj + `","stepIndex":` + itoa(i) + `}},"plannerResponse":{"response":` + string(b) + `}}`
}

// stepsAnswers is a server that answers GetCascadeTrajectorySteps with the
// next body of a script, one per call.
func stepsAnswers(t *testing.T, bodies ...string) *rpc.Client {
	t.Helper()
	var mu sync.Mutex
	srv := newConnectServer(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, bodies, "more reads than answers")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(bodies[0]))
		bodies = bodies[1:]
	})
	return srv.client(t, rpc.Config{})
}

func sameRaw(a, b wire.Step) bool { return unsafe.SliceData(a.Raw) == unsafe.SliceData(b.Raw) }

func TestGetCascadeTrajectoryStepsReusing(t *testing.T) {
	first := `{"steps":[` + plannerJSON(0, "one") + `,` + plannerJSON(1, "two") + `,` + plannerJSON(2, "thr") + `]}`
	c := stepsAnswers(t,
		first,
		// step 1 grew, step 2 shrank, a step 3 came
		`{"steps":[`+plannerJSON(0, "one")+`,`+plannerJSON(1, "two, and more")+`,`+plannerJSON(2, "th")+`,`+plannerJSON(3, "four")+`]}`,
		// the trajectory got shorter (a rewrite of history)
		`{"steps":[`+plannerJSON(0, "one")+`]}`,
		// an element that is not a step
		`{"steps":[`+plannerJSON(0, "one")+`,{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":"one"}}}]}`,
	)
	ctx := ctxT(t)

	prev, err := c.GetCascadeTrajectoryStepsReusing(ctx, conv, nil)
	require.NoError(t, err)
	require.Len(t, prev, 3)

	next, err := c.GetCascadeTrajectoryStepsReusing(ctx, conv, prev)
	require.NoError(t, err)
	require.Len(t, next, 4)
	assert.True(t, sameRaw(prev[0], next[0]), "unchanged step 0 reused")
	assert.Same(t, prev[0].PlannerResponse, next[0].PlannerResponse, "unchanged step 0 reused")
	for i, want := range []string{"one", "two, and more", "th", "four"} {
		assert.Equal(t, want, next[i].PlannerResponse.Response, "step %d", i)
		assert.Equal(t, i, next[i].Index())
		if i > 0 {
			assert.False(t, sameRaw(prev[min(i, 2)], next[i]), "step %d decoded", i)
		}
	}
	assert.Equal(t, "two", prev[1].PlannerResponse.Response, "the previous read is left as it was")

	shorter, err := c.GetCascadeTrajectoryStepsReusing(ctx, conv, next)
	require.NoError(t, err)
	require.Len(t, shorter, 1)
	assert.True(t, sameRaw(next[0], shorter[0]))

	bad, err := c.GetCascadeTrajectoryStepsReusing(ctx, conv, shorter)
	assert.Nil(t, bad)
	var e *rpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, rpc.MethodGetCascadeTrajectorySteps, e.Method)
	assert.ErrorIs(t, err, rpc.ErrProtocol)
	assert.False(t, rpc.IsTransient(err))
	assert.Contains(t, err.Error(), "/steps/1", "the error names the element")
	assert.Contains(t, err.Error(), "not an integer")
}

func TestGetCascadeTrajectoryStepsReusingRefusesEmptyID(t *testing.T) {
	c, err := rpc.NewClient(rpc.Config{Port: 1})
	require.NoError(t, err)
	_, err = c.GetCascadeTrajectoryStepsReusing(ctxT(t), "", nil)
	var e *rpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, rpc.CodeInvalidArgument, e.Code)
}

// agy's JSON as encoding/json accepted it is still accepted: invalid UTF-8
// (replaced), names in another case, a repeated name (the last wins).
func TestLenientDecoding(t *testing.T) {
	body := "{\"Steps\":[{\"TYPE\":\"CORTEX_STEP_TYPE_USER_INPUT\",\"status\":\"x\",\"status\":\"CORTEX_STEP_STATUS_DONE\"," +
		"\"userInput\":{\"userResponse\":\"caf\xe9\"},\"somethingNew\":{\"a\":[1]}}]}"
	c := stepsAnswers(t, body)
	steps, err := c.GetCascadeTrajectorySteps(ctxT(t), conv)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	assert.Equal(t, wire.StepUserInput, steps[0].Type)
	assert.Equal(t, wire.StatusDone, steps[0].Status)
	assert.Equal(t, "caf\ufffd", steps[0].UserInput.UserResponse)
	assert.True(t, strings.Contains(string(steps[0].Raw), "caf\xe9"), "Raw keeps the bytes as sent")
}

func TestDecodeFrame(t *testing.T) {
	f, err := rpc.DecodeFrame([]byte(" \n"))
	require.NoError(t, err)
	assert.Equal(t, &rpc.StreamFrame{}, f, "an empty payload is a frame at its defaults")

	f, err = rpc.DecodeFrame([]byte(`{"update":{"conversationId":"` + conv + `","status":"CASCADE_RUN_STATUS_RUNNING",` +
		`"mainTrajectoryUpdate":{"stepsUpdate":{"indices":[3],"steps":[` + plannerJSON(3, "hi") + `],"totalLength":"4"}}}}`))
	require.NoError(t, err)
	u := f.Update.MainTrajectoryUpdate.StepsUpdate
	assert.Equal(t, []wire.Int{3}, u.Indices)
	assert.Equal(t, wire.Int(4), u.TotalLength)
	require.Len(t, u.Steps, 1)
	assert.Equal(t, "hi", u.Steps[0].PlannerResponse.Response)
	assert.JSONEq(t, plannerJSON(3, "hi"), string(u.Steps[0].Raw))

	for _, bad := range []string{`{"update":`, `[]`, `{"update":{"mainTrajectoryUpdate":{"stepsUpdate":{"steps":[{"status":7}]}}}}`} {
		_, err := rpc.DecodeFrame([]byte(bad))
		assert.ErrorIs(t, err, rpc.ErrProtocol, bad)
	}
}
