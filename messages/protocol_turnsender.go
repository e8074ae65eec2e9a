package messages

// The tree's protocol (internal to package actors): between a session and its TurnSender.

import (
	"time"

	"github.com/agyharness/agyharness/wire"
)

// RunTurn is sent by a session to its TurnSender for a SendTurn it took:
// the turn, with LastModel the model of agy's last turn (the one used when
// Model is ""). Reply: *TurnResult, to the SendTurn's requester.
type RunTurn struct {
	Text      string
	Model     string
	LastModel string
	Deadline  time.Time
}

// StopRun is sent by a session to its TurnSender for an Interrupt it took:
// agy's cancel methods change nothing while it waits on a prompt, so every
// prompt it waits on in Conversations (the bound conversation and its
// subagents, each from the first step that can still change) is declined
// first, then the cancel methods run in order until agy reports IDLE.
// Reply: *TurnResult, to the Interrupt's requester.
type StopRun struct {
	Deadline      time.Time
	Conversations []ConversationFrom
}

// ConversationFrom names a conversation and a trajectory index in it.
type ConversationFrom struct {
	ConversationID string
	From           int
}

// ModelsLoaded is sent by TurnSender to its session when it has read agy's
// model catalog (GetAvailableModels), so events can name models. No reply.
type ModelsLoaded struct {
	Gen    Gen
	Models map[string]wire.ModelInfo
}
