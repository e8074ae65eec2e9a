package messages

// The tree's protocol (internal to package actors): from a Subagent to its session.

// SubagentDone is sent by a Subagent to the session when its child
// conversation is idle and has nothing left to read. No reply; the session
// stops the Subagent once the parent step is terminal too.
type SubagentDone struct {
	Gen            Gen
	ConversationID string
}
