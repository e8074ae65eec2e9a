package messages

// The tree's protocol (internal to package actors): answering agy's
// prompts.

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

// DeliverAnswer is sent by the session to an Interaction actor: deliver this
// answer to the freshest WAITING step of the prompt. No reply; the actor
// reports *AnswerDelivered or *AnswerFailed to the session.
type DeliverAnswer struct {
	Gen     Gen
	Resolve Resolve
}

// AnswerDelivered is sent by an Interaction actor to its session when agy
// accepted the answer at StepIndex. No reply.
type AnswerDelivered struct {
	Gen           Gen
	ElicitationID string
	Action        string
	StepIndex     int
}

// AnswerFailed is sent by an Interaction actor to its session when an
// answer could not be delivered: Err is clear; Retryable says whether the
// driver may try again (the prompt stays open). No reply.
type AnswerFailed struct {
	Gen           Gen
	ElicitationID string
	Err           error
	Retryable     bool
}
