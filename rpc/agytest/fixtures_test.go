package agytest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// fixtureDir holds steps recorded from real agy (testdata/agy-steps/README.md).
const fixtureDir = "../../testdata/agy-steps"

func loadFixture(t *testing.T, name string) wire.Step {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	var s wire.Step
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

// paths lists the key paths of a JSON document ("metadata.toolCall.id",
// arrays as "[]").
func paths(t *testing.T, raw []byte) map[string]bool {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	out := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				out[p] = true
				walk(p, e)
			}
		case []any:
			for _, e := range x {
				walk(prefix+"[]", e)
			}
		}
	}
	walk("", v)
	return out
}

// typedPaths are the paths the project decodes: the step re-marshalled from
// its typed fields.
func typedPaths(t *testing.T, s wire.Step) map[string]bool {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return paths(t, b)
}

func missing(want, have map[string]bool, ignore ...string) []string {
	var out []string
	for p := range want {
		if have[p] {
			continue
		}
		skip := false
		for _, ig := range ignore {
			if p == ig || strings.HasPrefix(p, ig+".") || strings.HasPrefix(p, ig+"[]") {
				skip = true
			}
		}
		if !skip {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// recorder collects, per fixture name, the fake's matching step (unary and
// streamed copies) from one run of a scenario that has every kind of step.
type recorded struct {
	unary    map[string]wire.Step
	streamed map[string]wire.Step
}

func recordShapes(t *testing.T) recorded {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
		agytest.Think("Thinking first."),
		agytest.Say("Hello! I am Antigravity.", 4),
		agytest.Run(agytest.CommandAction{Line: "pwd", Cwd: "/w", Output: "/w\n", NeedsApproval: true}),
		agytest.Ask(agytest.QuestionSpec{Question: "Which focus?", Options: []string{"a", "b"}}),
		agytest.Tool(agytest.ToolAction{Name: "list_dir", Target: "/w", Result: "a\nb/\n"}),
		agytest.Run(agytest.CommandAction{Line: "git status", Cwd: "/w", Output: "clean\n"}),
		agytest.Tool(agytest.ToolAction{Name: "view_file", Target: "/w/a", Result: "x\ny\n"}),
		agytest.Tool(agytest.ToolAction{Name: "manage_subagents", Target: "list", Result: "no subagents"}),
		agytest.Say("Done.", 2),
	}}}}
	opts := fast(sc)
	opts.IdleBeforeFlush = -1
	srv, c, conv := start(t, opts)
	st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st.Close()
	r := newReader()
	r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true })
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultPromptTimeout}) // the first prompt expires: run_command_error
	send(t, c, conv, "Say hello in one short sentence.")
	rec := recorded{unary: map[string]wire.Step{}, streamed: map[string]wire.Step{}}
	expired := waitExpired(t, srv, conv)
	p := waitPrompt(t, srv, conv, expired+1) // agy's retry of the expired prompt
	rec.unary["run_command_waiting.json"] = p
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(p, true)))
	q := waitPrompt(t, srv, conv, p.Index()+1)
	rec.unary["ask_question_waiting.json"] = q
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, choose(q, wire.QuestionResponse{Question: "Which focus?", SelectedOptionIDs: []string{"2"}})))
	r.readUntil(t, st, idleFrame)
	steps, err := c.GetCascadeTrajectorySteps(testCtx(t), conv)
	require.NoError(t, err)
	for _, s := range steps {
		name := ""
		switch s.Type {
		case wire.StepUserInput:
			name = "user_input.json"
		case wire.StepConversationHistory:
			name = "conversation_history.json"
		case wire.StepCheckpoint:
			name = "checkpoint.json"
		case wire.StepRunCommand:
			switch {
			case s.Status == wire.StatusError:
				name = "run_command_error.json"
			case s.RequestedInteraction == nil: // ran without approval, as the recording
				rec.streamed["stream_run_command_done.json"] = r.latest[s.Index()]
			default:
				name = "run_command_done.json"
			}
		case wire.StepGeneric:
			rec.streamed["stream_generic_done.json"] = r.latest[s.Index()]
		case wire.StepAskQuestion:
			name = "ask_question_done.json"
		case wire.StepListDirectory:
			name = "list_directory_done.json"
			rec.streamed["stream_list_directory_done.json"] = r.latest[s.Index()]
		case wire.StepViewFile:
			rec.streamed["stream_view_file_done.json"] = r.latest[s.Index()]
		case wire.StepPlannerResponse:
			switch {
			case len(s.PlannerResponse.ToolCalls) > 0 && s.PlannerResponse.ToolCalls[0].Name == "run_command":
				name = "planner_response_tool_call_run_command.json"
				rec.streamed["stream_planner_tool_call.json"] = r.latest[s.Index()]
			case len(s.PlannerResponse.ToolCalls) > 0 && s.PlannerResponse.ToolCalls[0].Name == "ask_question":
				name = "planner_response_tool_call_ask_question.json"
			case s.PlannerResponse.Response != "":
				name = "planner_response_text.json"                                 // the first text answer
				rec.streamed["stream_planner_text_done.json"] = r.latest[s.Index()] // the last one
			}
		}
		if name != "" {
			if _, dup := rec.unary[name]; !dup {
				rec.unary[name] = s
			}
		}
	}
	return rec
}

// TestStepsShapedLikeRecordedAgySteps decodes the recorded agy steps and the
// fake's with the same code, and compares their fields: every field of a
// recorded step that the project decodes is present on the fake's step, and
// the fake writes no field agy does not.
func TestStepsShapedLikeRecordedAgySteps(t *testing.T) {
	loadFixture(t, "user_input.json") // skips without the fixtures
	rec := recordShapes(t)
	// Fields absent from the fake by design: internal bookkeeping, values
	// that differ per recording (thinking on tool planner steps, cache reads
	// or exit codes the fake leaves at their default), and the recorded
	// toolCall.originalName/thinkingSignature.
	ignoreTyped := []string{
		"plannerResponse.thinking", // the fixtures' tool planner steps carry none
		"generic.args",             // arguments differ per tool
	}
	ignoreRaw := []string{
		"metadata.internalMetadata", "metadata.toolCall.thinkingSignature", "metadata.toolCall.originalName",
		"plannerResponse.toolCalls[].originalName", "metadata.retryInfos", "metadata.modelUsage.responseHeader",
		"metadata.viewableAt", "metadata.lastCompletedChunkAt", "metadata.startedAt", "metadata.finishedGeneratingAt",
		"metadata.sourceTrajectoryStepInfo.metadataIndex", "userInput.userConfig.plannerConfig.conversational",
		"userInput.userConfig.plannerConfig.customizationConfig", "userInput.userConfig.plannerConfig.toolConfig",
		"userInput.userConfig.plannerConfig.useAiCredits", "metadata.modelUsage.cacheReadTokens",
		"metadata.modelUsage.thinkingOutputTokens", "metadata.stepGenerationVersion", "checkpoint",
		"metadata.toolCallOutputTokens", "listDirectory.results", "generic.args",
		"plannerResponse.toolCalls[].thinkingSignature", "_fixtureProvenance",
	}
	names := make([]string, 0, len(rec.unary)+len(rec.streamed))
	all := map[string]wire.Step{}
	for n, s := range rec.unary {
		all[n] = s
		names = append(names, n)
	}
	for n, s := range rec.streamed {
		all[n] = s
		names = append(names, n)
	}
	slices.Sort(names)
	require.Len(t, names, 18, "one fake step per recorded fixture: %v", names)
	for _, name := range names {
		fake := all[name]
		want := loadFixture(t, name)
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, want.Type, fake.Type)
			assert.Equal(t, want.Status, fake.Status)
			assert.Empty(t, missing(typedPaths(t, want), typedPaths(t, fake), ignoreTyped...), "decoded fields the fake lacks")
			assert.Empty(t, missing(paths(t, want.Raw), paths(t, fake.Raw), ignoreRaw...), "raw fields the fake lacks")
			assert.Empty(t, missing(paths(t, fake.Raw), paths(t, want.Raw), "metadata.completedAt", "metadata.modelUsage.cacheReadTokens",
				"metadata.modelUsage.thinkingOutputTokens", "plannerResponse.thinking", "plannerResponse.response",
				"runCommand.exitCode", "metadata.toolCall", "plannerResponse.toolCalls", "permissions", "runCommand.shellName",
				"userInput.userConfig.plannerConfig.requestedModel", "metadata.requestedModel", "metadata.generatorModel",
				"metadata.stepGenerationVersion", "metadata.finishedGeneratingAt", "checkpoint", "metadata.modelUsage",
				"generic.args", "plannerResponse.thinkingSignature"),
				"fields the fake writes that agy's recording lacks")
		})
	}
}
