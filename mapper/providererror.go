package mapper

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// StepErrorMessage is agy's ERROR_MESSAGE step: an error it shows the user
// (a quota or usage limit, a provider failure), written once per attempt
// while it retries.
const StepErrorMessage wire.StepType = "CORTEX_STEP_TYPE_ERROR_MESSAGE"

// maxErrorText bounds the text of an error event taken from agy.
const maxErrorText = 4 << 10

// overloadedNotice begins the text agy writes on the ERROR_MESSAGE steps of
// the attempts it will retry (docs/DECISIONS.md, "Errors agy shows the user").
const overloadedNotice = "The model API is currently overloaded"

// ProviderError is what an ERROR_MESSAGE step says, classified.
type ProviderError struct {
	Text      string // what agy shows the user
	Code      string // messages.Error*
	Retryable bool   // trying again (now or later) may succeed without a change of plan or account
	Final     bool   // the attempt ended with it (not a notice of a retry to come)
	Shown     bool   // shouldShowUser
}

// errorMessageBody is the part of an ERROR_MESSAGE step the mapper reads
// (trajectory.proto CortexStepErrorMessage and CortexErrorDetails).
type errorMessageBody struct {
	ErrorMessage struct {
		Error          errorDetails `json:"error"`
		ShouldShowUser bool         `json:"shouldShowUser"`
	} `json:"errorMessage"`
	Error errorDetails `json:"error"`
}

type errorDetails struct {
	UserErrorMessage  string          `json:"userErrorMessage"`
	ShortError        string          `json:"shortError"`
	FullError         string          `json:"fullError"`
	ModelErrorMessage string          `json:"modelErrorMessage"`
	Details           string          `json:"details"`
	ErrorCode         json.RawMessage `json:"errorCode"`
}

// ClassifyErrorMessage reads an ERROR_MESSAGE step. Its text is the first
// non-empty of errorMessage.error.userErrorMessage, .modelErrorMessage,
// .shortError and the step's error.userErrorMessage; its code comes from the
// provider's response (errorMessage.error.details, when it is JSON), the
// error code, and the wording of the texts.
func ClassifyErrorMessage(s *wire.Step) ProviderError {
	var b errorMessageBody
	_ = json.Unmarshal(s.Raw, &b)
	d := b.ErrorMessage.Error
	pe := ProviderError{Shown: b.ErrorMessage.ShouldShowUser}
	for _, t := range []string{d.UserErrorMessage, d.ModelErrorMessage, d.ShortError, b.Error.UserErrorMessage, b.Error.ShortError} {
		if strings.TrimSpace(t) != "" {
			pe.Text = t
			break
		}
	}
	// A retry notice: agy's "overloaded" text while the error itself says
	// something else (the final attempt's text is the error's own).
	notice := strings.HasPrefix(strings.TrimSpace(d.ModelErrorMessage), overloadedNotice) &&
		d.UserErrorMessage == "" && d.ShortError != "" && d.ShortError != d.ModelErrorMessage
	if notice {
		// The notice is what agy shows; the error behind it says why.
		pe.Text = d.ModelErrorMessage
	}
	pe.Final = !notice
	if pe.Text == "" {
		pe.Text = "agy reported an error"
	}
	pe.Text = clip(pe.Text, maxErrorText)

	httpCode, status, reasons := providerResponse(d.Details)
	if httpCode == 0 {
		if n, err := strconv.Atoi(strings.Trim(string(d.ErrorCode), `"`)); err == nil {
			httpCode = n
		}
	}
	all := strings.ToLower(strings.Join([]string{d.UserErrorMessage, d.ShortError, d.FullError, d.ModelErrorMessage, d.Details, b.Error.UserErrorMessage}, "\n"))
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(all, w) {
				return true
			}
		}
		return false
	}
	switch {
	case reasons["QUOTA_EXHAUSTED"] || (httpCode == 429 || status == "RESOURCE_EXHAUSTED") && has("quota"):
		pe.Code = messages.ErrorQuotaExhausted
	case httpCode == 402 || has("payment required", "usage limit"):
		pe.Code = messages.ErrorUsageLimit
	case httpCode == 429 || status == "RESOURCE_EXHAUSTED" || has("resource_exhausted", "rate limit"):
		pe.Code = messages.ErrorRateLimited
	case httpCode == 403 || status == "PERMISSION_DENIED" || has("eligibility check failed", "permission_denied"):
		pe.Code = messages.ErrorAccountIneligible
	case has("content safety", "safety filter", "blocked by safety"):
		pe.Code = messages.ErrorRefusal
	case has("output token limit", "token limit exceeded", "maximum token limit"):
		pe.Code = messages.ErrorMaxTokens
	default:
		pe.Code = messages.ErrorProviderError
	}
	switch pe.Code {
	case messages.ErrorRateLimited, messages.ErrorProviderError:
		pe.Retryable = true
	}
	if !pe.Final {
		pe.Retryable = true // agy retries it itself
	}
	return pe
}

// providerResponse reads the provider's JSON answer agy keeps in
// errorMessage.error.details ({"error":{"code":429,"status":...,
// "details":[{"reason":...}]}}), or a 402 body ({"status":402,...}),
// possibly after a leading status code ("402 {...}").
func providerResponse(details string) (code int, status string, reasons map[string]bool) {
	reasons = map[string]bool{}
	s := strings.TrimSpace(details)
	if i := strings.IndexByte(s, '{'); i > 0 && i <= 4 {
		if n, err := strconv.Atoi(strings.TrimSpace(s[:i])); err == nil {
			code = n
		}
		s = s[i:]
	}
	var body struct {
		Error *struct {
			Code    json.Number `json:"code"`
			Status  string      `json:"status"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
		Status json.Number `json:"status"`
	}
	if json.Unmarshal([]byte(s), &body) != nil {
		return code, "", reasons
	}
	if body.Error != nil {
		if n, err := body.Error.Code.Int64(); err == nil {
			code = int(n)
		}
		status = body.Error.Status
		for _, d := range body.Error.Details {
			reasons[d.Reason] = true
		}
	}
	if n, err := body.Status.Int64(); err == nil && code == 0 {
		code = int(n)
	}
	return code, status, reasons
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// errorMessage maps an ERROR_MESSAGE step to an error event, once, at its
// terminal copy.
func (r *Reconciler) errorMessage(index int, s *wire.Step, st *slot) {
	if st.committed || !s.Status.Terminal() {
		return
	}
	st.committed = true
	pe := ClassifyErrorMessage(s)
	e := r.event(messages.EventError, r.itemID(index, "error"))
	e.Message = pe.Text
	e.Code = pe.Code
	e.Retryable = messages.Ptr(pe.Retryable)
	e.Final = messages.Ptr(pe.Final)
	e.StepIndex = messages.Ptr(index)
	r.emit(e)
	if pe.Final {
		r.turnError = pe.Text
	}
}
