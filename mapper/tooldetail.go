package mapper

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
)

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

// stepView is a step and its type-named body (codeAction for CODE_ACTION),
// as agy sent it, looked up the first time a detail asks for it.
type stepView struct {
	s   *rpc.Step
	raw *stepBodyCache
}

type stepBodyCache struct {
	body   json.RawMessage
	looked bool
}

func viewOf(s *rpc.Step) stepView { return stepView{s: s, raw: &stepBodyCache{}} }

// body is the step's type-named body (nil when it has none).
func (v stepView) body() json.RawMessage {
	if !v.raw.looked {
		v.raw.body, v.raw.looked = stepBody(v.s), true
	}
	return v.raw.body
}

// decode reads the body into v; false when there is none or it does not fit.
func (v stepView) decode(into any) bool {
	b := v.body()
	return len(b) > 0 && json.Unmarshal(b, into) == nil
}

// toolArgs reads metadata.toolCall.argumentsJson (polled copies only).
func (v stepView) toolArgs(into any) bool {
	tc := v.s.Metadata.ToolCall
	return tc != nil && tc.ArgumentsJSON != "" && json.Unmarshal([]byte(tc.ArgumentsJSON), into) == nil
}

// maxHits bounds the hits an event carries; hit_count tells how many there were.
const maxHits = 50

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

func uriPath(u string) string { return filePath(u) }

func locate(path string, line int) []messages.Location {
	if path == "" {
		return nil
	}
	return []messages.Location{{Path: path, Line: max(line, 0)}}
}

func num(n int) string { return strconv.Itoa(n) }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}

// --- commands ---

func runCommandLine(rc *rpc.RunCommand) string {
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

func runCommandResult(v stepView, d *resultDetail) {
	s := v.s
	if s.RequestedInteraction != nil && s.RequestedInteraction.Permission != nil &&
		answeredAction(s, messages.KindPermission) == messages.ActionDecline {
		d.say("the command was not allowed")
		return
	}
	d.say(runCommandLive(v))
	var b struct {
		CommandID string          `json:"commandId"`
		ExitCode  json.RawMessage `json:"exitCode"`
	}
	if v.decode(&b) && b.CommandID != "" && b.ExitCode == nil {
		// Sent to the background before it ended (agy writes exitCode, an
		// optional field, once a command has one): command_status follows it.
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
	ExitCode  rpc.Int   `json:"exitCode"`
	Error     *struct{} `json:"error"`
	Wait      rpc.Int   `json:"waitDurationSeconds"`
}

func commandStatusCall(v stepView, d *callDetail) {
	var b commandStatusBody
	if !v.decode(&b) {
		return
	}
	d.title = "Check command output"
	if b.CommandID != "" {
		d.title += " (" + b.CommandID + ")"
	}
}

func commandStatusLive(v stepView) string {
	var b commandStatusBody
	if !v.decode(&b) {
		return ""
	}
	if b.Combined != "" {
		return b.Combined
	}
	return b.Stdout + b.Stderr
}

func commandStatusResult(v stepView, d *resultDetail) {
	var b commandStatusBody
	if !v.decode(&b) {
		return
	}
	d.say(commandStatusLive(v))
	if st := rpc.StepStatus(b.Status); st.Terminal() {
		d.exitCode = messages.Ptr(int(b.ExitCode))
	}
}

type sendCommandInputBody struct {
	CommandID string              `json:"commandId"`
	Input     string              `json:"input"`
	Terminate bool                `json:"terminate"`
	Output    *rpc.CombinedOutput `json:"output"`
	Running   bool                `json:"running"`
	ExitCode  rpc.Int             `json:"exitCode"`
}

func sendCommandInputCall(v stepView, d *callDetail) {
	var b sendCommandInputBody
	if !v.decode(&b) {
		return
	}
	switch {
	case b.Terminate:
		d.title = "Stop the command"
	case b.Input != "":
		d.title = "Send input: " + oneLine(b.Input)
	default:
		d.title = "Send input to the command"
	}
}

func sendCommandInputResult(v stepView, d *resultDetail) {
	var b sendCommandInputBody
	if !v.decode(&b) {
		return
	}
	if b.Output != nil {
		d.say(b.Output.Full)
	}
	if !b.Running && (b.Output != nil || b.Terminate) {
		d.exitCode = messages.Ptr(int(b.ExitCode))
	}
}

type readTerminalBody struct {
	ProcessID string `json:"processId"`
	Name      string `json:"name"`
	Contents  string `json:"contents"`
}

func readTerminalCall(v stepView, d *callDetail) {
	var b readTerminalBody
	if !v.decode(&b) {
		return
	}
	d.title = "Read terminal " + firstNonEmpty(b.Name, b.ProcessID)
}

func readTerminalResult(v stepView, d *resultDetail) {
	var b readTerminalBody
	if v.decode(&b) {
		d.say(b.Contents)
	}
}

type shellExecBody struct {
	Command      string  `json:"command"`
	ExitCode     rpc.Int `json:"exitCode"`
	Output       string  `json:"output"`
	ErrorMessage string  `json:"errorMessage"`
}

func shellExecCall(v stepView, d *callDetail) {
	var b shellExecBody
	if !v.decode(&b) {
		return
	}
	d.title = b.Command
}

func shellExecResult(v stepView, d *resultDetail) {
	var b shellExecBody
	if !v.decode(&b) {
		return
	}
	d.say(firstNonEmpty(b.Output, b.ErrorMessage))
	d.exitCode = messages.Ptr(int(b.ExitCode))
}

// --- reads ---

type viewFileBody struct {
	AbsolutePathURI string  `json:"absolutePathUri"`
	StartLine       rpc.Int `json:"startLine"`
	EndLine         rpc.Int `json:"endLine"`
	NumLines        rpc.Int `json:"numLines"`
	NumBytes        rpc.Int `json:"numBytes"`
}

func viewFileCall(v stepView, d *callDetail) {
	var b viewFileBody
	v.decode(&b)
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

func viewFileResult(v stepView, d *resultDetail) { d.say(viewFileSummary(v.body())) }

func listDirectoryCall(v stepView, d *callDetail) {
	var b struct {
		DirectoryPathURI string `json:"directoryPathUri"`
	}
	v.decode(&b)
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

func listDirectoryResult(v stepView, d *resultDetail) { d.say(listDirectorySummary(v.body())) }

type outlineBody struct {
	AbsolutePathURI string   `json:"absolutePathUri"`
	OutlineItems    []string `json:"outlineItems"`
	NumLines        rpc.Int  `json:"numLines"`
	Contents        string   `json:"contents"`
}

func viewFileOutlineCall(v stepView, d *callDetail) {
	var b outlineBody
	if !v.decode(&b) {
		return
	}
	if path := filePath(b.AbsolutePathURI); path != "" {
		d.title = "Outline of " + path
		d.locations = locate(path, 0)
	}
}

func viewFileOutlineResult(v stepView, d *resultDetail) {
	var b outlineBody
	if !v.decode(&b) {
		return
	}
	switch {
	case len(b.OutlineItems) > 0:
		d.say(strings.Join(b.OutlineItems, "\n"))
	case b.Contents != "":
		d.say(b.Contents)
	}
}

func viewCodeItemCall(v stepView, d *callDetail) {
	var b struct {
		AbsoluteURI string   `json:"absoluteUri"`
		NodePaths   []string `json:"nodePaths"`
	}
	if !v.decode(&b) {
		return
	}
	path := filePath(b.AbsoluteURI)
	d.title = "Read " + strings.Join(b.NodePaths, ", ")
	if path != "" {
		d.title += " in " + path
	}
	d.locations = locate(path, 0)
}

type webDocument struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	Text   string `json:"text"`
	Chunks []struct {
		Text string `json:"text"`
	} `json:"chunks"`
	Summary string `json:"summary"`
}

// text is the document's text: text, else its chunks' texts.
func (w *webDocument) text() string {
	if w == nil {
		return ""
	}
	if w.Text != "" {
		return w.Text
	}
	parts := make([]string, 0, len(w.Chunks))
	for _, c := range w.Chunks {
		if c.Text != "" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func viewContentChunkCall(v stepView, d *callDetail) {
	var b struct {
		DocumentID string       `json:"documentId"`
		Position   rpc.Int      `json:"position"`
		Item       *webDocument `json:"croppedItem"`
	}
	if !v.decode(&b) {
		return
	}
	d.title = "Read chunk " + num(int(b.Position)) + " of " + firstNonEmpty(urlOf(b.Item), b.DocumentID)
	d.url = urlOf(b.Item)
}

func viewContentChunkResult(v stepView, d *resultDetail) {
	var b struct {
		Item *webDocument `json:"croppedItem"`
	}
	if v.decode(&b) && b.Item != nil {
		d.say(b.Item.text())
		d.url = b.Item.URL
	}
}

func urlOf(w *webDocument) string {
	if w == nil {
		return ""
	}
	return w.URL
}

// --- edits ---

type pathScope struct {
	AbsolutePath string `json:"absolutePathMigrateMeToUri"`
	AbsoluteURI  string `json:"absoluteUri"`
}

func (p *pathScope) path() string {
	if p == nil {
		return ""
	}
	return filePath(firstNonEmpty(p.AbsoluteURI, p.AbsolutePath))
}

type replacementChunk struct {
	TargetContent      string  `json:"targetContent"`
	ReplacementContent string  `json:"replacementContent"`
	StartLine          rpc.Int `json:"startLine"`
}

type diffBlock struct {
	StartLine   rpc.Int `json:"startLine"`
	UnifiedDiff struct {
		Lines []struct {
			Text string `json:"text"`
			Type string `json:"type"`
		} `json:"lines"`
	} `json:"unifiedDiff"`
}

// fileDiff reads agy's diff lines as texts and unified lines. A block
// whose lines are all insertions is a new file when created says so.
func (b *diffBlock) fileDiff(path string, created bool) (messages.FileDiff, bool) {
	if b == nil || len(b.UnifiedDiff.Lines) == 0 {
		return messages.FileDiff{}, false
	}
	var old, nw, uni strings.Builder
	for _, l := range b.UnifiedDiff.Lines {
		text := strings.TrimSuffix(l.Text, "\n")
		switch l.Type {
		case "UNIFIED_DIFF_LINE_TYPE_INSERT":
			nw.WriteString(text + "\n")
			uni.WriteString("+" + text + "\n")
		case "UNIFIED_DIFF_LINE_TYPE_DELETE":
			old.WriteString(text + "\n")
			uni.WriteString("-" + text + "\n")
		default:
			old.WriteString(text + "\n")
			nw.WriteString(text + "\n")
			uni.WriteString(" " + text + "\n")
		}
	}
	d := messages.FileDiff{Path: path, NewText: nw.String(), Line: int(b.StartLine), Unified: uni.String()}
	if !created || old.Len() > 0 {
		d.OldText = messages.Ptr(old.String())
	}
	return d, true
}

func chunkDiffs(path string, chunks []replacementChunk) []messages.FileDiff {
	var out []messages.FileDiff
	for _, c := range chunks {
		out = append(out, messages.FileDiff{
			Path: path, OldText: messages.Ptr(c.TargetContent), NewText: c.ReplacementContent, Line: int(c.StartLine),
		})
	}
	return out
}

type codeActionBody struct {
	ActionSpec struct {
		Command *struct {
			ReplacementChunks []replacementChunk `json:"replacementChunks"`
			File              *pathScope         `json:"file"`
			LineRange         *struct {
				AbsoluteURI string  `json:"absoluteUri"`
				StartLine   rpc.Int `json:"startLine"`
			} `json:"lineRange"`
			ContentTarget *struct {
				AbsoluteURI string `json:"absoluteUri"`
			} `json:"contentTarget"`
		} `json:"command"`
		CreateFile *struct {
			Path *pathScope `json:"path"`
		} `json:"createFile"`
		DeleteFile *struct {
			Path *pathScope `json:"path"`
		} `json:"deleteFile"`
	} `json:"actionSpec"`
	ActionResult struct {
		Edit *struct {
			AbsolutePath string     `json:"absolutePathMigrateMeToUri"`
			AbsoluteURI  string     `json:"absoluteUri"`
			Diff         *diffBlock `json:"diff"`
			CreateFile   bool       `json:"createFile"`
		} `json:"edit"`
	} `json:"actionResult"`
	Description string `json:"description"`
}

// path is the file the action is about, from its spec, else its result.
func (b *codeActionBody) path() string {
	spec := &b.ActionSpec
	switch {
	case spec.Command != nil:
		c := spec.Command
		switch {
		case c.File != nil:
			return c.File.path()
		case c.LineRange != nil:
			return filePath(c.LineRange.AbsoluteURI)
		case c.ContentTarget != nil:
			return filePath(c.ContentTarget.AbsoluteURI)
		}
	case spec.CreateFile != nil:
		return spec.CreateFile.Path.path()
	case spec.DeleteFile != nil:
		return spec.DeleteFile.Path.path()
	}
	if e := b.ActionResult.Edit; e != nil {
		return filePath(firstNonEmpty(e.AbsoluteURI, e.AbsolutePath))
	}
	return ""
}

func (b *codeActionBody) creates() bool {
	return b.ActionSpec.CreateFile != nil || (b.ActionResult.Edit != nil && b.ActionResult.Edit.CreateFile)
}

// editArgs are the arguments of agy's edit tools (replace_file_content,
// multi_replace_file_content, write_to_file), in polled copies only.
type editArgs struct {
	TargetFile         string
	CodeContent        string
	TargetContent      string
	ReplacementContent string
	StartLine          int
	ReplacementChunks  []struct {
		TargetContent      string
		ReplacementContent string
		StartLine          int
	}
}

func codeActionCall(v stepView, d *callDetail) {
	var b codeActionBody
	v.decode(&b)
	var args editArgs
	v.toolArgs(&args)
	path := firstNonEmpty(b.path(), args.TargetFile)
	if path == "" {
		return
	}
	switch {
	case b.ActionSpec.DeleteFile != nil:
		d.name, d.kind, d.title = "delete_file", messages.ToolDelete, "Delete "+path
	case b.creates():
		d.name, d.title = "write_to_file", "Create "+path
		if args.CodeContent != "" {
			d.diffs = []messages.FileDiff{{Path: path, NewText: args.CodeContent}}
		}
	default:
		d.title = "Edit " + path
		if c := b.ActionSpec.Command; c != nil && len(c.ReplacementChunks) > 0 {
			d.diffs = chunkDiffs(path, c.ReplacementChunks)
			if len(c.ReplacementChunks) > 1 {
				d.name = "multi_replace_file_content"
			}
		} else if len(args.ReplacementChunks) > 0 {
			for _, c := range args.ReplacementChunks {
				d.diffs = append(d.diffs, messages.FileDiff{Path: path, OldText: messages.Ptr(c.TargetContent), NewText: c.ReplacementContent, Line: c.StartLine})
			}
			d.name = "multi_replace_file_content"
		} else if args.TargetContent != "" || args.ReplacementContent != "" {
			d.diffs = []messages.FileDiff{{Path: path, OldText: messages.Ptr(args.TargetContent), NewText: args.ReplacementContent, Line: args.StartLine}}
		}
	}
	line := 0
	if len(d.diffs) > 0 {
		line = d.diffs[0].Line
	}
	d.locations = locate(path, line)
}

func codeActionResult(v stepView, d *resultDetail) {
	var b codeActionBody
	if !v.decode(&b) {
		return
	}
	path := b.path()
	if e := b.ActionResult.Edit; e != nil {
		if fd, ok := e.Diff.fileDiff(path, b.creates()); ok {
			d.diffs = []messages.FileDiff{fd}
		}
	}
	switch {
	case b.ActionSpec.DeleteFile != nil:
		d.say("deleted " + path)
	case b.creates():
		d.say("created " + path + diffStat(d.diffs))
	default:
		d.say("edited " + path + diffStat(d.diffs))
	}
}

// diffStat is " (+a -r)", counted from agy's unified lines, or "".
func diffStat(diffs []messages.FileDiff) string {
	add, del := 0, 0
	for _, fd := range diffs {
		for _, l := range strings.Split(fd.Unified, "\n") {
			switch {
			case strings.HasPrefix(l, "+"):
				add++
			case strings.HasPrefix(l, "-"):
				del++
			}
		}
	}
	if add == 0 && del == 0 {
		return ""
	}
	return " (+" + num(add) + " -" + num(del) + ")"
}

type fileChangeBody struct {
	AbsolutePathURI   string             `json:"absolutePathUri"`
	FileChangeType    string             `json:"fileChangeType"`
	ReplacementChunks []replacementChunk `json:"replacementChunks"`
	Diff              *diffBlock         `json:"diff"`
}

func fileChangeCall(v stepView, d *callDetail) {
	var b fileChangeBody
	if !v.decode(&b) {
		return
	}
	path := filePath(b.AbsolutePathURI)
	switch b.FileChangeType {
	case "FILE_CHANGE_TYPE_CREATE":
		d.title = "Create " + path
	case "FILE_CHANGE_TYPE_DELETE":
		d.kind, d.title = messages.ToolDelete, "Delete "+path
	default:
		d.title = "Edit " + path
	}
	d.diffs = chunkDiffs(path, b.ReplacementChunks)
	if len(d.diffs) == 0 {
		if fd, ok := b.Diff.fileDiff(path, b.FileChangeType == "FILE_CHANGE_TYPE_CREATE"); ok {
			d.diffs = []messages.FileDiff{fd}
		}
	}
	line := 0
	if len(d.diffs) > 0 {
		line = d.diffs[0].Line
	}
	d.locations = locate(path, line)
}

func fileChangeResult(v stepView, d *resultDetail) {
	var b fileChangeBody
	if !v.decode(&b) {
		return
	}
	path := filePath(b.AbsolutePathURI)
	if fd, ok := b.Diff.fileDiff(path, b.FileChangeType == "FILE_CHANGE_TYPE_CREATE"); ok {
		d.diffs = []messages.FileDiff{fd}
	}
	verb := map[string]string{"FILE_CHANGE_TYPE_CREATE": "created ", "FILE_CHANGE_TYPE_DELETE": "deleted "}[b.FileChangeType]
	if verb == "" {
		verb = "edited "
	}
	d.say(verb + path + diffStat(d.diffs))
}

type writeToFileBody struct {
	TargetFileURI string     `json:"targetFileUri"`
	CodeContent   []string   `json:"codeContent"`
	Diff          *diffBlock `json:"diff"`
	FileCreated   bool       `json:"fileCreated"`
}

func writeToFileCall(v stepView, d *callDetail) {
	var b writeToFileBody
	if !v.decode(&b) {
		return
	}
	path := filePath(b.TargetFileURI)
	d.title = "Write " + path
	if len(b.CodeContent) > 0 {
		d.diffs = []messages.FileDiff{{Path: path, NewText: strings.Join(b.CodeContent, "")}}
	}
	d.locations = locate(path, 0)
}

func writeToFileResult(v stepView, d *resultDetail) {
	var b writeToFileBody
	if !v.decode(&b) {
		return
	}
	path := filePath(b.TargetFileURI)
	if fd, ok := b.Diff.fileDiff(path, b.FileCreated); ok {
		d.diffs = []messages.FileDiff{fd}
	}
	verb := "wrote "
	if b.FileCreated {
		verb = "created "
	}
	d.say(verb + path + diffStat(d.diffs))
}

func moveCall(v stepView, d *callDetail) {
	var b struct {
		Src string `json:"srcAbsolutePathUri"`
		Dst string `json:"dstAbsolutePathUri"`
	}
	if !v.decode(&b) {
		return
	}
	src, dst := filePath(b.Src), filePath(b.Dst)
	d.title = "Move " + src + " → " + dst
	d.locations = append(locate(src, 0), locate(dst, 0)...)
}

func deleteDirectoryCall(v stepView, d *callDetail) {
	var b struct {
		DirectoryPathURI string `json:"directoryPathUri"`
	}
	if !v.decode(&b) {
		return
	}
	path := filePath(b.DirectoryPathURI)
	d.title = "Delete " + path
	d.locations = locate(path, 0)
}

type writeBlobBody struct {
	TargetPath   string    `json:"targetPath"`
	BytesWritten rpc.Int64 `json:"bytesWritten"`
	ErrorMessage string    `json:"errorMessage"`
}

func writeBlobCall(v stepView, d *callDetail) {
	var b writeBlobBody
	if !v.decode(&b) {
		return
	}
	d.title = "Write " + b.TargetPath
	d.locations = locate(filePath(b.TargetPath), 0)
}

func writeBlobResult(v stepView, d *resultDetail) {
	var b writeBlobBody
	if !v.decode(&b) {
		return
	}
	if b.ErrorMessage != "" {
		d.say(b.ErrorMessage)
		return
	}
	d.say("wrote " + plural(int(b.BytesWritten), "byte", "bytes") + " to " + b.TargetPath)
}

// --- searches ---

type grepBody struct {
	SearchPathURI string   `json:"searchPathUri"`
	Query         string   `json:"query"`
	Includes      []string `json:"includes"`
	Results       []struct {
		RelativePath string  `json:"relativePath"`
		AbsolutePath string  `json:"absolutePath"`
		LineNumber   rpc.Int `json:"lineNumber"`
		Content      string  `json:"content"`
	} `json:"results"`
	TotalResults rpc.Int `json:"totalResults"`
	RawOutput    string  `json:"rawOutput"`
	GrepError    string  `json:"grepError"`
}

func grepSearchCall(v stepView, d *callDetail) {
	var b grepBody
	if !v.decode(&b) {
		return
	}
	path := filePath(b.SearchPathURI)
	d.title = "Search for " + strconv.Quote(b.Query)
	if path != "" {
		d.title += " in " + path
	}
	if len(b.Includes) > 0 {
		d.title += " (" + strings.Join(b.Includes, ", ") + ")"
	}
	d.locations = locate(path, 0)
}

func grepSearchResult(v stepView, d *resultDetail) {
	var b grepBody
	if !v.decode(&b) {
		return
	}
	if b.GrepError != "" {
		d.say(b.GrepError)
		return
	}
	base := filePath(b.SearchPathURI)
	var lines []string
	for _, r := range b.Results {
		path := r.AbsolutePath
		if path == "" && r.RelativePath != "" && base != "" {
			path = strings.TrimSuffix(base, "/") + "/" + r.RelativePath
		}
		path = firstNonEmpty(path, r.RelativePath)
		text := strings.TrimRight(r.Content, "\r\n")
		if len(d.hits) < maxHits {
			d.hits = append(d.hits, messages.Hit{Path: path, Line: int(r.LineNumber), Text: text})
		}
		lines = append(lines, hitLine(path, int(r.LineNumber), text))
	}
	total := max(int(b.TotalResults), len(b.Results))
	d.hitCount = messages.Ptr(total)
	d.locations = hitLocations(d.hits)
	switch {
	case len(lines) > 0:
		d.say(strings.Join(lines, "\n"))
	case b.RawOutput != "":
		d.say(b.RawOutput)
	default:
		d.say("no results")
	}
}

func hitLine(path string, line int, text string) string {
	s := path
	if line > 0 {
		s += ":" + num(line)
	}
	if text != "" {
		s += ": " + text
	}
	return s
}

// hitLocations are the distinct files of hits, first line found in each.
func hitLocations(hits []messages.Hit) []messages.Location {
	seen := map[string]bool{}
	var out []messages.Location
	for _, h := range hits {
		if h.Path == "" || seen[h.Path] || strings.Contains(h.Path, "://") {
			continue
		}
		seen[h.Path] = true
		out = append(out, messages.Location{Path: h.Path, Line: h.Line})
	}
	return out
}

type findBody struct {
	SearchDirectory string   `json:"searchDirectory"`
	Pattern         string   `json:"pattern"`
	Extensions      []string `json:"extensions"`
	Type            string   `json:"type"`
	TruncatedOutput string   `json:"truncatedOutput"`
	TruncatedTotal  rpc.Int  `json:"truncatedTotalResults"`
	TotalResults    rpc.Int  `json:"totalResults"`
	RawOutput       string   `json:"rawOutput"`
	FindError       string   `json:"findError"`
}

func findCall(v stepView, d *callDetail) {
	var b findBody
	if !v.decode(&b) {
		return
	}
	dir := filePath(b.SearchDirectory)
	d.title = "Find " + strconv.Quote(b.Pattern)
	if dir != "" {
		d.title += " in " + dir
	}
	d.locations = locate(dir, 0)
}

func findResult(v stepView, d *resultDetail) {
	var b findBody
	if !v.decode(&b) {
		return
	}
	if b.FindError != "" {
		d.say(b.FindError)
		return
	}
	out := firstNonEmpty(b.TruncatedOutput, b.RawOutput)
	n := 0
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		n++
		if len(d.hits) < maxHits {
			d.hits = append(d.hits, messages.Hit{Path: l})
		}
	}
	d.hitCount = messages.Ptr(max(int(b.TotalResults), n))
	d.locations = hitLocations(d.hits)
	if out == "" {
		out = "no results"
	}
	d.say(out)
}

type codeSearchBody struct {
	Query   string `json:"query"`
	Results []struct {
		Path    string `json:"path"`
		Matches []struct {
			Snippet    string  `json:"snippet"`
			LineNumber rpc.Int `json:"lineNumber"`
		} `json:"matches"`
	} `json:"results"`
}

func codeSearchCall(v stepView, d *callDetail) {
	var b codeSearchBody
	if !v.decode(&b) {
		return
	}
	d.title = "Search the code for " + strconv.Quote(b.Query)
}

func codeSearchResult(v stepView, d *resultDetail) {
	var b codeSearchBody
	if !v.decode(&b) {
		return
	}
	var lines []string
	n := 0
	for _, r := range b.Results {
		path := filePath(r.Path)
		if len(r.Matches) == 0 {
			r.Matches = append(r.Matches, struct {
				Snippet    string  `json:"snippet"`
				LineNumber rpc.Int `json:"lineNumber"`
			}{})
		}
		for _, m := range r.Matches {
			n++
			text := strings.TrimSpace(m.Snippet)
			if len(d.hits) < maxHits {
				d.hits = append(d.hits, messages.Hit{Path: path, Line: int(m.LineNumber), Text: text})
			}
			lines = append(lines, hitLine(path, int(m.LineNumber), text))
		}
	}
	d.hitCount = messages.Ptr(n)
	d.locations = hitLocations(d.hits)
	d.say(strings.Join(lines, "\n"))
}

type referencesBody struct {
	AbsoluteURI string  `json:"absoluteUri"`
	Symbol      string  `json:"symbol"`
	Line        rpc.Int `json:"line"`
	References  []struct {
		URI   string `json:"uri"`
		Range struct {
			Start struct {
				Row rpc.Int `json:"row"`
			} `json:"startPosition"`
		} `json:"range"`
		Snippet string `json:"snippet"`
	} `json:"references"`
}

func findReferencesCall(v stepView, d *callDetail) {
	var b referencesBody
	if !v.decode(&b) {
		return
	}
	path := filePath(b.AbsoluteURI)
	d.title = "Find references to " + b.Symbol
	d.locations = locate(path, int(b.Line))
}

func findReferencesResult(v stepView, d *resultDetail) {
	var b referencesBody
	if !v.decode(&b) {
		return
	}
	var lines []string
	for _, r := range b.References {
		path := filePath(r.URI)
		line := int(r.Range.Start.Row) + 1 // document positions count rows from 0
		text := strings.TrimSpace(r.Snippet)
		if len(d.hits) < maxHits {
			d.hits = append(d.hits, messages.Hit{Path: path, Line: line, Text: text})
		}
		lines = append(lines, hitLine(path, line, text))
	}
	d.hitCount = messages.Ptr(len(b.References))
	d.locations = hitLocations(d.hits)
	d.say(strings.Join(lines, "\n"))
}

// queryCall titles a search by its query field.
func queryCall(prefix string) func(stepView, *callDetail) {
	return func(v stepView, d *callDetail) {
		var b struct {
			Query string `json:"query"`
		}
		if !v.decode(&b) {
			return
		}
		d.title = prefix + strconv.Quote(b.Query)
	}
}

func internalSearchResult(v stepView, d *resultDetail) {
	var b struct {
		Results []struct {
			URL   string `json:"url"`
			Title string `json:"title"`
		} `json:"results"`
	}
	if !v.decode(&b) {
		return
	}
	var lines []string
	for _, r := range b.Results {
		if len(d.hits) < maxHits {
			d.hits = append(d.hits, messages.Hit{Path: r.URL, Text: r.Title})
		}
		lines = append(lines, r.Title+" "+r.URL)
	}
	d.hitCount = messages.Ptr(len(b.Results))
	d.say(strings.Join(lines, "\n"))
}

type searchWebBody struct {
	Query        string        `json:"query"`
	Domain       string        `json:"domain"`
	WebDocuments []webDocument `json:"webDocuments"`
	Summary      string        `json:"summary"`
}

func searchWebCall(v stepView, d *callDetail) {
	var b searchWebBody
	if !v.decode(&b) {
		return
	}
	d.title = "Search the web for " + strconv.Quote(b.Query)
	if b.Domain != "" {
		d.title += " on " + b.Domain
	}
}

func searchWebResult(v stepView, d *resultDetail) {
	var b searchWebBody
	if !v.decode(&b) {
		return
	}
	var lines []string
	for _, w := range b.WebDocuments {
		if len(d.hits) < maxHits {
			d.hits = append(d.hits, messages.Hit{Path: w.URL, Text: w.Title})
		}
		lines = append(lines, strings.TrimSpace(w.Title+" "+w.URL))
	}
	d.hitCount = messages.Ptr(len(b.WebDocuments))
	out := b.Summary
	if len(lines) > 0 {
		if out != "" {
			out += "\n\n"
		}
		out += strings.Join(lines, "\n")
	}
	d.say(out)
}

type readURLBody struct {
	URL         string       `json:"url"`
	Document    *webDocument `json:"webDocument"`
	ResolvedURL string       `json:"resolvedUrl"`
	Rejected    bool         `json:"userRejected"`
}

func readURLCall(v stepView, d *callDetail) {
	var b readURLBody
	v.decode(&b)
	if b.URL == "" {
		var args struct{ Url string }
		v.toolArgs(&args)
		b.URL = args.Url
	}
	d.url = b.URL
	d.title = "Read " + b.URL
}

func readURLResult(v stepView, d *resultDetail) {
	var b readURLBody
	if !v.decode(&b) {
		return
	}
	d.url = firstNonEmpty(b.ResolvedURL, b.URL, urlOf(b.Document))
	if b.Rejected {
		d.say("the user declined to read " + d.url)
		return
	}
	d.say(b.Document.text())
}

func openBrowserURLCall(v stepView, d *callDetail) {
	var b struct {
		URL string `json:"url"`
	}
	if !v.decode(&b) {
		return
	}
	d.url, d.title = b.URL, "Open "+b.URL
}

type browserPageBody struct {
	PageID   string       `json:"pageId"`
	Document *webDocument `json:"webDocument"`
	Page     *struct {
		URL   string `json:"url"`
		Title string `json:"pageTitle"`
	} `json:"pageMetadata"`
}

func (b *browserPageBody) url() string {
	if b.Page != nil && b.Page.URL != "" {
		return b.Page.URL
	}
	return urlOf(b.Document)
}

func readBrowserPageCall(v stepView, d *callDetail) {
	var b browserPageBody
	if !v.decode(&b) {
		return
	}
	d.url = b.url()
	d.title = "Read the page " + firstNonEmpty(d.url, b.PageID)
}

func readBrowserPageResult(v stepView, d *resultDetail) {
	var b browserPageBody
	if !v.decode(&b) {
		return
	}
	d.url = b.url()
	d.say(b.Document.text())
}

type workspaceAPIBody struct {
	URL        string  `json:"url"`
	Method     string  `json:"httpMethod"`
	StatusCode rpc.Int `json:"statusCode"`
	Response   string  `json:"response"`
}

func workspaceAPICall(v stepView, d *callDetail) {
	var b workspaceAPIBody
	if !v.decode(&b) {
		return
	}
	d.url = b.URL
	d.title = strings.TrimSpace(b.Method + " " + b.URL)
}

func workspaceAPIResult(v stepView, d *resultDetail) {
	var b workspaceAPIBody
	if !v.decode(&b) {
		return
	}
	d.url = b.URL
	d.say(b.Response)
}

// --- MCP ---

type mcpToolBody struct {
	ServerName string `json:"serverName"`
	ToolCall   *struct {
		Name          string `json:"name"`
		ArgumentsJSON string `json:"argumentsJson"`
	} `json:"toolCall"`
	ResultString string `json:"resultString"`
	ResultURI    string `json:"resultUri"`
	Rejected     bool   `json:"userRejected"`
	RenderInfo   *struct {
		Title string `json:"title"`
	} `json:"renderInfo"`
}

func mcpToolCall(v stepView, d *callDetail) {
	var b mcpToolBody
	if !v.decode(&b) {
		return
	}
	tool := ""
	if b.ToolCall != nil {
		tool = b.ToolCall.Name
		if tc := v.s.Metadata.ToolCall; tc == nil || tc.Name == "" {
			d.name = tool
		}
		if b.ToolCall.ArgumentsJSON != "" && json.Valid([]byte(b.ToolCall.ArgumentsJSON)) {
			d.arguments = compact(json.RawMessage(b.ToolCall.ArgumentsJSON))
		}
	}
	d.title = strings.TrimPrefix(b.ServerName+": "+tool, ": ")
}

func mcpToolResult(v stepView, d *resultDetail) {
	var b mcpToolBody
	if !v.decode(&b) {
		return
	}
	if b.Rejected {
		d.say("the user declined the call")
		return
	}
	if out := firstNonEmpty(b.ResultString, b.ResultURI); out != "" {
		d.say(out)
	}
}

func listResourcesCall(v stepView, d *callDetail) {
	var b struct {
		ServerName string `json:"serverName"`
	}
	if !v.decode(&b) {
		return
	}
	d.title = "List the resources of " + b.ServerName
}

func listResourcesResult(v stepView, d *resultDetail) {
	var b struct {
		Resources []struct {
			URI  string `json:"uri"`
			Name string `json:"name"`
		} `json:"resources"`
	}
	if !v.decode(&b) {
		return
	}
	var lines []string
	for _, r := range b.Resources {
		lines = append(lines, strings.TrimSpace(r.Name+" "+r.URI))
	}
	d.say(strings.Join(lines, "\n"))
}

type readResourceBody struct {
	ServerName string `json:"serverName"`
	URI        string `json:"uri"`
	Contents   []struct {
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
	} `json:"contents"`
}

func readResourceCall(v stepView, d *callDetail) {
	var b readResourceBody
	if !v.decode(&b) {
		return
	}
	d.title = "Read " + b.URI + " from " + b.ServerName
}

func readResourceResult(v stepView, d *resultDetail) {
	var b readResourceBody
	if !v.decode(&b) {
		return
	}
	var parts []string
	for _, c := range b.Contents {
		if c.Text != nil {
			parts = append(parts, c.Text.Text)
		}
	}
	d.say(strings.Join(parts, "\n"))
}

// --- agents and progress ---

type invokeSubagentBody struct {
	SubagentName string `json:"subagentName"`
	Prompt       string `json:"prompt"`
	Result       string `json:"result"`
}

func invokeSubagentCall(v stepView, d *callDetail) {
	var b invokeSubagentBody
	if !v.decode(&b) {
		return
	}
	switch {
	case b.SubagentName != "":
		d.title = "Subagent " + b.SubagentName
	case b.Prompt != "":
		d.title = "Subagent: " + oneLine(b.Prompt)
	default:
		d.title = subagentsTitle(v.s) // agy 1.1.9's list of subagents
	}
}

func invokeSubagentResult(v stepView, d *resultDetail) {
	var b invokeSubagentBody
	if !v.decode(&b) {
		return
	}
	out := b.Result
	if ids := ChildConversations(v.s); len(ids) > 0 {
		if out != "" {
			out += "\n"
		}
		titles := childTitles(v.s)
		for i, id := range ids {
			if t := titles[id]; t != "" {
				ids[i] = id + " (" + oneLine(t) + ")"
			}
		}
		out += "subagents: " + strings.Join(ids, ", ")
	}
	if out != "" {
		d.say(out)
	}
}

type browserSubagentBody struct {
	Task        string `json:"task"`
	TaskName    string `json:"taskName"`
	TaskSummary string `json:"taskSummary"`
	Result      string `json:"result"`
}

func browserSubagentCall(v stepView, d *callDetail) {
	var b browserSubagentBody
	if !v.decode(&b) {
		return
	}
	d.title = "Browse: " + oneLine(firstNonEmpty(b.TaskName, b.Task))
}

func browserSubagentResult(v stepView, d *resultDetail) {
	var b browserSubagentBody
	if !v.decode(&b) {
		return
	}
	if out := firstNonEmpty(b.Result, b.TaskSummary); out != "" {
		d.say(out)
	}
}

type taskBoundaryBody struct {
	TaskName    string `json:"taskName"`
	TaskStatus  string `json:"taskStatus"`
	TaskSummary string `json:"taskSummary"`
}

func taskBoundaryCall(v stepView, d *callDetail) {
	var b taskBoundaryBody
	if !v.decode(&b) {
		return
	}
	d.title = "Task: " + b.TaskName
	if b.TaskStatus != "" {
		d.title += " — " + b.TaskStatus
	}
}

func taskBoundaryResult(v stepView, d *resultDetail) {
	var b taskBoundaryBody
	if !v.decode(&b) {
		return
	}
	if out := firstNonEmpty(b.TaskSummary, b.TaskStatus); out != "" {
		d.say(out)
	}
}

type notifyUserBody struct {
	Content string   `json:"notificationContent"`
	Review  []string `json:"reviewAbsoluteUris"`
}

func notifyUserCall(v stepView, d *callDetail) {
	var b notifyUserBody
	if !v.decode(&b) {
		return
	}
	d.title = "Notify the user"
	for _, u := range b.Review {
		d.locations = append(d.locations, locate(filePath(u), 0)...)
	}
}

func notifyUserResult(v stepView, d *resultDetail) {
	var b notifyUserBody
	if !v.decode(&b) {
		return
	}
	if b.Content != "" {
		d.say(b.Content)
	}
}

func askQuestionCall(v stepView, d *callDetail) {
	var qs []rpc.Question
	if aq := v.s.AskQuestion; aq != nil {
		qs = aq.Questions
	}
	if ri := v.s.RequestedInteraction; len(qs) == 0 && ri != nil && ri.AskQuestion != nil {
		qs = ri.AskQuestion.Questions
	}
	if len(qs) > 0 {
		d.title = "Question: " + qs[0].Question
	}
}

func askQuestionResult(v stepView, d *resultDetail) { d.say(answersSummary(v.s)) }

type generateImageBody struct {
	Prompt     string   `json:"prompt"`
	ImagePaths []string `json:"imagePaths"`
	ImageName  string   `json:"imageName"`
}

func generateImageCall(v stepView, d *callDetail) {
	var b generateImageBody
	if !v.decode(&b) {
		return
	}
	d.title = "Generate an image: " + oneLine(firstNonEmpty(b.ImageName, b.Prompt))
}

func generateImageResult(v stepView, d *resultDetail) {
	var b generateImageBody
	if !v.decode(&b) {
		return
	}
	for _, p := range b.ImagePaths {
		d.locations = append(d.locations, locate(filePath(p), 0)...)
	}
	if len(b.ImagePaths) > 0 {
		d.say(strings.Join(b.ImagePaths, "\n"))
	}
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
