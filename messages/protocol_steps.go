package messages

// The tree's protocol (internal to package actors): reading agy's
// trajectory, and following agy to a new conversation.

import (
	"time"

	"github.com/agyharness/agyharness/rpc"
)

// StreamState is sent by StreamReader to its session when its stream opens
// (Up) and by the session to its Poller when the stream goes up or down, so
// the poller picks its interval. No reply.
type StreamState struct {
	Gen Gen
	Up  bool
}

// SnapshotRead is sent by Poller (root conversation) and Subagent (a child
// conversation) to the session: the steps read with GetCascadeTrajectorySteps
// from trajectory index Offset to the end (the steps before it can no longer
// change), and the cascade run status read around them when the reader read
// one and nothing moved meanwhile ("" when not). No reply.
type SnapshotRead struct {
	Gen            Gen
	ConversationID string
	Steps          []rpc.Step
	Offset         int
	RunStatus      rpc.RunStatus
	Received       time.Time
}

// TurnActive is sent by the session to its Poller when a turn starts
// (Active) or ends: while one runs the poller reads at Config.PollActive
// even with the stream up, since agy may park a prompt without a frame. No
// reply.
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

// FramesFlowing is sent by the session to its RotationWatcher while frames
// of the bound conversation arrive: on the first, then at most every
// quarter of Config.RotationInterval, so Last (when the latest told of was
// received) is never further behind than that. No reply.
type FramesFlowing struct {
	Gen  Gen
	Last time.Time
}

// ConversationRotated is sent by RotationWatcher to its session when agy
// started a new root conversation (/clear): a root conversation strictly more
// recently active than the bound one, or one that appeared after the watcher
// started. Subagent children never rotate. No reply.
type ConversationRotated struct {
	Gen  Gen
	From string
	To   string
}

// SubagentDone is sent by a Subagent to the session when its child
// conversation is idle and has nothing left to read. No reply; the session
// stops the Subagent once the parent step is terminal too.
type SubagentDone struct {
	Gen            Gen
	ConversationID string
}
