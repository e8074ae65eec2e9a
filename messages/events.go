package messages

import "time"

// EventType names an event of the public contract (DESIGN.md section 5).
type EventType string

// The event types.
const (
	EventStatus              EventType = "status"
	EventUserMessage         EventType = "user_message"
	EventReasoningDelta      EventType = "reasoning_delta"
	EventOutputTextDelta     EventType = "output_text_delta"
	EventMessage             EventType = "message"
	EventFunctionCall        EventType = "function_call"
	EventFunctionCallOutput  EventType = "function_call_output"
	EventElicitationRequest  EventType = "elicitation_request"
	EventElicitationResolved EventType = "elicitation_resolved"
	EventUsage               EventType = "usage"
	EventModelChanged        EventType = "model_changed"
	EventConversationRotated EventType = "conversation_rotated"
	EventUnknownStep         EventType = "unknown_step"
	EventError               EventType = "error"
)

// Status states of a status event.
const (
	StateRunning = "running"
	StateWaiting = "waiting"
	StateIdle    = "idle"
	StateError   = "error"
	// StateNoConversation: agy has no conversation yet (a fresh agy has
	// none until its first turn is typed); the session binds the first one
	// agy mints. Its conversation_id is empty.
	StateNoConversation = "no_conversation"
)

// Origins of a user_message.
const (
	OriginHarness  = "harness"
	OriginTerminal = "terminal"
)

// Elicitation kinds.
const (
	KindQuestion   = "question"
	KindPermission = "permission"
)

// Resolve actions.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Who resolved an elicitation.
const (
	ByHarness  = "harness"
	ByTerminal = "terminal"
	ByExpired  = "expired"
)

// Event is one conversation event, the unit of the public contract. It is
// sent as a pointer from the session to its subscribers, printed as one JSON
// line by the CLI and as an SSE data line by the host.
//
// The header (Type, ID, SessionID, ConversationID, Seq, Time) is on every
// event. ID is deterministic: the same step yields the same id in every run
// and after every restart, so consumers can dedup. Seq is per session and
// monotonic; the session assigns it (and SessionID) as it publishes.
// The other fields belong to particular types (see DESIGN.md section 5) and
// are omitted when empty; fields whose zero value is meaningful are pointers.
type Event struct {
	Type                 EventType `json:"type"`
	ID                   string    `json:"id"`
	SessionID            string    `json:"session_id"`
	ConversationID       string    `json:"conversation_id"`
	ParentConversationID string    `json:"parent_conversation_id,omitempty"`
	Seq                  uint64    `json:"seq"`
	Time                 time.Time `json:"time"`

	// status
	State string `json:"state,omitempty"`

	// user_message, message
	Text   string `json:"text,omitempty"`
	Origin string `json:"origin,omitempty"`
	Role   string `json:"role,omitempty"`

	// reasoning_delta, output_text_delta, message
	ItemID   string `json:"item_id,omitempty"`
	Delta    string `json:"delta,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`

	// function_call, function_call_output
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Output    string `json:"output,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"`

	// elicitation_request, elicitation_resolved
	ElicitationID      string       `json:"elicitation_id,omitempty"`
	Kind               string       `json:"kind,omitempty"`
	Questions          []Question   `json:"questions,omitempty"`
	Command            *CommandLine `json:"command,omitempty"`
	Resource           *Resource    `json:"resource,omitempty"`
	Action             string       `json:"action,omitempty"`
	By                 string       `json:"by,omitempty"`
	DeliveredStepIndex *int         `json:"delivered_step_index,omitempty"`

	// usage
	Model           string `json:"model,omitempty"`
	InputTokens     *int64 `json:"input_tokens,omitempty"`
	OutputTokens    *int64 `json:"output_tokens,omitempty"`
	ThinkingTokens  *int64 `json:"thinking_tokens,omitempty"`
	ResponseTokens  *int64 `json:"response_tokens,omitempty"`
	CacheReadTokens *int64 `json:"cache_read_tokens,omitempty"`
	ContextTokens   *int64 `json:"context_tokens,omitempty"`
	// TotalInputTokens and TotalOutputTokens are the conversation's running totals.
	TotalInputTokens  *int64 `json:"total_input_tokens,omitempty"`
	TotalOutputTokens *int64 `json:"total_output_tokens,omitempty"`

	// model_changed, conversation_rotated
	From        string `json:"from,omitempty"`
	To          string `json:"to,omitempty"`
	DisplayName string `json:"display_name,omitempty"`

	// unknown_step
	StepType  string `json:"step_type,omitempty"`
	StepIndex *int   `json:"step_index,omitempty"`

	// error
	Message   string `json:"message,omitempty"`
	Retryable *bool  `json:"retryable,omitempty"`
}

// Question is one question of a question elicitation.
type Question struct {
	Question     string   `json:"question"`
	Options      []Option `json:"options"`
	MultiSelect  bool     `json:"multi_select"`
	AllowWriteIn bool     `json:"allow_write_in"`
}

// Option is one answer option; ID is agy's option id ("1".."N").
type Option struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// CommandLine is the command a permission elicitation asks to run.
type CommandLine struct {
	Line string `json:"line"`
	Cwd  string `json:"cwd,omitempty"`
}

// Resource is what a permission elicitation asks about (action and target),
// for tools other than run_command as well.
type Resource struct {
	Action string `json:"action"`
	Target string `json:"target"`
}

// Ptr returns a pointer to v, for the optional fields of Event.
func Ptr[T any](v T) *T { return &v }
