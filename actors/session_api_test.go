package actors_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
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
