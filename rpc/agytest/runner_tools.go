package agytest

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agyharness/agyharness/wire"
)

// The tool steps of scenario_tools.go, shaped as the reference schema names
// their bodies (proto3 JSON; the schema named in testdata/agy-step-types.txt)
// and as the recorded steps show tool steps: metadata.toolCall on polled copies only
// (fakeStep.wire drops it from streamed ones), toolAction, toolSummary and
// argumentsOrder on every copy.

// fileURI is a path as agy's bodies write it.
func fileURI(path string) string { return "file://" + path }

// finishCommand runs a command that was allowed (or needed no approval):
// its output grows while it runs when cmd.Chunks > 0, and it ends DONE with
// its exit code; or, for cmd.Background, it ends with its first line of
// output and a command_status step follows it to its end.
func (t *turnRun) finishCommand(idx int, cmd CommandAction) error {
	shown := cmd.Output
	if cmd.Background {
		shown = shown[:strings.Index(shown, "\n")+1] // validated: two lines or more
	}
	if cmd.Chunks > 0 {
		grown := ""
		for _, piece := range chunk(shown, cmd.Chunks) {
			if err := t.pause(); err != nil {
				return err
			}
			grown += piece
			out := grown
			t.update(idx, func(f *fakeStep) { f.step.RunCommand.CombinedOutput = &wire.CombinedOutput{Full: out} })
		}
	}
	if err := t.pause(); err != nil {
		return err
	}
	if !cmd.Background {
		t.commit(idx, func(f *fakeStep) {
			f.step.Status = wire.StatusDone
			f.step.Metadata.CompletedAt = timestamp(time.Now())
			f.step.RunCommand.ExitCode = wire.Int(cmd.ExitCode)
			// The recording shows exitCode 0 written out (an optional field):
			// a command that ran always carries it.
			f.setExtra("runCommand.exitCode", cmd.ExitCode)
			f.step.RunCommand.CombinedOutput = &wire.CombinedOutput{Full: cmd.Output}
			f.setExtra("runCommand.shellName", "bash")
		})
		return nil
	}
	// Sent to the background: the step ends with what the command printed
	// so far and the id to check on it, without an exit code.
	commandID := uuidFrom(t.rng)
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		f.step.RunCommand.CombinedOutput = &wire.CombinedOutput{Full: shown}
		f.setExtra("runCommand.commandId", commandID)
		f.setExtra("runCommand.blocking", false)
		f.setExtra("runCommand.shellName", "bash")
	})
	return t.commandStatus(commandID, cmd, shown)
}

// commandStatus checks on a background command until it ends: a
// COMMAND_STATUS step whose combined output grows from what run_command
// showed to all of it, then DONE with the command's status and exit code.
func (t *turnRun) commandStatus(commandID string, cmd CommandAction, shown string) error {
	action, summary := "Checking on "+cmd.Line, "Check "+firstWord(cmd.Line)+" output"
	call, order := t.toolCall("command_status", map[string]any{
		"CommandId": commandID, "OutputCharacterCount": 2000, "WaitDurationSeconds": 10,
		"toolAction": action, "toolSummary": summary,
	})
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(wire.StepCommandStatus, call, order, summary, action)
	f.step.Status = wire.StatusRunning
	f.setExtra("commandStatus", map[string]any{
		"commandId": commandID, "status": string(wire.StatusRunning), "combined": shown,
		"outputCharacterCount": 2000, "waitDurationSeconds": 10,
	})
	idx := t.add(f)
	grown := shown
	for _, piece := range chunk(cmd.Output[len(shown):], max(cmd.Chunks, 1)) {
		if err := t.pause(); err != nil {
			return err
		}
		grown += piece
		out := grown
		t.update(idx, func(f *fakeStep) { f.setExtra("commandStatus.combined", out) })
	}
	if err := t.pause(); err != nil {
		return err
	}
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		f.setExtra("commandStatus.status", string(wire.StatusDone))
		f.setExtra("commandStatus.combined", cmd.Output)
		f.setExtra("commandStatus.exitCode", cmd.ExitCode)
		f.setExtra("commandStatus.waitedDurationSeconds", 1)
	})
	return nil
}

// edit changes a file: a CODE_ACTION step with the replacement chunks (or
// the file to create), a permission prompt when asked for, then the diff
// agy applied.
func (t *turnRun) edit(e EditAction) error {
	args := map[string]any{"TargetFile": e.Path}
	var name, action, summary string
	spec := map[string]any{}
	switch {
	case e.Create:
		name, action, summary = "write_to_file", "Creating "+e.Path, "Create "+baseName(e.Path)
		args["CodeContent"], args["EmptyFile"] = e.Content, e.Content == ""
		spec["createFile"] = map[string]any{"path": map[string]any{"absoluteUri": fileURI(e.Path)}}
	default:
		name, action, summary = "replace_file_content", "Editing "+e.Path, "Edit "+baseName(e.Path)
		var chunks, argChunks []any
		for _, c := range e.Chunks {
			chunk := map[string]any{"targetContent": c.Old, "replacementContent": c.New}
			argChunk := map[string]any{"TargetContent": c.Old, "ReplacementContent": c.New, "AllowMultiple": false}
			if c.Line > 0 {
				chunk["startLine"], chunk["endLine"] = c.Line, c.Line+strings.Count(c.Old, "\n")
				argChunk["StartLine"], argChunk["EndLine"] = c.Line, c.Line+strings.Count(c.Old, "\n")
			}
			chunks, argChunks = append(chunks, chunk), append(argChunks, argChunk)
		}
		if len(chunks) > 1 {
			name = "multi_replace_file_content"
			args["ReplacementChunks"] = argChunks
		} else {
			for k, v := range argChunks[0].(map[string]any) {
				args[k] = v
			}
		}
		spec["command"] = map[string]any{"replacementChunks": chunks, "isEdit": true, "file": map[string]any{"absoluteUri": fileURI(e.Path)}}
	}
	args["Description"] = summary
	args["toolAction"], args["toolSummary"] = action, summary
	call, order := t.toolCall(name, args)
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(wire.StepCodeAction, call, order, summary, action)
	f.setExtra("codeAction", map[string]any{"actionSpec": spec, "description": summary, "markdownLanguage": language(e.Path)})
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	allowed, at, err := t.permission(idx, e.NeedsApproval, permissionAsk{resource: wire.Resource{Action: "write", Target: e.Path}, description: action})
	if err != nil || !allowed {
		return err
	}
	idx = at
	if err := t.pause(); err != nil {
		return err
	}
	diff := editDiff(e)
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		edit := map[string]any{"absoluteUri": fileURI(e.Path), "diff": diff}
		if e.Create {
			edit["createFile"] = true
		}
		f.setExtra("codeAction.actionResult", map[string]any{"edit": edit})
	})
	return nil
}

// permissionAsk is a permission agy asks before a tool runs.
type permissionAsk struct {
	resource    wire.Resource
	description string
	// extra are agy's fields of the request beyond the typed ones (echoed
	// in completedInteractions too).
	extra map[string]any
	// grant records the answer in permissions.permissionGrants, as agy does
	// for run_command.
	grant bool
	// then are the resources asked after resource on the same step, each
	// once the one before is allowed (a compound command's segments).
	then []wire.Resource
}

// permission asks ask on step idx when needs is set; a denied step ends
// DONE with the echoed answer, and the tool never runs (no output, no exit
// code). It returns whether the tool may go on, and the index the answer
// came at (a timed-out prompt is asked again at a new index).
func (t *turnRun) permission(idx int, needs bool, ask permissionAsk) (bool, int, error) {
	if !needs {
		t.update(idx, func(f *fakeStep) { f.step.Status = wire.StatusRunning })
		return true, idx, nil
	}
	seq := askSeq{}
	for _, res := range append([]wire.Resource{ask.resource}, ask.then...) {
		seq.reqs = append(seq.reqs, &wire.Interaction{Permission: &wire.PermissionRequest{Resource: &res, ActionDescription: ask.description}})
	}
	var grants []any
	record := func(f *fakeStep, asked *wire.Interaction, ans wire.InteractionResponse) {
		allowed := ans.Permission != nil && ans.Permission.Allow
		complete(f, asked, ask.extra, ans)
		if ask.grant {
			r := asked.Permission.Resource
			grant := map[string]any{"resource": map[string]any{"action": r.Action, "target": r.Target}}
			if allowed {
				grant["allow"] = true
			}
			grants = append(grants, grant)
			f.setExtra("permissions.permissionGrants", slices.Clone(grants))
		}
	}
	seq.rearm = func(f *fakeStep, asked *wire.Interaction, ans wire.InteractionResponse, next *wire.Interaction) {
		record(f, asked, ans)
		if _, ok := ask.extra["requestedInteraction.permission.suggestedPersistPattern"]; ok {
			f.setExtra("requestedInteraction.permission.suggestedPersistPattern", firstWord(next.Permission.Resource.Target))
		}
	}
	ans, at, req, err := t.promptSeq(idx, seq, ask.extra, nil)
	if err != nil {
		return false, at, err
	}
	allowed := ans.Permission != nil && ans.Permission.Allow
	answered := func(f *fakeStep) { record(f, req, ans) }
	if !allowed {
		t.commit(at, func(f *fakeStep) {
			answered(f)
			f.step.Status = wire.StatusDone
			f.step.Metadata.CompletedAt = timestamp(time.Now())
		})
		return false, at, nil
	}
	t.update(at, func(f *fakeStep) {
		answered(f)
		f.step.Status = wire.StatusRunning
	})
	return true, at, nil
}

// editDiff is the diff agy reports for an applied edit: agy's unified lines
// (deleted, inserted) starting at the first chunk's line.
func editDiff(e EditAction) map[string]any {
	var lines []any
	add := func(text, typ string) {
		for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			line := map[string]any{"type": typ}
			if l != "" {
				line["text"] = l
			}
			lines = append(lines, line)
		}
	}
	start := 1
	if e.Create {
		add(e.Content, "UNIFIED_DIFF_LINE_TYPE_INSERT")
	} else {
		for i, c := range e.Chunks {
			if i == 0 && c.Line > 0 {
				start = c.Line
			}
			add(c.Old, "UNIFIED_DIFF_LINE_TYPE_DELETE")
			add(c.New, "UNIFIED_DIFF_LINE_TYPE_INSERT")
		}
	}
	return map[string]any{"startLine": start, "endLine": start + len(lines) - 1, "unifiedDiff": map[string]any{"lines": lines}}
}

// search runs grep_search, find_by_name or search_web.
func (t *turnRun) search(s SearchAction) error {
	var (
		typ             wire.StepType
		key             string
		args            = map[string]any{}
		body            = map[string]any{}
		action, summary string
	)
	switch s.Tool {
	case "grep_search":
		typ, key = wire.StepGrepSearch, "grepSearch"
		action, summary = "Searching for "+s.Query, "Search "+s.Query
		args["Query"], args["SearchPath"], args["MatchPerLine"], args["CaseInsensitive"], args["IsRegex"] = s.Query, s.Path, true, false, false
		body["query"], body["searchPathUri"], body["matchPerLine"] = s.Query, fileURI(s.Path), true
	case "find_by_name":
		typ, key = wire.StepFind, "find"
		action, summary = "Finding "+s.Query, "Find "+s.Query
		args["Pattern"], args["SearchDirectory"], args["Type"] = s.Query, s.Path, "file"
		body["pattern"], body["searchDirectory"], body["type"] = s.Query, s.Path, "FIND_RESULT_TYPE_FILE"
	default: // search_web, validated
		typ, key = wire.StepSearchWeb, "searchWeb"
		action, summary = "Searching the web for "+s.Query, "Web search "+s.Query
		args["query"] = s.Query
		body["query"] = s.Query
	}
	args["toolAction"], args["toolSummary"] = action, summary
	call, order := t.toolCall(s.Tool, args)
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(typ, call, order, summary, action)
	f.step.Status = wire.StatusRunning
	f.setExtra(key, body)
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	result := map[string]any{}
	for k, v := range body {
		result[k] = v
	}
	switch typ {
	case wire.StepGrepSearch:
		var results []any
		for _, h := range s.Hits {
			r := map[string]any{"absolutePath": h.Path, "content": h.Text + "\n"}
			if rel, ok := strings.CutPrefix(h.Path, strings.TrimSuffix(s.Path, "/")+"/"); ok {
				r["relativePath"] = rel
			}
			if h.Line > 0 {
				r["lineNumber"] = h.Line
			}
			results = append(results, r)
		}
		result["results"], result["totalResults"] = results, len(s.Hits)
		result["commandRun"] = "rg --json " + strconv.Quote(s.Query) + " " + s.Path
	case wire.StepFind:
		var out strings.Builder
		for _, h := range s.Hits {
			out.WriteString(h.Path + "\n")
		}
		result["truncatedOutput"], result["totalResults"] = out.String(), len(s.Hits)
		result["commandRun"] = "fd --glob " + strconv.Quote(s.Query) + " " + s.Path
	default:
		var docs []any
		for _, h := range s.Hits {
			docs = append(docs, map[string]any{"url": h.Path, "title": h.Text})
		}
		result["webDocuments"], result["summary"] = docs, s.Summary
	}
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		f.setExtra(key, result)
	})
	return nil
}

// fetch reads a web page with read_url_content.
func (t *turnRun) fetch(a FetchAction) error {
	action, summary := "Reading "+a.URL, "Read "+a.URL
	call, order := t.toolCall("read_url_content", map[string]any{"Url": a.URL, "toolAction": action, "toolSummary": summary})
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(wire.StepReadURLContent, call, order, summary, action)
	f.step.Status = wire.StatusRunning
	f.setExtra("readUrlContent", map[string]any{"url": a.URL})
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	latency := 80 + t.rng.IntN(400)
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		doc := map[string]any{"url": a.URL, "text": a.Content}
		if a.Title != "" {
			doc["title"] = a.Title
		}
		f.setExtra("readUrlContent", map[string]any{"url": a.URL, "webDocument": doc, "resolvedUrl": a.URL, "latencyMs": latency})
	})
	return nil
}

// mcp calls a tool of an MCP server: an MCP_TOOL step naming the server and
// carrying the call (mcpTool.toolCall), then its result.
func (t *turnRun) mcp(a MCPAction) error {
	args := map[string]any{}
	if len(a.Arguments) > 0 {
		_ = json.Unmarshal(a.Arguments, &args) // validated: an object
	}
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return err
	}
	action, summary := "Calling "+a.Tool+" on "+a.Server, "Call "+a.Tool
	withMeta := map[string]any{"toolAction": action, "toolSummary": summary}
	for k, v := range args {
		withMeta[k] = v
	}
	call, order := t.toolCall("mcp_"+a.Server+"_"+a.Tool, withMeta)
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(wire.StepMCPTool, call, order, summary, action)
	f.step.Status = wire.StatusRunning
	body := map[string]any{
		"serverName": a.Server,
		"toolCall":   map[string]any{"id": call.ID, "name": a.Tool, "argumentsJson": string(argsJSON)},
		"serverInfo": map[string]any{"name": a.Server, "version": "1.0.0"},
	}
	f.setExtra("mcpTool", body)
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		f.setExtra("mcpTool.resultString", a.Result)
	})
	return nil
}

// anyStep runs a tool step of any type: its body while it runs, the result
// merged into it at DONE.
func (t *turnRun) anyStep(a StepAction) error {
	var body, result map[string]any
	_ = json.Unmarshal(a.Body, &body)     // validated: an object, or empty
	_ = json.Unmarshal(a.Result, &result) // likewise
	if body == nil {
		body = map[string]any{}
	}
	summary := a.Summary
	if summary == "" {
		summary = strings.ReplaceAll(a.Tool, "_", " ")
	}
	action := summary
	args := map[string]any{"toolAction": action, "toolSummary": summary}
	for k, v := range body {
		if k != "" { // agy's arguments are the body's fields, capitalised
			args[strings.ToUpper(k[:1])+k[1:]] = v
		}
	}
	call, order := t.toolCall(a.Tool, args)
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	key := bodyKey(a.Type)
	f := t.toolStep(wire.StepType(a.Type), call, order, summary, action)
	f.step.Status = wire.StatusRunning
	f.setExtra(key, body)
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		for k, v := range result {
			f.setExtra(key+"."+k, v)
		}
	})
	return nil
}

// bodyKey is the step body's member for a type: CORTEX_STEP_TYPE_VIEW_FILE
// has viewFile.
func bodyKey(typ string) string {
	parts := strings.Split(strings.ToLower(strings.TrimPrefix(typ, "CORTEX_STEP_TYPE_")), "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func baseName(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return path[i+1:]
	}
	return path
}

// language is the markdown language agy notes for a file.
func language(path string) string {
	switch {
	case strings.HasSuffix(path, ".go"):
		return "go"
	case strings.HasSuffix(path, ".md"):
		return "markdown"
	case strings.HasSuffix(path, ".py"):
		return "python"
	case strings.HasSuffix(path, ".ts"):
		return "typescript"
	}
	return "text"
}
