package httphost

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agyharness/agyharness/messages"
)

// CheckCommand validates a command's fields for its type (docs/EVENTS.md,
// "Commands"). What it cannot know (whether an elicitation is open,
// whether an option id exists) the session checks when the command runs.
func CheckCommand(c messages.Command) error {
	switch c.Type {
	case messages.CommandTurn:
		if strings.TrimSpace(c.Text) == "" {
			return errors.New(`turn: "text" is required`)
		}
		if c.ElicitationID != "" || c.Action != "" || len(c.Answers) > 0 {
			return errors.New(`turn: only "text" and "model" apply`)
		}
	case messages.CommandResolve:
		if c.ElicitationID == "" {
			return errors.New(`resolve: "elicitation_id" is required`)
		}
		if err := CheckResolve(messages.Resolve{ElicitationID: c.ElicitationID, Action: c.Action, Answers: c.Answers, Content: c.Content}); err != nil {
			return err
		}
		if c.Text != "" || c.Model != "" {
			return errors.New(`resolve: only "elicitation_id", "action", "answers" and "content" apply`)
		}
	case messages.CommandInterrupt, messages.CommandDetach:
		if c.Text != "" || c.Model != "" || c.ElicitationID != "" || c.Action != "" || len(c.Answers) > 0 || len(c.Content) > 0 {
			return fmt.Errorf("%s: takes no fields", c.Type)
		}
	case "":
		return errors.New(`"type" is required (turn, resolve, interrupt or detach)`)
	default:
		return fmt.Errorf("unknown command type %q (want turn, resolve, interrupt or detach)", c.Type)
	}
	return nil
}

// CheckResolve validates a resolve's action and the shape of its answers.
func CheckResolve(r messages.Resolve) error {
	switch r.Action {
	case messages.ActionAccept:
	case messages.ActionDecline, messages.ActionCancel:
		if len(r.Answers) > 0 {
			return fmt.Errorf("resolve: %s takes no answers", r.Action)
		}
		if len(r.Content) > 0 {
			return fmt.Errorf("resolve: %s takes no content", r.Action)
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
