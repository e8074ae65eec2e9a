package messages

// The tree's protocol (internal to package actors): between a session and its
// RotationWatcher (following agy to a new conversation).

// FramesFlowing is sent by the session to its RotationWatcher when the
// stream's frames begin to flow or stop (none for Config.PollActive: the
// stream reader's StreamState), so the watcher reads less while agy works
// in the bound conversation. No reply.
type FramesFlowing struct {
	Gen     Gen
	Flowing bool
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
