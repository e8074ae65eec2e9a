package messages

// The tree's protocol (internal to package actors): between a session and an Interaction
// actor (one open prompt).

// DeliverAnswer is sent by the session to an Interaction actor: deliver this
// answer to the freshest WAITING step of the prompt. No reply; the actor
// reports *AnswerDelivered or *AnswerFailed to the session.
type DeliverAnswer struct {
	Gen     Gen
	Resolve Resolve
}

// AnswerDelivered is sent by an Interaction actor to its session when agy
// accepted the answer at StepIndex. No reply.
// Reasked: read right after the answer, the step was WAITING again asking
// something else (the next segment of a compound command): agy's dialog
// now shows that ask, and the keys closing the answered one would answer it.
type AnswerDelivered struct {
	Gen           Gen
	ElicitationID string
	Action        string
	StepIndex     int
	Reasked       bool
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
