package acp

import (
	"errors"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// TestQuotaErrorIsShownAndFailsThePromptWithItsCode: agy's quota
// exhaustion is shown in the thread as agy's text (not its retry notices)
// and the prompt ends in an error whose data carries the code.
func TestQuotaErrorIsShownAndFailsThePromptWithItsCode(t *testing.T) {
	r := startRig(t, fake(scenario(agytest.ProviderErr(agytest.ProviderQuota))), nil)
	sess := r.newSession(t)
	_, err := r.prompt(t, sess.SessionId, "hello")
	var re *sdk.RequestError
	require.True(t, errors.As(err, &re), "an error: %v", err)
	assert.Contains(t, re.Message, "Individual quota reached")
	data, _ := re.Data.(map[string]any)
	assert.Equal(t, messages.ErrorQuotaExhausted, data["code"], "data: %#v", re.Data)
	message, _ := texts(r.client.snapshot())
	assert.Contains(t, message, "agy: RESOURCE_EXHAUSTED (code 429): Individual quota reached.")
	assert.NotContains(t, message, "overloaded", "retry notices stay in the log")
}

// TestRunNobodyTypedIsForwardedOutsideAPrompt: agy woken by a background
// task after the prompt ended: its reply reaches the client as
// session/update notifications with no prompt open.
func TestRunNobodyTypedIsForwardedOutsideAPrompt(t *testing.T) {
	sc := scenario(agytest.Task(agytest.TaskAction{Line: "make test", After: 100, Reply: "The tests passed."}), agytest.Say("Started.", 1))
	r := startRig(t, fake(sc), nil)
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "run the tests")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	r.client.waitFor(t, "the woken run's reply", func(us []sdk.SessionNotification) bool {
		m, _ := texts(us)
		return strings.Contains(m, "The tests passed.")
	})
}

// TestRewindIsToldInTheThread: agy's /rewind is a note in the thread.
func TestRewindIsToldInTheThread(t *testing.T) {
	r := startRig(t, fake(scenario(agytest.Say("Done.", 1))), nil)
	sess := r.newSession(t)
	for _, text := range []string{"one", "two"} {
		_, err := r.prompt(t, sess.SessionId, text)
		require.NoError(t, err)
	}
	conv := r.srv.ConversationID()
	at := -1
	for i, st := range r.srv.Steps(conv) {
		if st.Type == wire.StepUserInput && st.UserInput.UserResponse == "two" {
			at = i
		}
	}
	require.NoError(t, r.srv.Rewind(conv, at))
	r.client.waitFor(t, "the rewind note", func(us []sdk.SessionNotification) bool {
		m, _ := texts(us)
		return strings.Contains(m, "rewound to step")
	})
}
