package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agyharness/agyharness/httphost"
	"github.com/agyharness/agyharness/messages"
)

// parseCommand decodes and checks one JSON command line (docs/EVENTS.md,
// "Commands"). Unknown fields are refused, so a typo is reported instead of ignored.
// What it cannot know (whether an elicitation is open, whether an option id
// exists) the session checks when the command runs.
func parseCommand(line []byte) (messages.Command, error) {
	var c messages.Command
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("bad command JSON: %v", err)
	}
	if dec.More() {
		return c, errors.New("bad command JSON: more than one value on the line")
	}
	return c, checkCommand(c)
}

// checkCommand validates a command's fields for its type: the HTTP host's
// check, so a command line and a request are refused alike.
func checkCommand(c messages.Command) error { return httphost.CheckCommand(c) }

// checkResolve validates a resolve's action and the shape of its answers.
func checkResolve(r messages.Resolve) error { return httphost.CheckResolve(r) }

// cliErrorEvent is the error event the CLI prints for a command it refused
// or that failed. It is not part of the session's sequence: its seq is 0.
func cliErrorEvent(sessionID, conversationID string, n int, err error) *messages.Event {
	return &messages.Event{
		Type:           messages.EventError,
		ID:             fmt.Sprintf("cli/error/%d", n),
		SessionID:      sessionID,
		ConversationID: conversationID,
		Time:           time.Now().UTC(),
		Message:        err.Error(),
		Retryable:      messages.Ptr(false),
	}
}
