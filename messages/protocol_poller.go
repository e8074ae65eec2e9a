package messages

// The tree's protocol (internal to package actors): between a session and its Poller (and
// Subagents, which read as it does).

import (
	"time"

	"github.com/agyharness/agyharness/wire"
)

// SnapshotRead is sent by Poller (root conversation) and Subagent (a child
// conversation) to the session: the steps read with GetCascadeTrajectorySteps
// from trajectory index Offset to the end (the steps before it can no longer
// change), and the cascade run status read around them when the reader read
// one and nothing moved meanwhile ("" when not). No reply.
type SnapshotRead struct {
	Gen            Gen
	ConversationID string
	Steps          []wire.Step
	Offset         int
	RunStatus      wire.RunStatus
	// Length is the trajectory's length by the summary reads around the
	// steps, when HasLength (set with RunStatus: both reads agreed).
	Length    int
	HasLength bool
	Received  time.Time
}

// TurnActive is sent by the session to its Poller when a turn starts
// (Active) or ends: while one runs and frames do not flow (StreamState), the
// poller reads at Config.PollActive even with the stream up, since agy may
// park a prompt without a frame. No reply.
type TurnActive struct {
	Gen    Gen
	Active bool
}

// ReadNow is sent by the session to its Poller when agy reported the cascade
// IDLE: the steps are read once more, with the run status, before the turn
// is declared idle. No reply.
type ReadNow struct {
	Gen Gen
}
