package mapper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// TestSubagentsAsAgy119SendsThem: INVOKE_SUBAGENT DONE at spawn, its body
// listing subagents[]{role, typeName} and results[] positionally: the
// children are known (their parent step already terminal), the call's
// title and the children's titles come from the roles.
func TestSubagentsAsAgy119SendsThem(t *testing.T) {
	s := wire.Step{Type: wire.StepInvokeSubagent, Status: wire.StatusDone, Metadata: meta(), InvokeSubagent: &wire.InvokeSubagent{
		Subagents: []wire.SubagentSpec{{Role: "API researcher", TypeName: "research"}, {TypeName: "reviewer"}},
		Results:   []wire.SubagentResult{{ConversationID: "child-a"}, {ConversationID: "child-b"}},
	}}
	r := newTestReconciler()
	evs := r.Apply(snapshot(0, wire.RunRunning, userStep("x", ""), s))
	assert.Equal(t, []Child{
		{ConversationID: "child-a", ParentStepIndex: 1, ParentTerminal: true, Title: "API researcher"},
		{ConversationID: "child-b", ParentStepIndex: 1, ParentTerminal: true, Title: "reviewer"},
	}, r.Children())
	call := findEvent(t, evs, messages.EventFunctionCall)
	assert.Equal(t, "Subagents: API researcher, reviewer", call.Title)
	out := findEvent(t, evs, messages.EventFunctionCallOutput)
	require.Contains(t, out.Output, "child-a (API researcher)")
	assert.Contains(t, out.Output, "child-b (reviewer)")
}
