package rpc

import (
	"encoding/json"

	"github.com/agyharness/agyharness/rpc/internal/spare"
	"github.com/agyharness/agyharness/wire"
)

// Service is the fully qualified connect service agy's language server exposes.
const Service = "exa.language_server_pb.LanguageServerService"

// Method names of LanguageServerService used by the project.
const (
	MethodHeartbeat                    = "Heartbeat"
	MethodGetConversationMetadata      = "GetConversationMetadata"
	MethodGetCascadeTrajectorySteps    = "GetCascadeTrajectorySteps"
	MethodStreamAgentStateUpdates      = "StreamAgentStateUpdates"
	MethodStreamCascadeReactiveUpdates = "StreamCascadeReactiveUpdates"
	MethodHandleCascadeUserInteraction = "HandleCascadeUserInteraction"
	MethodSendUserCascadeMessage       = "SendUserCascadeMessage"
	MethodSendAgentMessage             = "SendAgentMessage"
	MethodCancelCascadeSteps           = "CancelCascadeSteps"
	MethodCancelCascadeInvocation      = "CancelCascadeInvocation"
	MethodForceStopCascadeTree         = "ForceStopCascadeTree"
	MethodGetAllCascadeTrajectories    = "GetAllCascadeTrajectories"
	MethodGetAvailableModels           = "GetAvailableModels"
	MethodStartCascade                 = "StartCascade"
	// MethodRevertToCascadeStep is what agy's /rewind very likely calls
	// (the schema's RevertToCascadeStep {cascadeId, stepIndex}; never
	// recorded): the harness never calls it, bench does, on the fake.
	MethodRevertToCascadeStep = "RevertToCascadeStep"
)

// CancelMethods are the interrupt methods in the order to try them: agy
// builds differ in which one stops generation.
var CancelMethods = []string{MethodCancelCascadeSteps, MethodCancelCascadeInvocation, MethodForceStopCascadeTree}

// ConversationRequest is {"conversationId"}.
type ConversationRequest struct {
	ConversationID string `json:"conversationId,omitempty"`
}

// ConversationMetadataResponse is GetConversationMetadata's answer.
type ConversationMetadataResponse struct {
	Metadata struct {
		RootConversationID string `json:"rootConversationId,omitempty"`
	} `json:"metadata"`
}

// CascadeRequest is {"cascadeId"}.
type CascadeRequest struct {
	CascadeID string `json:"cascadeId,omitempty"`
}

// StepsRequest is GetCascadeTrajectorySteps' request: the steps of a cascade
// from StepOffset on (a trajectory index; agy's field is step_offset).
type StepsRequest struct {
	CascadeID  string `json:"cascadeId,omitempty"`
	StepOffset int    `json:"stepOffset,omitempty"`
}

// StartCascadeRequest is StartCascade's request. Source is required by agy
// (SourceCLI for a harness); CascadeID is optional (agy mints one).
type StartCascadeRequest struct {
	CascadeID string `json:"cascadeId,omitempty"`
	Source    string `json:"source,omitempty"`
}

// SourceCLI is the trajectory source a CLI client names in StartCascade.
const SourceCLI = "CORTEX_TRAJECTORY_SOURCE_CLI"

// StepsResponse is GetCascadeTrajectorySteps' answer: one snapshot.
type StepsResponse struct {
	Steps []wire.Step `json:"steps"`
}

// StreamRequest is the single enveloped message of StreamAgentStateUpdates.
// A subscriber id must be unique: a repeated one closes the older stream.
type StreamRequest struct {
	ConversationID string `json:"conversationId,omitempty"`
	SubscriberID   string `json:"subscriberId,omitempty"`
}

// StreamFrame is one data envelope of StreamAgentStateUpdates.
type StreamFrame struct {
	Update StateUpdate `json:"update"`

	// The payload the frame was decoded from (Stream.Next), and where it
	// goes back on Release.
	buf  []byte
	home spare.Buffers
}

// Release gives the buffer the frame was read into back to its stream, for
// a later frame. Step.Raw of the frame's steps lies in that buffer: after
// Release, nothing that was read from the frame's Raw bytes may be used (its
// decoded strings and values stay valid: they are copies). Release is
// optional (an unreleased frame is collected as usual), safe to call more
// than once, and does nothing for a frame not returned by Stream.Next.
func (f *StreamFrame) Release() {
	if f == nil || f.buf == nil {
		return
	}
	f.home.Put(f.buf)
	f.buf, f.home = nil, nil
}

// StateUpdate is a frame's update: the conversation it concerns, the
// cascade's run status, and the changed steps.
type StateUpdate struct {
	ConversationID       string           `json:"conversationId,omitempty"`
	TrajectoryID         string           `json:"trajectoryId,omitempty"`
	Status               wire.RunStatus   `json:"status,omitempty"`
	MainTrajectoryUpdate TrajectoryUpdate `json:"mainTrajectoryUpdate"`
}

// TrajectoryUpdate wraps stepsUpdate.
type TrajectoryUpdate struct {
	StepsUpdate StepsUpdate `json:"stepsUpdate"`
}

// StepsUpdate is sparse and index-addressed: Indices[i] is the step index of
// Steps[i], and each step is a cumulative snapshot of that step. The first
// frame of a stream carries every prior step.
type StepsUpdate struct {
	Indices     []wire.Int  `json:"indices,omitempty"`
	Steps       []wire.Step `json:"steps,omitempty"`
	TotalLength wire.Int    `json:"totalLength,omitempty"`
}

// InteractionRequest is HandleCascadeUserInteraction's body.
type InteractionRequest struct {
	CascadeID   string                   `json:"cascadeId,omitempty"`
	Interaction wire.InteractionResponse `json:"interaction"`
}

// SendMessageRequest is SendUserCascadeMessage's body. The model is required
// per turn in CascadeConfig.PlannerConfig.PlanModel.
type SendMessageRequest struct {
	CascadeID     string          `json:"cascadeId,omitempty"`
	Items         []wire.TextItem `json:"items,omitempty"`
	CascadeConfig *CascadeConfig  `json:"cascadeConfig,omitempty"`
}

// CascadeConfig is cascadeConfig of a turn.
type CascadeConfig struct {
	PlannerConfig *wire.PlannerConfig `json:"plannerConfig,omitempty"`
}

// TrajectoriesResponse is GetAllCascadeTrajectories' answer, keyed by
// conversation id.
type TrajectoriesResponse struct {
	TrajectorySummaries map[string]TrajectorySummary `json:"trajectorySummaries,omitempty"`
}

// TrajectorySummary describes one conversation. Times are RFC 3339 strings
// and are absent (null) for a conversation just minted.
type TrajectorySummary struct {
	Status                 wire.RunStatus     `json:"status,omitempty"`
	StepCount              wire.Int           `json:"stepCount,omitempty"`
	TrajectoryID           string             `json:"trajectoryId,omitempty"`
	TrajectoryType         string             `json:"trajectoryType,omitempty"`
	TrajectoryMetadata     TrajectoryMetadata `json:"trajectoryMetadata"`
	LastUserInputTime      string             `json:"lastUserInputTime,omitempty"`
	LastModifiedTime       string             `json:"lastModifiedTime,omitempty"`
	LastUserInputStepIndex wire.Int           `json:"lastUserInputStepIndex,omitempty"`
}

// TrajectoryMetadata tells a subagent child (parentConversationId set, and a
// rootConversationId not its own) from a root conversation.
type TrajectoryMetadata struct {
	ParentConversationID string `json:"parentConversationId,omitempty"`
	RootConversationID   string `json:"rootConversationId,omitempty"`
}

// ModelsResponse is GetAvailableModels' answer.
type ModelsResponse struct {
	Response struct {
		Models map[string]wire.ModelInfo `json:"models,omitempty"`
	} `json:"response"`
}

// Empty is the {} request or response.
type Empty struct{}

// ErrorBody is a Connect error as JSON: {"code","message","details"}.
type ErrorBody struct {
	Code    string            `json:"code,omitempty"`
	Message string            `json:"message,omitempty"`
	Details []json.RawMessage `json:"details,omitempty"`
}

// EndStream is the JSON of a stream's final 0x02 envelope.
type EndStream struct {
	Error    *ErrorBody          `json:"error,omitempty"`
	Metadata map[string][]string `json:"metadata,omitempty"`
}

// AgentMessageRequest is SendAgentMessage's body. agy records it as a
// SYSTEM_MESSAGE: never use it for user turns.
type AgentMessageRequest struct {
	CascadeID string `json:"cascadeId,omitempty"`
	Message   string `json:"message,omitempty"`
}
