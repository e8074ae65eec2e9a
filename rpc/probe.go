package rpc

import "context"

// ProbeResult is a port that answered a probe, and the conversation it was
// found to serve ("" when probed without one).
type ProbeResult struct {
	Port           int
	ConversationID string
}

// Probe reports whether cfg's port is a live language server that hosts
// conversationID: Heartbeat, then GetConversationMetadata, each bounded by
// cfg.ProbeTimeout. With conversationID "" only the Heartbeat counts. A
// server that does not host the conversation is (false, nil); a dead port
// is (false, err) with err matching ErrPortGone.
func Probe(ctx context.Context, cfg Config, conversationID string) (bool, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return false, err
	}
	defer c.Close()
	if conversationID == "" {
		if err := c.Heartbeat(ctx); err != nil {
			return false, err
		}
		return true, nil
	}
	return c.ConversationMatches(ctx, conversationID)
}
