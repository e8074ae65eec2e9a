package agytest

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// errMovedOn: nobody answered an interaction the harness cannot answer,
// and agy moved on (the step is CANCELED); the turn goes on.
var errMovedOn = errors.New("agytest: agy moved on")

// interact runs an InteractAction: a tool step asking an interaction other
// than a permission or a question (see InteractAction).
func (t *turnRun) interact(a InteractAction) error {
	typ, name := wire.StepGeneric, toolNameOf(a.Kind)
	args := map[string]any{}
	action, summary := a.Summary, a.Summary
	req := &wire.Interaction{}
	var extra map[string]any
	wait := time.Duration(0)
	switch a.Kind {
	case "filePermission":
		typ, name = wire.StepViewFile, "view_file"
		args["AbsolutePath"] = a.Target
		if a.Write {
			typ, name = wire.StepCodeAction, "write_to_file"
			args = map[string]any{"TargetFile": a.Target}
		}
		if summary == "" {
			action, summary = "Reading "+a.Target, "Read "+a.Target
		}
		req.FilePermission = &wire.FilePermissionRequest{AbsolutePathURI: "file://" + a.Target, BlockReason: "BLOCK_REASON_OUTSIDE_WORKSPACE"}
	case "elicitation":
		name = "mcp_" + a.Server + "_tool"
		if summary == "" {
			action, summary = "Asking "+a.Server, "MCP "+a.Server
		}
		req.Elicitation = &wire.ElicitationRequest{ServerName: a.Server, Mode: "form", Message: a.Message, RequestedSchemaJSON: a.Schema}
	default:
		if a.Target != "" {
			args["Url"] = a.Target
		}
		if summary == "" {
			action, summary = "Using "+name, "Use "+name
		}
		extra = map[string]any{"requestedInteraction." + a.Kind: map[string]any{}}
		wait = time.Duration(a.WaitMs) * time.Millisecond
		if wait == 0 {
			wait = 300 * time.Millisecond
		}
	}
	args["toolAction"], args["toolSummary"] = action, summary
	call, order := t.toolCall(name, args)
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(typ, call, order, summary, action)
	if typ == wire.StepGeneric {
		raw, _ := json.Marshal(args)
		f.step.Generic = &wire.Generic{Args: raw}
	}
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	t.update(idx, func(f *fakeStep) { f.step.Status = wire.StatusRunning })
	ans, at, _, err := t.promptSeq(idx, askSeq{reqs: []*wire.Interaction{req}, kind: a.Kind, wait: wait}, extra, nil)
	if errors.Is(err, errMovedOn) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := t.pause(); err != nil {
		return err
	}
	t.commit(at, func(f *fakeStep) {
		complete(f, req, extra, ans)
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		if typ == wire.StepGeneric && allowedBy(ans) {
			f.step.Generic.Result = &wire.GenericResult{Result: "done"}
		}
	})
	return nil
}

// allowedBy reports whether an answer lets the tool go on.
func allowedBy(ans wire.InteractionResponse) bool {
	switch {
	case ans.FilePermission != nil:
		return ans.FilePermission.Allow
	case ans.Elicitation != nil:
		return ans.Elicitation.Action == "accept"
	case ans.Permission != nil:
		return ans.Permission.Allow
	}
	return false
}

// toolNameOf is the tool a step asking kind would be: browserAction ->
// browser_action.
func toolNameOf(kind string) string {
	var b strings.Builder
	for _, r := range kind {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checkKindAnswer validates an answer to a prompt of kind (an
// InteractAction's), as agy's schema shapes it; from agy's terminal any
// answer goes (it is the dialog's).
func checkKindAnswer(kind string, resp *wire.InteractionResponse, idx int, fromTerminal bool) *connectError {
	switch kind {
	case "filePermission":
		if resp.FilePermission == nil {
			return errorf(rpc.CodeUnknown, "step %d expects a filePermission response", idx)
		}
	case "elicitation":
		if resp.Elicitation == nil {
			return errorf(rpc.CodeUnknown, "step %d expects an elicitation response", idx)
		}
		switch resp.Elicitation.Action {
		case "accept", "decline", "cancel":
		default:
			return errorf(rpc.CodeUnknown, "step %d: elicitation action %q (want accept, decline or cancel)", idx, resp.Elicitation.Action)
		}
		if c := resp.Elicitation.ContentJSON; c != "" && !json.Valid([]byte(c)) {
			return errorf(rpc.CodeUnknown, "step %d: elicitation contentJson is not JSON", idx)
		}
	default:
		if !fromTerminal {
			return errorf(rpc.CodeUnknown, "step %d expects a %s response", idx, kind)
		}
	}
	return nil
}
