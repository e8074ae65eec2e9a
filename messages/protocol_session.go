package messages

// The tree's protocol (internal to package actors): the embedding API's requests to a session,
// and their replies.

import (
	"time"
)

// SendTurn asks a session (from the embedding API) to send a user turn.
// Model "" resolves at run time: the last model agy used on a turn, else
// GetAvailableModels' recommended one. A session re-discovering agy holds
// the turn until it is bound again, unless Deadline (the requester's)
// passes first: then the turn is dropped unsent. Reply: *TurnResult.
type SendTurn struct {
	Text     string
	Model    string
	Deadline time.Time
}

// Interrupt asks a session (from the embedding API) to stop the running
// cascade, within a deadline. Held like SendTurn while the session
// re-discovers agy. Reply: *TurnResult.
type Interrupt struct {
	Deadline time.Time
}

// TurnResult replies to SendTurn and Interrupt (and so to RunTurn and
// StopRun): Err is nil when agy took it. Model is the model the turn was
// sent with.
type TurnResult struct {
	Model string
	Err   error
}

// ResolveElicitation asks a session (from the embedding API) to answer an
// open elicitation. The session checks the command against the prompt, then
// hands it to the prompt's Interaction actor as *DeliverAnswer.
// Reply: *ResolveAccepted (the answer is on its way, or the command is bad).
type ResolveElicitation struct {
	Resolve Resolve
}

// ResolveAccepted replies to ResolveElicitation: Err says why a command was
// refused (unknown elicitation, bad answer); nil means delivery started. The
// outcome arrives as an event (elicitation_resolved, or error).
type ResolveAccepted struct {
	Err error
}
