package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Int is an integer read tolerantly from proto3 JSON: agy writes 32-bit
// integers as numbers and 64-bit ones as strings, and some builds quote both.
// It accepts either form (and null, as zero) and writes a JSON number.
type Int int64

// UnmarshalJSON accepts 42, "42", and null.
func (n *Int) UnmarshalJSON(b []byte) error {
	v, err := parseInt(b)
	*n = Int(v)
	return err
}

// Int64 is a proto3 64-bit integer: read like Int, written as a JSON string
// ("17161"), as agy writes token counts.
type Int64 int64

// UnmarshalJSON accepts 42, "42", and null.
func (n *Int64) UnmarshalJSON(b []byte) error {
	v, err := parseInt(b)
	*n = Int64(v)
	return err
}

// MarshalJSON writes the value as a quoted decimal string.
func (n Int64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(n), 10) + `"`), nil
}

func parseInt(b []byte) (int64, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return 0, nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, err
		}
		if s == "" {
			return 0, nil
		}
		b = []byte(s)
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		// proto3 JSON allows an integral float such as 1e3 or 3.0.
		f, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, fmt.Errorf("wire: not an integer: %q", b)
		}
		return int64(f), nil
	}
	return v, nil
}

// StepType is a CORTEX_STEP_TYPE_* enum name. agy has dozens; unknown names
// are kept as they are, never rejected.
type StepType string

// Step types the project maps. Others pass through as unknown_step.
const (
	StepUserInput           StepType = "CORTEX_STEP_TYPE_USER_INPUT"
	StepPlannerResponse     StepType = "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
	StepRunCommand          StepType = "CORTEX_STEP_TYPE_RUN_COMMAND"
	StepAskQuestion         StepType = "CORTEX_STEP_TYPE_ASK_QUESTION"
	StepViewFile            StepType = "CORTEX_STEP_TYPE_VIEW_FILE"
	StepListDirectory       StepType = "CORTEX_STEP_TYPE_LIST_DIRECTORY"
	StepGeneric             StepType = "CORTEX_STEP_TYPE_GENERIC"
	StepCheckpoint          StepType = "CORTEX_STEP_TYPE_CHECKPOINT"
	StepConversationHistory StepType = "CORTEX_STEP_TYPE_CONVERSATION_HISTORY"
	StepSystemMessage       StepType = "CORTEX_STEP_TYPE_SYSTEM_MESSAGE"
	StepInvokeSubagent      StepType = "CORTEX_STEP_TYPE_INVOKE_SUBAGENT"
)

// Tool step types the fake emits and the mapper maps with typed detail
// (mapper's step table classifies every type agy is known to send).
const (
	StepCodeAction       StepType = "CORTEX_STEP_TYPE_CODE_ACTION"
	StepFileChange       StepType = "CORTEX_STEP_TYPE_FILE_CHANGE"
	StepGrepSearch       StepType = "CORTEX_STEP_TYPE_GREP_SEARCH"
	StepFind             StepType = "CORTEX_STEP_TYPE_FIND"
	StepViewFileOutline  StepType = "CORTEX_STEP_TYPE_VIEW_FILE_OUTLINE"
	StepReadURLContent   StepType = "CORTEX_STEP_TYPE_READ_URL_CONTENT"
	StepSearchWeb        StepType = "CORTEX_STEP_TYPE_SEARCH_WEB"
	StepCommandStatus    StepType = "CORTEX_STEP_TYPE_COMMAND_STATUS"
	StepSendCommandInput StepType = "CORTEX_STEP_TYPE_SEND_COMMAND_INPUT"
	StepMCPTool          StepType = "CORTEX_STEP_TYPE_MCP_TOOL"
	StepBrowserSubagent  StepType = "CORTEX_STEP_TYPE_BROWSER_SUBAGENT"
	StepTaskBoundary     StepType = "CORTEX_STEP_TYPE_TASK_BOUNDARY"
	StepNotifyUser       StepType = "CORTEX_STEP_TYPE_NOTIFY_USER"
)

// StepStatus is a CORTEX_STEP_STATUS_* enum name.
type StepStatus string

// Step statuses. The first five are live; the rest are terminal.
const (
	StatusPending     StepStatus = "CORTEX_STEP_STATUS_PENDING"
	StatusQueued      StepStatus = "CORTEX_STEP_STATUS_QUEUED"
	StatusRunning     StepStatus = "CORTEX_STEP_STATUS_RUNNING"
	StatusGenerating  StepStatus = "CORTEX_STEP_STATUS_GENERATING"
	StatusWaiting     StepStatus = "CORTEX_STEP_STATUS_WAITING"
	StatusDone        StepStatus = "CORTEX_STEP_STATUS_DONE"
	StatusError       StepStatus = "CORTEX_STEP_STATUS_ERROR"
	StatusCanceled    StepStatus = "CORTEX_STEP_STATUS_CANCELED"
	StatusCleared     StepStatus = "CORTEX_STEP_STATUS_CLEARED"
	StatusHalted      StepStatus = "CORTEX_STEP_STATUS_HALTED"
	StatusInterrupted StepStatus = "CORTEX_STEP_STATUS_INTERRUPTED"
	StatusInvalid     StepStatus = "CORTEX_STEP_STATUS_INVALID"
)

// Terminal reports whether a step in this status will not change again.
// An unknown status is treated as live.
func (s StepStatus) Terminal() bool {
	switch s {
	case StatusDone, StatusError, StatusCanceled, StatusCleared, StatusHalted, StatusInterrupted, StatusInvalid:
		return true
	}
	return false
}

// RunStatus is a cascade's CASCADE_RUN_STATUS_* enum name.
type RunStatus string

// Cascade run statuses.
const (
	RunIdle      RunStatus = "CASCADE_RUN_STATUS_IDLE"
	RunRunning   RunStatus = "CASCADE_RUN_STATUS_RUNNING"
	RunCanceling RunStatus = "CASCADE_RUN_STATUS_CANCELING"
	RunBusy      RunStatus = "CASCADE_RUN_STATUS_BUSY"
)

// Step sources.
const (
	SourceUserExplicit = "CORTEX_STEP_SOURCE_USER_EXPLICIT"
	SourceModel        = "CORTEX_STEP_SOURCE_MODEL"
	SourceSystem       = "CORTEX_STEP_SOURCE_SYSTEM"
)

// Step is one trajectory step. Raw holds the step exactly as agy sent it, so
// fields this version does not decode are never lost; the typed fields are
// the ones the project reads. Marshalling writes the typed fields only, in
// proto3 JSON (defaults omitted), which is how the fake server builds steps.
type Step struct {
	Raw json.RawMessage `json:"-"`

	Type     StepType     `json:"type,omitempty"`
	Status   StepStatus   `json:"status,omitempty"`
	Metadata StepMetadata `json:"metadata"`

	UserInput             *UserInput             `json:"userInput,omitempty"`
	PlannerResponse       *PlannerResponse       `json:"plannerResponse,omitempty"`
	RunCommand            *RunCommand            `json:"runCommand,omitempty"`
	AskQuestion           *AskQuestion           `json:"askQuestion,omitempty"`
	ViewFile              json.RawMessage        `json:"viewFile,omitempty"`
	ListDirectory         json.RawMessage        `json:"listDirectory,omitempty"`
	Generic               *Generic               `json:"generic,omitempty"`
	InvokeSubagent        *InvokeSubagent        `json:"invokeSubagent,omitempty"`
	SystemMessage         json.RawMessage        `json:"systemMessage,omitempty"`
	Checkpoint            json.RawMessage        `json:"checkpoint,omitempty"`
	RequestedInteraction  *Interaction           `json:"requestedInteraction,omitempty"`
	CompletedInteractions []CompletedInteraction `json:"completedInteractions,omitempty"`
	Permissions           json.RawMessage        `json:"permissions,omitempty"`
}

// UnmarshalJSON decodes the typed fields with encoding/json and keeps a
// copy of the raw bytes.
func (s *Step) UnmarshalJSON(b []byte) error {
	type plain Step
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Step(p)
	s.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// UnmarshalJSONFrom is UnmarshalJSON for json v2: the step is read once as a
// raw value, its typed fields are decoded from it (with the leniency
// encoding/json has: invalid UTF-8, repeated and differently cased names are
// accepted; whatever options the caller's decoder has, they apply to the
// raw read only), and Raw keeps a copy. Both decoders give equal steps for
// the same input (FuzzDecodeV1V2).
func (s *Step) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	b, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return placeError(dec, b, s.decode(b))
}

// decode sets s from the raw step b with json v2, Raw a copy of b.
func (s *Step) decode(b []byte) error {
	type plain Step
	*s = Step{} // decoded in place, as keepRawStep does
	if err := jsonv2.Unmarshal(b, (*plain)(s), decodeOptions); err != nil {
		return err
	}
	s.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Index is the step's index in its trajectory (metadata.sourceTrajectoryStepInfo.stepIndex;
// 0 when absent, as proto3 omits it).
func (s *Step) Index() int { return int(s.Metadata.SourceTrajectoryStepInfo.StepIndex) }

// TrajectoryID is the trajectory the step belongs to.
func (s *Step) TrajectoryID() string { return s.Metadata.SourceTrajectoryStepInfo.TrajectoryID }

// StepMetadata is a step's metadata block.
type StepMetadata struct {
	Source                   string      `json:"source,omitempty"`
	ToolCall                 *ToolCall   `json:"toolCall,omitempty"`
	ExecutionID              string      `json:"executionId,omitempty"`
	SourceTrajectoryStepInfo StepInfo    `json:"sourceTrajectoryStepInfo"`
	ModelUsage               *ModelUsage `json:"modelUsage,omitempty"`
	GeneratorModel           string      `json:"generatorModel,omitempty"`
	RequestedModel           *ModelRef   `json:"requestedModel,omitempty"`
	CreatedAt                string      `json:"createdAt,omitempty"`
	CompletedAt              string      `json:"completedAt,omitempty"`
	ToolSummary              string      `json:"toolSummary,omitempty"`
	ToolAction               string      `json:"toolAction,omitempty"`
}

// StepInfo locates a step: metadata.sourceTrajectoryStepInfo.
type StepInfo struct {
	TrajectoryID string `json:"trajectoryId,omitempty"`
	StepIndex    Int    `json:"stepIndex,omitempty"`
	CascadeID    string `json:"cascadeId,omitempty"`
}

// ToolCall is metadata.toolCall on tool steps (absent from streamed copies).
type ToolCall struct {
	ID            string `json:"id,omitempty"`
	Name          string `json:"name,omitempty"`
	ArgumentsJSON string `json:"argumentsJson,omitempty"`
}

// ModelUsage is metadata.modelUsage: token counts as proto3 64-bit strings.
type ModelUsage struct {
	Model                string `json:"model,omitempty"`
	InputTokens          Int64  `json:"inputTokens,omitempty"`
	OutputTokens         Int64  `json:"outputTokens,omitempty"`
	ThinkingOutputTokens Int64  `json:"thinkingOutputTokens,omitempty"`
	ResponseOutputTokens Int64  `json:"responseOutputTokens,omitempty"`
	CacheReadTokens      Int64  `json:"cacheReadTokens,omitempty"`
}

// ModelRef is {"model": "MODEL_..."}.
type ModelRef struct {
	Model string `json:"model,omitempty"`
}

// UserInput is a USER_INPUT step's body.
type UserInput struct {
	Items        []TextItem  `json:"items,omitempty"`
	UserResponse string      `json:"userResponse,omitempty"`
	UserConfig   *UserConfig `json:"userConfig,omitempty"`
}

// TextItem is one {"text": ...} item of a turn.
type TextItem struct {
	Text string `json:"text,omitempty"`
}

// UserConfig is userInput.userConfig.
type UserConfig struct {
	PlannerConfig *PlannerConfig `json:"plannerConfig,omitempty"`
}

// PlannerConfig carries the model of a turn: planModel when sent over RPC,
// requestedModel.model in some builds. Model returns whichever is set.
type PlannerConfig struct {
	PlanModel      string    `json:"planModel,omitempty"`
	RequestedModel *ModelRef `json:"requestedModel,omitempty"`
}

// Model is the turn's model enum, or "".
func (p *PlannerConfig) Model() string {
	if p == nil {
		return ""
	}
	if p.RequestedModel != nil && p.RequestedModel.Model != "" {
		return p.RequestedModel.Model
	}
	return p.PlanModel
}

// PlannerResponse is a PLANNER_RESPONSE step's body. While GENERATING only
// thinking and modifiedResponse grow; response appears at DONE.
type PlannerResponse struct {
	Thinking         string     `json:"thinking,omitempty"`
	ModifiedResponse string     `json:"modifiedResponse,omitempty"`
	Response         string     `json:"response,omitempty"`
	MessageID        string     `json:"messageId,omitempty"`
	StopReason       string     `json:"stopReason,omitempty"`
	ToolCalls        []ToolCall `json:"toolCalls,omitempty"`

	// While a stream decodes a frame: where the texts (by slot) that are
	// JSON strings still to decode lie in the frame's payload. Nil in every
	// PlannerResponse handed out.
	raw *[plannerTexts]textSpan
}

// RunCommand is a RUN_COMMAND step's body.
type RunCommand struct {
	CommandLine         string          `json:"commandLine,omitempty"`
	ProposedCommandLine string          `json:"proposedCommandLine,omitempty"`
	Cwd                 string          `json:"cwd,omitempty"`
	ExitCode            Int             `json:"exitCode,omitempty"`
	CombinedOutput      *CombinedOutput `json:"combinedOutput,omitempty"`
}

// CombinedOutput is runCommand.combinedOutput.
type CombinedOutput struct {
	Full string `json:"full,omitempty"`
}

// AskQuestion is an ASK_QUESTION step's body, and the askQuestion variant of
// a requested interaction.
type AskQuestion struct {
	Questions []Question `json:"questions,omitempty"`
}

// Question is one question with its options (ids "1".."N").
type Question struct {
	Question          string   `json:"question,omitempty"`
	Options           []Option `json:"options,omitempty"`
	SelectedOptionIDs []string `json:"selectedOptionIds,omitempty"`
	WriteInResponse   string   `json:"writeInResponse,omitempty"`
}

// Option is one answer option of a question.
type Option struct {
	ID   string `json:"id,omitempty"`
	Text string `json:"text,omitempty"`
}

// Interaction is requestedInteraction (what a WAITING step asks) and the
// request half of a completed interaction.
//
// agy's schema has more variants (runCommand, mcp, readUrlContent,
// sendCommandInput, browser actions, deploy, ...): those carry no detail of
// their own and are read from the step's raw bytes by their key (mapper).
type Interaction struct {
	AskQuestion    *AskQuestion           `json:"askQuestion,omitempty"`
	Permission     *PermissionRequest     `json:"permission,omitempty"`
	FilePermission *FilePermissionRequest `json:"filePermission,omitempty"`
	Elicitation    *ElicitationRequest    `json:"elicitation,omitempty"`
}

// FilePermissionRequest is requestedInteraction.filePermission: access to a
// file agy's rules block (outside the workspace, or gitignored). From agy's
// schema; no live copy was recorded.
type FilePermissionRequest struct {
	AbsolutePathURI string `json:"absolutePathUri,omitempty"`
	IsDirectory     bool   `json:"isDirectory,omitempty"`
	BlockReason     string `json:"blockReason,omitempty"`
}

// ElicitationRequest is requestedInteraction.elicitation: an MCP server's
// elicitation (a form, or a URL to visit). From agy's schema; no live copy
// was recorded.
type ElicitationRequest struct {
	ServerName          string `json:"serverName,omitempty"`
	Mode                string `json:"mode,omitempty"`
	Message             string `json:"message,omitempty"`
	RequestedSchemaJSON string `json:"requestedSchemaJson,omitempty"`
	URL                 string `json:"url,omitempty"`
}

// PermissionRequest is requestedInteraction.permission.
type PermissionRequest struct {
	Resource          *Resource `json:"resource,omitempty"`
	ActionDescription string    `json:"actionDescription,omitempty"`
	// SuggestedPersistPattern is the command prefix agy's dialog offers to
	// allow always ("pwd" for pwd, recorded).
	SuggestedPersistPattern string `json:"suggestedPersistPattern,omitempty"`
}

// Resource is what a permission prompt asks about.
type Resource struct {
	Action string `json:"action,omitempty"`
	Target string `json:"target,omitempty"`
}

// CompletedInteraction is one entry of completedInteractions.
type CompletedInteraction struct {
	Request  *Interaction         `json:"request,omitempty"`
	Response *InteractionResponse `json:"response,omitempty"`
}

// InteractionResponse is the interaction payload of HandleCascadeUserInteraction,
// echoed back in completedInteractions[].response. TrajectoryID and StepIndex
// must sit inside it: agy drops top-level extras silently.
type InteractionResponse struct {
	TrajectoryID string             `json:"trajectoryId,omitempty"`
	StepIndex    Int                `json:"stepIndex,omitempty"`
	AskQuestion  *QuestionResponses `json:"askQuestion,omitempty"`
	Permission   *PermissionAnswer  `json:"permission,omitempty"`
	// The answers of agy's schema for the file-permission and MCP
	// elicitation variants (never recorded live).
	FilePermission *FilePermissionAnswer `json:"filePermission,omitempty"`
	Elicitation    *ElicitationAnswer    `json:"elicitation,omitempty"`
}

// Variants counts the answer variants set (a valid answer has one).
func (in *InteractionResponse) Variants() int {
	n := 0
	for _, set := range []bool{in.AskQuestion != nil, in.Permission != nil, in.FilePermission != nil, in.Elicitation != nil} {
		if set {
			n++
		}
	}
	return n
}

// FilePermissionAnswer answers a filePermission request: allowed or not,
// for how long (PermissionScopeOnce), and the path it was asked for.
type FilePermissionAnswer struct {
	Allow           bool   `json:"allow,omitempty"`
	Scope           string `json:"scope,omitempty"`
	AbsolutePathURI string `json:"absolutePathUri,omitempty"`
}

// Permission scopes of a FilePermissionAnswer.
const (
	PermissionScopeOnce         = "PERMISSION_SCOPE_ONCE"
	PermissionScopeConversation = "PERMISSION_SCOPE_CONVERSATION"
)

// ElicitationAnswer answers an MCP elicitation: MCP's action ("accept",
// "decline", "cancel") and, on accept, the form's content as a JSON text.
type ElicitationAnswer struct {
	Action      string `json:"action,omitempty"`
	ContentJSON string `json:"contentJson,omitempty"`
}

// QuestionResponses is the askQuestion answer variant. No responses at all
// declines the question: it is written {"responses":[]}, as agy takes a
// declined question.
type QuestionResponses struct {
	Responses []QuestionResponse `json:"responses"`
}

// MarshalJSON writes no responses as [] (a decline), never null.
func (q QuestionResponses) MarshalJSON() ([]byte, error) {
	type plain QuestionResponses
	if q.Responses == nil {
		q.Responses = []QuestionResponse{}
	}
	return json.Marshal(plain(q))
}

// Declined reports whether the answer declines the question (no responses).
func (q *QuestionResponses) Declined() bool { return q != nil && len(q.Responses) == 0 }

// QuestionResponse answers one question, quoting it verbatim.
type QuestionResponse struct {
	Question          string   `json:"question,omitempty"`
	SelectedOptionIDs []string `json:"selectedOptionIds,omitempty"`
	WriteInResponse   string   `json:"writeInResponse,omitempty"`
}

// PermissionAnswer is the permission answer variant ({"allow": false} is
// written as {} in proto3 JSON, and read back as deny).
type PermissionAnswer struct {
	Allow bool `json:"allow,omitempty"`
}

// Generic is a GENERIC step's body (tools without a dedicated step type).
type Generic struct {
	Args   json.RawMessage `json:"args,omitempty"`
	Result *GenericResult  `json:"result,omitempty"`
}

// GenericResult is generic.result.
type GenericResult struct {
	Result string `json:"result,omitempty"`
}

// InvokeSubagent is an INVOKE_SUBAGENT step's body. agy 1.1.9 lists the
// subagents it spawns (Subagents) and fills Results in positionally, each
// conversationId as soon as that child exists.
type InvokeSubagent struct {
	Subagents []SubagentSpec   `json:"subagents,omitempty"`
	Results   []SubagentResult `json:"results,omitempty"`
}

// SubagentSpec is one subagent an INVOKE_SUBAGENT step spawns.
type SubagentSpec struct {
	Role     string `json:"role,omitempty"`
	TypeName string `json:"typeName,omitempty"`
}

// SubagentResult names one child conversation.
type SubagentResult struct {
	ConversationID string `json:"conversationId,omitempty"`
}

// ModelInfo describes one model of GetAvailableModels' catalog; Model is the
// enum to send as planModel.
type ModelInfo struct {
	Model            string `json:"model,omitempty"`
	DisplayName      string `json:"displayName,omitempty"`
	Recommended      bool   `json:"recommended,omitempty"`
	SupportsThinking bool   `json:"supportsThinking,omitempty"`
	ThinkingBudget   Int    `json:"thinkingBudget,omitempty"`
}
