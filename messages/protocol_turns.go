package messages

// The tree's protocol (internal to package actors): turns, interrupts and
// the model catalog.

import (
	"time"

	"github.com/agyharness/agyharness/rpc"
)

// SendTurn asks a session (from the embedding API) and then its TurnSender to
// send a user turn. Model "" resolves at run time: the last model agy used on
// a turn (LastModel, filled in by the session), else GetAvailableModels'
// recommended one. A session re-discovering agy holds the turn until it is
// bound again, unless Deadline (the requester's) passes first: then the turn
// is dropped unsent. Reply: *TurnResult.
type SendTurn struct {
	Text      string
	Model     string
	LastModel string
	Deadline  time.Time
}

// TurnResult replies to SendTurn and Interrupt: Err is nil when agy took it.
// Model is the model the turn was sent with.
type TurnResult struct {
	Model string
	Err   error
}

// Interrupt asks a session and then its TurnSender to stop the running
// cascade, within a deadline: agy's cancel methods change nothing while it
// waits on a prompt, so every prompt it waits on in Conversations is
// declined first, then the cancel methods run in order until agy reports
// IDLE. Held like SendTurn while the session re-discovers agy.
// Reply: *TurnResult.
type Interrupt struct {
	Deadline time.Time
	// Conversations are where agy may wait on prompts (the bound one and
	// its subagents), each with the trajectory index to look from: the
	// session fills them in.
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
	Models map[string]rpc.ModelInfo
}
