package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
)

func TestOpenElicitationsAndAResolvedOneRefused(t *testing.T) {
	sc := scenario(agytest.Run(agytest.CommandAction{Line: "make", NeedsApproval: true}), agytest.Say("Made.", 1))
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	assert.False(t, r.s.Attached().IsZero(), "attached once Attach returned")
	assert.Empty(t, r.s.OpenElicitations())

	seq := r.turn("build it")
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.Eventually(t, func() bool {
		open := r.s.OpenElicitations()
		return len(open) == 1 && open[0] == req.ElicitationID
	}, waitLong, time.Millisecond)

	err := r.resolve(messages.Resolve{ElicitationID: "nope", Action: messages.ActionAccept})
	require.ErrorIs(t, err, actors.ErrUnknownElicitation)
	assert.NotErrorIs(t, err, actors.ErrElicitationResolved, "never open: unknown, not resolved")
	assert.EqualError(t, err, `actors: resolve: no open elicitation "nope"`, "named once by the package")

	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}))
	r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	require.Eventually(t, func() bool { return len(r.s.OpenElicitations()) == 0 }, waitLong, time.Millisecond)

	err = r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept})
	require.ErrorIs(t, err, actors.ErrElicitationResolved)
	assert.ErrorIs(t, err, actors.ErrUnknownElicitation, "a resolved prompt is not open either")
}

// promptWithSlowAnswers runs a turn whose command (line, printing output)
// asks for approval, and holds the next answer to agy up for 500 ms.
func promptWithSlowAnswers(t *testing.T, line, output string) (*rig, *messages.Event) {
	t.Helper()
	sc := scenario(agytest.Run(agytest.CommandAction{Line: line, Output: output, NeedsApproval: true}), agytest.Say("Done.", 1))
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	seq := r.turn("run " + line)
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlow, Method: rpc.MethodHandleCascadeUserInteraction, Count: 1, Duration: 500 * time.Millisecond})
	return r, req
}

// A prompt takes one answer at a time: a second Resolve while the first is
// on its way is refused, and the first is the one agy takes and the event
// reports (else the second would be reported, or land on agy's next ask).
func TestASecondAnswerWhileTheFirstIsOnItsWayIsRefused(t *testing.T) {
	r, req := promptWithSlowAnswers(t, "make", "made\n")

	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}))
	err := r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionDecline})
	require.ErrorIs(t, err, actors.ErrAnswerOnItsWay)
	assert.ErrorIs(t, err, actors.ErrElicitationResolved, "to a caller, answered already")

	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	assert.Equal(t, messages.ByHarness, res.By)
	assert.Equal(t, messages.ActionAccept, res.Action, "the answer agy took")
	r.ev.waitFor(t, messages.EventFunctionCallOutput, func(ev *messages.Event) bool { return ev.Output == "made\n" })
	assert.Equal(t, 1, r.srv.Calls(rpc.MethodHandleCascadeUserInteraction), "one answer sent")
}

// An interrupt declines the prompts agy waits on; an answer given while
// that decline is on its way is refused, not reported as the one agy took
// (the bench found it reported by the harness on a step agy cancelled).
func TestAnAnswerWhileAnInterruptDeclinesThePromptIsRefused(t *testing.T) {
	r, req := promptWithSlowAnswers(t, "make deploy", "deployed\n")

	interrupted := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		interrupted <- r.s.Interrupt(ctx)
	}()
	// The interrupt's decline has reached agy (and waits there).
	require.Eventually(t, func() bool { return r.srv.Calls(rpc.MethodHandleCascadeUserInteraction) == 1 }, waitLong, time.Millisecond)
	err := r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept})
	require.ErrorIs(t, err, actors.ErrAnswerOnItsWay)
	require.NoError(t, <-interrupted)

	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	assert.Equal(t, messages.ByHarness, res.By)
	assert.NotEqual(t, messages.ActionAccept, res.Action, "the interrupt's decline")
	r.ev.waitIdleAfter(t, res.Seq)
	for _, ev := range r.ev.all() {
		assert.False(t, ev.Type == messages.EventFunctionCallOutput && ev.Output == "deployed\n", "the declined command never ran")
	}
}
