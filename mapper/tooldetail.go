package mapper

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// The typed detail of a tool step is read from its body, the member its
// type names (viewFile for VIEW_FILE, see bodyKey), decoded into a struct of
// the detail's own: fromBody makes a row's call or result of a function of
// that struct. The details written out in full read the step as well (its
// typed fields, metadata.toolCall, the arguments where the body lacks a
// path). Commands and reads are here; edits (diffs) in tooldetail_edit.go,
// searches (hits) in tooldetail_search.go, web reads in tooldetail_web.go,
// the agent's own tools (MCP, subagents, questions) in tooldetail_agent.go.

// callDetail is what the mapper says of a tool call beyond its arguments.
type callDetail struct {
	name      string // when the body decides it (CODE_ACTION: write_to_file, ...)
	kind      string // when the body decides it (a deletion)
	title     string
	arguments string // when the body holds the call's own arguments (MCP_TOOL)
	locations []messages.Location
	diffs     []messages.FileDiff
	url       string
}

// resultDetail is what a DONE tool step gives back.
type resultDetail struct {
	output    string
	set       bool // output decided: no generic output
	exitCode  *int
	locations []messages.Location
	diffs     []messages.FileDiff
	hits      []messages.Hit
	hitCount  *int
	url       string
}

func (d *resultDetail) say(s string) { d.output, d.set = s, true }

// maxHits bounds the hits an event carries; hit_count tells how many there were.
const maxHits = 50

// hit keeps h among the event's hits while there are fewer than maxHits.
func (d *resultDetail) hit(h messages.Hit) {
	if len(d.hits) < maxHits {
		d.hits = append(d.hits, h)
	}
}

// stepView is a step and its type-named body (codeAction for CODE_ACTION),
// as agy sent it, looked up the first time a detail asks for it.
type stepView struct {
	s   *wire.Step
	raw *stepBodyCache
}

type stepBodyCache struct {
	body   json.RawMessage
	looked bool
}

func viewOf(s *wire.Step) stepView { return stepView{s: s, raw: &stepBodyCache{}} }

// body is the step's type-named body (nil when it has none).
func (v stepView) body() json.RawMessage {
	if !v.raw.looked {
		v.raw.body, v.raw.looked = stepBody(v.s), true
	}
	return v.raw.body
}

// decodeBody is the step's body decoded as a T, and whether it decoded: when
// not (no body, or one that does not fit a T), the T holds what did.
func decodeBody[T any](v stepView) (*T, bool) {
	b := new(T)
	raw := v.body()
	return b, len(raw) > 0 && json.Unmarshal(raw, b) == nil
}

// fromBody makes a row's call or result detail of f: f is given the step's
// body decoded as a T, and not called when it has none or it does not fit.
func fromBody[T, D any](f func(b *T, d *D)) func(stepView, *D) {
	return func(v stepView, d *D) {
		if b, ok := decodeBody[T](v); ok {
			f(b, d)
		}
	}
}

// toolArgs reads metadata.toolCall.argumentsJson (polled copies only).
func (v stepView) toolArgs(into any) bool {
	tc := v.s.Metadata.ToolCall
	return tc != nil && tc.ArgumentsJSON != "" && json.Unmarshal([]byte(tc.ArgumentsJSON), into) == nil
}

// filePath turns a file URI (file:///a%20b) into a path; anything else is
// returned as it is.
func filePath(uri string) string {
	if !strings.HasPrefix(uri, "file://") {
		return uri
	}
	if u, err := url.Parse(uri); err == nil && u.Path != "" {
		return u.Path
	}
	return strings.TrimPrefix(uri, "file://")
}

func locate(path string, line int) []messages.Location {
	if path == "" {
		return nil
	}
	return []messages.Location{{Path: path, Line: max(line, 0)}}
}

// in is " in path", or "" without a path.
func in(path string) string {
	if path == "" {
		return ""
	}
	return " in " + path
}

func num(n int) string { return strconv.Itoa(n) }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}

// oneLine is s's first line, cut to 80 characters.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// --- commands ---

func runCommandLine(rc *wire.RunCommand) string {
	if rc == nil {
		return ""
	}
	if rc.CommandLine != "" {
		return rc.CommandLine
	}
	return rc.ProposedCommandLine
}

func runCommandCall(v stepView, d *callDetail) { d.title = runCommandLine(v.s.RunCommand) }

func runCommandLive(v stepView) string {
	if rc := v.s.RunCommand; rc != nil && rc.CombinedOutput != nil {
		return rc.CombinedOutput.Full
	}
	return ""
}

// commandIDBody is the command a RUN_COMMAND or COMMAND_STATUS body is
// about.
type commandIDBody struct {
	CommandID string `json:"commandId"`
}

// commandBody is what a RUN_COMMAND body says beyond wire.RunCommand: the
// command's id, and its exit code as sent, absent until the command has one.
type commandBody struct {
	CommandID string          `json:"commandId"`
	ExitCode  json.RawMessage `json:"exitCode"`
}

func runCommandResult(v stepView, d *resultDetail) {
	s := v.s
	if s.RequestedInteraction != nil && s.RequestedInteraction.Permission != nil &&
		answeredAction(s, messages.KindPermission) == messages.ActionDecline {
		d.say("the command was not allowed")
		return
	}
	d.say(runCommandLive(v))
	if b, ok := decodeBody[commandBody](v); ok && b.CommandID != "" && b.ExitCode == nil {
		// Sent to the background before it ended: command_status follows it.
		return
	}
	code := 0
	if rc := s.RunCommand; rc != nil {
		code = int(rc.ExitCode)
	}
	d.exitCode = messages.Ptr(code)
}

type commandStatusBody struct {
	CommandID string    `json:"commandId"`
	Status    string    `json:"status"`
	Combined  string    `json:"combined"`
	Stdout    string    `json:"stdout"`
	Stderr    string    `json:"stderr"`
	ExitCode  wire.Int  `json:"exitCode"`
	Error     *struct{} `json:"error"`
	Wait      wire.Int  `json:"waitDurationSeconds"`
}

// output is the command's output so far: combined, else stdout and stderr.
func (b *commandStatusBody) output() string {
	if b.Combined != "" {
		return b.Combined
	}
	return b.Stdout + b.Stderr
}

var commandStatusCall = fromBody(func(b *commandStatusBody, d *callDetail) {
	d.title = "Check command output"
	if b.CommandID != "" {
		d.title += " (" + b.CommandID + ")"
	}
})

func commandStatusLive(v stepView) string {
	if b, ok := decodeBody[commandStatusBody](v); ok {
		return b.output()
	}
	return ""
}

var commandStatusResult = fromBody(func(b *commandStatusBody, d *resultDetail) {
	d.say(b.output())
	if st := wire.StepStatus(b.Status); st.Terminal() {
		d.exitCode = messages.Ptr(int(b.ExitCode))
	}
})

type sendCommandInputBody struct {
	CommandID string               `json:"commandId"`
	Input     string               `json:"input"`
	Terminate bool                 `json:"terminate"`
	Output    *wire.CombinedOutput `json:"output"`
	Running   bool                 `json:"running"`
	ExitCode  wire.Int             `json:"exitCode"`
}

var sendCommandInputCall = fromBody(func(b *sendCommandInputBody, d *callDetail) {
	switch {
	case b.Terminate:
		d.title = "Stop the command"
	case b.Input != "":
		d.title = "Send input: " + oneLine(b.Input)
	default:
		d.title = "Send input to the command"
	}
})

var sendCommandInputResult = fromBody(func(b *sendCommandInputBody, d *resultDetail) {
	if b.Output != nil {
		d.say(b.Output.Full)
	}
	if !b.Running && (b.Output != nil || b.Terminate) {
		d.exitCode = messages.Ptr(int(b.ExitCode))
	}
})

type readTerminalBody struct {
	ProcessID string `json:"processId"`
	Name      string `json:"name"`
	Contents  string `json:"contents"`
}

var readTerminalCall = fromBody(func(b *readTerminalBody, d *callDetail) {
	d.title = "Read terminal " + firstNonEmpty(b.Name, b.ProcessID)
})

var readTerminalResult = fromBody(func(b *readTerminalBody, d *resultDetail) { d.say(b.Contents) })

type shellExecBody struct {
	Command      string   `json:"command"`
	ExitCode     wire.Int `json:"exitCode"`
	Output       string   `json:"output"`
	ErrorMessage string   `json:"errorMessage"`
}

var shellExecCall = fromBody(func(b *shellExecBody, d *callDetail) { d.title = b.Command })

var shellExecResult = fromBody(func(b *shellExecBody, d *resultDetail) {
	d.say(firstNonEmpty(b.Output, b.ErrorMessage))
	d.exitCode = messages.Ptr(int(b.ExitCode))
})

// --- reads ---

type viewFileBody struct {
	AbsolutePathURI string   `json:"absolutePathUri"`
	StartLine       wire.Int `json:"startLine"`
	EndLine         wire.Int `json:"endLine"`
	NumLines        wire.Int `json:"numLines"`
	NumBytes        wire.Int `json:"numBytes"`
}

// viewFileCall reads the file from the body, else from the arguments.
func viewFileCall(v stepView, d *callDetail) {
	b, _ := decodeBody[viewFileBody](v)
	path := filePath(b.AbsolutePathURI)
	if path == "" {
		var args struct{ AbsolutePath string }
		v.toolArgs(&args)
		path = args.AbsolutePath
	}
	if path == "" {
		return
	}
	d.title = "Read " + path
	// agy counts view_file's lines from 0 (a 111-line file ends at 110).
	line := 0
	if b.StartLine > 0 {
		line = int(b.StartLine) + 1
	}
	d.locations = locate(path, line)
}

// viewFileSize is the part of a VIEW_FILE body its result tells.
type viewFileSize struct {
	AbsolutePathURI string   `json:"absolutePathUri"`
	NumLines        wire.Int `json:"numLines"`
	NumBytes        wire.Int `json:"numBytes"`
}

func viewFileResult(v stepView, d *resultDetail) {
	b, ok := decodeBody[viewFileSize](v)
	if !ok {
		d.say("viewed a file")
		return
	}
	d.say(filePath(b.AbsolutePathURI) + ": " + num(int(b.NumLines)) + " lines, " + num(int(b.NumBytes)) + " bytes")
}

// directoryBody is the directory a LIST_DIRECTORY or DELETE_DIRECTORY body
// names.
type directoryBody struct {
	DirectoryPathURI string `json:"directoryPathUri"`
}

// listDirectoryCall reads the directory from the body, else from the
// arguments.
func listDirectoryCall(v stepView, d *callDetail) {
	b, _ := decodeBody[directoryBody](v)
	path := filePath(b.DirectoryPathURI)
	if path == "" {
		var args struct{ DirectoryPath string }
		v.toolArgs(&args)
		path = args.DirectoryPath
	}
	if path != "" {
		d.title = "List " + path
		d.locations = locate(path, 0)
	}
}

type listDirectoryBody struct {
	DirectoryPathURI string `json:"directoryPathUri"`
	Results          []struct {
		Name  string `json:"name"`
		IsDir bool   `json:"isDir"`
	} `json:"results"`
}

func listDirectoryResult(v stepView, d *resultDetail) {
	b, ok := decodeBody[listDirectoryBody](v)
	if !ok {
		d.say("listed a directory")
		return
	}
	var out strings.Builder
	out.WriteString(filePath(b.DirectoryPathURI))
	out.WriteString(": ")
	out.WriteString(num(len(b.Results)))
	out.WriteString(" entries")
	for _, e := range b.Results {
		out.WriteString("\n")
		out.WriteString(e.Name)
		if e.IsDir {
			out.WriteString("/")
		}
	}
	d.say(out.String())
}

type outlineBody struct {
	AbsolutePathURI string   `json:"absolutePathUri"`
	OutlineItems    []string `json:"outlineItems"`
	NumLines        wire.Int `json:"numLines"`
	Contents        string   `json:"contents"`
}

var viewFileOutlineCall = fromBody(func(b *outlineBody, d *callDetail) {
	if path := filePath(b.AbsolutePathURI); path != "" {
		d.title = "Outline of " + path
		d.locations = locate(path, 0)
	}
})

var viewFileOutlineResult = fromBody(func(b *outlineBody, d *resultDetail) {
	switch {
	case len(b.OutlineItems) > 0:
		d.say(strings.Join(b.OutlineItems, "\n"))
	case b.Contents != "":
		d.say(b.Contents)
	}
})

type codeItemBody struct {
	AbsoluteURI string   `json:"absoluteUri"`
	NodePaths   []string `json:"nodePaths"`
}

var viewCodeItemCall = fromBody(func(b *codeItemBody, d *callDetail) {
	path := filePath(b.AbsoluteURI)
	d.title = "Read " + strings.Join(b.NodePaths, ", ") + in(path)
	d.locations = locate(path, 0)
})
