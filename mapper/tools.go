package mapper

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
)

// toolNames names the tool of each dedicated tool step type, for copies that
// lack metadata.toolCall (streamed ones).
var toolNames = map[rpc.StepType]string{
	rpc.StepRunCommand:     "run_command",
	rpc.StepViewFile:       "view_file",
	rpc.StepListDirectory:  "list_dir",
	rpc.StepAskQuestion:    "ask_question",
	rpc.StepGeneric:        "generic",
	rpc.StepInvokeSubagent: "invoke_subagent",
}

// isTool reports whether a step is a tool call: a dedicated tool step type,
// or any other step carrying metadata.toolCall.
func isTool(s *rpc.Step) bool {
	switch s.Type {
	case rpc.StepUserInput, rpc.StepPlannerResponse, rpc.StepCheckpoint, rpc.StepConversationHistory, rpc.StepSystemMessage:
		return false
	}
	_, ok := toolNames[s.Type]
	return ok || s.Metadata.ToolCall != nil
}

// tool maps a tool step: function_call when first seen, its prompt if it
// asks one, and function_call_output once terminal.
func (r *Reconciler) tool(index int, s *rpc.Step, st *slot) {
	if s.Type == rpc.StepInvokeSubagent {
		r.noteChildren(index, s)
	}
	if !st.callDone {
		st.callDone = true
		st.callID = callID(s, index, r.cfg.ConversationID)
		e := r.event(messages.EventFunctionCall, r.itemID(index, "call"))
		e.CallID = st.callID
		e.Name = toolName(s)
		e.Arguments = toolArguments(s)
		r.emit(e)
	}
	r.prompt(index, s, st)
	if st.terminal && !st.outputDone {
		st.outputDone = true
		e := r.event(messages.EventFunctionCallOutput, r.itemID(index, "output"))
		e.CallID = st.callID
		e.Output, e.ExitCode = toolOutput(s)
		r.emit(e)
	}
}

// callID is toolCall.id, or (for copies without it) one derived from the
// trajectory and the step index. The reconciler decides it once per step.
func callID(s *rpc.Step, index int, conv string) string {
	if tc := s.Metadata.ToolCall; tc != nil && tc.ID != "" {
		return tc.ID
	}
	traj := s.TrajectoryID()
	if traj == "" {
		traj = conv
	}
	return traj + ":" + strconv.Itoa(index)
}

func toolName(s *rpc.Step) string {
	if tc := s.Metadata.ToolCall; tc != nil && tc.Name != "" {
		return tc.Name
	}
	if n, ok := toolNames[s.Type]; ok {
		return n
	}
	return strings.ToLower(strings.TrimPrefix(string(s.Type), "CORTEX_STEP_TYPE_"))
}

// toolArguments is the call's arguments as JSON: {"command","cwd"} for
// commands, else toolCall.argumentsJson, else the step's own body.
func toolArguments(s *rpc.Step) string {
	if rc := s.RunCommand; s.Type == rpc.StepRunCommand && rc != nil {
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
func stepBody(s *rpc.Step) json.RawMessage {
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
func bodyKey(t rpc.StepType) string {
	parts := strings.Split(strings.ToLower(strings.TrimPrefix(string(t), "CORTEX_STEP_TYPE_")), "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// toolOutput is what a terminal tool step gives back.
func toolOutput(s *rpc.Step) (string, *int) {
	switch s.Status {
	case rpc.StatusDone:
	case rpc.StatusError:
		if s.RequestedInteraction != nil {
			return "error: no answer before the prompt timed out", nil
		}
		return "error: the tool step failed", nil
	default:
		return "the tool step ended " + strings.ToLower(strings.TrimPrefix(string(s.Status), "CORTEX_STEP_STATUS_")), nil
	}
	switch s.Type {
	case rpc.StepRunCommand:
		if s.RequestedInteraction != nil && s.RequestedInteraction.Permission != nil &&
			answeredAction(s, messages.KindPermission) == messages.ActionDecline {
			return "the command was not allowed", nil
		}
		out := ""
		var code int
		if rc := s.RunCommand; rc != nil {
			code = int(rc.ExitCode)
			if rc.CombinedOutput != nil {
				out = rc.CombinedOutput.Full
			}
		}
		return out, messages.Ptr(code)
	case rpc.StepAskQuestion:
		return answersSummary(s), nil
	case rpc.StepViewFile:
		return viewFileSummary(s.ViewFile), nil
	case rpc.StepListDirectory:
		return listDirectorySummary(s.ListDirectory), nil
	case rpc.StepInvokeSubagent:
		if ids := ChildConversations(s); len(ids) > 0 {
			return "subagents: " + strings.Join(ids, ", "), nil
		}
	}
	if g := s.Generic; g != nil && g.Result != nil {
		return g.Result.Result, nil
	}
	if s.Metadata.ToolSummary != "" {
		return s.Metadata.ToolSummary, nil
	}
	return "done", nil
}

func uriPath(u string) string { return strings.TrimPrefix(u, "file://") }

func viewFileSummary(raw json.RawMessage) string {
	var v struct {
		AbsolutePathURI string  `json:"absolutePathUri"`
		NumLines        rpc.Int `json:"numLines"`
		NumBytes        rpc.Int `json:"numBytes"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return "viewed a file"
	}
	return uriPath(v.AbsolutePathURI) + ": " + strconv.FormatInt(int64(v.NumLines), 10) + " lines, " + strconv.FormatInt(int64(v.NumBytes), 10) + " bytes"
}

func listDirectorySummary(raw json.RawMessage) string {
	var v struct {
		DirectoryPathURI string `json:"directoryPathUri"`
		Results          []struct {
			Name  string `json:"name"`
			IsDir bool   `json:"isDir"`
		} `json:"results"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return "listed a directory"
	}
	var b strings.Builder
	b.WriteString(uriPath(v.DirectoryPathURI))
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(len(v.Results)))
	b.WriteString(" entries")
	for _, e := range v.Results {
		b.WriteString("\n")
		b.WriteString(e.Name)
		if e.IsDir {
			b.WriteString("/")
		}
	}
	return b.String()
}

// answersSummary tells the chosen answers of an ask_question step, one line
// per question: "question: option text; option text" (write-ins quoted).
func answersSummary(s *rpc.Step) string {
	var qs []rpc.Question
	if s.AskQuestion != nil {
		qs = s.AskQuestion.Questions
	}
	if s.RequestedInteraction != nil && s.RequestedInteraction.AskQuestion != nil && len(qs) == 0 {
		qs = s.RequestedInteraction.AskQuestion.Questions
	}
	chosen := map[string]rpc.QuestionResponse{}
	for _, ci := range s.CompletedInteractions {
		if ci.Response != nil && ci.Response.AskQuestion != nil {
			for _, qr := range ci.Response.AskQuestion.Responses {
				chosen[qr.Question] = qr
			}
		}
	}
	var lines []string
	for _, q := range qs {
		ids, writeIn := q.SelectedOptionIDs, q.WriteInResponse
		if qr, ok := chosen[q.Question]; ok {
			ids, writeIn = qr.SelectedOptionIDs, qr.WriteInResponse
		}
		var picks []string
		for _, id := range ids {
			text := id
			for _, o := range q.Options {
				if o.ID == id {
					text = o.Text
				}
			}
			picks = append(picks, text)
		}
		if writeIn != "" {
			picks = append(picks, strconv.Quote(writeIn))
		}
		lines = append(lines, q.Question+": "+strings.Join(picks, "; "))
	}
	return strings.Join(lines, "\n")
}
