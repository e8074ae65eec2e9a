package acp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agyharness/agyharness/messages"
	sdk "github.com/coder/acp-go-sdk"
)

// promptText flattens an ACP prompt into the text of one agy turn: text
// blocks as they are, resource links as a mention of their URI, embedded
// text resources as a fenced block under their URI. agy's RPC takes text
// only, so images and audio (not advertised) are dropped.
func promptText(blocks []sdk.ContentBlock) string {
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			if t := b.Text.Text; strings.TrimSpace(t) != "" {
				parts = append(parts, t)
			}
		case b.ResourceLink != nil:
			parts = append(parts, "@"+b.ResourceLink.Uri)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			parts = append(parts, fmt.Sprintf("%s:\n```\n%s\n```", r.Uri, strings.TrimRight(r.Text, "\n")))
		}
	}
	return strings.Join(parts, "\n\n")
}

// toolCall is how an agy tool call is shown to an ACP client.
type toolCall struct {
	title     string
	kind      sdk.ToolKind
	rawInput  any
	locations []sdk.ToolCallLocation
	content   []sdk.ToolCallContent // an edit's diffs
}

// describeCall turns a function_call's tool name and JSON arguments into a
// title, a kind and the raw input. agy's arguments carry the tool's own
// capitalised fields (CommandLine, AbsolutePath, ...) and a human summary
// (toolSummary), which makes a good title when there is no command.
func describeCall(name, arguments string) toolCall {
	var args map[string]any
	var raw any = arguments
	if json.Unmarshal([]byte(arguments), &args) == nil && args != nil {
		raw = args
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			for ak, v := range args {
				if strings.EqualFold(ak, k) {
					if s, ok := v.(string); ok && s != "" {
						return s
					}
				}
			}
		}
		return ""
	}
	tc := toolCall{title: name, kind: sdk.ToolKindOther, rawInput: raw}
	if summary := str("toolSummary"); summary != "" {
		tc.title = summary
	}
	path := str("AbsolutePath", "absolute_path", "path", "DirectoryPath", "directory_path", "file", "TargetFile", "target")
	if path != "" {
		tc.locations = []sdk.ToolCallLocation{{Path: path}}
	}
	lower := strings.ToLower(name)
	switch {
	case lower == "run_command" || strings.Contains(lower, "command") || strings.Contains(lower, "shell"):
		tc.kind = sdk.ToolKindExecute
		if cmd := str("command", "CommandLine", "command_line"); cmd != "" {
			tc.title = cmd
		}
	case strings.Contains(lower, "view") || strings.Contains(lower, "read") || strings.Contains(lower, "list"):
		tc.kind = sdk.ToolKindRead
		if tc.title == name && path != "" {
			tc.title = name + " " + path
		}
	case strings.Contains(lower, "search") || strings.Contains(lower, "grep") || strings.Contains(lower, "find"):
		tc.kind = sdk.ToolKindSearch
	case strings.Contains(lower, "write") || strings.Contains(lower, "edit") || strings.Contains(lower, "replace"):
		tc.kind = sdk.ToolKindEdit
	case strings.Contains(lower, "url") || strings.Contains(lower, "web") || strings.Contains(lower, "fetch"):
		tc.kind = sdk.ToolKindFetch
	case lower == "ask_question":
		if q := firstQuestion(args); q != "" {
			tc.title = "Question: " + q
		}
	}
	return tc
}

func firstQuestion(args map[string]any) string {
	qs, _ := args["questions"].([]any)
	if len(qs) == 0 {
		return ""
	}
	q, _ := qs[0].(map[string]any)
	s, _ := q["question"].(string)
	return s
}

// describeEvent is how a function_call is shown: the mapper's kind, title
// and locations, an edit's diffs as ACP diff content (so an editor shows a
// reviewable diff), and describeCall's reading of the arguments for what
// the event leaves out.
func describeEvent(ev *messages.Event) toolCall {
	tc := describeCall(ev.Name, ev.Arguments)
	if ev.Title != "" && ev.Title != ev.Name {
		tc.title = ev.Title
	}
	if ev.Kind != "" {
		tc.kind = sdk.ToolKind(ev.Kind)
	}
	if len(ev.Locations) > 0 {
		tc.locations = locations(ev.Locations)
	}
	tc.content = diffContent(ev.Diffs)
	return tc
}

// locations are the event's locations as ACP's (a line only where agy gave one).
func locations(ls []messages.Location) []sdk.ToolCallLocation {
	out := make([]sdk.ToolCallLocation, 0, len(ls))
	for _, l := range ls {
		loc := sdk.ToolCallLocation{Path: l.Path}
		if l.Line > 0 {
			loc.Line = sdk.Ptr(l.Line)
		}
		out = append(out, loc)
	}
	return out
}

// diffContent is one ACP diff per change of an edit; a new file has no old
// text.
func diffContent(diffs []messages.FileDiff) []sdk.ToolCallContent {
	var out []sdk.ToolCallContent
	for _, d := range diffs {
		if d.OldText == nil {
			out = append(out, sdk.ToolDiffContent(d.Path, d.NewText))
		} else {
			out = append(out, sdk.ToolDiffContent(d.Path, d.NewText, *d.OldText))
		}
	}
	return out
}

// liveUpdate shows a running tool's output so far (ACP replaces a tool
// call's content with each update's).
func liveUpdate(callID, output string) sdk.SessionUpdate {
	return sdk.UpdateToolCall(sdk.ToolCallId(callID),
		sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(output))}))
}

// outputStatus is completed for a tool that succeeded, failed for a
// command with a non-zero exit code.
func outputStatus(ev *messages.Event) sdk.ToolCallStatus {
	if ev.ExitCode != nil && *ev.ExitCode != 0 {
		return sdk.ToolCallStatusFailed
	}
	return sdk.ToolCallStatusCompleted
}

// outputUpdate is the tool_call_update that closes a call: its output as
// text, after an edit's diffs (those agy applied, else those its call
// proposed, callDiffs), and the files the result names.
func outputUpdate(ev *messages.Event, callDiffs []messages.FileDiff) sdk.SessionUpdate {
	raw := map[string]any{"output": ev.Output}
	if ev.ExitCode != nil {
		raw["exit_code"] = *ev.ExitCode
	}
	if len(ev.Hits) > 0 {
		raw["hits"] = ev.Hits
	}
	if ev.HitCount != nil {
		raw["hit_count"] = *ev.HitCount
	}
	if ev.URL != "" {
		raw["url"] = ev.URL
	}
	opts := []sdk.ToolCallUpdateOpt{
		sdk.WithUpdateStatus(outputStatus(ev)),
		sdk.WithUpdateRawOutput(raw),
	}
	diffs := ev.Diffs
	if len(diffs) == 0 {
		diffs = callDiffs
	}
	content := diffContent(diffs)
	if ev.Output != "" {
		content = append(content, sdk.ToolContent(sdk.TextBlock(ev.Output)))
	}
	if len(content) > 0 {
		opts = append(opts, sdk.WithUpdateContent(content))
	}
	if len(ev.Locations) > 0 {
		opts = append(opts, sdk.WithUpdateLocations(locations(ev.Locations)))
	}
	return sdk.UpdateToolCall(sdk.ToolCallId(ev.CallID), opts...)
}

// advance returns the text to send so the client's copy (sent) becomes
// next: the new tail when next extends sent, else a note and next in full
// (agy rewrote the text instead of extending it).
func advance(sent, next string) string {
	if strings.HasPrefix(next, sent) {
		return next[len(sent):]
	}
	return "\n\n[agy rewrote this text; it now reads:]\n\n" + next
}
