package mapper

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// fixtureDir holds steps recorded from real agy (testdata/agy-steps/README.md).
const fixtureDir = "../testdata/agy-steps"

func loadFixture(t *testing.T, name string) wire.Step {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	var s wire.Step
	require.NoError(t, json.Unmarshal(b, &s), name)
	return s
}

// TestConformance maps every recorded agy step, alone, as a replayed
// snapshot and as a streamed frame, and checks the events each one implies.
func TestConformance(t *testing.T) {
	expect := map[string]func(t *testing.T, evs []messages.Event){
		"user_input.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"user_message", "status:running"}, types(evs))
			assert.Equal(t, "Say hello in one short sentence.", evs[0].Text)
			assert.Equal(t, messages.OriginTerminal, evs[0].Origin)
		},
		"conversation_history.json": func(t *testing.T, evs []messages.Event) { assert.Empty(t, evs) },
		"checkpoint.json":           func(t *testing.T, evs []messages.Event) { assert.Empty(t, evs) },
		"planner_response_text.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"message", "usage"}, types(evs))
			assert.Equal(t, "Hello! I am Antigravity, your AI coding assistant, ready to help you with your tasks.", evs[0].Text)
			assert.Equal(t, "assistant", evs[0].Role)
			u := evs[1]
			assert.Equal(t, "MODEL_PLACEHOLDER_M20", u.Model)
			assert.Equal(t, int64(17161), *u.InputTokens)
			assert.Equal(t, int64(65), *u.OutputTokens)
			assert.Equal(t, int64(44), *u.ThinkingTokens)
			assert.Equal(t, int64(21), *u.ResponseTokens)
			assert.Equal(t, int64(0), *u.CacheReadTokens)
			assert.Equal(t, int64(17161), *u.TotalInputTokens)
			assert.Equal(t, int64(17161+65), *u.ContextTokens, "the prompt read and the output written")
		},
		"planner_response_tool_call_run_command.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"usage"}, types(evs), "tool calls only: no message")
			assert.Equal(t, int64(16267), *evs[0].CacheReadTokens)
			assert.Equal(t, *evs[0].InputTokens+16267+*evs[0].OutputTokens, *evs[0].ContextTokens)
		},
		"planner_response_tool_call_ask_question.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"usage"}, types(evs))
		},
		"stream_planner_tool_call.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"usage"}, types(evs))
		},
		"stream_planner_text_done.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"message", "usage"}, types(evs))
			assert.True(t, strings.HasPrefix(evs[0].Text, "Here is a status summary of your workspace:"), "message from modifiedResponse")
		},
		"run_command_waiting.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "elicitation_request", "status:waiting"}, types(evs))
			assert.Equal(t, "cbawg2v8", evs[0].CallID)
			assert.Equal(t, "run_command", evs[0].Name)
			assert.JSONEq(t, `{"command":"pwd","cwd":"/home/user/.gemini/antigravity-cli/scratch"}`, evs[0].Arguments)
			req := evs[1]
			assert.Equal(t, messages.KindPermission, req.Kind)
			assert.Equal(t, "pwd", req.Command.Line)
			assert.Equal(t, &messages.Resource{Action: "command", Target: "pwd"}, req.Resource)
			assert.Equal(t, testConv+"/prompt/6", req.ElicitationID, "keyed by the step's trajectory index")
		},
		"run_command_done.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
			assert.Equal(t, "/home/user/.gemini/antigravity-cli/scratch\n", evs[1].Output)
			require.NotNil(t, evs[1].ExitCode)
			assert.Equal(t, 0, *evs[1].ExitCode)
			assert.Equal(t, evs[0].CallID, evs[1].CallID)
		},
		"run_command_error.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
			assert.Contains(t, evs[1].Output, "timed out")
			assert.Nil(t, evs[1].ExitCode)
		},
		"stream_run_command_done.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
			assert.Equal(t, testTraj2+":6", evs[0].CallID, "streamed copy: call id derived from trajectory and index")
			assert.JSONEq(t, `{"command":"git status && git log -n 5 --oneline","cwd":"/home/user/.gemini/antigravity-cli/scratch"}`, evs[0].Arguments)
			assert.True(t, strings.HasPrefix(evs[1].Output, "On branch main"))
		},
		"ask_question_waiting.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "elicitation_request", "status:waiting"}, types(evs))
			req := evs[1]
			assert.Equal(t, messages.KindQuestion, req.Kind)
			require.Len(t, req.Questions, 1)
			q := req.Questions[0]
			assert.Equal(t, "What type of project or improvement would you like to focus on?", q.Question)
			assert.Len(t, q.Options, 4)
			assert.Equal(t, "1", q.Options[0].ID)
			assert.False(t, q.MultiSelect)
		},
		"ask_question_done.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "function_call_output"}, types(evs), "a replayed answered question opens no prompt")
			assert.Equal(t, "What type of project or improvement would you like to focus on?: Analyze and refactor the files in the current scratch directory.", evs[1].Output)
		},
		"list_directory_done.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
			assert.Equal(t, "list_dir", evs[0].Name)
			assert.Equal(t, "h510vxi0", evs[0].CallID)
			assert.Contains(t, evs[1].Output, "11 entries")
			assert.Contains(t, evs[1].Output, "test-repo/")
		},
		"stream_list_directory_done.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
			assert.Equal(t, "list_dir", evs[0].Name)
			assert.Contains(t, evs[1].Output, ".git/")
		},
		"stream_view_file_done.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
			assert.Equal(t, "view_file", evs[0].Name)
			assert.True(t, json.Valid([]byte(evs[0].Arguments)))
			assert.Equal(t, "/home/user/.gemini/antigravity-cli/scratch/package.json: 111 lines, 3609 bytes", evs[1].Output)
		},
		"stream_generic_done.json": func(t *testing.T, evs []messages.Event) {
			require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
			assert.Equal(t, "manage_subagents", evs[0].Name)
			assert.JSONEq(t, `{"Action":"list"}`, evs[0].Arguments)
			assert.True(t, strings.HasPrefix(evs[1].Output, "You have 4 active subagent(s)"))
		},
	}
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			s := loadFixture(t, name)
			check, ok := expect[name]
			require.True(t, ok, "no expectation for fixture %s: add one", name)

			r := newTestReconciler()
			evs := r.Apply(FromSnapshot([]wire.Step{s}, "", at(0)))
			check(t, evs)
			assert.Empty(t, r.Apply(FromSnapshot([]wire.Step{s}, "", at(1))), "a replay yields nothing")

			// As a stream frame at the step's own index: the same events.
			idx := s.Index()
			rf := newTestReconciler()
			f := &rpc.StreamFrame{Update: rpc.StateUpdate{ConversationID: testConv, Status: ""}}
			f.Update.MainTrajectoryUpdate.StepsUpdate = rpc.StepsUpdate{Indices: []wire.Int{wire.Int(idx)}, Steps: []wire.Step{s}}
			fevs := rf.Apply(FromFrame(f, at(0)))
			require.Len(t, fevs, len(evs))
			for i := range evs {
				assert.Equal(t, evs[i].Type, fevs[i].Type)
				assert.Equal(t, strings.Replace(evs[i].ID, "/0/", "/"+itoa(idx)+"/", 1), fevs[i].ID)
			}
		})
	}
}

const testTraj2 = "efb134b2-d69f-43de-bb54-c9ece346d8a3"

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestConformanceRetryOfRecordedPrompt plays the recorded permission prompt
// through its synthesized timeout and a retry at a higher index.
func TestConformanceRetryOfRecordedPrompt(t *testing.T) {
	waiting := loadFixture(t, "run_command_waiting.json")
	failed := loadFixture(t, "run_command_error.json")
	done := loadFixture(t, "run_command_done.json")
	r := newTestReconciler()
	evs := r.Apply(frameAt(0, 6, waiting))
	require.Equal(t, []string{"function_call", "elicitation_request", "status:waiting"}, types(evs))
	eid := evs[1].ElicitationID

	evs = r.Apply(frameAt(1, 6, failed))
	require.Equal(t, []string{"function_call_output"}, types(evs))
	require.Len(t, r.OpenPrompts(), 1, "kept open: a retry may follow")

	evs = r.Apply(frameAt(2, 8, waiting))
	require.Equal(t, []string{"function_call"}, types(evs), "the retry is the same prompt")
	p, ok := r.Prompt(eid)
	require.True(t, ok)
	assert.Equal(t, 8, p.StepIndex)

	evs = r.Apply(frameAt(3, 8, done))
	require.Equal(t, []string{"elicitation_resolved", "status:running", "function_call_output_delta", "function_call_output"}, types(evs))
	assert.Equal(t, messages.ByTerminal, evs[0].By)
	assert.Equal(t, evs[2].Delta, evs[3].Output, "its output, seen live, streamed first")
	assert.Equal(t, messages.ActionAccept, evs[0].Action)
	assert.Equal(t, 8, *evs[0].DeliveredStepIndex)
}

func frameAt(k, index int, s wire.Step) Observation {
	f := &rpc.StreamFrame{Update: rpc.StateUpdate{ConversationID: testConv, Status: wire.RunRunning}}
	f.Update.MainTrajectoryUpdate.StepsUpdate = rpc.StepsUpdate{Indices: []wire.Int{wire.Int(index)}, Steps: []wire.Step{s}}
	return FromFrame(f, at(k))
}
