package messages

// The tree's protocol (internal to package actors): between a session, its StreamReader and
// its Poller and RotationWatcher on the stream's state.

// StreamState is sent by StreamReader to its session when its stream opens
// (Up) and by the session to its Poller and RotationWatcher when the stream
// goes up or down, so each picks its interval. No reply.
type StreamState struct {
	Gen Gen
	Up  bool
}
