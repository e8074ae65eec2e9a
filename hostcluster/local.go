package hostcluster

import (
	"context"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
)

// Local is what a node serves to the other nodes: its own host's sessions.
// Its methods are called from goroutines the node owns, never from an
// actor's Receive, and may block until their context ends. An error that
// is an *Error crosses as it is (its status and code); any other error
// crosses as 502 "failed" with its text.
type Local interface {
	// Sessions lists the node's live sessions.
	Sessions() []*clusterpb.SessionInfo
	// Attach starts a session on this node (POST /v1/sessions).
	Attach(ctx context.Context, req *clusterpb.CreateSession) (*clusterpb.SessionInfo, error)
	// Do runs a driver command on a session of this node.
	Do(ctx context.Context, sessionID string, c messages.Command) error
	// Subscribe opens a session's event stream after afterSeq, with the
	// same resume rules as the node's own API, and says how many events the
	// session had published when it opened.
	Subscribe(ctx context.Context, sessionID string, afterSeq uint64) (LocalStream, uint64, error)
	// Read is a document of a session of this node, as its API answers it:
	// what is ReadTranscript (GET /v1/sessions/{id}/transcript) or
	// ReadModels (.../models).
	Read(ctx context.Context, sessionID, what string) ([]byte, error)
}

// LocalStream is an open event stream of a local session
// (*actors.Subscription).
type LocalStream interface {
	C() <-chan *messages.Event
	Close()
}
