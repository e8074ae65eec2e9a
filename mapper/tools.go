package mapper

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// tool maps a tool step: function_call when first seen (with the typed
// detail its table row reads from the body), its prompt if it asks one, its
// output as it grows (function_call_output_delta, for steps first seen
// live), and function_call_output once terminal.
func (r *Reconciler) tool(index int, s *wire.Step, st *slot, first bool) {
	if s.Type == wire.StepInvokeSubagent {
		r.noteChildren(index, s)
	}
	row := rowOf(s.Type)
	v := viewOf(s) // its body is looked up when a detail needs it
	terminal := s.Status.Terminal()
	if first && !terminal {
		st.streamed = true
	}
	if !st.callDone {
		st.callDone = true
		st.callID = callID(s, index, r.cfg.ConversationID)
		if st.epoch > 0 && (s.Metadata.ToolCall == nil || s.Metadata.ToolCall.ID == "") {
			st.callID = epochCallID(st.callID, st.epoch) // derived from the index: keep it unique
		}
		d := callDetailOf(row, v)
		if s.Type == wire.StepCommandStatus {
			if line := r.commands[commandID(v)]; line != "" {
				d.title = "Output of " + line
			}
		}
		st.kind = d.kind
		e := r.event(messages.EventFunctionCall, r.itemID(index, "call"))
		e.CallID = st.callID
		e.Name = d.name
		e.Arguments = d.arguments
		e.Kind, e.Title, e.Locations, e.Diffs, e.URL = d.kind, d.title, d.locations, d.diffs, d.url
		r.emit(e)
	}
	r.prompt(index, s, st)
	if st.outputDone {
		return
	}
	if st.streamed && row.live != nil && (!terminal || s.Status == wire.StatusDone) {
		if live := row.live(v); live != "" {
			// Brought to the terminal copy's output too, so that the deltas
			// add up to the output, as a message's deltas add up to its text.
			r.advance(index, &st.live().out, live, terminal, "output")
		}
	}
	if terminal {
		if s.Type == wire.StepRunCommand {
			if id := commandID(v); id != "" {
				r.noteCommand(id, runCommandLine(s.RunCommand)) // for the command_status steps that check on it
			}
		}
		st.outputDone = true
		st.texts = nil // no longer needed as a delta base
		e := r.event(messages.EventFunctionCallOutput, r.itemID(index, "output"))
		e.CallID = st.callID
		e.Kind = st.kind
		d := toolOutput(row, v)
		e.Output, e.ExitCode = d.output, d.exitCode
		e.Locations, e.Diffs, e.Hits, e.HitCount, e.URL = d.locations, d.diffs, d.hits, d.hitCount, d.url
		r.emit(e)
	}
}

// commandID is the commandId of a RUN_COMMAND or COMMAND_STATUS body.
func commandID(v stepView) string {
	b, _ := decodeBody[commandIDBody](v)
	return b.CommandID
}

// callDetailOf is a tool call's name, arguments and typed detail: the row's
// detail, then toolCall, the row and the step for what it leaves empty.
func callDetailOf(row stepRow, v stepView) callDetail {
	var d callDetail
	if row.call != nil {
		row.call(v, &d)
	}
	s := v.s
	if tc := s.Metadata.ToolCall; tc != nil && tc.Name != "" {
		d.name = tc.Name
	}
	if d.name == "" {
		d.name = row.name
	}
	if d.name == "" || d.name == "generic" {
		d.name = toolName(s)
	}
	if d.kind == "" {
		d.kind = row.kind
	}
	if d.kind == "" {
		d.kind = kindByName(d.name)
	}
	if d.title == "" {
		d.title = s.Metadata.ToolSummary
	}
	if d.title == "" {
		d.title = d.name
	}
	switch {
	case s.Type == wire.StepRunCommand || (s.Metadata.ToolCall != nil && s.Metadata.ToolCall.ArgumentsJSON != ""):
		d.arguments = toolArguments(s)
	case d.arguments == "" && row.args != nil:
		d.arguments = members(v.body(), row.args)
	case d.arguments == "":
		d.arguments = toolArguments(s)
	}
	if len(d.locations) == 0 && s.Type != wire.StepRunCommand {
		d.locations = argumentPath(d.arguments)
	}
	return d
}

// pathArguments are the argument names agy's tools give a file or
// directory in.
var pathArguments = []string{"AbsolutePath", "TargetFile", "DirectoryPath", "SearchPath", "SearchDirectory", "path", "file_path", "filePath"}

// argumentPath is the file a tool without detail names in its arguments,
// as its location (none when it names none, or not as an absolute path).
func argumentPath(arguments string) []messages.Location {
	var args map[string]any
	if json.Unmarshal([]byte(arguments), &args) != nil {
		return nil
	}
	for _, name := range pathArguments {
		if p, ok := args[name].(string); ok && strings.HasPrefix(p, "/") {
			return []messages.Location{{Path: p}}
		}
	}
	return nil
}

// members is the JSON object of body's members named in names ("{}" when
// there are none).
func members(body json.RawMessage, names []string) string {
	var all map[string]json.RawMessage
	if json.Unmarshal(body, &all) != nil {
		return "{}"
	}
	picked := make(map[string]json.RawMessage, len(names))
	for _, n := range names {
		if m, ok := all[n]; ok {
			picked[n] = m
		}
	}
	b, err := json.Marshal(picked)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// callID is toolCall.id, or (for copies without it) one derived from the
// trajectory and the step index. The reconciler decides it once per step.
func callID(s *wire.Step, index int, conv string) string {
	if tc := s.Metadata.ToolCall; tc != nil && tc.ID != "" {
		return tc.ID
	}
	traj := s.TrajectoryID()
	if traj == "" {
		traj = conv
	}
	return traj + ":" + strconv.Itoa(index)
}

func toolName(s *wire.Step) string {
	if tc := s.Metadata.ToolCall; tc != nil && tc.Name != "" {
		return tc.Name
	}
	if n := rowOf(s.Type).name; n != "" && n != "generic" {
		return n
	}
	return strings.ToLower(strings.TrimPrefix(string(s.Type), "CORTEX_STEP_TYPE_"))
}

// toolArguments is the call's arguments as JSON: {"command","cwd"} for
// commands, else toolCall.argumentsJson, else the step's own body.
func toolArguments(s *wire.Step) string {
	if rc := s.RunCommand; s.Type == wire.StepRunCommand && rc != nil {
		line := rc.CommandLine
		if line == "" {
			line = rc.ProposedCommandLine
		}
		b, _ := json.Marshal(struct {
			Command string `json:"command"`
			Cwd     string `json:"cwd,omitempty"`
		}{line, rc.Cwd})
		return string(b)
	}
	if tc := s.Metadata.ToolCall; tc != nil && tc.ArgumentsJSON != "" {
		return tc.ArgumentsJSON
	}
	if g := s.Generic; g != nil && len(g.Args) > 0 {
		return compact(g.Args)
	}
	if body := stepBody(s); len(body) > 0 {
		return compact(body)
	}
	return "{}"
}

// compact drops the insignificant whitespace of a JSON value agy sent.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// stepBody is the step's type-named body (viewFile for VIEW_FILE, ...) as
// agy sent it.
func stepBody(s *wire.Step) json.RawMessage {
	raw := s.Raw
	if len(raw) == 0 {
		b, err := json.Marshal(s)
		if err != nil {
			return nil
		}
		raw = b
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	return fields[bodyKey(s.Type)]
}

// bodyKey turns CORTEX_STEP_TYPE_VIEW_FILE into viewFile.
func bodyKey(t wire.StepType) string {
	parts := strings.Split(strings.ToLower(strings.TrimPrefix(string(t), "CORTEX_STEP_TYPE_")), "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// toolOutput is what a terminal tool step gives back: for a DONE step, its
// row's result, else generic.result, toolSummary or "done".
func toolOutput(row stepRow, v stepView) resultDetail {
	s := v.s
	var d resultDetail
	switch s.Status {
	case wire.StatusDone:
	case wire.StatusError:
		if s.RequestedInteraction != nil {
			d.say("error: no answer before the prompt timed out")
		} else {
			d.say("error: the tool step failed")
		}
		return d
	default:
		d.say("the tool step ended " + strings.ToLower(strings.TrimPrefix(string(s.Status), "CORTEX_STEP_STATUS_")))
		return d
	}
	if s.RequestedInteraction != nil && s.RequestedInteraction.Permission != nil && s.Type != wire.StepRunCommand &&
		answeredAction(s, messages.KindPermission) == messages.ActionDecline {
		d.say("the tool call was not allowed")
		return d
	}
	if row.result != nil {
		row.result(v, &d)
	}
	if d.set {
		return d
	}
	switch {
	case s.Generic != nil && s.Generic.Result != nil:
		d.output = s.Generic.Result.Result
	case s.Metadata.ToolSummary != "":
		d.output = s.Metadata.ToolSummary
	default:
		d.output = "done"
	}
	return d
}
