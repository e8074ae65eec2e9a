package messages

// The tree's protocol (internal to package actors): between a session and its Discovery
// (finding agy's port), and losing the port.

// Gen is a session's binding generation. It grows each time the session
// (re)binds a port or a conversation; children carry the generation they were
// spawned with, and the session ignores messages from an older one (a late
// result from a stopped child, or a PID reused by a new actor).
type Gen uint64

// PortFound is sent by Discovery to its session when it has a port whose
// server answers Heartbeat and hosts the conversation (ConversationID; ""
// when agy has none yet). No reply. The session builds its client of the
// port: it accepts only the certificate Pin (DER: the one the probe saw)
// and sends CSRFToken on every call ("" when the port takes none: a secret,
// never logged).
type PortFound struct {
	Gen            Gen
	Port           int
	Pin            []byte
	CSRFToken      string
	ConversationID string
}

// DiscoveryStalled is sent by Discovery to its session each time a round of
// probing found nothing, so the session can tell its driver that agy is
// gone for long (Since) and give up past its limit. No reply.
type DiscoveryStalled struct {
	Gen      Gen
	Attempts int
	Err      error
	Since    string // how long agy has been gone, human readable
	GiveUp   bool   // Discovery has reached its retry limit and stopped
}

// PortLost is sent to a session (by itself, from its supervision policy, or
// by a child whose RPC found the port gone) when the bound port no longer
// serves the conversation. The session re-runs discovery. No reply.
type PortLost struct {
	Gen Gen
	Err error
}
