package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

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

// checkCommand validates a command's fields for its type.
func checkCommand(c messages.Command) error {
	switch c.Type {
	case messages.CommandTurn:
		if strings.TrimSpace(c.Text) == "" {
			return errors.New(`turn: "text" is required`)
		}
		if c.ElicitationID != "" || c.Action != "" || c.Choice != "" || len(c.Answers) > 0 {
			return errors.New(`turn: only "text" and "model" apply`)
		}
	case messages.CommandResolve:
		if c.ElicitationID == "" {
			return errors.New(`resolve: "elicitation_id" is required`)
		}
		if err := checkResolve(messages.Resolve{ElicitationID: c.ElicitationID, Action: c.Action, Answers: c.Answers, Choice: c.Choice}); err != nil {
			return err
		}
		if c.Text != "" || c.Model != "" {
			return errors.New(`resolve: only "elicitation_id", "action", "choice" and "answers" apply`)
		}
	case messages.CommandInterrupt, messages.CommandDetach:
		if c.Text != "" || c.Model != "" || c.ElicitationID != "" || c.Action != "" || c.Choice != "" || len(c.Answers) > 0 {
			return fmt.Errorf("%s: takes no fields", c.Type)
		}
	case "":
		return errors.New(`"type" is required (turn, resolve, interrupt or detach)`)
	default:
		return fmt.Errorf("unknown command type %q (want turn, resolve, interrupt or detach)", c.Type)
	}
	return nil
}

// checkResolve validates a resolve's action and the shape of its answers.
func checkResolve(r messages.Resolve) error {
	if err := r.ApplyChoice(); err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	switch r.Action {
	case messages.ActionAccept:
	case messages.ActionDecline, messages.ActionCancel:
		if len(r.Answers) > 0 {
			return fmt.Errorf("resolve: %s takes no answers", r.Action)
		}
	case "":
		return errors.New(`resolve: "action" is required (accept, decline or cancel)`)
	default:
		return fmt.Errorf("resolve: unknown action %q (want accept, decline or cancel)", r.Action)
	}
	for i, a := range r.Answers {
		if len(a.SelectedOptionIDs) == 0 && a.WriteIn == "" {
			return fmt.Errorf("resolve: answer %d: needs selected_option_ids or write_in", i+1)
		}
		for _, id := range a.SelectedOptionIDs {
			if id == "" {
				return fmt.Errorf("resolve: answer %d: empty option id", i+1)
			}
		}
	}
	return nil
}

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
