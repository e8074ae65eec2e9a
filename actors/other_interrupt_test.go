package actors_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// An interrupt while agy waits on a prompt of kind other: the harness has no
// answer for it and does not decline it, so when agy moves on the prompt is
// withdrawn (by: expired), never resolved by the harness.
func TestInterruptDuringAnOtherPromptDoesNotClaimIt(t *testing.T) {
	sc := scenario(
		agytest.Interact(agytest.InteractAction{Kind: "browserAction", Summary: "Click the login button", WaitMs: 500}),
		agytest.Say("Done.", 1),
	)
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc, UnstreamedPrompts: -1}, actors.Spec{})
	seq := r.turn("go")
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
	require.Equal(t, messages.KindOther, req.Kind)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	_ = r.s.Interrupt(ctx) // agy's cancel changes nothing while it waits: the outcome is not the point
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(e *messages.Event) bool { return e.ElicitationID == req.ElicitationID })
	assert.Equal(t, messages.ByExpired, res.By, "the harness never answered it: withdrawn")
}
