package acp

import (
	"context"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
)

// A compound command agy asks segment by segment: the client gets a second
// permission request, for the second segment, on the same tool call; both
// allowed, the command runs and the turn ends.
func TestReaskedPromptSendsASecondPermissionRequest(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Run(agytest.CommandAction{Line: "git status && git log", Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Done.", 1),
	)), nil)
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow")}, nil
	}
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "look")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	r.client.mu.Lock()
	perms := append([]sdk.RequestPermissionRequest(nil), r.client.permissions...)
	r.client.mu.Unlock()
	require.Len(t, perms, 2, "one request per segment")
	assert.Equal(t, "git status (in: git status && git log)", *perms[0].ToolCall.Title)
	assert.Equal(t, "git log (in: git status && git log)", *perms[1].ToolCall.Title)
	assert.Equal(t, perms[0].ToolCall.ToolCallId, perms[1].ToolCall.ToolCallId, "the same tool call asks again")
}

// An interaction the harness cannot answer is shown in the thread (its
// name and text, "answer it in agy's terminal"), no permission is asked
// for it, and the turn goes on once agy moves on; an MCP elicitation is
// asked (as a permission request, for a client without forms).
func TestOtherPromptKindsShowInTheThread(t *testing.T) {
	opts := fake(scenario(
		agytest.Interact(agytest.InteractAction{Kind: "browserAction", Summary: "Click the login button", WaitMs: 1000}),
		agytest.Interact(agytest.InteractAction{Kind: "elicitation", Server: "github", Message: "Which repo?"}),
		agytest.Say("Done.", 1),
	))
	opts.UnstreamedPrompts = -1 // the session sees the prompt before agy moves on
	r := startRig(t, opts, nil)
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow")}, nil
	}
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "go")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	text := ""
	for _, u := range r.client.snapshot() {
		if c := u.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
			text += c.Content.Text.Text
		}
	}
	assert.Contains(t, text, "agy asks `browserAction` (Click the login button), which only agy's own terminal can answer")
	r.client.mu.Lock()
	perms := append([]sdk.RequestPermissionRequest(nil), r.client.permissions...)
	r.client.mu.Unlock()
	require.Len(t, perms, 1, "only the MCP elicitation is asked")
	assert.Equal(t, "github asks: Which repo?", *perms[0].ToolCall.Title)
}
