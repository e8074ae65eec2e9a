package messages

// Public contract: the commands a driver sends (docs/EVENTS.md, "Commands").

import "encoding/json"

// CommandType names a driver command (docs/EVENTS.md, "Commands").
type CommandType string

// The command types.
const (
	CommandTurn      CommandType = "turn"
	CommandResolve   CommandType = "resolve"
	CommandInterrupt CommandType = "interrupt"
	CommandDetach    CommandType = "detach"
)

// Command is one driver command as JSON: a CLI stdin line, a host request
// body (with Type implied by the endpoint), or built by Go callers.
type Command struct {
	Type CommandType `json:"type"`

	// turn
	Text  string `json:"text,omitempty"`
	Model string `json:"model,omitempty"`

	// resolve
	ElicitationID string          `json:"elicitation_id,omitempty"`
	Action        string          `json:"action,omitempty"`
	Answers       []Answer        `json:"answers,omitempty"`
	Content       json.RawMessage `json:"content,omitempty"`
}

// Answer answers one question of a question elicitation: the question text
// verbatim (or empty when the prompt has a single question), the selected
// option ids, and an optional write-in.
type Answer struct {
	Question          string   `json:"question,omitempty"`
	SelectedOptionIDs []string `json:"selected_option_ids,omitempty"`
	WriteIn           string   `json:"write_in,omitempty"`
}

// Resolve is a resolve command's payload.
type Resolve struct {
	ElicitationID string   `json:"elicitation_id"`
	Action        string   `json:"action"`
	Answers       []Answer `json:"answers,omitempty"`
	// Content is an MCP elicitation's form content (a JSON object), given
	// with accept; no other prompt takes it.
	Content json.RawMessage `json:"content,omitempty"`
}
