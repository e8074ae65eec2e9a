package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"

	"github.com/agyharness/agyharness/wire"
)

// Heartbeat checks that the port is a live language server (200 to {}).
// Without a context deadline, Config.ProbeTimeout applies.
func (c *Client) Heartbeat(ctx context.Context) error {
	return c.call(ctx, c.cfg.ProbeTimeout, MethodHeartbeat, Empty{}, nil)
}

// GetConversationMetadata asks the server about a conversation; a server that
// hosts it echoes metadata.rootConversationId, one that does not answers 500
// "trajectory not found" (ErrTrajectoryNotFound). Without a context
// deadline, Config.ProbeTimeout applies.
func (c *Client) GetConversationMetadata(ctx context.Context, conversationID string) (*ConversationMetadataResponse, error) {
	if conversationID == "" {
		return nil, invalidArgument(MethodGetConversationMetadata, "empty conversation id")
	}
	var resp ConversationMetadataResponse
	if err := c.call(ctx, c.cfg.ProbeTimeout, MethodGetConversationMetadata, ConversationRequest{ConversationID: conversationID}, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// ConversationMatches reports whether this port serves the conversation: a
// Heartbeat succeeds and GetConversationMetadata echoes the id as
// rootConversationId. "trajectory not found" is (false, nil); any other
// failure is returned.
func (c *Client) ConversationMatches(ctx context.Context, conversationID string) (bool, error) {
	if err := c.Heartbeat(ctx); err != nil {
		return false, err
	}
	md, err := c.GetConversationMetadata(ctx, conversationID)
	if errors.Is(err, ErrTrajectoryNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return md.Metadata.RootConversationID == conversationID, nil
}

// GetCascadeTrajectorySteps reads one snapshot of the steps of a cascade
// (cascadeId == conversationId), from its first step. agy may cap how many
// steps one answer holds: a long trajectory is read in windows with
// GetCascadeTrajectoryStepsFrom.
func (c *Client) GetCascadeTrajectorySteps(ctx context.Context, cascadeID string) ([]wire.Step, error) {
	return c.GetCascadeTrajectoryStepsFrom(ctx, cascadeID, 0, nil)
}

// GetCascadeTrajectoryStepsReusing is GetCascadeTrajectoryStepsFrom from the
// first step.
func (c *Client) GetCascadeTrajectoryStepsReusing(ctx context.Context, cascadeID string, prev []wire.Step) ([]wire.Step, error) {
	return c.GetCascadeTrajectoryStepsFrom(ctx, cascadeID, 0, prev)
}

// GetCascadeTrajectoryStepsFrom reads the steps of a cascade from the step
// at trajectory index offset on (stepOffset): the window a caller needs when
// the steps before it can no longer change. agy may cap the number of steps
// of one answer, so a reader that wants every step reads again from the end
// of the last window until it has the trajectory's step count.
//
// prev is the caller's last read of the same window start (nil for none),
// element i of the answer compared with prev[i]. A step that agy sends byte
// for byte as it sent prev[i] (same position, Raw equal) is not decoded
// again: the result holds prev[i] itself, sharing its Raw and pointers, so
// neither the caller nor anyone it hands steps to may modify them. Changed,
// new and moved steps are decoded; a window may have grown or shrunk. prev
// must come from earlier reads (its Raw is trusted to be what its fields
// were decoded from). The answer is whole; a malformed body, or step, is a
// *Error wrapping ErrProtocol, and nothing is returned with it.
//
// Each step decoded has a Raw of its own: a step kept for many reads (the
// caller's last read, a reconciler) must not keep alive the answer it came
// in, which holds the whole window of that moment.
func (c *Client) GetCascadeTrajectoryStepsFrom(ctx context.Context, cascadeID string, offset int, prev []wire.Step) ([]wire.Step, error) {
	const m = MethodGetCascadeTrajectorySteps
	if cascadeID == "" {
		return nil, invalidArgument(m, "empty cascade id")
	}
	if offset < 0 {
		return nil, invalidArgument(m, "negative step offset %d", offset)
	}
	var steps []wire.Step
	err := c.callRead(ctx, c.cfg.UnaryTimeout, m, StepsRequest{CascadeID: cascadeID, StepOffset: offset}, func(body io.Reader) error {
		in := &blankReader{r: body, blank: true}
		var err error
		steps, err = wire.DecodeStepsReusing(in, prev)
		if err != nil && in.blank {
			return nil // an empty answer is {}: no steps (as for every call)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return steps, nil
}

// HandleCascadeUserInteraction answers a WAITING step. in must name the
// step (TrajectoryID, StepIndex: they go inside the interaction, where agy
// reads them) and carry exactly one answer variant (AskQuestion, FilePermission, Elicitation or
// Permission; Permission{Allow: false} denies). A step that already timed
// out fails with ErrInputNotRegistered.
func (c *Client) HandleCascadeUserInteraction(ctx context.Context, cascadeID string, in wire.InteractionResponse) error {
	const m = MethodHandleCascadeUserInteraction
	switch {
	case cascadeID == "":
		return invalidArgument(m, "empty cascade id")
	case in.TrajectoryID == "":
		return invalidArgument(m, "interaction without trajectoryId (agy would answer \"input not registered\")")
	case in.StepIndex < 0:
		return invalidArgument(m, "negative step index %d", in.StepIndex)
	case in.Variants() != 1:
		return invalidArgument(m, "interaction needs exactly one of askQuestion, permission, filePermission or elicitation")
	}
	return c.Call(ctx, m, InteractionRequest{CascadeID: cascadeID, Interaction: in}, nil)
}

// SendUserCascadeMessage sends a user turn: items [{text}] and the model in
// cascadeConfig.plannerConfig.planModel. agy records a USER_INPUT step. The
// model is required per turn; an empty one fails with ErrModelRequired
// without calling agy (which would record an ERROR step).
func (c *Client) SendUserCascadeMessage(ctx context.Context, cascadeID, text, model string) error {
	const m = MethodSendUserCascadeMessage
	switch {
	case cascadeID == "":
		return invalidArgument(m, "empty cascade id")
	case text == "":
		return invalidArgument(m, "empty turn text")
	case model == "":
		return &Error{Method: m, Code: CodeInvalidArgument, Message: "no model for the turn", Err: ErrModelRequired}
	}
	return c.Call(ctx, m, SendMessageRequest{
		CascadeID:     cascadeID,
		Items:         []wire.TextItem{{Text: text}},
		CascadeConfig: &CascadeConfig{PlannerConfig: &wire.PlannerConfig{PlanModel: model}},
	}, nil)
}

// SendAgentMessage calls SendAgentMessage {"cascadeId","message"}. It exists
// for completeness only: agy records the text as a SYSTEM_MESSAGE, not as
// the user's turn. Never use it to send a turn; use SendUserCascadeMessage.
func (c *Client) SendAgentMessage(ctx context.Context, cascadeID, text string) error {
	if cascadeID == "" {
		return invalidArgument(MethodSendAgentMessage, "empty cascade id")
	}
	return c.Call(ctx, MethodSendAgentMessage, AgentMessageRequest{CascadeID: cascadeID, Message: text}, nil)
}

// RevertToCascadeStep calls RevertToCascadeStep {"cascadeId","stepIndex"}:
// the conversation is cut back to before stepIndex (agy's /rewind). The
// harness never calls it; bench uses it on the fake.
func (c *Client) RevertToCascadeStep(ctx context.Context, cascadeID string, stepIndex int) error {
	if cascadeID == "" {
		return invalidArgument(MethodRevertToCascadeStep, "empty cascade id")
	}
	return c.Call(ctx, MethodRevertToCascadeStep, RevertRequest{CascadeID: cascadeID, StepIndex: wire.Int(stepIndex)}, nil)
}

// RevertRequest is RevertToCascadeStep's body.
type RevertRequest struct {
	CascadeID string   `json:"cascadeId"`
	StepIndex wire.Int `json:"stepIndex"`
}

// Cancel calls one of CancelMethods with {"cascadeId"}. agy builds differ in
// which one stops generation; callers try them in order until the cascade
// reports IDLE.
func (c *Client) Cancel(ctx context.Context, method, cascadeID string) error {
	if !slices.Contains(CancelMethods, method) {
		return invalidArgument(method, "%q is not an interrupt method (want one of %v)", method, CancelMethods)
	}
	if cascadeID == "" {
		return invalidArgument(method, "empty cascade id")
	}
	return c.Call(ctx, method, CascadeRequest{CascadeID: cascadeID}, nil)
}

// CancelCascadeSteps is Cancel(ctx, MethodCancelCascadeSteps, cascadeID).
func (c *Client) CancelCascadeSteps(ctx context.Context, cascadeID string) error {
	return c.Cancel(ctx, MethodCancelCascadeSteps, cascadeID)
}

// CancelCascadeInvocation is Cancel(ctx, MethodCancelCascadeInvocation, cascadeID).
func (c *Client) CancelCascadeInvocation(ctx context.Context, cascadeID string) error {
	return c.Cancel(ctx, MethodCancelCascadeInvocation, cascadeID)
}

// ForceStopCascadeTree is Cancel(ctx, MethodForceStopCascadeTree, cascadeID).
func (c *Client) ForceStopCascadeTree(ctx context.Context, cascadeID string) error {
	return c.Cancel(ctx, MethodForceStopCascadeTree, cascadeID)
}

// GetAllCascadeTrajectories lists the server's conversations, keyed by id.
func (c *Client) GetAllCascadeTrajectories(ctx context.Context) (*TrajectoriesResponse, error) {
	var resp TrajectoriesResponse
	if err := c.Call(ctx, MethodGetAllCascadeTrajectories, Empty{}, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// GetAvailableModels lists the models a turn may name as planModel.
func (c *Client) GetAvailableModels(ctx context.Context) (*ModelsResponse, error) {
	var resp ModelsResponse
	if err := c.Call(ctx, MethodGetAvailableModels, Empty{}, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// StartCascade starts a new cascade programmatically, as a CLI client
// (source SourceCLI, which agy requires), and returns the answer undecoded
// (its shape is not pinned down). agy's own terminal never shows such a
// conversation: a harness that shares agy's terminal with a person types
// the first turn instead (agy mints its conversation then).
func (c *Client) StartCascade(ctx context.Context) (json.RawMessage, error) {
	var resp json.RawMessage
	if err := c.Call(ctx, MethodStartCascade, StartCascadeRequest{Source: SourceCLI}, &resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// blankReader reads r and says whether all it has read so far is blank
// (JSON whitespace).
type blankReader struct {
	r     io.Reader
	blank bool
}

func (b *blankReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.blank && len(bytes.TrimLeft(p[:n], " \t\r\n")) > 0 {
		b.blank = false
	}
	return n, err
}
