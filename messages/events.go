package messages

// Public contract: the events a session publishes (docs/ARCHITECTURE.md, "The
// event contract").

import (
	"encoding/json"
	"time"
)

// EventType names an event of the public contract (docs/EVENTS.md).
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
	// EventConversationRewound: agy's trajectory was cut back to a step
	// (/rewind): to_step is the first index that changed, epoch counts the
	// rewinds; items from to_step on carry the epoch in their ids.
	EventConversationRewound EventType = "conversation_rewound"
)

// EventFunctionCallOutputDelta is a tool's output growing while it runs (a
// command's combined output): call_id, item_id, and delta or snapshot, as
// the text deltas have.
const EventFunctionCallOutputDelta EventType = "function_call_output_delta"

// Delta reports whether events of this type are deltas of an item's text
// (reasoning_delta, output_text_delta, function_call_output_delta): a
// lagging consumer may get consecutive ones of one item merged.
func (t EventType) Delta() bool {
	return t == EventOutputTextDelta || t == EventReasoningDelta || t == EventFunctionCallOutputDelta
}

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
	// KindElicitation is an MCP server's elicitation (a form or a URL),
	// answered with accept (and the form's content), decline or cancel.
	KindElicitation = "elicitation"
	// KindOther is an interaction whose answer the harness cannot give
	// (agy's answer shape is not known): it is shown, with agy's name for
	// it and its raw request, to be answered in agy's terminal, and it is
	// withdrawn when agy moves on.
	KindOther = "other"
)

// Tool kinds: the kind of a function_call and its function_call_output,
// the tool kinds of the Agent Client Protocol.
const (
	ToolRead    = "read"    // reads files or directories
	ToolEdit    = "edit"    // changes or creates files
	ToolDelete  = "delete"  // removes files or directories
	ToolMove    = "move"    // moves or renames files
	ToolSearch  = "search"  // searches files or code
	ToolExecute = "execute" // runs commands or code
	ToolThink   = "think"   // plans, delegates or reports progress
	ToolFetch   = "fetch"   // reads the web
	ToolOther   = "other"   // anything else
)

// Resolve actions.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Choices of a permission elicitation (Event.Choices, Resolve.Choice):
// agy's own dialog rows. ChoiceAllowOnce and ChoiceDeny are the RPC's
// allow true/false and are offered on every permission request; the two
// "always" rows exist only in agy's terminal dialog, so they are offered
// only where the session owns agy's pane (launch, acp) and are answered
// with agy's keys there (docs/DECISIONS.md "agy's options 2 and 3").
const (
	ChoiceAllowOnce               = "allow_once"                // agy's "Yes"
	ChoiceAllowAlwaysConversation = "allow_always_conversation" // "Yes, and always allow in this conversation ..."
	ChoiceAllowAlwaysSettings     = "allow_always_settings"     // "Yes, and always allow ... (Persist to settings.json)"
	ChoiceDeny                    = "deny"                      // agy's "No"
)

// ChoiceAction is the resolve action a choice stands for: accept for the
// allow choices, decline for deny, "" for an unknown choice.
func ChoiceAction(choice string) string {
	switch choice {
	case ChoiceAllowOnce, ChoiceAllowAlwaysConversation, ChoiceAllowAlwaysSettings:
		return ActionAccept
	case ChoiceDeny:
		return ActionDecline
	}
	return ""
}

// ChoiceAlways reports whether a choice is one of agy's "always" rows,
// which only agy's terminal dialog can give.
func ChoiceAlways(choice string) bool {
	return choice == ChoiceAllowAlwaysConversation || choice == ChoiceAllowAlwaysSettings
}

// Choice is one row of a permission elicitation: its id (Choice*), the
// action it stands for, and agy's words for it.
type Choice struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	Text   string `json:"text"`
}

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
// The other fields belong to particular types (see docs/EVENTS.md) and
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

	// user_message, message; an error of code ErrorTurnNotTaken: the turn's
	// text
	Text   string `json:"text,omitempty"`
	Origin string `json:"origin,omitempty"`
	Role   string `json:"role,omitempty"`

	// reasoning_delta, output_text_delta, message
	ItemID   string `json:"item_id,omitempty"`
	Delta    string `json:"delta,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`

	// function_call, function_call_output, function_call_output_delta
	// (call_id); a function_call_output_delta also has item_id, delta and
	// snapshot.
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Output    string `json:"output,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"`

	// The typed detail of a tool call, decided by the mapper per step type
	// (function_call, function_call_output; locations and diffs on a
	// permission elicitation_request too). Kind (below) is the tool kind
	// (ToolRead, ...) on these.
	Title     string     `json:"title,omitempty"`     // what the call does, in a line
	Locations []Location `json:"locations,omitempty"` // the files it reads or changes
	Diffs     []FileDiff `json:"diffs,omitempty"`     // an edit's changes, one per changed region
	Hits      []Hit      `json:"hits,omitempty"`      // a search's results (output), the first ones
	HitCount  *int       `json:"hit_count,omitempty"` // how many results the search found in all
	URL       string     `json:"url,omitempty"`       // what a web tool reads

	// elicitation_request, elicitation_resolved
	ElicitationID string `json:"elicitation_id,omitempty"`
	// Kind is an elicitation's kind (KindQuestion, KindPermission), or a
	// tool call's kind (ToolRead, ...).
	Kind               string       `json:"kind,omitempty"`
	Questions          []Question   `json:"questions,omitempty"`
	Command            *CommandLine `json:"command,omitempty"`
	Resource           *Resource    `json:"resource,omitempty"`
	Action             string       `json:"action,omitempty"`
	By                 string       `json:"by,omitempty"`
	DeliveredStepIndex *int         `json:"delivered_step_index,omitempty"`
	// Choices are a permission request's rows (allow once, deny, and where
	// the session owns agy's pane the two "always" rows); Choice on
	// elicitation_resolved is the one the harness gave.
	Choices []Choice `json:"choices,omitempty"`
	Choice  string   `json:"choice,omitempty"`
	// Interaction is agy's name for what it asks (the key of the step's
	// requestedInteraction: "filePermission", "elicitation", "runCommand",
	// "browserAction", ...), set on elicitation_request for the kinds beyond
	// agy's permission and question. Raw is agy's request as it came (at
	// most MaxInteractionRaw bytes; a bigger one is left out, and RawSize
	// says how big it was). Elicitation is an MCP elicitation's detail.
	Interaction string          `json:"interaction,omitempty"`
	Raw         json.RawMessage `json:"raw,omitempty"`
	RawSize     *int            `json:"raw_size,omitempty"`
	Elicitation *MCPElicitation `json:"elicitation,omitempty"`

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
	// Code is machine-readable on an error agy showed the user (an
	// ERROR_MESSAGE step): ErrorQuotaExhausted, ...; on the harness's own
	// errors it is empty but for ErrorTurnNotTaken (ShownByAgy tells the
	// two apart). Final is false on the notices agy writes while it
	// retries, true on the error that ended the attempt.
	Code  string `json:"code,omitempty"`
	Final *bool  `json:"final,omitempty"`

	// conversation_rewound
	ToStep *int `json:"to_step,omitempty"`
	Epoch  int  `json:"epoch,omitempty"`
}

// Codes of an error agy showed the user (Event.Code).
const (
	ErrorQuotaExhausted    = "quota_exhausted"    // 429 with reason QUOTA_EXHAUSTED: resets later
	ErrorRateLimited       = "rate_limited"       // 429 / RESOURCE_EXHAUSTED without a quota reason
	ErrorUsageLimit        = "usage_limit"        // 402: the plan's usage limit
	ErrorAccountIneligible = "account_ineligible" // 403 / PERMISSION_DENIED
	ErrorRefusal           = "refusal"            // content safety
	ErrorMaxTokens         = "max_tokens"         // an output token limit
	ErrorProviderError     = "provider_error"     // any other failure of the model provider
)

// ErrorTurnNotTaken is the code of the harness's own error for a turn agy
// accepted over RPC and then did not take: agy stays idle and its
// conversation does not show the turn, or agy took a turn sent after it
// first (an interrupt cancels the turns agy queued behind its run). The
// turn is not sent again; the driver may.
const ErrorTurnNotTaken = "turn_not_taken"

// ShownByAgy says whether the event is an error agy showed its user (an
// ERROR_MESSAGE step), not one of the harness's own.
func (e *Event) ShownByAgy() bool {
	return e.Type == EventError && e.Code != "" && e.Code != ErrorTurnNotTaken
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

// MCPElicitation is what an MCP server asks through agy (an elicitation
// elicitation_request): the server, its message, the mode ("form" or
// "url"), the URL to visit, and the JSON schema of the form's content.
type MCPElicitation struct {
	Server          string          `json:"server,omitempty"`
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message,omitempty"`
	URL             string          `json:"url,omitempty"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
}

// MaxInteractionRaw bounds the raw request an elicitation_request carries.
const MaxInteractionRaw = 4096

// Location is a file a tool call reads or changes; Line (1-based) where agy
// gives one, 0 otherwise.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// FileDiff is one change an edit makes to a file: OldText replaced by
// NewText, starting at Line (1-based) when agy says where. OldText is nil
// for a new file. Unified holds agy's own diff lines (" ", "-", "+"
// prefixed) when agy sent the change as a diff rather than as texts; the
// texts are then read from it (unchanged and removed lines make the old
// text, unchanged and added ones the new).
type FileDiff struct {
	Path    string  `json:"path"`
	OldText *string `json:"old_text,omitempty"`
	NewText string  `json:"new_text"`
	Line    int     `json:"line,omitempty"`
	Unified string  `json:"unified,omitempty"`
}

// Hit is one result of a search: a file, a line in it (1-based, 0 when the
// search gives none) and the text found there, or a web page (Path is its
// URL, Text its title).
type Hit struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
	Text string `json:"text,omitempty"`
}

// Ptr returns a pointer to v, for the optional fields of Event.
func Ptr[T any](v T) *T { return &v }
