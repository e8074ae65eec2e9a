package mapper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// quotaText is the final text of agy's quota exhaustion as agy-acp's tests
// record it (docs/DECISIONS.md, "Errors agy shows the user").
const quotaText = "RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 3h35m25s."

const quotaDetails = `{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"reason\":\"QUOTA_EXHAUSTED\"}]}}`

// errorMessageStep is an ERROR_MESSAGE step: errorMessage.error with the
// short error, the full error, the provider's response and the text for
// the model/user.
func errorMessageStep(status wire.StepStatus, short, modelMsg, details string, show bool) wire.Step {
	m := meta()
	m.Source = wire.SourceSystem
	showJSON := ""
	if show {
		showJSON = `,"shouldShowUser":true`
	}
	return withBody(wire.Step{Type: StepErrorMessage, Status: status, Metadata: m},
		`"errorMessage":{"error":{"shortError":"`+short+`","fullError":"HTTP 429 Too Many Requests","details":"`+details+`","modelErrorMessage":"`+modelMsg+`"}`+showJSON+`}`)
}

// TestQuotaErrorMessagesBecomeErrorEvents: agy's retries (the overloaded
// notice) are errors that are not final and retryable; the last one is the
// quota exhaustion, final and not retryable, with agy's text; the ERROR
// planner step that may follow it adds no second generic error.
func TestQuotaErrorMessagesBecomeErrorEvents(t *testing.T) {
	notice := "The model API is currently overloaded and may experience intermittent errors."
	steps := []wire.Step{
		userStep("hello", "MODEL_M20"),
		errorMessageStep(wire.StatusDone, quotaText, notice, quotaDetails, false),
		systemStep("CORTEX_STEP_TYPE_EPHEMERAL_MESSAGE"),
		errorMessageStep(wire.StatusDone, quotaText, quotaText, quotaDetails, true),
		withBody(plannerStep(wire.StatusError, "", ""), `"error":{}`),
	}
	r := newTestReconciler()
	evs := r.Apply(snapshot(1, wire.RunIdle, steps...))
	var errs []messages.Event
	for _, e := range evs {
		if e.Type == messages.EventError {
			errs = append(errs, e)
		}
	}
	require.Len(t, errs, 2, "one per ERROR_MESSAGE step, no generic planner error: %v", types(evs))

	assert.Equal(t, testConv+"/1/error", errs[0].ID)
	assert.Equal(t, notice, errs[0].Message)
	assert.Equal(t, messages.ErrorQuotaExhausted, errs[0].Code)
	assert.Equal(t, messages.Ptr(true), errs[0].Retryable)
	assert.Equal(t, messages.Ptr(false), errs[0].Final)

	assert.Equal(t, testConv+"/3/error", errs[1].ID)
	assert.Equal(t, quotaText, errs[1].Message)
	assert.Equal(t, messages.ErrorQuotaExhausted, errs[1].Code)
	assert.Equal(t, messages.Ptr(false), errs[1].Retryable)
	assert.Equal(t, messages.Ptr(true), errs[1].Final)
	assert.Equal(t, messages.Ptr(3), errs[1].StepIndex)
	assert.Equal(t, "status:idle", types(evs)[len(evs)-1], "the turn still closes")

	// Applied again: nothing new.
	assert.Empty(t, r.Apply(snapshot(2, wire.RunIdle, steps...)))
}

// TestErrorMessageWaitsForItsTerminalCopy: a live copy says nothing yet.
func TestErrorMessageWaitsForItsTerminalCopy(t *testing.T) {
	r := newTestReconciler()
	live := errorMessageStep(wire.StatusRunning, quotaText, quotaText, quotaDetails, true)
	for _, e := range r.Apply(snapshot(1, wire.RunRunning, userStep("hi", ""), live)) {
		assert.NotEqual(t, messages.EventError, e.Type)
	}
	done := errorMessageStep(wire.StatusDone, quotaText, quotaText, quotaDetails, true)
	e := findEvent(t, r.Apply(snapshot(2, wire.RunRunning, userStep("hi", ""), done)), messages.EventError)
	assert.Equal(t, messages.ErrorQuotaExhausted, e.Code)
}

// TestClassifyErrorMessage: the codes from the provider's response and
// agy's wording.
func TestClassifyErrorMessage(t *testing.T) {
	cases := []struct {
		name, short, model, details string
		code                        string
		retryable                   bool
	}{
		{"quota", quotaText, quotaText, quotaDetails, messages.ErrorQuotaExhausted, false},
		{"rate limit", "RESOURCE_EXHAUSTED (code 429): Too many requests.", "RESOURCE_EXHAUSTED (code 429): Too many requests.",
			`{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}}`, messages.ErrorRateLimited, true},
		{"usage limit 402", "Payment Required", "Payment Required: You've reached your 5-hour standard usage limit (resets in 3h 21min).",
			`402 {\"detail\":\"You've reached your 5-hour standard usage limit (resets in 3h 21min)\",\"status\":402,\"title\":\"Payment Required\",\"displayToUser\":true}`,
			messages.ErrorUsageLimit, false},
		{"ineligible", "PERMISSION_DENIED (code 403)", "Eligibility check failed: Your current account is not eligible for Antigravity.", "",
			messages.ErrorAccountIneligible, false},
		{"token limit", "output token limit exceeded", "The response hit the output token limit.", "", messages.ErrorMaxTokens, false},
		{"other", "INTERNAL (code 500)", "Something went wrong.", `{\"error\":{\"code\":500,\"status\":\"INTERNAL\"}}`, messages.ErrorProviderError, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pe := ClassifyErrorMessage(ptr(roundTrip(errorMessageStep(wire.StatusDone, c.short, c.model, c.details, true))))
			assert.Equal(t, c.code, pe.Code)
			assert.Equal(t, c.retryable, pe.Retryable)
			assert.True(t, pe.Final)
			assert.Equal(t, c.model, pe.Text)
		})
	}
	// Untrusted sizes: agy's text is bounded.
	long := make([]byte, 3*maxErrorText)
	for i := range long {
		long[i] = 'x'
	}
	pe := ClassifyErrorMessage(ptr(errorMessageStep(wire.StatusDone, "s", string(long), "", true)))
	assert.LessOrEqual(t, len(pe.Text), maxErrorText+len("…"))
}

func ptr[T any](v T) *T { return &v }
