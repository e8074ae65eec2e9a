package mapper

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// reaskStep is the RUN_COMMAND step of `line` WAITING on its segment
// target after the segments before it were allowed: one completed
// interaction and one grant per earlier segment, as agy keeps a compound
// command's step WAITING while it asks segment after segment.
func reaskStep(line string, done []string, target string) wire.Step {
	s := commandStep(wire.StatusWaiting, line)
	s.RequestedInteraction = &wire.Interaction{Permission: &wire.PermissionRequest{Resource: &wire.Resource{Action: "command", Target: target}}}
	var grants []map[string]any
	for _, d := range done {
		req := &wire.Interaction{Permission: &wire.PermissionRequest{Resource: &wire.Resource{Action: "command", Target: d}}}
		s.CompletedInteractions = append(s.CompletedInteractions, wire.CompletedInteraction{Request: req, Response: &wire.InteractionResponse{
			TrajectoryID: testTraj, StepIndex: 1, Permission: &wire.PermissionAnswer{Allow: true},
		}})
		grants = append(grants, map[string]any{"resource": map[string]any{"action": "command", "target": d}, "allow": true})
	}
	if len(grants) > 0 {
		s.Permissions, _ = json.Marshal(map[string]any{"permissionGrants": grants})
	}
	return s
}

func elicitationsOf(evs []messages.Event) (req, res []messages.Event) {
	for _, e := range evs {
		switch e.Type {
		case messages.EventElicitationRequest:
			req = append(req, e)
		case messages.EventElicitationResolved:
			res = append(res, e)
		}
	}
	return req, res
}

// TestReaskedPromptOnTheSameStep: agy asks `a && b` segment by segment on
// one step; each new ask is a new elicitation_request (c/prompt/i, then
// c/prompt/i.2, c/prompt/i.3), the harness's answer to the one before is
// kept, and repeated or stale copies ask nothing twice.
func TestReaskedPromptOnTheSameStep(t *testing.T) {
	line := "git status && git log && git diff"
	r := newTestReconciler()
	user := userStep("check", "")
	var all []messages.Event
	all = append(all, r.Apply(snapshot(1, wire.RunRunning, user, reaskStep(line, nil, "git status")))...)
	reqs, _ := elicitationsOf(all)
	require.Len(t, reqs, 1)
	require.Equal(t, "conv-1/prompt/1", reqs[0].ElicitationID)
	require.Equal(t, "git status", reqs[0].Resource.Target)

	// The harness answers; agy re-arms the same step for the next segment.
	r.AnswerInFlight("conv-1/prompt/1", messages.ActionAccept)
	ev, ok := r.MarkResolved("conv-1/prompt/1", messages.ActionAccept, 1, at(2))
	require.True(t, ok)
	require.Equal(t, "conv-1/prompt/1/resolved", ev.ID)
	second := reaskStep(line, []string{"git status"}, "git log")
	evs := r.Apply(snapshot(3, wire.RunRunning, user, second))
	reqs, res := elicitationsOf(evs)
	require.Len(t, reqs, 1, "%v", types(evs))
	require.Empty(t, res, "the first ask was resolved by the harness already")
	require.Equal(t, "conv-1/prompt/1.2", reqs[0].ElicitationID)
	require.Equal(t, "conv-1/prompt/1.2/request", reqs[0].ID)
	require.Equal(t, "git log", reqs[0].Resource.Target)
	require.Equal(t, []string{"status:running", "elicitation_request", "status:waiting"}, types(evs))
	p, ok := r.Prompt("conv-1/prompt/1.2")
	require.True(t, ok)
	require.Equal(t, 1, p.StepIndex)

	// The same copy again, and a stale copy of the first ask: nothing new.
	require.Empty(t, r.Apply(snapshot(4, wire.RunRunning, user, second)))
	require.Empty(t, r.Apply(snapshot(4, wire.RunRunning, user, reaskStep(line, nil, "git status"))))
	require.Empty(t, r.Apply(frame(4, wire.RunRunning, 1, second)))

	// Answered in agy's own terminal this time: the third segment shows;
	// the second closes by terminal, the third opens.
	third := reaskStep(line, []string{"git status", "git log"}, "git diff")
	evs = r.Apply(snapshot(5, wire.RunRunning, user, third))
	reqs, res = elicitationsOf(evs)
	require.Len(t, res, 1)
	require.Equal(t, "conv-1/prompt/1.2", res[0].ElicitationID)
	require.Equal(t, messages.ByTerminal, res[0].By)
	require.Equal(t, messages.ActionAccept, res[0].Action)
	require.Len(t, reqs, 1)
	require.Equal(t, "conv-1/prompt/1.3", reqs[0].ElicitationID)

	// The last answer ends the step: only the third closes.
	done := withOutput(answered(third, 1, wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}}), "ok\n", 0)
	done.Status = wire.StatusDone
	evs = r.Apply(snapshot(6, wire.RunIdle, user, done))
	reqs, res = elicitationsOf(evs)
	require.Empty(t, reqs)
	require.Len(t, res, 1)
	require.Equal(t, "conv-1/prompt/1.3", res[0].ElicitationID)
	require.Equal(t, messages.StateIdle, r.State())
}

// TestReaskWithTheSameTarget: `echo x && echo x` asks the same thing
// twice; the answered count tells the second ask from a repeated copy.
func TestReaskWithTheSameTarget(t *testing.T) {
	line := "echo x && echo x"
	r := newTestReconciler()
	user := userStep("go", "")
	r.Apply(snapshot(1, wire.RunRunning, user, reaskStep(line, nil, "echo x")))
	_, ok := r.MarkResolved("conv-1/prompt/1", messages.ActionAccept, 1, at(2))
	require.True(t, ok)
	evs := r.Apply(snapshot(3, wire.RunRunning, user, reaskStep(line, []string{"echo x"}, "echo x")))
	reqs, _ := elicitationsOf(evs)
	require.Len(t, reqs, 1)
	require.Equal(t, "conv-1/prompt/1.2", reqs[0].ElicitationID)
}

// TestAskedSince: a copy of the step with more decisions answered than when
// a prompt was asked is a later ask; an answer to the prompt must not go
// there, even when it asks the same thing (echo x && echo x).
func TestAskedSince(t *testing.T) {
	r := newTestReconciler()
	user := userStep("go", "")
	r.Apply(snapshot(1, wire.RunRunning, user, reaskStep("echo x && echo x", nil, "echo x")))
	p, ok := r.Prompt("conv-1/prompt/1")
	require.True(t, ok)
	same := reaskStep("echo x && echo x", nil, "echo x")
	later := reaskStep("echo x && echo x", []string{"echo x"}, "echo x")
	require.False(t, AskedSince(p, 1, &same))
	require.True(t, AskedSince(p, 1, &later))
	require.False(t, AskedSince(p, 2, &later), "a retry at another index is the same prompt")
}

// TestTimeoutRetryIsNotAReask: a timed-out prompt asked again at a higher
// index keeps its id (no second request), as before re-asks.
func TestTimeoutRetryIsNotAReask(t *testing.T) {
	r := newTestReconciler()
	user := userStep("go", "")
	first := reaskStep("ls", nil, "ls")
	var all []messages.Event
	all = append(all, r.Apply(snapshot(1, wire.RunRunning, user, first))...)
	expired := first
	expired.Status = wire.StatusError
	all = append(all, r.Apply(snapshot(2, wire.RunRunning, user, expired, first))...)
	reqs, res := elicitationsOf(all)
	require.Len(t, reqs, 1)
	require.Empty(t, res)
	p, ok := r.Prompt("conv-1/prompt/1")
	require.True(t, ok)
	require.Equal(t, 2, p.StepIndex)
}

func otherStep(status wire.StepStatus, summary, ri string) wire.Step {
	s := genericStep(status, "browser_click", `{"x":1}`, "")
	s.Metadata.ToolSummary = summary
	return withBody(s, `"requestedInteraction":`+ri)
}

// TestOtherInteractionKinds: a WAITING step asking something beyond a
// permission or a question is never silent: kind other with agy's name for
// it, its text and its raw request; it cannot be answered; it is withdrawn
// when agy moves on.
func TestOtherInteractionKinds(t *testing.T) {
	r := newTestReconciler()
	user := userStep("click it", "")
	waiting := otherStep(wire.StatusWaiting, "Click the login button", `{"browserAction":{}}`)
	evs := r.Apply(snapshot(1, wire.RunRunning, user, waiting))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	require.Equal(t, messages.KindOther, req.Kind)
	require.Equal(t, "browserAction", req.Interaction)
	require.Equal(t, "Click the login button", req.Text)
	require.Equal(t, OtherKindHint, req.Message)
	require.JSONEq(t, `{"browserAction":{}}`, string(req.Raw))
	require.Equal(t, messages.StateWaiting, r.State())

	p, ok := r.Prompt(req.ElicitationID)
	require.True(t, ok)
	_, err := BuildInteraction(p, messages.Resolve{ElicitationID: p.ElicitationID, Action: messages.ActionAccept}, testTraj, 1)
	require.ErrorIs(t, err, ErrInvalidResolve)
	require.Contains(t, err.Error(), OtherKindHint)
	keys, err := CloseKeys(p, messages.Resolve{Action: messages.ActionAccept}, "")
	require.NoError(t, err)
	require.Empty(t, keys)

	// Answered in agy's terminal: the step runs on.
	ran := otherStep(wire.StatusDone, "Click the login button", `{"browserAction":{}}`)
	evs = r.Apply(snapshot(2, wire.RunRunning, user, ran))
	res := findEvent(t, evs, messages.EventElicitationResolved)
	require.Equal(t, messages.ByTerminal, res.By)

	// Another that agy cancels: expired.
	r = newTestReconciler()
	r.Apply(snapshot(1, wire.RunRunning, user, otherStep(wire.StatusWaiting, "", `{"readUrlContent":{}}`)))
	evs = r.Apply(snapshot(2, wire.RunRunning, user, otherStep(wire.StatusCanceled, "", `{"readUrlContent":{}}`)))
	res = findEvent(t, evs, messages.EventElicitationResolved)
	require.Equal(t, messages.ByExpired, res.By)
}

// TestOtherInteractionRawIsBounded: a huge request is left out, its size
// said.
func TestOtherInteractionRawIsBounded(t *testing.T) {
	r := newTestReconciler()
	big := `{"sendCommandInput":{"input":"` + string(make([]byte, 0)) + repeatX(2*messages.MaxInteractionRaw) + `"}}`
	evs := r.Apply(snapshot(1, wire.RunRunning, userStep("go", ""), otherStep(wire.StatusWaiting, "", big)))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	require.Equal(t, "sendCommandInput", req.Interaction)
	require.Empty(t, req.Raw)
	require.NotNil(t, req.RawSize)
	require.Greater(t, *req.RawSize, messages.MaxInteractionRaw)
}

func repeatX(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}

// TestFilePermissionPrompt: a filePermission is a permission (read_file on
// its path) answered with agy's schema's filePermission shape.
func TestFilePermissionPrompt(t *testing.T) {
	r := newTestReconciler()
	s := toolStep(wire.StepViewFile, wire.StatusWaiting, "Read secrets", &wire.ToolCall{ID: "c1", Name: "view_file", ArgumentsJSON: `{"AbsolutePath":"/etc/hosts"}`}, "")
	s.RequestedInteraction = &wire.Interaction{FilePermission: &wire.FilePermissionRequest{AbsolutePathURI: "file:///etc/hosts", BlockReason: "BLOCK_REASON_OUTSIDE_WORKSPACE"}}
	evs := r.Apply(snapshot(1, wire.RunRunning, userStep("read", ""), s))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	require.Equal(t, messages.KindPermission, req.Kind)
	require.Equal(t, "filePermission", req.Interaction)
	require.Equal(t, &messages.Resource{Action: "read_file", Target: "/etc/hosts"}, req.Resource)
	require.Equal(t, "outside the workspace", req.Text)
	p, _ := r.Prompt(req.ElicitationID)
	in, err := BuildInteraction(p, messages.Resolve{Action: messages.ActionAccept}, testTraj, 1)
	require.NoError(t, err)
	b, _ := json.Marshal(in)
	require.JSONEq(t, `{"trajectoryId":"traj-1","stepIndex":1,"filePermission":{"allow":true,"scope":"PERMISSION_SCOPE_ONCE","absolutePathUri":"file:///etc/hosts"}}`, string(b))
	in, err = BuildInteraction(p, messages.Resolve{Action: messages.ActionDecline}, testTraj, 1)
	require.NoError(t, err)
	require.False(t, in.FilePermission.Allow)
	keys, _ := CloseKeys(p, messages.Resolve{Action: messages.ActionDecline}, "")
	require.Equal(t, [][]string{{"3", "Enter"}}, keys)
	keys, _ = CloseKeys(p, messages.Resolve{Action: messages.ActionAccept}, "")
	require.Equal(t, [][]string{{"1", "Enter"}}, keys)
	_, err = CloseKeys(p, messages.Resolve{Action: messages.ActionAccept, Choice: messages.ChoiceAllowAlwaysConversation}, "")
	require.ErrorContains(t, err, "no row for allow_always_conversation")
	require.Equal(t, []string{messages.ChoiceAllowOnce, messages.ChoiceDeny}, []string{PermissionChoices(p, true)[0].ID, PermissionChoices(p, true)[1].ID})
	require.Len(t, PermissionChoices(p, true), 2)
}

// TestMCPElicitationPrompt: an MCP elicitation shows its server, message
// and schema; accept carries the form's content, decline none.
func TestMCPElicitationPrompt(t *testing.T) {
	r := newTestReconciler()
	s := genericStep(wire.StatusWaiting, "mcp_tool", `{}`, "")
	s.RequestedInteraction = &wire.Interaction{Elicitation: &wire.ElicitationRequest{ServerName: "github", Mode: "form", Message: "Which repo?", RequestedSchemaJSON: `{"type":"object","properties":{"repo":{"type":"string"}}}`}}
	evs := r.Apply(snapshot(1, wire.RunRunning, userStep("go", ""), s))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	require.Equal(t, messages.KindElicitation, req.Kind)
	require.Equal(t, "github", req.Elicitation.Server)
	require.Equal(t, "Which repo?", req.Text)
	require.JSONEq(t, `{"type":"object","properties":{"repo":{"type":"string"}}}`, string(req.Elicitation.RequestedSchema))
	p, _ := r.Prompt(req.ElicitationID)
	in, err := BuildInteraction(p, messages.Resolve{Action: messages.ActionAccept, Content: json.RawMessage(`{"repo": "a/b"}`)}, testTraj, 1)
	require.NoError(t, err)
	require.Equal(t, &wire.ElicitationAnswer{Action: "accept", ContentJSON: `{"repo":"a/b"}`}, in.Elicitation)
	in, err = BuildInteraction(p, messages.Resolve{Action: messages.ActionDecline}, testTraj, 1)
	require.NoError(t, err)
	require.Equal(t, "decline", in.Elicitation.Action)
	_, err = BuildInteraction(p, messages.Resolve{Action: messages.ActionDecline, Content: json.RawMessage(`{}`)}, testTraj, 1)
	require.ErrorIs(t, err, ErrInvalidResolve)
	_, err = BuildInteraction(p, messages.Resolve{Action: messages.ActionAccept, Content: json.RawMessage(`[1]`)}, testTraj, 1)
	require.ErrorIs(t, err, ErrInvalidResolve)
	// Content is for elicitations only.
	perm := &Prompt{Kind: messages.KindPermission}
	_, err = BuildInteraction(perm, messages.Resolve{Action: messages.ActionAccept, Content: json.RawMessage(`{}`)}, testTraj, 1)
	require.ErrorIs(t, err, ErrInvalidResolve)
}

// TestSupersededOutlivesTheApplyThatClosedIt: a prompt closed by its step
// asking again is let go of at the end of that Apply, yet is still
// superseded for a caller asking after it (the session, deciding whether
// keys would close agy's dialog); the new ask is not, nor another epoch's.
func TestSupersededOutlivesTheApplyThatClosedIt(t *testing.T) {
	line := "git status && git log"
	r := newTestReconciler()
	user := userStep("check", "")
	r.Apply(snapshot(1, wire.RunRunning, user, reaskStep(line, nil, "git status")))
	require.False(t, r.Superseded("conv-1/prompt/1"))
	r.AnswerInFlight("conv-1/prompt/1", messages.ActionAccept)
	evs := r.Apply(snapshot(2, wire.RunRunning, user, reaskStep(line, []string{"git status"}, "git log")))
	_, res := elicitationsOf(evs)
	require.Len(t, res, 1, "agy shows the first ask answered: closed in this Apply")
	require.True(t, r.Superseded("conv-1/prompt/1"))
	require.False(t, r.Superseded("conv-1/prompt/1.2"))
	require.False(t, r.Superseded("conv-1/r1/prompt/1"))
	require.False(t, r.Superseded("conv-1/prompt/x"))
}

// TestOtherInteractionOpenDuringAnInterrupt: an interrupt marks the open
// prompts as declined by the harness, but it has no answer for a prompt of
// kind other and never declines one: when agy then ends or runs the step,
// the prompt was withdrawn or answered in agy's terminal, not by the harness.
func TestOtherInteractionOpenDuringAnInterrupt(t *testing.T) {
	user := userStep("click it", "")
	for _, tc := range []struct {
		name   string
		status wire.StepStatus
		by     string
	}{
		{"cancelled", wire.StatusCanceled, messages.ByExpired},
		{"answered in agy's terminal", wire.StatusDone, messages.ByTerminal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestReconciler()
			evs := r.Apply(snapshot(1, wire.RunRunning, user, otherStep(wire.StatusWaiting, "", `{"browserAction":{}}`)))
			req := findEvent(t, evs, messages.EventElicitationRequest)
			r.AnswerInFlight(req.ElicitationID, messages.ActionCancel)
			evs = r.Apply(snapshot(2, wire.RunRunning, user, otherStep(tc.status, "", `{"browserAction":{}}`)))
			res := findEvent(t, evs, messages.EventElicitationResolved)
			require.Equal(t, req.ElicitationID, res.ElicitationID)
			require.Equal(t, tc.by, res.By)
		})
	}
}
