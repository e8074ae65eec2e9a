package messages

// The tree's protocol (internal to package actors): between a session and its
// RotationWatcher (following agy to a new conversation).

// ConversationRotated is sent by RotationWatcher to its session when agy
// started a new root conversation (/clear): a root conversation strictly more
// recently active than the bound one, or one that appeared after the watcher
// started. Subagent children never rotate. No reply.
type ConversationRotated struct {
	Gen  Gen
	From string
	To   string
	// New: To appeared after the watcher's first read (a /clear's, a first
	// turn's), so every step of it happened while the session watched;
	// false for a conversation the watcher knew, more recently active.
	New bool
}
