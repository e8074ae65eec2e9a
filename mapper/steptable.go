package mapper

import (
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// stepRole is what the mapper makes of a step type.
type stepRole uint8

const (
	// roleUnknown: a type not in the table. It is reported once as
	// unknown_step, unless a copy carries metadata.toolAction or
	// metadata.toolCall: then it is a tool call, mapped generically.
	roleUnknown stepRole = iota
	// roleNotTool: not a tool call. USER_INPUT and PLANNER_RESPONSE have
	// mappings of their own; the others carry nothing the event contract
	// shows (the row's note says why). A copy carrying metadata.toolAction
	// is a tool call all the same.
	roleNotTool
	// roleGeneric: a tool call mapped generically on purpose: its name, its
	// kind, its arguments (toolCall.argumentsJson, else the step's body) and
	// its output (generic.result, else toolSummary, else "done").
	roleGeneric
	// roleDetailed: a tool call with typed detail (title, locations, diffs,
	// hits, URL, live output) read from the step's body.
	roleDetailed
)

// stepRow is one row of the step table.
type stepRow struct {
	role stepRole
	name string // the tool's name for copies without metadata.toolCall
	kind string // messages.Tool*: the tool kind ("" on roleNotTool rows)
	note string // why the row is not a tool, or generic; what a detailed row shows

	// args names the body's members that are the call's input: a copy
	// without toolCall.argumentsJson (a streamed one) has them as its
	// arguments (all of the body when nil).
	args []string

	call   func(v stepView, d *callDetail)   // a detailed row's call detail
	result func(v stepView, d *resultDetail) // its output and result detail (DONE copies)
	live   func(v stepView) string           // its output so far, while it runs
}

// stepTable classifies every step type agy is known to send: each
// CORTEX_STEP_TYPE_* of the reference schema's CortexStepType (listed in
// testdata/agy-step-types.txt; TestStepTableCoversTheReferenceEnum), and the
// types seen in recorded steps that the schema lacks (ASK_QUESTION,
// GENERIC). Field names are the schema's proto3 JSON names; the recorded
// steps win where the two disagree. Streamed copies have no
// metadata.toolCall, so detail is read from the step's body (and its
// metadata.toolSummary) only.
var stepTable = map[wire.StepType]stepRow{
	// Conversation structure: mapped elsewhere, or nothing to show.
	"CORTEX_STEP_TYPE_UNSPECIFIED":          {role: roleNotTool, note: "no type: nothing to map"},
	"CORTEX_STEP_TYPE_DUMMY":                {role: roleNotTool, note: "a placeholder step with no content"},
	wire.StepUserInput:                      {role: roleNotTool, note: "a user turn: user_message"},
	wire.StepPlannerResponse:                {role: roleNotTool, note: "the model's reply: deltas, message and usage; its tool calls come as steps of their own"},
	wire.StepCheckpoint:                     {role: roleNotTool, note: "agy's own summary of the conversation so far, for its context"},
	wire.StepConversationHistory:            {role: roleNotTool, note: "context agy puts at the start of a conversation"},
	wire.StepSystemMessage:                  {role: roleNotTool, note: "a message from agy to the model"},
	"CORTEX_STEP_TYPE_EPHEMERAL_MESSAGE":    {role: roleNotTool, note: "a transient note from agy to the model (reminders, browser state), not part of the conversation"},
	"CORTEX_STEP_TYPE_ERROR_MESSAGE":        {role: roleNotTool, note: "an error agy shows the user (quota, usage limit, provider failure): an error event with a code (providererror.go)"},
	"CORTEX_STEP_TYPE_SUGGESTED_RESPONSES":  {role: roleNotTool, note: "reply suggestions for agy's own UI"},
	"CORTEX_STEP_TYPE_LINT_DIFF":            {role: roleNotTool, note: "lint findings agy attaches after an edit, for the model"},
	"CORTEX_STEP_TYPE_CODE_ACKNOWLEDGEMENT": {role: roleNotTool, note: "the user accepting or rejecting edits in agy's editor, not a model action"},
	"CORTEX_STEP_TYPE_PLAN_INPUT":           {role: roleNotTool, note: "input to agy's planner"},
	"CORTEX_STEP_TYPE_MANAGER_FEEDBACK":     {role: roleNotTool, note: "agy's internal review of a plan"},
	"CORTEX_STEP_TYPE_TOOL_CALL_PROPOSAL":   {role: roleNotTool, note: "a candidate tool call of agy's planner; the chosen call comes as its own step"},
	"CORTEX_STEP_TYPE_TOOL_CALL_CHOICE":     {role: roleNotTool, note: "agy's planner choosing among proposals; the chosen call comes as its own step"},
	"CORTEX_STEP_TYPE_TRAJECTORY_CHOICE":    {role: roleNotTool, note: "agy's planner choosing among trajectories"},
	"CORTEX_STEP_TYPE_PROPOSAL_FEEDBACK":    {role: roleNotTool, note: "agy's internal feedback on a proposal"},
	"CORTEX_STEP_TYPE_KNOWLEDGE_GENERATION": {role: roleNotTool, note: "agy updating its knowledge base in the background"},
	"CORTEX_STEP_TYPE_KNOWLEDGE_ARTIFACTS":  {role: roleNotTool, note: "knowledge agy puts in the model's context"},
	"CORTEX_STEP_TYPE_KI_INSERTION":         {role: roleNotTool, note: "knowledge items agy puts in the model's context"},
	"CORTEX_STEP_TYPE_BRAIN_UPDATE":         {role: roleNotTool, note: "agy updating its task notes in the background"},
	"CORTEX_STEP_TYPE_MEMORY":               {role: roleNotTool, note: "agy saving a memory in the background"},
	"CORTEX_STEP_TYPE_RETRIEVE_MEMORY":      {role: roleNotTool, note: "memories agy puts in the model's context"},

	// Tools with typed detail.
	wire.StepRunCommand: {role: roleDetailed, name: "run_command", kind: messages.ToolExecute,
		note: "the command line as title; combinedOutput streamed while it runs; output and exit code",
		call: runCommandCall, result: runCommandResult, live: runCommandLive},
	wire.StepCommandStatus: {role: roleDetailed, args: []string{"commandId", "waitDurationSeconds", "outputPriority"}, name: "command_status", kind: messages.ToolExecute,
		note: "a background command's output (combined) streamed while it grows; its exit code once it ended",
		call: commandStatusCall, result: commandStatusResult, live: commandStatusLive},
	wire.StepSendCommandInput: {role: roleDetailed, args: []string{"commandId", "input", "terminate", "waitMs"}, name: "send_command_input", kind: messages.ToolExecute,
		note: "the input sent to a running command; the command's output",
		call: sendCommandInputCall, result: sendCommandInputResult},
	"CORTEX_STEP_TYPE_READ_TERMINAL": {role: roleDetailed, args: []string{"processId", "name"}, name: "read_terminal", kind: messages.ToolRead,
		note: "the terminal read; its contents", call: readTerminalCall, result: readTerminalResult},
	"CORTEX_STEP_TYPE_SHELL_EXEC": {role: roleDetailed, args: []string{"command"}, name: "shell_exec", kind: messages.ToolExecute,
		note: "the command; output and exit code", call: shellExecCall, result: shellExecResult},
	wire.StepViewFile: {role: roleDetailed, args: []string{"absolutePathUri", "startLine", "endLine"}, name: "view_file", kind: messages.ToolRead,
		note: "the file and first line read; lines and bytes", call: viewFileCall, result: viewFileResult},
	wire.StepListDirectory: {role: roleDetailed, args: []string{"directoryPathUri"}, name: "list_dir", kind: messages.ToolRead,
		note: "the directory; its entries", call: listDirectoryCall, result: listDirectoryResult},
	wire.StepViewFileOutline: {role: roleDetailed, args: []string{"absolutePathUri", "cciOffset"}, name: "view_file_outline", kind: messages.ToolRead,
		note: "the file; its outline", call: viewFileOutlineCall, result: viewFileOutlineResult},
	"CORTEX_STEP_TYPE_VIEW_CODE_ITEM": {role: roleDetailed, args: []string{"absoluteUri", "nodePaths"}, name: "view_code_item", kind: messages.ToolRead,
		note: "the file and the symbols read", call: viewCodeItemCall},
	"CORTEX_STEP_TYPE_VIEW_CONTENT_CHUNK": {role: roleDetailed, args: []string{"documentId", "position"}, name: "view_content_chunk", kind: messages.ToolFetch,
		note: "a chunk of a web document read earlier; its text", call: viewContentChunkCall, result: viewContentChunkResult},
	wire.StepCodeAction: {role: roleDetailed, args: []string{"actionSpec", "description", "codeInstruction"}, name: "replace_file_content", kind: messages.ToolEdit,
		note: "an edit (replacement chunks), a new file or a deletion: the file, the diffs proposed, then the diff applied",
		call: codeActionCall, result: codeActionResult},
	wire.StepFileChange: {role: roleDetailed, args: []string{"absolutePathUri", "fileChangeType", "replacementChunks", "instruction", "overwrite"}, name: "file_change", kind: messages.ToolEdit,
		note: "a file created, edited (replacement chunks or a diff) or deleted",
		call: fileChangeCall, result: fileChangeResult},
	"CORTEX_STEP_TYPE_WRITE_TO_FILE": {role: roleDetailed, args: []string{"targetFileUri", "codeContent"}, name: "write_to_file", kind: messages.ToolEdit,
		note: "a file written whole (the schema has its body, CortexStepWriteToFile, and no enum value: agy builds may send it)",
		call: writeToFileCall, result: writeToFileResult},
	"CORTEX_STEP_TYPE_MOVE": {role: roleDetailed, name: "move", kind: messages.ToolMove,
		note: "the source and destination", call: moveCall},
	"CORTEX_STEP_TYPE_DELETE_DIRECTORY": {role: roleDetailed, name: "delete_directory", kind: messages.ToolDelete,
		note: "the directory removed", call: deleteDirectoryCall},
	"CORTEX_STEP_TYPE_WRITE_BLOB": {role: roleDetailed, args: []string{"blobId", "targetPath"}, name: "write_blob", kind: messages.ToolEdit,
		note: "the file written; bytes written", call: writeBlobCall, result: writeBlobResult},
	wire.StepGrepSearch: {role: roleDetailed, args: []string{"searchPathUri", "query", "matchPerLine", "includes", "caseInsensitive", "isRegex"}, name: "grep_search", kind: messages.ToolSearch,
		note: "the query and where; the hits (file, line, text) and their count",
		call: grepSearchCall, result: grepSearchResult},
	wire.StepFind: {role: roleDetailed, args: []string{"searchDirectory", "pattern", "excludes", "type", "maxDepth", "extensions", "fullPath", "includes"}, name: "find_by_name", kind: messages.ToolSearch,
		note: "the pattern and where; the paths found and their count", call: findCall, result: findResult},
	"CORTEX_STEP_TYPE_CODE_SEARCH": {role: roleDetailed, args: []string{"query", "onlyPaths", "allowDirs"}, name: "codebase_search", kind: messages.ToolSearch,
		note: "the query; the files and lines found", call: codeSearchCall, result: codeSearchResult},
	"CORTEX_STEP_TYPE_FIND_ALL_REFERENCES": {role: roleDetailed, args: []string{"absoluteUri", "symbol", "line", "occurrenceIndex"}, name: "find_all_references", kind: messages.ToolSearch,
		note: "the symbol and where; its references", call: findReferencesCall, result: findReferencesResult},
	"CORTEX_STEP_TYPE_INTERNAL_SEARCH": {role: roleDetailed, args: []string{"query"}, name: "internal_search", kind: messages.ToolSearch,
		note: "the query; the pages found", call: queryCall("Search for "), result: internalSearchResult},
	wire.StepSearchWeb: {role: roleDetailed, args: []string{"query", "domain"}, name: "search_web", kind: messages.ToolFetch,
		note: "the query; the pages found (URL, title) and agy's summary", call: searchWebCall, result: searchWebResult},
	wire.StepReadURLContent: {role: roleDetailed, args: []string{"url"}, name: "read_url_content", kind: messages.ToolFetch,
		note: "the URL; the page's text", call: readURLCall, result: readURLResult},
	"CORTEX_STEP_TYPE_OPEN_BROWSER_URL": {role: roleDetailed, args: []string{"url", "pageIdToReplace"}, name: "open_browser_url", kind: messages.ToolFetch,
		note: "the URL opened in agy's browser", call: openBrowserURLCall},
	"CORTEX_STEP_TYPE_READ_BROWSER_PAGE": {role: roleDetailed, args: []string{"pageId"}, name: "read_browser_page", kind: messages.ToolFetch,
		note: "the page read in agy's browser; its text", call: readBrowserPageCall, result: readBrowserPageResult},
	"CORTEX_STEP_TYPE_WORKSPACE_API": {role: roleDetailed, args: []string{"url", "httpMethod", "body", "description"}, name: "workspace_api", kind: messages.ToolFetch,
		note: "the HTTP method and URL; the response", call: workspaceAPICall, result: workspaceAPIResult},
	wire.StepMCPTool: {role: roleDetailed, name: "mcp_tool", kind: messages.ToolOther,
		note: "the server and tool, its arguments (mcpTool.toolCall); its result",
		call: mcpToolCall, result: mcpToolResult},
	"CORTEX_STEP_TYPE_LIST_RESOURCES": {role: roleDetailed, args: []string{"serverName", "cursor"}, name: "list_resources", kind: messages.ToolRead,
		note: "the MCP server; its resources", call: listResourcesCall, result: listResourcesResult},
	"CORTEX_STEP_TYPE_READ_RESOURCE": {role: roleDetailed, args: []string{"serverName", "uri"}, name: "read_resource", kind: messages.ToolRead,
		note: "the MCP server and resource; its text", call: readResourceCall, result: readResourceResult},
	wire.StepInvokeSubagent: {role: roleDetailed, args: []string{"subagentName", "prompt", "resumedConversationId", "background"}, name: "invoke_subagent", kind: messages.ToolThink,
		note: "the subagent and its task; the child conversations (their own items follow)",
		call: invokeSubagentCall, result: invokeSubagentResult},
	wire.StepBrowserSubagent: {role: roleDetailed, args: []string{"task", "taskName", "reusedSubagentId"}, name: "browser_subagent", kind: messages.ToolThink,
		note: "the browsing task; its result", call: browserSubagentCall, result: browserSubagentResult},
	wire.StepTaskBoundary: {role: roleDetailed, name: "task_boundary", kind: messages.ToolThink,
		note: "the task agy reports it works on, and its status", call: taskBoundaryCall, result: taskBoundaryResult},
	wire.StepNotifyUser: {role: roleDetailed, name: "notify_user", kind: messages.ToolOther,
		note: "agy's note to the user and the files it asks to review", call: notifyUserCall, result: notifyUserResult},
	wire.StepAskQuestion: {role: roleDetailed, name: "ask_question", kind: messages.ToolOther,
		note: "the question (its prompt is an elicitation); the answers chosen", call: askQuestionCall, result: askQuestionResult},
	"CORTEX_STEP_TYPE_GENERATE_IMAGE": {role: roleDetailed, args: []string{"prompt", "imageName", "imagePaths"}, name: "generate_image", kind: messages.ToolOther,
		note: "the prompt; the image files written", call: generateImageCall, result: generateImageResult},

	// Tools mapped generically on purpose.
	wire.StepGeneric: {role: roleGeneric, name: "generic", kind: "",
		note: "a tool without a step type of its own: its name is in toolCall (kept by streamed copies), its arguments in generic.args, its result in generic.result; the kind is guessed from the name"},
	"CORTEX_STEP_TYPE_FINISH":                        {role: roleGeneric, name: "finish", kind: messages.ToolThink, note: "the agent declaring its task done; its output map is shown as is"},
	"CORTEX_STEP_TYPE_MQUERY":                        {role: roleGeneric, name: "mquery", kind: messages.ToolSearch, note: "agy's semantic code search over its index; the body is context items, not hits an editor can open"},
	"CORTEX_STEP_TYPE_TRAJECTORY_SEARCH":             {role: roleGeneric, name: "trajectory_search", kind: messages.ToolSearch, note: "a search of agy's earlier conversations; its chunks are agy's context"},
	"CORTEX_STEP_TYPE_GIT_COMMIT":                    {role: roleGeneric, name: "git_commit", kind: messages.ToolExecute, note: "a commit by agy's IDE integration; the message and hash are in the arguments"},
	"CORTEX_STEP_TYPE_COMPILE":                       {role: roleGeneric, name: "compile", kind: messages.ToolExecute, note: "a build by agy's IDE integration; its diagnostics are in the arguments"},
	"CORTEX_STEP_TYPE_PROPOSE_CODE":                  {role: roleGeneric, name: "propose_code", kind: messages.ToolEdit, note: "a proposal shown in agy's editor; the CLI edits through CODE_ACTION"},
	"CORTEX_STEP_TYPE_POST_PR_REVIEW":                {role: roleGeneric, name: "post_pr_review", kind: messages.ToolOther, note: "a review posted by agy's IDE integration"},
	"CORTEX_STEP_TYPE_RUN_EXTENSION_CODE":            {role: roleGeneric, name: "run_extension_code", kind: messages.ToolExecute, note: "code run in agy's editor extension host"},
	"CORTEX_STEP_TYPE_CLIPBOARD":                     {role: roleGeneric, name: "clipboard", kind: messages.ToolOther, note: "text put on the clipboard"},
	"CORTEX_STEP_TYPE_WAIT":                          {role: roleGeneric, name: "wait", kind: messages.ToolOther, note: "a pause; its duration is the argument"},
	"CORTEX_STEP_TYPE_AGENCY_TOOL_CALL":              {role: roleGeneric, name: "agency_tool_call", kind: messages.ToolOther, note: "a call to another agent; its name and function are the arguments"},
	"CORTEX_STEP_TYPE_EXECUTE_BROWSER_JAVASCRIPT":    {role: roleGeneric, name: "execute_browser_javascript", kind: messages.ToolExecute, note: browserNote},
	"CORTEX_STEP_TYPE_LIST_BROWSER_PAGES":            {role: roleGeneric, name: "list_browser_pages", kind: messages.ToolRead, note: browserNote},
	"CORTEX_STEP_TYPE_CAPTURE_BROWSER_SCREENSHOT":    {role: roleGeneric, name: "capture_browser_screenshot", kind: messages.ToolRead, note: browserNote},
	"CORTEX_STEP_TYPE_CAPTURE_BROWSER_CONSOLE_LOGS":  {role: roleGeneric, name: "capture_browser_console_logs", kind: messages.ToolRead, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_GET_DOM":               {role: roleGeneric, name: "browser_get_dom", kind: messages.ToolRead, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_LIST_NETWORK_REQUESTS": {role: roleGeneric, name: "browser_list_network_requests", kind: messages.ToolRead, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_GET_NETWORK_REQUEST":   {role: roleGeneric, name: "browser_get_network_request", kind: messages.ToolRead, note: browserNote},
	"CORTEX_STEP_TYPE_CLICK_BROWSER_PIXEL":           {role: roleGeneric, name: "click_browser_pixel", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_INPUT":                 {role: roleGeneric, name: "browser_input", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_MOVE_MOUSE":            {role: roleGeneric, name: "browser_move_mouse", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_SELECT_OPTION":         {role: roleGeneric, name: "browser_select_option", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_SCROLL_UP":             {role: roleGeneric, name: "browser_scroll_up", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_SCROLL_DOWN":           {role: roleGeneric, name: "browser_scroll_down", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_SCROLL":                {role: roleGeneric, name: "browser_scroll", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_CLICK_ELEMENT":         {role: roleGeneric, name: "browser_click_element", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_PRESS_KEY":             {role: roleGeneric, name: "browser_press_key", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_RESIZE_WINDOW":         {role: roleGeneric, name: "browser_resize_window", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_DRAG_PIXEL_TO_PIXEL":   {role: roleGeneric, name: "browser_drag_pixel_to_pixel", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_MOUSE_WHEEL":           {role: roleGeneric, name: "browser_mouse_wheel", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_MOUSE_UP":              {role: roleGeneric, name: "browser_mouse_up", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_MOUSE_DOWN":            {role: roleGeneric, name: "browser_mouse_down", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_BROWSER_REFRESH_PAGE":          {role: roleGeneric, name: "browser_refresh_page", kind: messages.ToolOther, note: browserNote},
	"CORTEX_STEP_TYPE_COMPILE_APPLET":                {role: roleGeneric, name: "compile_applet", kind: messages.ToolExecute, note: appletNote},
	"CORTEX_STEP_TYPE_INSTALL_APPLET_DEPENDENCIES":   {role: roleGeneric, name: "install_applet_dependencies", kind: messages.ToolExecute, note: appletNote},
	"CORTEX_STEP_TYPE_INSTALL_APPLET_PACKAGE":        {role: roleGeneric, name: "install_applet_package", kind: messages.ToolExecute, note: appletNote},
	"CORTEX_STEP_TYPE_LINT_APPLET":                   {role: roleGeneric, name: "lint_applet", kind: messages.ToolExecute, note: appletNote},
	"CORTEX_STEP_TYPE_SET_UP_FIREBASE":               {role: roleGeneric, name: "set_up_firebase", kind: messages.ToolExecute, note: appletNote},
	"CORTEX_STEP_TYPE_DEPLOY_FIREBASE":               {role: roleGeneric, name: "deploy_firebase", kind: messages.ToolExecute, note: appletNote},
	"CORTEX_STEP_TYPE_RESTART_DEV_SERVER":            {role: roleGeneric, name: "restart_dev_server", kind: messages.ToolExecute, note: appletNote},
	"CORTEX_STEP_TYPE_DEFINE_NEW_ENV_VARIABLE":       {role: roleGeneric, name: "define_new_env_variable", kind: messages.ToolOther, note: appletNote},
}

const (
	browserNote = "an action in agy's browser; page ids, coordinates and screenshots are nothing an editor can show beyond the arguments"
	appletNote  = "a tool of agy's web-app builder, not of the CLI; shown by its arguments"
)

// rowOf is the table's row for a step type (roleUnknown when absent).
func rowOf(t wire.StepType) stepRow { return stepTable[t] }

// isTool reports whether a step is a tool call: a tool row of the table, or
// any step carrying metadata.toolAction (kept by streamed copies) or
// metadata.toolCall, whatever its type.
func isTool(s *wire.Step) bool {
	switch s.Type {
	case wire.StepUserInput, wire.StepPlannerResponse:
		return false
	}
	switch rowOf(s.Type).role {
	case roleGeneric, roleDetailed:
		return true
	}
	return s.Metadata.ToolAction != "" || s.Metadata.ToolCall != nil
}

// kindByName guesses the kind of a tool from its name, for tools without a
// step type of their own (GENERIC, and types this version does not know).
func kindByName(name string) string {
	n := strings.ToLower(name)
	has := func(parts ...string) bool {
		for _, p := range parts {
			if strings.Contains(n, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("command", "shell", "exec", "terminal"):
		return messages.ToolExecute
	case has("delete", "remove"):
		return messages.ToolDelete
	case has("move", "rename"):
		return messages.ToolMove
	case has("write", "edit", "replace", "create"):
		return messages.ToolEdit
	case has("search", "grep", "find"):
		return messages.ToolSearch
	case has("url", "web", "fetch", "browser"):
		return messages.ToolFetch
	case has("view", "read", "list", "get"):
		return messages.ToolRead
	case has("subagent", "task", "plan"):
		return messages.ToolThink
	}
	return messages.ToolOther
}
