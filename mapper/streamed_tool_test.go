package mapper

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// streamedCopy is a step as a StreamAgentStateUpdates frame carries it: no
// metadata.toolCall, but metadata.toolAction, toolSummary and
// argumentsOrder kept (fixtures/stream_*.json), and the step's own body.
func streamedCopy(t *testing.T, typ wire.StepType, status wire.StepStatus, body string) wire.Step {
	t.Helper()
	raw := `{"type":"` + string(typ) + `","status":"` + string(status) + `","metadata":{` +
		`"source":"CORTEX_STEP_SOURCE_MODEL","argumentsOrder":["Plan","toolAction","toolSummary"],` +
		`"sourceTrajectoryStepInfo":{"trajectoryId":"` + testTraj + `","stepIndex":3,"cascadeId":"` + testConv + `"},` +
		`"toolSummary":"Update the plan","toolAction":"Updating the plan"},` + body + `}`
	var s wire.Step
	require.NoError(t, json.Unmarshal([]byte(raw), &s))
	return s
}

func streamFrame(k int, s wire.Step) Observation {
	f := &rpc.StreamFrame{Update: rpc.StateUpdate{ConversationID: testConv, TrajectoryID: testTraj, Status: wire.RunRunning}}
	f.Update.MainTrajectoryUpdate.StepsUpdate = rpc.StepsUpdate{Indices: []wire.Int{3}, Steps: []wire.Step{s}, TotalLength: 4}
	return FromFrame(f, at(k))
}

// TestStreamedToolStepIsAToolCallFromItsFirstCopy: a step carrying
// metadata.toolAction is a tool call whatever its type, from its first
// streamed copy (which has no toolCall): function_call at once with the
// step's body as its arguments, never unknown_step (issue 19, item 6).
func TestStreamedToolStepIsAToolCallFromItsFirstCopy(t *testing.T) {
	const typ = wire.StepType("CORTEX_STEP_TYPE_FUTURE_PLANNER_TOOL")
	body := `"futurePlannerTool":{"plan":["read","edit"]}`
	r := newTestReconciler()

	evs := r.Apply(streamFrame(0, streamedCopy(t, typ, wire.StatusRunning, body)))
	require.Equal(t, []string{"function_call", "status:running"}, types(evs), "a tool call from the first streamed copy")
	call := evs[0]
	assert.Equal(t, "future_planner_tool", call.Name)
	assert.JSONEq(t, `{"plan":["read","edit"]}`, call.Arguments, "arguments from the step's own body")
	assert.Equal(t, testTraj+":3", call.CallID)

	evs = r.Apply(streamFrame(1, streamedCopy(t, typ, wire.StatusDone, body)))
	require.Equal(t, []string{"function_call_output"}, types(evs))
	assert.Equal(t, call.CallID, evs[0].CallID)
	assert.Equal(t, "Update the plan", evs[0].Output)

	for _, e := range r.Apply(streamFrame(2, streamedCopy(t, typ, wire.StatusDone, body))) {
		assert.NotEqual(t, "unknown_step", string(e.Type))
	}
}

// TestUnknownStepWithoutToolActionIsReportedOnce: a type this version does
// not know, with no sign of being a tool, is a drift alarm, once per type.
func TestUnknownStepWithoutToolActionIsReportedOnce(t *testing.T) {
	raw := `{"type":"CORTEX_STEP_TYPE_FUTURE_NOTE","status":"CORTEX_STEP_STATUS_DONE","metadata":{"source":"CORTEX_STEP_SOURCE_SYSTEM"},"futureNote":{}}`
	var s wire.Step
	require.NoError(t, json.Unmarshal([]byte(raw), &s))
	r := newTestReconciler()
	evs := r.Apply(FromSnapshot([]wire.Step{s, s}, "", at(0)))
	require.Equal(t, []string{"unknown_step"}, types(evs))
	assert.Equal(t, "CORTEX_STEP_TYPE_FUTURE_NOTE", evs[0].StepType)
}

// TestBackgroundCommandHasNoExitCode: a command agy sent to the background
// (it has a commandId and no exitCode yet) ends its step without an exit
// code; the command_status step that follows it carries one.
func TestBackgroundCommandHasNoExitCode(t *testing.T) {
	bg := stepOf(t, wire.StepRunCommand, wire.StatusDone, "", `"runCommand":{"commandLine":"make","commandId":"c1","combinedOutput":{"full":"building\n"}}`)
	ended := stepOf(t, wire.StepRunCommand, wire.StatusDone, "", `"runCommand":{"commandLine":"make","commandId":"c1","exitCode":0,"combinedOutput":{"full":"built\n"}}`)
	evs := newTestReconciler().Apply(FromSnapshot([]wire.Step{bg, ended}, "", at(0)))
	require.Equal(t, []string{"function_call", "function_call_output", "function_call", "function_call_output"}, types(evs))
	assert.Nil(t, evs[1].ExitCode)
	require.NotNil(t, evs[3].ExitCode)
	assert.Equal(t, 0, *evs[3].ExitCode)
}

// TestDeniedToolSaysSo: a tool step whose permission was denied ends DONE
// without running: its output says so, whatever its body.
func TestDeniedToolSaysSo(t *testing.T) {
	s := stepOf(t, wire.StepCodeAction, wire.StatusDone, "", `"codeAction":{"actionSpec":{"command":{"replacementChunks":[{"targetContent":"a","replacementContent":"b"}],"file":{"absoluteUri":"file:///w/x.go"}}}},`+
		`"requestedInteraction":{"permission":{"resource":{"action":"write","target":"/w/x.go"}}},"completedInteractions":[{"response":{"permission":{}}}]`)
	evs := newTestReconciler().Apply(FromSnapshot([]wire.Step{s}, "", at(0)))
	require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
	assert.Equal(t, "the tool call was not allowed", evs[1].Output)
	assert.Empty(t, evs[1].Diffs)
}
