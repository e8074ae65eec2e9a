package mapper

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// The golden scenarios of tool steps with typed detail: steps in the shapes
// of the reference schema, polled copies with toolCall where agy has one.

const editBody = `"codeAction":{"actionSpec":{"command":{"replacementChunks":[` +
	`{"targetContent":"count := 0\n","replacementContent":"total := 0\n","startLine":4},` +
	`{"targetContent":"\tcount++\n","replacementContent":"\ttotal++\n","startLine":7}],` +
	`"file":{"absoluteUri":"file:///work/main.go"}}}}`

const editApplied = `"codeAction":{"actionSpec":{"command":{"replacementChunks":[` +
	`{"targetContent":"count := 0\n","replacementContent":"total := 0\n","startLine":4},` +
	`{"targetContent":"\tcount++\n","replacementContent":"\ttotal++\n","startLine":7}],` +
	`"file":{"absoluteUri":"file:///work/main.go"}}},` +
	`"actionResult":{"edit":{"absoluteUri":"file:///work/main.go","diff":{"startLine":4,"endLine":7,"unifiedDiff":{"lines":[` +
	`{"text":"count := 0","type":"UNIFIED_DIFF_LINE_TYPE_DELETE"},{"text":"total := 0","type":"UNIFIED_DIFF_LINE_TYPE_INSERT"},` +
	`{"text":"for range 3 {","type":"UNIFIED_DIFF_LINE_TYPE_UNCHANGED"},` +
	`{"text":"\tcount++","type":"UNIFIED_DIFF_LINE_TYPE_DELETE"},{"text":"\ttotal++","type":"UNIFIED_DIFF_LINE_TYPE_INSERT"}]}}}}}`

// codeEdit: a multi_replace_file_content edit that asks permission first
// (its prompt shows the diffs), then applies.
func codeEdit() scenario {
	var s script
	s.push(userStep("Rename count to total", "MODEL_M20"))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "Two places use count.", ""))
	call := &wire.ToolCall{ID: "edit-1", Name: "multi_replace_file_content", ArgumentsJSON: `{"TargetFile":"/work/main.go","toolSummary":"Rename count"}`}
	e := s.push(toolStep(wire.StepCodeAction, wire.StatusPending, "Rename count", call, editBody))
	s.now(wire.RunRunning)
	waiting := toolStep(wire.StepCodeAction, wire.StatusWaiting, "Rename count", call, editBody)
	waiting.RequestedInteraction = &wire.Interaction{Permission: &wire.PermissionRequest{Resource: &wire.Resource{Action: "edit", Target: "/work/main.go"}}}
	s.set(e, roundTrip(waiting))
	s.now(wire.RunRunning)
	s.resolve(testConv+"/prompt/2", messages.ActionAccept, e)
	done := toolStep(wire.StepCodeAction, wire.StatusDone, "Rename count", call, editApplied)
	done.RequestedInteraction = waiting.RequestedInteraction
	s.set(e, answered(done, e, wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}}))
	s.push(plannerStep(wire.StatusDone, "", "Renamed count to total in main.go."))
	s.now(wire.RunIdle)
	return scenario{name: "tool_code_edit", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		c := findEvent(t, evs, messages.EventFunctionCall)
		assert.Equal(t, messages.ToolEdit, c.Kind)
		assert.Equal(t, "Edit /work/main.go", c.Title)
		assert.Equal(t, []messages.Location{{Path: "/work/main.go", Line: 4}}, c.Locations)
		require.Len(t, c.Diffs, 2)
		assert.Equal(t, "count := 0\n", *c.Diffs[0].OldText)
		assert.Equal(t, "\ttotal++\n", c.Diffs[1].NewText)
		req := findEvent(t, evs, messages.EventElicitationRequest)
		assert.Equal(t, c.Diffs, req.Diffs, "the prompt shows what would change")
		assert.Equal(t, c.CallID, req.CallID)
		out := findEvent(t, evs, messages.EventFunctionCallOutput)
		require.Len(t, out.Diffs, 1)
		assert.Equal(t, "-count := 0\n+total := 0\n for range 3 {\n-\tcount++\n+\ttotal++\n", out.Diffs[0].Unified)
		assert.Equal(t, "edited /work/main.go (+2 -2)", out.Output)
	}}
}

// newFile: write_to_file as a CODE_ACTION creating a file; the polled copy
// has the content in its arguments, the result the diff.
func newFile() scenario {
	var s script
	s.push(userStep("Add a README", "MODEL_M20"))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "", ""))
	call := &wire.ToolCall{ID: "write-1", Name: "write_to_file", ArgumentsJSON: `{"CodeContent":"# work\n\nA small tool.\n","EmptyFile":false,"TargetFile":"/work/README.md","toolSummary":"Create README"}`}
	spec := `"actionSpec":{"createFile":{"path":{"absoluteUri":"file:///work/README.md"}}}`
	w := s.push(toolStep(wire.StepCodeAction, wire.StatusRunning, "Create README", call, `"codeAction":{`+spec+`}`))
	s.now(wire.RunRunning)
	s.set(w, toolStep(wire.StepCodeAction, wire.StatusDone, "Create README", call, `"codeAction":{`+spec+
		`,"actionResult":{"edit":{"absoluteUri":"file:///work/README.md","createFile":true,"diff":{"startLine":1,"endLine":3,"unifiedDiff":{"lines":[`+
		`{"text":"# work","type":"UNIFIED_DIFF_LINE_TYPE_INSERT"},{"type":"UNIFIED_DIFF_LINE_TYPE_INSERT"},{"text":"A small tool.","type":"UNIFIED_DIFF_LINE_TYPE_INSERT"}]}}}}}`))
	s.push(plannerStep(wire.StatusDone, "", "README.md is in place."))
	s.now(wire.RunIdle)
	return scenario{name: "tool_new_file", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		c := findEvent(t, evs, messages.EventFunctionCall)
		assert.Equal(t, "write_to_file", c.Name)
		assert.Equal(t, "Create /work/README.md", c.Title)
		require.Len(t, c.Diffs, 1)
		assert.Nil(t, c.Diffs[0].OldText, "a new file has no old text")
		assert.Equal(t, "# work\n\nA small tool.\n", c.Diffs[0].NewText)
		out := findEvent(t, evs, messages.EventFunctionCallOutput)
		require.Len(t, out.Diffs, 1)
		assert.Nil(t, out.Diffs[0].OldText)
		assert.Equal(t, c.Diffs[0].NewText, out.Diffs[0].NewText)
	}}
}

func grepSearch() scenario {
	var s script
	s.push(userStep("Where are the TODOs?", "MODEL_M20"))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "", ""))
	q := `"searchPathUri":"file:///work","query":"TODO","includes":["*.go"],"matchPerLine":true`
	g := s.push(toolStep(wire.StepGrepSearch, wire.StatusRunning, "Search TODOs", nil, `"grepSearch":{`+q+`}`))
	s.now(wire.RunRunning)
	s.set(g, toolStep(wire.StepGrepSearch, wire.StatusDone, "Search TODOs", nil, `"grepSearch":{`+q+`,"results":[`+
		`{"relativePath":"main.go","absolutePath":"/work/main.go","lineNumber":12,"content":"\t// TODO: handle errors\n"},`+
		`{"relativePath":"store/db.go","absolutePath":"/work/store/db.go","lineNumber":40,"content":"// TODO: close the pool\n"},`+
		`{"relativePath":"store/db.go","absolutePath":"/work/store/db.go","lineNumber":88,"content":"// TODO: retry\n"}],"totalResults":3}`))
	s.push(plannerStep(wire.StatusDone, "", "Three TODOs: one in main.go, two in store/db.go."))
	s.now(wire.RunIdle)
	return scenario{name: "tool_grep", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		c := findEvent(t, evs, messages.EventFunctionCall)
		assert.Equal(t, "grep_search", c.Name, "named by the table: no toolCall")
		assert.Equal(t, messages.ToolSearch, c.Kind)
		out := findEvent(t, evs, messages.EventFunctionCallOutput)
		require.Len(t, out.Hits, 3)
		assert.Equal(t, messages.Hit{Path: "/work/store/db.go", Line: 40, Text: "// TODO: close the pool"}, out.Hits[1])
		assert.Equal(t, 3, *out.HitCount)
		assert.Equal(t, []messages.Location{{Path: "/work/main.go", Line: 12}, {Path: "/work/store/db.go", Line: 40}}, out.Locations)
	}}
}

func findFiles() scenario {
	var s script
	s.push(userStep("List the test files", "MODEL_M20"))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "", ""))
	call := &wire.ToolCall{ID: "find-1", Name: "find_by_name", ArgumentsJSON: `{"Pattern":"*_test.go","SearchDirectory":"/work"}`}
	q := `"searchDirectory":"/work","pattern":"*_test.go","type":"FIND_RESULT_TYPE_FILE"`
	f := s.push(toolStep(wire.StepFind, wire.StatusRunning, "Find tests", call, `"find":{`+q+`}`))
	s.now(wire.RunRunning)
	s.set(f, toolStep(wire.StepFind, wire.StatusDone, "Find tests", call, `"find":{`+q+
		`,"truncatedOutput":"/work/main_test.go\n/work/store/db_test.go\n","totalResults":2,"commandRun":"fd -g *_test.go /work"}`))
	s.push(plannerStep(wire.StatusDone, "", "There are two test files."))
	s.now(wire.RunIdle)
	return scenario{name: "tool_find", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		out := findEvent(t, evs, messages.EventFunctionCallOutput)
		assert.Equal(t, []messages.Hit{{Path: "/work/main_test.go"}, {Path: "/work/store/db_test.go"}}, out.Hits)
		assert.Equal(t, 2, *out.HitCount)
	}}
}

func webRead() scenario {
	var s script
	s.push(userStep("What does go.dev say about modules?", "MODEL_M20"))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "", ""))
	u := s.push(toolStep(wire.StepReadURLContent, wire.StatusRunning, "Read the modules page", nil, `"readUrlContent":{"url":"https://go.dev/ref/mod"}`))
	s.now(wire.RunRunning)
	s.set(u, toolStep(wire.StepReadURLContent, wire.StatusDone, "Read the modules page", nil,
		`"readUrlContent":{"url":"https://go.dev/ref/mod","webDocument":{"url":"https://go.dev/ref/mod","title":"Go Modules Reference",`+
			`"text":"Modules are how Go manages dependencies.\nA module is a collection of packages.\n"},"resolvedUrl":"https://go.dev/ref/mod","latencyMs":210}`))
	s.push(plannerStep(wire.StatusDone, "", "A module is a collection of packages."))
	s.now(wire.RunIdle)
	return scenario{name: "tool_web_read", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		c := findEvent(t, evs, messages.EventFunctionCall)
		assert.Equal(t, messages.ToolFetch, c.Kind)
		assert.Equal(t, "https://go.dev/ref/mod", c.URL)
		out := findEvent(t, evs, messages.EventFunctionCallOutput)
		assert.Equal(t, "https://go.dev/ref/mod", out.URL)
		assert.True(t, strings.HasPrefix(out.Output, "Modules are how Go"))
	}}
}

// commandStreamed: a command whose output grows while it runs, sent to the
// background when agy stops waiting, then followed by a command_status step
// whose output grows until the command ends.
func commandStreamed() scenario {
	var s script
	s.push(userStep("Run the tests", "MODEL_M20"))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "", ""))
	cmd := func(status wire.StepStatus, out string) wire.Step {
		st := commandStep(status, "go test ./...")
		st.RequestedInteraction = nil
		st.Metadata.ToolSummary, st.Metadata.ToolAction = "Run the tests", "Running the tests"
		body := `"runCommand":{"commandLine":"go test ./...","proposedCommandLine":"go test ./...","cwd":"/work","commandId":"cmd-7"`
		if out != "" {
			body += `,"combinedOutput":{"full":` + quote(out) + `}`
		}
		return withBody(st, body+`}`)
	}
	c := s.push(cmd(wire.StatusRunning, ""))
	s.now(wire.RunRunning)
	s.set(c, cmd(wire.StatusRunning, "ok  \twork/store\t0.12s\n"))
	s.now(wire.RunRunning)
	s.set(c, cmd(wire.StatusRunning, "ok  \twork/store\t0.12s\n--- FAIL: TestServe (0.30s)\n"))
	s.now(wire.RunRunning)
	s.set(c, cmd(wire.StatusDone, "ok  \twork/store\t0.12s\n--- FAIL: TestServe (0.30s)\n"))
	s.push(plannerStep(wire.StatusDone, "", ""))
	status := func(st wire.StepStatus, cmdStatus, combined string, exit int) wire.Step {
		body := `"commandStatus":{"commandId":"cmd-7","status":"` + cmdStatus + `","combined":` + quote(combined)
		if exit != 0 {
			body += `,"exitCode":` + itoa(exit)
		}
		return toolStep(wire.StepCommandStatus, st, "Check the tests", nil, body+`}`)
	}
	first := "ok  \twork/store\t0.12s\n--- FAIL: TestServe (0.30s)\n"
	k := s.push(status(wire.StatusRunning, "CORTEX_STEP_STATUS_RUNNING", first, 0))
	s.now(wire.RunRunning)
	s.set(k, status(wire.StatusRunning, "CORTEX_STEP_STATUS_RUNNING", first+"FAIL\twork\t0.41s\n", 0))
	s.now(wire.RunRunning)
	s.set(k, status(wire.StatusDone, "CORTEX_STEP_STATUS_DONE", first+"FAIL\twork\t0.41s\nFAIL\n", 1))
	s.push(plannerStep(wire.StatusDone, "", "TestServe fails."))
	s.now(wire.RunIdle)
	return scenario{name: "tool_command_streamed", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		outputs := map[string]string{}
		var final []messages.Event
		for _, e := range evs {
			switch e.Type {
			case messages.EventFunctionCallOutputDelta:
				assert.Empty(t, e.Snapshot)
				outputs[e.CallID] += e.Delta
			case messages.EventFunctionCallOutput:
				final = append(final, e)
			}
		}
		require.Len(t, final, 2)
		for _, out := range final {
			assert.Equal(t, out.Output, outputs[out.CallID], "the deltas add up to the output")
		}
		assert.Nil(t, final[0].ExitCode, "sent to the background before it ended")
		assert.Equal(t, 1, *final[1].ExitCode, "command_status carries the command's exit code")
		var titles []string
		for _, e := range evs {
			if e.Type == messages.EventFunctionCall {
				titles = append(titles, e.Title)
			}
		}
		assert.Equal(t, []string{"go test ./...", "Output of go test ./..."}, titles)
	}}
}

func mcpTool() scenario {
	var s script
	s.push(userStep("Any open issues?", "MODEL_M20"))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "", ""))
	body := `"serverName":"github","toolCall":{"id":"mcp-1","name":"list_issues","argumentsJson":"{\"repo\":\"acme/work\",\"state\":\"open\"}"},"serverInfo":{"name":"github","version":"0.4.0"}`
	m := s.push(toolStep(wire.StepMCPTool, wire.StatusRunning, "List open issues", nil, `"mcpTool":{`+body+`}`))
	s.now(wire.RunRunning)
	s.set(m, toolStep(wire.StepMCPTool, wire.StatusDone, "List open issues", nil, `"mcpTool":{`+body+`,"resultString":"#12 Crash on empty input\n#15 Slow start"}`))
	s.push(plannerStep(wire.StatusDone, "", "Two issues are open."))
	s.now(wire.RunIdle)
	return scenario{name: "tool_mcp", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		c := findEvent(t, evs, messages.EventFunctionCall)
		assert.Equal(t, "list_issues", c.Name)
		assert.Equal(t, "github: list_issues", c.Title)
		assert.JSONEq(t, `{"repo":"acme/work","state":"open"}`, c.Arguments)
		assert.Equal(t, "#12 Crash on empty input\n#15 Slow start", findEvent(t, evs, messages.EventFunctionCallOutput).Output)
	}}
}

func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
