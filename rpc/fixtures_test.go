package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// agyStepsDir holds steps recorded from real agy (testdata/agy-steps/README.md).
const agyStepsDir = "../testdata/agy-steps"

// fixtureExpect is what a decoder must read from a step (docs/ARCHITECTURE.md, "The wire").
type fixtureExpect struct {
	typ      wire.StepType
	status   wire.StepStatus
	index    int
	toolCall string // metadata.toolCall.name, "" when absent (streamed copies)
	usage    *wire.ModelUsage
	check    func(t *testing.T, s *wire.Step)
}

var fixtureExpectations = map[string]fixtureExpect{
	"ask_question_done.json": {typ: wire.StepAskQuestion, status: wire.StatusDone, index: 12, toolCall: "ask_question",
		check: func(t *testing.T, s *wire.Step) {
			require.NotNil(t, s.RequestedInteraction)
			require.Len(t, s.CompletedInteractions, 1)
			resp := s.CompletedInteractions[0].Response
			require.NotNil(t, resp)
			assert.Equal(t, traj, resp.TrajectoryID)
			assert.Equal(t, wire.Int(12), resp.StepIndex)
			require.NotNil(t, resp.AskQuestion)
			assert.Equal(t, []string{"4"}, resp.AskQuestion.Responses[0].SelectedOptionIDs)
			assert.Equal(t, "What type of project or improvement would you like to focus on?", resp.AskQuestion.Responses[0].Question)
			assert.Contains(t, s.Metadata.ToolCall.ArgumentsJSON, `"is_multi_select":false`)
		}},
	"ask_question_waiting.json": {typ: wire.StepAskQuestion, status: wire.StatusWaiting, index: 12, toolCall: "ask_question",
		check: func(t *testing.T, s *wire.Step) {
			require.NotNil(t, s.RequestedInteraction)
			require.NotNil(t, s.RequestedInteraction.AskQuestion)
			qs := s.RequestedInteraction.AskQuestion.Questions
			require.Len(t, qs, 1)
			assert.Equal(t, "What type of project or improvement would you like to focus on?", qs[0].Question)
			require.Len(t, qs[0].Options, 4)
			assert.Equal(t, "1", qs[0].Options[0].ID)
			assert.Equal(t, "4", qs[0].Options[3].ID)
			assert.Equal(t, "Build a command-line interface (CLI) tool or helper script.", qs[0].Options[1].Text)
			assert.Empty(t, s.CompletedInteractions)
		}},
	"checkpoint.json": {typ: wire.StepCheckpoint, status: wire.StatusDone, index: 3,
		usage: &wire.ModelUsage{Model: "MODEL_PLACEHOLDER_M50", InputTokens: 35, OutputTokens: 3, ResponseOutputTokens: 3}},
	"conversation_history.json": {typ: wire.StepConversationHistory, status: wire.StatusDone, index: 1},
	"list_directory_done.json":  {typ: wire.StepListDirectory, status: wire.StatusDone, index: 10, toolCall: "list_dir"},
	"planner_response_text.json": {typ: wire.StepPlannerResponse, status: wire.StatusDone, index: 2,
		usage: &wire.ModelUsage{Model: "MODEL_PLACEHOLDER_M20", InputTokens: 17161, OutputTokens: 65, ThinkingOutputTokens: 44, ResponseOutputTokens: 21},
		check: func(t *testing.T, s *wire.Step) {
			require.NotNil(t, s.PlannerResponse)
			assert.True(t, strings.HasPrefix(s.PlannerResponse.Response, "Hello! I am Antigravity"))
			assert.Equal(t, s.PlannerResponse.Response, s.PlannerResponse.ModifiedResponse)
			assert.Equal(t, "MODEL_PLACEHOLDER_M20", s.Metadata.GeneratorModel)
		}},
	"planner_response_tool_call_ask_question.json": {typ: wire.StepPlannerResponse, status: wire.StatusDone, index: 11,
		usage: &wire.ModelUsage{Model: "MODEL_PLACEHOLDER_M20", InputTokens: 2427, OutputTokens: 344, ThinkingOutputTokens: 216, ResponseOutputTokens: 128, CacheReadTokens: 16248},
		check: func(t *testing.T, s *wire.Step) {
			require.Len(t, s.PlannerResponse.ToolCalls, 1)
			assert.Equal(t, "ask_question", s.PlannerResponse.ToolCalls[0].Name)
		}},
	"planner_response_tool_call_run_command.json": {typ: wire.StepPlannerResponse, status: wire.StatusDone, index: 5,
		usage: &wire.ModelUsage{Model: "MODEL_PLACEHOLDER_M20", InputTokens: 1031, OutputTokens: 418, ThinkingOutputTokens: 351, ResponseOutputTokens: 67, CacheReadTokens: 16267},
		check: func(t *testing.T, s *wire.Step) {
			require.Len(t, s.PlannerResponse.ToolCalls, 1)
			assert.Equal(t, "run_command", s.PlannerResponse.ToolCalls[0].Name)
		}},
	"run_command_done.json": {typ: wire.StepRunCommand, status: wire.StatusDone, index: 6, toolCall: "run_command",
		check: func(t *testing.T, s *wire.Step) {
			rc := s.RunCommand
			require.NotNil(t, rc)
			assert.Equal(t, "pwd", rc.CommandLine)
			assert.Equal(t, "pwd", rc.ProposedCommandLine)
			assert.Equal(t, "/home/user/.gemini/antigravity-cli/scratch", rc.Cwd)
			assert.Equal(t, wire.Int(0), rc.ExitCode, "exitCode 0 is omitted by proto3")
			require.NotNil(t, rc.CombinedOutput)
			assert.True(t, strings.HasPrefix(rc.CombinedOutput.Full, "/home/user/.gemini/antigravity-cli/scratch"))
			require.NotNil(t, s.RequestedInteraction.Permission)
			assert.Equal(t, &wire.Resource{Action: "command", Target: "pwd"}, s.RequestedInteraction.Permission.Resource)
			require.Len(t, s.CompletedInteractions, 1)
			assert.Equal(t, &wire.PermissionAnswer{Allow: true}, s.CompletedInteractions[0].Response.Permission)
			assert.Equal(t, wire.Int(6), s.CompletedInteractions[0].Response.StepIndex)
			assert.NotEmpty(t, s.Permissions)
		}},
	"run_command_error.json": {typ: wire.StepRunCommand, status: wire.StatusError, index: 6, toolCall: "run_command",
		check: func(t *testing.T, s *wire.Step) {
			assert.True(t, s.Status.Terminal())
			assert.Nil(t, s.RunCommand.CombinedOutput)
		}},
	"run_command_waiting.json": {typ: wire.StepRunCommand, status: wire.StatusWaiting, index: 6, toolCall: "run_command",
		check: func(t *testing.T, s *wire.Step) {
			assert.False(t, s.Status.Terminal())
			require.NotNil(t, s.RequestedInteraction)
			require.NotNil(t, s.RequestedInteraction.Permission)
			assert.Nil(t, s.RequestedInteraction.AskQuestion)
			assert.Equal(t, "Running pwd command", s.RequestedInteraction.Permission.ActionDescription)
		}},
	"stream_generic_done.json": {typ: wire.StepGeneric, status: wire.StatusDone, index: 40, toolCall: "manage_subagents",
		check: func(t *testing.T, s *wire.Step) {
			require.NotNil(t, s.Generic)
			require.NotNil(t, s.Generic.Result)
			assert.Contains(t, s.Generic.Result.Result, "active subagent")
			assert.JSONEq(t, `{"Action":"list"}`, string(s.Generic.Args))
		}},
	"stream_list_directory_done.json": {typ: wire.StepListDirectory, status: wire.StatusDone, index: 8},
	"stream_planner_text_done.json": {typ: wire.StepPlannerResponse, status: wire.StatusDone, index: 13,
		usage: &wire.ModelUsage{Model: "MODEL_PLACEHOLDER_M71", InputTokens: 13614, OutputTokens: 472, ThinkingOutputTokens: 212, ResponseOutputTokens: 260, CacheReadTokens: 12205},
		check: func(t *testing.T, s *wire.Step) {
			assert.Empty(t, s.PlannerResponse.Response, "a streamed DONE copy can lack response")
			assert.True(t, strings.HasPrefix(s.PlannerResponse.ModifiedResponse, "Here is a status summary"))
		}},
	"stream_planner_tool_call.json": {typ: wire.StepPlannerResponse, status: wire.StatusDone, index: 5,
		usage: &wire.ModelUsage{Model: "MODEL_PLACEHOLDER_M71", InputTokens: 3649, OutputTokens: 178, ThinkingOutputTokens: 98, ResponseOutputTokens: 80, CacheReadTokens: 20366},
		check: func(t *testing.T, s *wire.Step) {
			assert.Empty(t, s.PlannerResponse.ToolCalls, "streamed copies drop toolCalls")
		}},
	"stream_run_command_done.json": {typ: wire.StepRunCommand, status: wire.StatusDone, index: 6,
		check: func(t *testing.T, s *wire.Step) {
			assert.Equal(t, "git status && git log -n 5 --oneline", s.RunCommand.CommandLine)
			assert.Equal(t, wire.Int(0), s.RunCommand.ExitCode)
			assert.True(t, strings.HasPrefix(s.RunCommand.CombinedOutput.Full, "On branch main"))
		}},
	"stream_view_file_done.json": {typ: wire.StepViewFile, status: wire.StatusDone, index: 16,
		check: func(t *testing.T, s *wire.Step) {
			assert.Contains(t, string(s.ViewFile), "package.json")
		}},
	"user_input.json": {typ: wire.StepUserInput, status: wire.StatusDone, index: 0,
		check: func(t *testing.T, s *wire.Step) {
			assert.Equal(t, wire.SourceUserExplicit, s.Metadata.Source)
			assert.Equal(t, "1df76a5f-0318-4c71-b31d-7e3b51a3d981", s.Metadata.ExecutionID)
			require.NotNil(t, s.UserInput)
			assert.Equal(t, "Say hello in one short sentence.", s.UserInput.UserResponse)
			require.Len(t, s.UserInput.Items, 1)
			assert.Equal(t, "Say hello in one short sentence.", s.UserInput.Items[0].Text)
			require.NotNil(t, s.UserInput.UserConfig)
			assert.Equal(t, "MODEL_PLACEHOLDER_M20", s.UserInput.UserConfig.PlannerConfig.PlanModel)
			assert.Equal(t, "MODEL_PLACEHOLDER_M20", s.UserInput.UserConfig.PlannerConfig.Model())
		}},
}

func TestDecodeRecordedAgySteps(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(agyStepsDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded steps in %s", agyStepsDir)
	seen := 0
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var s wire.Step
			require.NoError(t, json.Unmarshal(data, &s))
			assert.JSONEq(t, string(data), string(s.Raw), "Raw keeps the step exactly")
			assert.NotEmpty(t, s.Type)
			assert.NotEmpty(t, s.Status)
			assert.Equal(t, s.Metadata.SourceTrajectoryStepInfo.TrajectoryID, s.TrajectoryID())

			// The same step inside a stream frame and a steps response decodes the same.
			frame := `{"update":{"mainTrajectoryUpdate":{"stepsUpdate":{"indices":[` + itoa(s.Index()) + `],"steps":[` + string(data) + `]}}}}`
			var f rpc.StreamFrame
			require.NoError(t, json.Unmarshal([]byte(frame), &f))
			require.Len(t, f.Update.MainTrajectoryUpdate.StepsUpdate.Steps, 1)
			assert.JSONEq(t, string(data), string(f.Update.MainTrajectoryUpdate.StepsUpdate.Steps[0].Raw))

			want, ok := fixtureExpectations[name]
			if !ok {
				t.Logf("no field expectations for %s (decoded only)", name)
				return
			}
			seen++
			assert.Equal(t, want.typ, s.Type)
			assert.Equal(t, want.status, s.Status)
			assert.Equal(t, want.index, s.Index())
			assert.Equal(t, traj, s.TrajectoryID())
			if want.toolCall == "" {
				assert.Nil(t, s.Metadata.ToolCall)
			} else if assert.NotNil(t, s.Metadata.ToolCall) {
				assert.Equal(t, want.toolCall, s.Metadata.ToolCall.Name)
				assert.NotEmpty(t, s.Metadata.ToolCall.ID)
			}
			if want.usage == nil {
				assert.Nil(t, s.Metadata.ModelUsage)
			} else {
				assert.Equal(t, want.usage, s.Metadata.ModelUsage)
			}
			if want.check != nil {
				want.check(t, &s)
			}
		})
	}
	assert.Equal(t, len(fixtureExpectations), seen, "every expectation names a fixture that exists")
}
