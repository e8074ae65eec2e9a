package mapper

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// stepTypesFile lists the step type names of the reference schema, one a line
// (its header names the source).
const stepTypesFile = "../testdata/agy-step-types.txt"

// TestStepTableCoversTheReferenceEnum: every CortexStepType of the reference
// schema has a row (mapped with detail, generically, or not a tool).
func TestStepTableCoversTheReferenceEnum(t *testing.T) {
	b, err := os.ReadFile(stepTypesFile)
	require.NoError(t, err)
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		require.Regexp(t, `^CORTEX_STEP_TYPE_[A-Z0-9_]+$`, line, "%s: one name a line", stepTypesFile)
		names = append(names, line)
	}
	require.Greater(t, len(names), 90, "the enum is in the file")
	for _, name := range names {
		row, ok := stepTable[wire.StepType(name)]
		if assert.True(t, ok, "no row for %s", name) {
			assert.NotEmpty(t, row.note, "%s: a row says why", name)
		}
	}
	// The types seen in recorded steps but absent from the schema.
	for _, typ := range []wire.StepType{wire.StepAskQuestion, wire.StepGeneric} {
		assert.Contains(t, stepTable, typ)
	}
}

// stepOf builds a step as agy sends it (proto3 JSON), at index 0 of
// testTraj. meta is merged into the metadata.
func stepOf(t *testing.T, typ wire.StepType, status wire.StepStatus, meta, body string) wire.Step {
	t.Helper()
	raw := `{"type":"` + string(typ) + `","status":"` + string(status) + `","metadata":{"source":"CORTEX_STEP_SOURCE_MODEL",` +
		`"sourceTrajectoryStepInfo":{"trajectoryId":"` + testTraj + `","cascadeId":"` + testConv + `"}` + meta + `}`
	if body != "" {
		raw += "," + body
	}
	raw += "}"
	var s wire.Step
	require.NoError(t, json.Unmarshal([]byte(raw), &s), raw)
	return s
}

// detailCase is a step body in the shape of the reference schema, and the
// detail it must give.
type detailCase struct {
	meta   string // extra metadata fields (",\"toolCall\":{...}")
	body   string
	call   messages.Event // name, kind, title, locations, diffs, url, arguments (when set)
	output messages.Event // output, exit_code, locations, diffs, hits, hit_count, url
}

func str(s string) *string { return &s }

var detailCases = map[wire.StepType]detailCase{
	wire.StepRunCommand: {
		body:   `"runCommand":{"commandLine":"go test ./...","proposedCommandLine":"go test ./...","cwd":"/w","exitCode":1,"combinedOutput":{"full":"FAIL\n"}}`,
		call:   messages.Event{Name: "run_command", Kind: "execute", Title: "go test ./...", Arguments: `{"command":"go test ./...","cwd":"/w"}`},
		output: messages.Event{Output: "FAIL\n", ExitCode: messages.Ptr(1)},
	},
	wire.StepCommandStatus: {
		body:   `"commandStatus":{"commandId":"c-7","status":"CORTEX_STEP_STATUS_DONE","combined":"built\n","exitCode":2,"outputCharacterCount":6}`,
		call:   messages.Event{Name: "command_status", Kind: "execute", Title: "Check command output (c-7)"},
		output: messages.Event{Output: "built\n", ExitCode: messages.Ptr(2)},
	},
	wire.StepSendCommandInput: {
		body:   `"sendCommandInput":{"commandId":"c-7","input":"y\n","output":{"full":"ok\n"},"running":true}`,
		call:   messages.Event{Name: "send_command_input", Kind: "execute", Title: "Send input: y"},
		output: messages.Event{Output: "ok\n"},
	},
	"CORTEX_STEP_TYPE_READ_TERMINAL": {
		body:   `"readTerminal":{"processId":"42","name":"dev server","contents":"listening on :8080\n"}`,
		call:   messages.Event{Name: "read_terminal", Kind: "read", Title: "Read terminal dev server"},
		output: messages.Event{Output: "listening on :8080\n"},
	},
	"CORTEX_STEP_TYPE_SHELL_EXEC": {
		body:   `"shellExec":{"command":"ls","output":"a\n"}`,
		call:   messages.Event{Name: "shell_exec", Kind: "execute", Title: "ls"},
		output: messages.Event{Output: "a\n", ExitCode: messages.Ptr(0)},
	},
	wire.StepViewFile: {
		body:   `"viewFile":{"absolutePathUri":"file:///w/main.go","startLine":9,"endLine":19,"numLines":20,"numBytes":300}`,
		call:   messages.Event{Name: "view_file", Kind: "read", Title: "Read /w/main.go", Locations: []messages.Location{{Path: "/w/main.go", Line: 10}}},
		output: messages.Event{Output: "/w/main.go: 20 lines, 300 bytes"},
	},
	wire.StepListDirectory: {
		body:   `"listDirectory":{"directoryPathUri":"file:///w/my%20dir","results":[{"name":"a.go","sizeBytes":"10"},{"name":"sub","isDir":true}]}`,
		call:   messages.Event{Name: "list_dir", Kind: "read", Title: "List /w/my dir", Locations: []messages.Location{{Path: "/w/my dir"}}},
		output: messages.Event{Output: "/w/my dir: 2 entries\na.go\nsub/"},
	},
	wire.StepViewFileOutline: {
		body:   `"viewFileOutline":{"absolutePathUri":"file:///w/main.go","outlineItems":["func main()","type server struct"],"numLines":80}`,
		call:   messages.Event{Name: "view_file_outline", Kind: "read", Title: "Outline of /w/main.go", Locations: []messages.Location{{Path: "/w/main.go"}}},
		output: messages.Event{Output: "func main()\ntype server struct"},
	},
	"CORTEX_STEP_TYPE_VIEW_CODE_ITEM": {
		body:   `"viewCodeItem":{"absoluteUri":"file:///w/main.go","nodePaths":["server.Start"]}`,
		call:   messages.Event{Name: "view_code_item", Kind: "read", Title: "Read server.Start in /w/main.go", Locations: []messages.Location{{Path: "/w/main.go"}}},
		output: messages.Event{Output: "Read the item"},
	},
	"CORTEX_STEP_TYPE_VIEW_CONTENT_CHUNK": {
		body:   `"viewContentChunk":{"documentId":"doc-1","position":2,"croppedItem":{"url":"https://go.dev/doc","text":"chunk text"}}`,
		call:   messages.Event{Name: "view_content_chunk", Kind: "fetch", Title: "Read chunk 2 of https://go.dev/doc", URL: "https://go.dev/doc"},
		output: messages.Event{Output: "chunk text", URL: "https://go.dev/doc"},
	},
	wire.StepCodeAction: {
		body: `"codeAction":{"actionSpec":{"command":{"replacementChunks":[{"targetContent":"a := 1\n","replacementContent":"a := 2\n","startLine":3}],"file":{"absoluteUri":"file:///w/main.go"}}},` +
			`"actionResult":{"edit":{"absoluteUri":"file:///w/main.go","diff":{"startLine":3,"unifiedDiff":{"lines":[{"text":"a := 1","type":"UNIFIED_DIFF_LINE_TYPE_DELETE"},{"text":"a := 2","type":"UNIFIED_DIFF_LINE_TYPE_INSERT"}]}}}}}`,
		call: messages.Event{Name: "replace_file_content", Kind: "edit", Title: "Edit /w/main.go", Locations: []messages.Location{{Path: "/w/main.go", Line: 3}},
			Diffs: []messages.FileDiff{{Path: "/w/main.go", OldText: str("a := 1\n"), NewText: "a := 2\n", Line: 3}}},
		output: messages.Event{Output: "edited /w/main.go (+1 -1)",
			Diffs: []messages.FileDiff{{Path: "/w/main.go", OldText: str("a := 1\n"), NewText: "a := 2\n", Line: 3, Unified: "-a := 1\n+a := 2\n"}}},
	},
	wire.StepFileChange: {
		body: `"fileChange":{"absolutePathUri":"file:///w/new.txt","fileChangeType":"FILE_CHANGE_TYPE_CREATE","diff":{"unifiedDiff":{"lines":[{"text":"hello","type":"UNIFIED_DIFF_LINE_TYPE_INSERT"}]}}}`,
		call: messages.Event{Name: "file_change", Kind: "edit", Title: "Create /w/new.txt", Locations: []messages.Location{{Path: "/w/new.txt"}},
			Diffs: []messages.FileDiff{{Path: "/w/new.txt", NewText: "hello\n", Unified: "+hello\n"}}},
		output: messages.Event{Output: "created /w/new.txt (+1 -0)", Diffs: []messages.FileDiff{{Path: "/w/new.txt", NewText: "hello\n", Unified: "+hello\n"}}},
	},
	"CORTEX_STEP_TYPE_WRITE_TO_FILE": {
		body: `"writeToFile":{"targetFileUri":"file:///w/notes.md","codeContent":["# Notes\n"],"fileCreated":true}`,
		call: messages.Event{Name: "write_to_file", Kind: "edit", Title: "Write /w/notes.md", Locations: []messages.Location{{Path: "/w/notes.md"}},
			Diffs: []messages.FileDiff{{Path: "/w/notes.md", NewText: "# Notes\n"}}},
		output: messages.Event{Output: "created /w/notes.md"},
	},
	"CORTEX_STEP_TYPE_MOVE": {
		body:   `"move":{"srcAbsolutePathUri":"file:///w/a.go","dstAbsolutePathUri":"file:///w/b.go"}`,
		call:   messages.Event{Name: "move", Kind: "move", Title: "Move /w/a.go → /w/b.go", Locations: []messages.Location{{Path: "/w/a.go"}, {Path: "/w/b.go"}}},
		output: messages.Event{Output: "Read the item"},
	},
	"CORTEX_STEP_TYPE_DELETE_DIRECTORY": {
		body:   `"deleteDirectory":{"directoryPathUri":"file:///w/tmp","force":true}`,
		call:   messages.Event{Name: "delete_directory", Kind: "delete", Title: "Delete /w/tmp", Locations: []messages.Location{{Path: "/w/tmp"}}},
		output: messages.Event{Output: "Read the item"},
	},
	"CORTEX_STEP_TYPE_WRITE_BLOB": {
		body:   `"writeBlob":{"blobId":"b1","targetPath":"/w/logo.png","bytesWritten":"2048"}`,
		call:   messages.Event{Name: "write_blob", Kind: "edit", Title: "Write /w/logo.png", Locations: []messages.Location{{Path: "/w/logo.png"}}},
		output: messages.Event{Output: "wrote 2048 bytes to /w/logo.png"},
	},
	wire.StepGrepSearch: {
		body: `"grepSearch":{"searchPathUri":"file:///w","query":"TODO","includes":["*.go"],"results":[{"relativePath":"main.go","lineNumber":12,"content":"// TODO: tests\n"},{"absolutePath":"/w/pkg/x.go","lineNumber":3,"content":"// TODO"}],"totalResults":7}`,
		call: messages.Event{Name: "grep_search", Kind: "search", Title: `Search for "TODO" in /w (*.go)`, Locations: []messages.Location{{Path: "/w"}}},
		output: messages.Event{Output: "/w/main.go:12: // TODO: tests\n/w/pkg/x.go:3: // TODO",
			Hits:      []messages.Hit{{Path: "/w/main.go", Line: 12, Text: "// TODO: tests"}, {Path: "/w/pkg/x.go", Line: 3, Text: "// TODO"}},
			HitCount:  messages.Ptr(7),
			Locations: []messages.Location{{Path: "/w/main.go", Line: 12}, {Path: "/w/pkg/x.go", Line: 3}}},
	},
	wire.StepFind: {
		body: `"find":{"searchDirectory":"/w","pattern":"*_test.go","truncatedOutput":"/w/a_test.go\n/w/b/b_test.go\n","totalResults":2}`,
		call: messages.Event{Name: "find_by_name", Kind: "search", Title: `Find "*_test.go" in /w`, Locations: []messages.Location{{Path: "/w"}}},
		output: messages.Event{Output: "/w/a_test.go\n/w/b/b_test.go\n", Hits: []messages.Hit{{Path: "/w/a_test.go"}, {Path: "/w/b/b_test.go"}}, HitCount: messages.Ptr(2),
			Locations: []messages.Location{{Path: "/w/a_test.go"}, {Path: "/w/b/b_test.go"}}},
	},
	"CORTEX_STEP_TYPE_CODE_SEARCH": {
		body: `"codeSearch":{"query":"http handler","results":[{"path":"/w/server.go","matches":[{"snippet":"func handle(w http.ResponseWriter","lineNumber":40}]}]}`,
		call: messages.Event{Name: "codebase_search", Kind: "search", Title: `Search the code for "http handler"`},
		output: messages.Event{Output: "/w/server.go:40: func handle(w http.ResponseWriter", Hits: []messages.Hit{{Path: "/w/server.go", Line: 40, Text: "func handle(w http.ResponseWriter"}},
			HitCount: messages.Ptr(1), Locations: []messages.Location{{Path: "/w/server.go", Line: 40}}},
	},
	"CORTEX_STEP_TYPE_FIND_ALL_REFERENCES": {
		body: `"findAllReferences":{"absoluteUri":"file:///w/main.go","symbol":"Start","line":10,"references":[{"uri":"file:///w/cmd.go","range":{"startPosition":{"row":"4"}},"snippet":"s.Start()"}]}`,
		call: messages.Event{Name: "find_all_references", Kind: "search", Title: "Find references to Start", Locations: []messages.Location{{Path: "/w/main.go", Line: 10}}},
		output: messages.Event{Output: "/w/cmd.go:5: s.Start()", Hits: []messages.Hit{{Path: "/w/cmd.go", Line: 5, Text: "s.Start()"}}, HitCount: messages.Ptr(1),
			Locations: []messages.Location{{Path: "/w/cmd.go", Line: 5}}},
	},
	"CORTEX_STEP_TYPE_INTERNAL_SEARCH": {
		body:   `"internalSearch":{"query":"oncall","results":[{"url":"https://intra.example/x","title":"Oncall","content":"…"}]}`,
		call:   messages.Event{Name: "internal_search", Kind: "search", Title: `Search for "oncall"`},
		output: messages.Event{Output: "Oncall https://intra.example/x", Hits: []messages.Hit{{Path: "https://intra.example/x", Text: "Oncall"}}, HitCount: messages.Ptr(1)},
	},
	wire.StepSearchWeb: {
		body: `"searchWeb":{"query":"go 1.26 release","webDocuments":[{"url":"https://go.dev/doc/go1.26","title":"Go 1.26 Release Notes"}],"summary":"Go 1.26 was released in February."}`,
		call: messages.Event{Name: "search_web", Kind: "fetch", Title: `Search the web for "go 1.26 release"`},
		output: messages.Event{Output: "Go 1.26 was released in February.\n\nGo 1.26 Release Notes https://go.dev/doc/go1.26",
			Hits: []messages.Hit{{Path: "https://go.dev/doc/go1.26", Text: "Go 1.26 Release Notes"}}, HitCount: messages.Ptr(1)},
	},
	wire.StepReadURLContent: {
		body:   `"readUrlContent":{"url":"https://go.dev/doc","webDocument":{"url":"https://go.dev/doc","title":"Docs","text":"The Go documentation."},"latencyMs":120}`,
		call:   messages.Event{Name: "read_url_content", Kind: "fetch", Title: "Read https://go.dev/doc", URL: "https://go.dev/doc"},
		output: messages.Event{Output: "The Go documentation.", URL: "https://go.dev/doc"},
	},
	"CORTEX_STEP_TYPE_OPEN_BROWSER_URL": {
		body:   `"openBrowserUrl":{"url":"http://localhost:3000","pageId":"p1"}`,
		call:   messages.Event{Name: "open_browser_url", Kind: "fetch", Title: "Open http://localhost:3000", URL: "http://localhost:3000"},
		output: messages.Event{Output: "Read the item"},
	},
	"CORTEX_STEP_TYPE_READ_BROWSER_PAGE": {
		body:   `"readBrowserPage":{"pageId":"p1","webDocument":{"text":"Welcome"},"pageMetadata":{"url":"http://localhost:3000","pageTitle":"App"}}`,
		call:   messages.Event{Name: "read_browser_page", Kind: "fetch", Title: "Read the page http://localhost:3000", URL: "http://localhost:3000"},
		output: messages.Event{Output: "Welcome", URL: "http://localhost:3000"},
	},
	"CORTEX_STEP_TYPE_WORKSPACE_API": {
		body:   `"workspaceApi":{"url":"https://api.example/v1/items","httpMethod":"GET","statusCode":200,"response":"[]"}`,
		call:   messages.Event{Name: "workspace_api", Kind: "fetch", Title: "GET https://api.example/v1/items", URL: "https://api.example/v1/items"},
		output: messages.Event{Output: "[]", URL: "https://api.example/v1/items"},
	},
	wire.StepMCPTool: {
		body:   `"mcpTool":{"serverName":"github","toolCall":{"name":"list_issues","argumentsJson":"{\"repo\": \"a/b\"}"},"serverInfo":{"name":"github","version":"1.0"},"resultString":"2 issues"}`,
		call:   messages.Event{Name: "list_issues", Kind: "other", Title: "github: list_issues", Arguments: `{"repo":"a/b"}`},
		output: messages.Event{Output: "2 issues"},
	},
	"CORTEX_STEP_TYPE_LIST_RESOURCES": {
		body:   `"listResources":{"serverName":"docs","resources":[{"uri":"docs://intro","name":"Intro"}]}`,
		call:   messages.Event{Name: "list_resources", Kind: "read", Title: "List the resources of docs"},
		output: messages.Event{Output: "Intro docs://intro"},
	},
	"CORTEX_STEP_TYPE_READ_RESOURCE": {
		body:   `"readResource":{"serverName":"docs","uri":"docs://intro","contents":[{"uri":"docs://intro","text":{"text":"Welcome."}}]}`,
		call:   messages.Event{Name: "read_resource", Kind: "read", Title: "Read docs://intro from docs"},
		output: messages.Event{Output: "Welcome."},
	},
	wire.StepInvokeSubagent: {
		body:   `"invokeSubagent":{"subagentName":"reviewer","prompt":"Review main.go","results":[{"conversationId":"child-1"}]}`,
		call:   messages.Event{Name: "invoke_subagent", Kind: "think", Title: "Subagent reviewer"},
		output: messages.Event{Output: "subagents: child-1"},
	},
	wire.StepBrowserSubagent: {
		body:   `"browserSubagent":{"task":"Check that the login page works","taskName":"Login check","result":"The login page works."}`,
		call:   messages.Event{Name: "browser_subagent", Kind: "think", Title: "Browse: Login check"},
		output: messages.Event{Output: "The login page works."},
	},
	wire.StepTaskBoundary: {
		body:   `"taskBoundary":{"taskName":"Add tests","taskStatus":"Writing the first test","taskSummary":"Tests for the parser"}`,
		call:   messages.Event{Name: "task_boundary", Kind: "think", Title: "Task: Add tests — Writing the first test"},
		output: messages.Event{Output: "Tests for the parser"},
	},
	wire.StepNotifyUser: {
		body:   `"notifyUser":{"notificationContent":"Please review the plan.","reviewAbsoluteUris":["file:///w/plan.md"],"isBlocking":true}`,
		call:   messages.Event{Name: "notify_user", Kind: "other", Title: "Notify the user", Locations: []messages.Location{{Path: "/w/plan.md"}}},
		output: messages.Event{Output: "Please review the plan."},
	},
	wire.StepAskQuestion: {
		body:   `"askQuestion":{"questions":[{"question":"Which?","options":[{"id":"1","text":"A"},{"id":"2","text":"B"}],"selectedOptionIds":["2"]}]}`,
		call:   messages.Event{Name: "ask_question", Kind: "other", Title: "Question: Which?"},
		output: messages.Event{Output: "Which?: B"},
	},
	"CORTEX_STEP_TYPE_GENERATE_IMAGE": {
		body:   `"generateImage":{"prompt":"a gopher","imagePaths":["/w/gopher.png"],"modelName":"imagen"}`,
		call:   messages.Event{Name: "generate_image", Kind: "other", Title: "Generate an image: a gopher"},
		output: messages.Event{Output: "/w/gopher.png", Locations: []messages.Location{{Path: "/w/gopher.png"}}},
	},
}

// toolDetail keeps the fields of a function_call or function_call_output
// that a detail case checks.
func toolDetail(e messages.Event, withArgs bool) messages.Event {
	d := messages.Event{Name: e.Name, Kind: e.Kind, Title: e.Title, Locations: e.Locations, Diffs: e.Diffs, URL: e.URL,
		Output: e.Output, ExitCode: e.ExitCode, Hits: e.Hits, HitCount: e.HitCount}
	if withArgs {
		d.Arguments = e.Arguments
	}
	return d
}

// TestStepTableRows: one subtest per row. A detailed row maps a step of its
// type (built in the reference's shape, without toolCall as a streamed copy
// is) to the detail of its case; a generic row to a function_call named and
// kinded by the row whose arguments are the step's body; a row that is not a
// tool to no function_call and no unknown_step (unless the step carries
// toolAction: then it is a tool call).
func TestStepTableRows(t *testing.T) {
	names := make([]string, 0, len(stepTable))
	for typ := range stepTable {
		names = append(names, string(typ))
	}
	sort.Strings(names)
	for _, name := range names {
		typ := wire.StepType(name)
		row := stepTable[typ]
		t.Run(strings.TrimPrefix(name, "CORTEX_STEP_TYPE_"), func(t *testing.T) {
			switch row.role {
			case roleDetailed:
				c, ok := detailCases[typ]
				require.True(t, ok, "a detailed row needs a case in detailCases")
				meta := c.meta + `,"toolSummary":"Read the item","toolAction":"Reading"`
				evs := newTestReconciler().Apply(FromSnapshot([]wire.Step{stepOf(t, typ, wire.StatusDone, meta, c.body)}, "", at(0)))
				require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
				assert.Equal(t, c.call, toolDetail(evs[0], c.call.Arguments != ""), "function_call")
				want := c.output
				want.Kind = c.call.Kind
				assert.Equal(t, want, toolDetail(evs[1], false), "function_call_output")
				assert.Equal(t, evs[0].CallID, evs[1].CallID)
			case roleGeneric:
				body := `"` + bodyKey(typ) + `":{"target":"x"}`
				evs := newTestReconciler().Apply(FromSnapshot([]wire.Step{stepOf(t, typ, wire.StatusDone, `,"toolSummary":"Did a thing"`, body)}, "", at(0)))
				require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
				call := evs[0]
				assert.Equal(t, row.name == "generic", call.Name == "generic")
				if row.name != "generic" {
					assert.Equal(t, row.name, call.Name)
					assert.Equal(t, row.kind, call.Kind)
				}
				assert.JSONEq(t, `{"target":"x"}`, call.Arguments)
				assert.Equal(t, "Did a thing", call.Title)
				assert.Equal(t, "Did a thing", evs[1].Output)
			case roleNotTool:
				require.NotEmpty(t, row.note)
				body := `"` + bodyKey(typ) + `":{}`
				evs := newTestReconciler().Apply(FromSnapshot([]wire.Step{stepOf(t, typ, wire.StatusDone, "", body)}, "", at(0)))
				for _, e := range evs {
					assert.NotEqual(t, messages.EventFunctionCall, e.Type)
					assert.NotEqual(t, messages.EventUnknownStep, e.Type)
				}
				if typ == wire.StepUserInput || typ == wire.StepPlannerResponse ||
					typ == wire.StepCheckpoint || typ == wire.StepConversationHistory || typ == wire.StepSystemMessage ||
					typ == StepErrorMessage {
					return // mapped before the table is asked
				}
				evs = newTestReconciler().Apply(FromSnapshot([]wire.Step{stepOf(t, typ, wire.StatusDone, `,"toolAction":"Doing"`, body)}, "", at(0)))
				require.Equal(t, []string{"function_call", "function_call_output"}, types(evs), "with toolAction: a tool call")
			default:
				t.Fatalf("row with no role")
			}
		})
	}
	for typ := range detailCases {
		assert.Equal(t, roleDetailed, stepTable[typ].role, "%s has a case but no detailed row", typ)
	}
}

// TestStreamedCopiesGiveTheSameDetail: the detail of every detailed row
// comes from the step's body, so a streamed copy (no toolCall) and a polled
// one (with toolCall) give the same kind, title, locations and diffs.
func TestStreamedCopiesGiveTheSameDetail(t *testing.T) {
	for typ, c := range detailCases {
		name := stepTable[typ].name
		polled := stepOf(t, typ, wire.StatusDone, c.meta+`,"toolCall":{"id":"tc1","name":"`+name+`","argumentsJson":"{}"}`, c.body)
		streamed := stepOf(t, typ, wire.StatusDone, c.meta, c.body)
		a := newTestReconciler().Apply(FromSnapshot([]wire.Step{polled}, "", at(0)))
		b := newTestReconciler().Apply(FromSnapshot([]wire.Step{streamed}, "", at(0)))
		require.Len(t, a, 2, typ)
		require.Len(t, b, 2, typ)
		for i := range a {
			x, y := toolDetail(a[i], false), toolDetail(b[i], false)
			if typ == wire.StepMCPTool && i == 0 {
				x.Name, y.Name = "", "" // the metadata's name wins where there is one
			}
			assert.Equal(t, x, y, "%s event %d", typ, i)
		}
	}
}

// TestRecordedToolStepsGiveTheirDetail: the recorded steps
// (testdata/agy-steps) give kinds, titles and locations.
func TestRecordedToolStepsGiveTheirDetail(t *testing.T) {
	cases := map[string]messages.Event{
		"run_command_done.json":           {Name: "run_command", Kind: "execute", Title: "pwd"},
		"stream_run_command_done.json":    {Name: "run_command", Kind: "execute", Title: "git status && git log -n 5 --oneline"},
		"list_directory_done.json":        {Name: "list_dir", Kind: "read", Title: "List /home/user/.gemini/antigravity-cli/scratch", Locations: []messages.Location{{Path: "/home/user/.gemini/antigravity-cli/scratch"}}},
		"stream_view_file_done.json":      {Name: "view_file", Kind: "read", Title: "Read /home/user/.gemini/antigravity-cli/scratch/package.json", Locations: []messages.Location{{Path: "/home/user/.gemini/antigravity-cli/scratch/package.json"}}},
		"stream_generic_done.json":        {Name: "manage_subagents", Kind: "think", Title: "List active subagents"},
		"ask_question_done.json":          {Name: "ask_question", Kind: "other", Title: "Question: What type of project or improvement would you like to focus on?"},
		"stream_list_directory_done.json": {Name: "list_dir", Kind: "read", Title: "List /home/user/.gemini/antigravity-cli/scratch", Locations: []messages.Location{{Path: "/home/user/.gemini/antigravity-cli/scratch"}}},
	}
	for name, want := range cases {
		s := loadFixture(t, name)
		evs := newTestReconciler().Apply(FromSnapshot([]wire.Step{s}, "", at(0)))
		require.NotEmpty(t, evs, name)
		require.Equal(t, messages.EventFunctionCall, evs[0].Type, name)
		got := evs[0]
		assert.Equal(t, want, messages.Event{Name: got.Name, Kind: got.Kind, Title: got.Title, Locations: got.Locations}, name)
	}
}

// TestGenericRowsKeepTheirToolCallName: a GENERIC step is named by its
// toolCall, and its kind guessed from that name.
func TestGenericRowsKeepTheirToolCallName(t *testing.T) {
	s := stepOf(t, wire.StepGeneric, wire.StatusDone, `,"toolCall":{"id":"g1","name":"read_file"},"toolSummary":"Read hosts"`, `"generic":{"args":{"path":"/etc/hosts"},"result":{"result":"127.0.0.1 localhost"}}`)
	evs := newTestReconciler().Apply(FromSnapshot([]wire.Step{s}, "", at(0)))
	require.Equal(t, []string{"function_call", "function_call_output"}, types(evs))
	assert.Equal(t, "read_file", evs[0].Name)
	assert.Equal(t, messages.ToolRead, evs[0].Kind, "kind guessed from the name")
	assert.Equal(t, "Read hosts", evs[0].Title)
	assert.Equal(t, "127.0.0.1 localhost", evs[1].Output)
}
