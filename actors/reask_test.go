package actors_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// A compound command agy asks segment by segment on one step: each ask is
// its own elicitation_request (c/prompt/i, then c/prompt/i.2), each answer
// reaches its ask, the turn ends, and agy's dialog is closed once, after
// the last ask (the keys pressed after the first would answer the second,
// which agy's dialog shows by then).
func TestReaskedPromptIsAskedAgainAndAnswered(t *testing.T) {
	sc := scenario(agytest.Run(agytest.CommandAction{Line: "git status && git log", Output: "ok\n", NeedsApproval: true}), agytest.Say("Done.", 1))
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	term := &fakeTerminal{srv: srv}
	r := newRigOn(t, srv, actors.Spec{Terminal: term})
	seq := r.turn("look")
	first := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
	require.Equal(t, "git status", first.Resource.Target)
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: first.ElicitationID, Action: messages.ActionAccept}))
	second := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > first.Seq })
	assert.Equal(t, first.ElicitationID+".2", second.ElicitationID)
	assert.Equal(t, "git log", second.Resource.Target)
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: second.ElicitationID, Action: messages.ActionAccept}))
	r.ev.waitIdleAfter(t, second.Seq)

	evs := r.ev.all()
	var asked []string
	resolved := map[string]int{}
	for _, e := range evs {
		switch e.Type {
		case messages.EventElicitationRequest:
			asked = append(asked, e.ElicitationID)
		case messages.EventElicitationResolved:
			resolved[e.ElicitationID]++
			assert.Equal(t, messages.ByHarness, e.By, e.ElicitationID)
		}
	}
	assert.Equal(t, []string{first.ElicitationID, second.ElicitationID}, asked, "nothing asked twice")
	assert.Equal(t, map[string]int{first.ElicitationID: 1, second.ElicitationID: 1}, resolved)
	require.Eventually(t, func() bool { return len(term.pressed()) >= 1 }, waitLong, time.Millisecond)
	assert.Equal(t, [][]string{{"1", "Enter"}}, term.pressed(), "the dialog is closed after the last ask only")
	itemsOnce(t, srv, r.s.ConversationID(), evs)
}

// Interactions beyond a permission or a question are never silent: an
// unknown kind shows as kind other (waiting), cannot be answered, and is
// withdrawn when agy moves on; a file permission and an MCP elicitation are
// answered over RPC with agy's schema's shapes.
func TestOtherPromptKindsAreShownAndAnswered(t *testing.T) {
	sc := scenario(
		agytest.Interact(agytest.InteractAction{Kind: "browserAction", Summary: "Click the login button", WaitMs: 1000}),
		agytest.Interact(agytest.InteractAction{Kind: "filePermission", Target: "/etc/hosts"}),
		agytest.Interact(agytest.InteractAction{Kind: "elicitation", Server: "github", Message: "Which repo?", Schema: `{"type":"object"}`}),
		agytest.Say("Done.", 1),
	)
	// Streamed: the session sees the prompt before agy moves on.
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc, UnstreamedPrompts: -1}, actors.Spec{})
	seq := r.turn("go")
	other := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
	assert.Equal(t, messages.KindOther, other.Kind)
	assert.Equal(t, "browserAction", other.Interaction)
	assert.Equal(t, "Click the login button", other.Text)
	assert.JSONEq(t, `{"browserAction":{}}`, string(other.Raw))
	r.ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.Seq > other.Seq-1 && e.State == messages.StateWaiting })
	err := r.resolve(messages.Resolve{ElicitationID: other.ElicitationID, Action: messages.ActionAccept})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "answer it in agy's terminal")
	gone := r.ev.waitFor(t, messages.EventElicitationResolved, func(e *messages.Event) bool { return e.ElicitationID == other.ElicitationID })
	assert.Equal(t, messages.ByExpired, gone.By)

	file := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > gone.Seq })
	assert.Equal(t, messages.KindPermission, file.Kind)
	assert.Equal(t, "filePermission", file.Interaction)
	assert.Equal(t, "/etc/hosts", file.Resource.Target)
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: file.ElicitationID, Action: messages.ActionAccept}))

	mcp := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > file.Seq })
	assert.Equal(t, messages.KindElicitation, mcp.Kind)
	require.NotNil(t, mcp.Elicitation)
	assert.Equal(t, "github", mcp.Elicitation.Server)
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: mcp.ElicitationID, Action: messages.ActionAccept, Content: json.RawMessage(`{"repo":"a/b"}`)}))
	r.ev.waitIdleAfter(t, mcp.Seq)

	steps := r.srv.Steps(r.s.ConversationID())
	var echoed []string
	for _, s := range steps {
		for _, ci := range s.CompletedInteractions {
			if ci.Response.FilePermission != nil {
				echoed = append(echoed, "file:"+ci.Response.FilePermission.Scope)
			}
			if ci.Response.Elicitation != nil {
				echoed = append(echoed, "mcp:"+ci.Response.Elicitation.Action+":"+ci.Response.Elicitation.ContentJSON)
			}
		}
	}
	assert.Equal(t, []string{"file:PERMISSION_SCOPE_ONCE", `mcp:accept:{"repo":"a/b"}`}, echoed)
	for _, e := range ofType(r.ev.all(), messages.EventError) {
		assert.False(t, strings.Contains(e.Message, "not delivered"), e.Message)
	}
}
