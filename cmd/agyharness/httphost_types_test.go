package main

import "github.com/agyharness/agyharness/httphost"

// sessionView is a session as GET /v1/sessions shows it.
type sessionView = httphost.SessionView

// hostTestToken is a token tokenfile.CheckBearer takes.
const hostTestToken = "host-test-token-0123456789"

const (
	maxBody         = httphost.MaxBody
	sessionLive     = httphost.SessionLive
	sessionNodeLost = httphost.SessionNodeLost
)

// apiError is the API's refusal body.
type apiError struct {
	Error string `json:"error"`
}
