package agytest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// toolsScenario uses every tool action of scenario_tools.go.
func toolsScenario() *agytest.Scenario {
	return script(
		agytest.Edit(agytest.EditAction{Path: "/w/main.go", NeedsApproval: true, Chunks: []agytest.EditChunk{
			{Old: "count := 0\n", New: "total := 0\n", Line: 4}, {Old: "\tcount++\n", New: "\ttotal++\n", Line: 7},
		}}),
		agytest.Edit(agytest.EditAction{Path: "/w/README.md", Create: true, Content: "# w\n\nA tool.\n"}),
		agytest.Search(agytest.SearchAction{Tool: "grep_search", Query: "TODO", Path: "/w", Hits: []agytest.SearchHit{
			{Path: "/w/main.go", Line: 12, Text: "// TODO: errors"}, {Path: "/w/db.go", Line: 3, Text: "// TODO"},
		}}),
		agytest.Search(agytest.SearchAction{Tool: "find_by_name", Query: "*_test.go", Path: "/w", Hits: []agytest.SearchHit{{Path: "/w/main_test.go"}}}),
		agytest.Search(agytest.SearchAction{Tool: "search_web", Query: "go modules", Summary: "Modules are collections of packages.",
			Hits: []agytest.SearchHit{{Path: "https://go.dev/ref/mod", Text: "Go Modules Reference"}}}),
		agytest.Fetch(agytest.FetchAction{URL: "https://go.dev/ref/mod", Title: "Go Modules Reference", Content: "A module is a collection of packages.\n"}),
		agytest.MCP(agytest.MCPAction{Server: "github", Tool: "list_issues", Arguments: json.RawMessage(`{"repo":"acme/w"}`), Result: "#12 Crash"}),
		agytest.Run(agytest.CommandAction{Line: "go test ./...", Output: "ok  w/db\nFAIL w\nFAIL\n", ExitCode: 1, Chunks: 3, Background: true}),
		agytest.Step(agytest.StepAction{Type: "CORTEX_STEP_TYPE_VIEW_FILE_OUTLINE", Tool: "view_file_outline",
			Body:   json.RawMessage(`{"absolutePathUri":"file:///w/main.go"}`),
			Result: json.RawMessage(`{"outlineItems":["func main()"],"numLines":12,"numBytes":140}`)}),
		agytest.Step(agytest.StepAction{Type: "CORTEX_STEP_TYPE_TASK_BOUNDARY", Tool: "task_boundary", Summary: "Report progress",
			Body: json.RawMessage(`{"taskName":"Rename","taskStatus":"Renaming count","taskSummary":"count is total now"}`)}),
		agytest.Say("Done.", 1),
	)
}

// TestToolStepsShapedLikeTheReference runs every tool action and checks its
// steps: bodies named as the reference schema names them, polled copies
// with metadata.toolCall, streamed copies without it but with toolAction,
// toolSummary and argumentsOrder, and a command's output growing on the
// stream.
func TestToolStepsShapedLikeTheReference(t *testing.T) {
	opts := fast(toolsScenario())
	opts.IdleBeforeFlush = -1
	srv, c, conv := start(t, opts)
	st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st.Close()
	r := newReader()
	r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true })
	send(t, c, conv, "do everything")
	p := waitPrompt(t, srv, conv, 0)
	assert.Equal(t, wire.StepCodeAction, p.Type)
	assert.Equal(t, &wire.Resource{Action: "write", Target: "/w/main.go"}, p.RequestedInteraction.Permission.Resource)
	assert.Contains(t, string(p.Raw), `"replacementChunks"`, "the waiting step shows the edit")
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, wire.InteractionResponse{
		TrajectoryID: p.TrajectoryID(), StepIndex: wire.Int(p.Index()), Permission: &wire.PermissionAnswer{Allow: true}}))
	r.readUntil(t, st, idleFrame)
	steps, err := c.GetCascadeTrajectorySteps(testCtx(t), conv)
	require.NoError(t, err)

	body := func(s wire.Step, key string) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(s.Raw, &m))
		b, _ := m[key].(map[string]any)
		require.NotNil(t, b, "%s has a %s body", s.Type, key)
		return b
	}
	seen := map[wire.StepType]int{}
	var runIdx int
	for _, s := range steps {
		if s.Metadata.ToolAction == "" {
			continue
		}
		seen[s.Type]++
		require.Equal(t, wire.StatusDone, s.Status, "%s", s.Type)
		require.NotNil(t, s.Metadata.ToolCall, "%s: a polled copy carries toolCall", s.Type)
		got := r.latest[s.Index()]
		assert.Nil(t, got.Metadata.ToolCall, "%s: a streamed copy drops toolCall", s.Type)
		assert.Equal(t, s.Metadata.ToolAction, got.Metadata.ToolAction)
		assert.Equal(t, s.Metadata.ToolSummary, got.Metadata.ToolSummary)
		assert.Contains(t, string(got.Raw), `"argumentsOrder"`)
		switch s.Type {
		case wire.StepCodeAction:
			b := body(s, "codeAction")
			assert.Contains(t, b, "actionSpec")
			edit := b["actionResult"].(map[string]any)["edit"].(map[string]any)
			assert.NotEmpty(t, edit["diff"].(map[string]any)["unifiedDiff"].(map[string]any)["lines"])
		case wire.StepGrepSearch:
			assert.Len(t, body(s, "grepSearch")["results"], 2)
		case wire.StepFind:
			assert.Equal(t, "/w/main_test.go\n", body(s, "find")["truncatedOutput"])
		case wire.StepSearchWeb:
			assert.Len(t, body(s, "searchWeb")["webDocuments"], 1)
		case wire.StepReadURLContent:
			assert.Equal(t, "A module is a collection of packages.\n", body(s, "readUrlContent")["webDocument"].(map[string]any)["text"])
		case wire.StepMCPTool:
			b := body(s, "mcpTool")
			assert.Equal(t, "list_issues", b["toolCall"].(map[string]any)["name"])
			assert.Equal(t, "#12 Crash", b["resultString"])
		case wire.StepRunCommand:
			runIdx = s.Index()
			b := body(s, "runCommand")
			assert.NotEmpty(t, b["commandId"], "sent to the background")
			assert.NotContains(t, b, "exitCode", "no exit code yet")
			assert.Equal(t, "ok  w/db\n", s.RunCommand.CombinedOutput.Full)
		case wire.StepCommandStatus:
			b := body(s, "commandStatus")
			assert.Equal(t, "ok  w/db\nFAIL w\nFAIL\n", b["combined"])
			assert.EqualValues(t, 1, b["exitCode"])
			assert.Equal(t, string(wire.StatusDone), b["status"])
		}
	}
	assert.Equal(t, map[wire.StepType]int{wire.StepCodeAction: 2, wire.StepGrepSearch: 1, wire.StepFind: 1, wire.StepSearchWeb: 1,
		wire.StepReadURLContent: 1, wire.StepMCPTool: 1, wire.StepRunCommand: 1, wire.StepCommandStatus: 1,
		wire.StepViewFileOutline: 1, wire.StepTaskBoundary: 1}, seen)

	// The mapper reads every one of them with its detail.
	rec := mapper.NewReconciler(mapper.Config{ConversationID: conv})
	evs := rec.Apply(mapper.FromSnapshot(steps, wire.RunIdle, time.Now()))
	kinds := map[string]string{}
	for _, e := range evs {
		if e.Type == messages.EventFunctionCall {
			assert.NotEqual(t, e.Name, e.Title, "%s has a title of its own", e.Name)
			kinds[e.Name] = e.Kind
		}
	}
	assert.Equal(t, map[string]string{
		"multi_replace_file_content": "edit", "write_to_file": "edit", "grep_search": "search", "find_by_name": "search",
		"search_web": "fetch", "read_url_content": "fetch", "mcp_github_list_issues": "other", "run_command": "execute",
		"command_status": "execute", "view_file_outline": "read", "task_boundary": "think",
	}, kinds)

	// The command's output grew on the stream while it ran.
	var outputs []string
	for _, f := range r.frames {
		su := f.Update.MainTrajectoryUpdate.StepsUpdate
		for i, idx := range su.Indices {
			if int(idx) == runIdx && su.Steps[i].RunCommand != nil && su.Steps[i].RunCommand.CombinedOutput != nil {
				if out := su.Steps[i].RunCommand.CombinedOutput.Full; len(outputs) == 0 || outputs[len(outputs)-1] != out {
					outputs = append(outputs, out)
				}
			}
		}
	}
	assert.Greater(t, len(outputs), 1, "combinedOutput grew: %q", outputs)
}

func TestToolActionValidation(t *testing.T) {
	bad := map[string]agytest.Action{
		"edit without path":       agytest.Edit(agytest.EditAction{Chunks: []agytest.EditChunk{{Old: "a", New: "b"}}}),
		"edit without chunks":     agytest.Edit(agytest.EditAction{Path: "/a"}),
		"create with chunks":      agytest.Edit(agytest.EditAction{Path: "/a", Create: true, Chunks: []agytest.EditChunk{{Old: "a"}}}),
		"unknown search tool":     agytest.Search(agytest.SearchAction{Tool: "locate", Query: "x"}),
		"search without query":    agytest.Search(agytest.SearchAction{Tool: "grep_search"}),
		"fetch of a file URL":     agytest.Fetch(agytest.FetchAction{URL: "file:///etc/passwd"}),
		"mcp without tool":        agytest.MCP(agytest.MCPAction{Server: "s"}),
		"mcp arguments an array":  agytest.MCP(agytest.MCPAction{Server: "s", Tool: "t", Arguments: json.RawMessage(`[1]`)}),
		"background of one line":  agytest.Run(agytest.CommandAction{Line: "x", Output: "one\n", Background: true}),
		"step of no type":         agytest.Step(agytest.StepAction{Type: "VIEW_FILE", Tool: "view_file"}),
		"step body not an object": agytest.Step(agytest.StepAction{Type: "CORTEX_STEP_TYPE_WAIT", Tool: "wait", Body: json.RawMessage(`"x"`)}),
	}
	for name, a := range bad {
		assert.Error(t, script(a).Validate(), name)
	}
	assert.NoError(t, toolsScenario().Validate())
}
