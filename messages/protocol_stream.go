package messages

// The tree's protocol (internal to package actors): between a session, its StreamReader and
// its Poller and RotationWatcher on the stream's state.

// StreamState is sent by StreamReader to its session when its stream opens
// (Up, with its first frame: Flowing), when frames stop (no frame for
// Config.PollActive: Up, not Flowing) and when they come again (Flowing),
// and by the session to its Poller when any of that changes (and to its
// RotationWatcher when the stream goes up or down), so each picks its interval: while a turn runs it reads the steps only when frames
// do not flow (agy parks a prompt without a frame, and sends none while
// parked). A report that frames stopped never opens a stream the session
// holds down (it may come late, from a stream that ended). No reply.
type StreamState struct {
	Gen     Gen
	Up      bool
	Flowing bool // frames came within Config.PollActive (only with Up)
}
