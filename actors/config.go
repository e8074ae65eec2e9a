package actors

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/rpc"
)

// ReadMode says how a session reads agy's trajectory.
type ReadMode string

// Read modes. ReadBoth (the default) streams and polls slowly to reconcile;
// ReadPoll polls only, at the fast interval; ReadStream streams, and polls
// only to reconcile after IDLE and while the stream is down.
const (
	ReadBoth   ReadMode = "both"
	ReadStream ReadMode = "stream"
	ReadPoll   ReadMode = "poll"
)

// ParseReadMode returns the read mode s names: "both", "stream" or "poll".
// Anything else (the empty string too) is an error that says what is
// allowed. (Spec.ReadMode's empty default is Attach's to fill in.)
func ParseReadMode(s string) (ReadMode, error) {
	switch m := ReadMode(s); m {
	case ReadBoth, ReadStream, ReadPoll:
		return m, nil
	}
	return "", fmt.Errorf("actors: unknown read mode %q: want both, stream or poll", s)
}

// Config configures a Host. The zero value is usable: NewHost fills every
// zero field with the default written beside it.
//
// The periodic reads (PollFast, PollSlow, PollActive, RotationInterval, SubagentPoll)
// fall due on a grid shared by every session of the process, so that one
// wake-up serves many sessions' reads: each fires up to a twentieth of its
// interval (at most 100ms) late. Intervals under 20ms are kept exactly.
type Config struct {
	// Logger receives the host's logs (never secrets). Default: discard.
	Logger *slog.Logger
	// Clock is the time the actors keep: their timers, periodic reads,
	// retries and backoffs, and the spans they measure. Default: the
	// machine's clock.
	Clock Clock

	// PollFast is the poll interval while the stream is down (or in poll
	// mode). Default 200ms.
	PollFast time.Duration
	// PollSlow is the reconciliation poll interval while the stream is up.
	// Default 10s.
	PollSlow time.Duration
	// PollActive is the poll interval while a turn runs and the stream is
	// up but its frames do not flow (none for PollActive: the first read
	// comes then): agy may send no frame while a prompt is parked, so a
	// prompt only a read of the steps shows is found within PollActive of
	// agy's last frame. While frames flow no such read is made (agy is
	// talking; the stream shows what changes). Reads start at the first
	// step that can still change, so they stay small. Default 1s.
	PollActive time.Duration
	// RotationInterval is how often GetAllCascadeTrajectories is read to
	// notice /clear rotations while the bound conversation's stream is down
	// (while it streams without being told up, every fifth interval); with
	// the stream up a frame names the new conversation, and the list is
	// read only as a safety read, after 15 intervals doubling to 150
	// (rotationWatcher). Default 2s.
	RotationInterval time.Duration
	// SubagentPoll is how often a subagent's child conversation is read.
	// Default 300ms.
	SubagentPoll time.Duration

	// DiscoveryBackoffMin and DiscoveryBackoffMax bound the capped
	// exponential backoff between discovery rounds. Defaults 100ms and 5s.
	DiscoveryBackoffMin time.Duration
	DiscoveryBackoffMax time.Duration
	// LostAfter is how long agy may stay unreachable before the session
	// tells its driver (an error event, retryable). Default 10s.
	LostAfter time.Duration
	// GiveUpAfter is how long discovery retries before the session fails
	// for good (error event, status error, session ends). Default 2m.
	GiveUpAfter time.Duration

	// RestartBackoffMin and RestartBackoffMax bound the capped exponential
	// backoff before a failed child (a stream reader) is restarted.
	// Defaults 50ms and 5s.
	RestartBackoffMin time.Duration
	RestartBackoffMax time.Duration
	// RestartBudget is how many restarts of one child are allowed within
	// RestartWindow before the session treats the port as lost and
	// re-discovers. Defaults 10 within 1m.
	RestartBudget int
	RestartWindow time.Duration

	// InterruptDeadline bounds an interrupt: the cancel methods are tried
	// in order until agy reports IDLE. Default 10s.
	InterruptDeadline time.Duration
	// TypedTurnTimeout is how long a turn typed into agy's terminal
	// (Spec.Terminal) may take to show in agy's conversation as a user
	// turn; past it the session reports an error (the turn is never typed
	// again: it could come twice). Default 30s.
	TypedTurnTimeout time.Duration
	// TurnTakenTimeout is how often the session looks for a turn agy
	// accepted over RPC and has not shown as a user turn of its
	// conversation: two looks in a row that find agy idle without it, each
	// confirmed by a read, report an error (code messages.ErrorTurnNotTaken;
	// the turn is never sent again). A look that finds agy working starts
	// over: the turn may be queued behind the run. Default 5s.
	TurnTakenTimeout time.Duration
	// PromptRetryWait is how long an answer waits for agy to re-open a
	// prompt that timed out before the answer reached it. Default 2m.
	PromptRetryWait time.Duration
	// DeliveryAttempts bounds retries of an answer on transient errors.
	// Default 5.
	DeliveryAttempts int

	// MaxMessageSize bounds one answer of agy's (a unary answer's body, a
	// stream frame): rpc.DefaultMaxMessageSize (16 MiB) when zero. A stream
	// frame over it is skipped (the poller reads what it carried); a steps
	// answer over it is read past where it can be, the steps skipped
	// reported in a retryable error event.
	MaxMessageSize int
	// ReadBackoffMax caps the backoff of the poller's reads while agy's
	// steps answer is over MaxMessageSize and cannot be read past (they
	// back off from PollFast, doubling). Default 1m.
	ReadBackoffMax time.Duration
	// StepWindow is how many of a conversation's latest step indices a
	// session keeps whole (mapper.Config.Window): older finished steps are
	// dropped from memory, a fingerprint of 4 bytes kept. Default
	// mapper.DefaultWindow (512).
	StepWindow int

	// EventLog is how many recent events a session keeps for resuming
	// subscribers (Last-Event-ID). Default 4096.
	EventLog int
	// EventLogBytes bounds the same events in bytes (an estimate of what
	// the log holds: its slots, the events' structs and texts); the
	// oldest go first, the newest event is always kept. Default 256 KiB.
	// The resume window is the last EventLog events within EventLogBytes.
	EventLogBytes int
	// CoalesceAfter is how many events may wait for a slow subscriber
	// before consecutive deltas of one item are merged. Default 256.
	CoalesceAfter int
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = machineClock{}
	}
	def(&c.PollFast, 200*time.Millisecond)
	def(&c.PollSlow, 10*time.Second)
	def(&c.PollActive, time.Second)
	def(&c.RotationInterval, 2*time.Second)
	def(&c.SubagentPoll, 300*time.Millisecond)
	def(&c.DiscoveryBackoffMin, 100*time.Millisecond)
	def(&c.DiscoveryBackoffMax, 5*time.Second)
	def(&c.LostAfter, 10*time.Second)
	def(&c.GiveUpAfter, 2*time.Minute)
	def(&c.RestartBackoffMin, 50*time.Millisecond)
	def(&c.RestartBackoffMax, 5*time.Second)
	def(&c.RestartWindow, time.Minute)
	def(&c.ReadBackoffMax, time.Minute)
	if c.MaxMessageSize <= 0 {
		c.MaxMessageSize = rpc.DefaultMaxMessageSize
	}
	if c.StepWindow <= 0 {
		c.StepWindow = mapper.DefaultWindow
	}
	def(&c.InterruptDeadline, 10*time.Second)
	def(&c.PromptRetryWait, 2*time.Minute)
	def(&c.TypedTurnTimeout, 30*time.Second)
	def(&c.TurnTakenTimeout, 5*time.Second)
	if c.RestartBudget <= 0 {
		c.RestartBudget = 10
	}
	if c.DeliveryAttempts <= 0 {
		c.DeliveryAttempts = 5
	}
	if c.EventLog <= 0 {
		c.EventLog = 4096
	}
	if c.EventLogBytes <= 0 {
		c.EventLogBytes = DefaultEventLogBytes
	}
	if c.CoalesceAfter <= 0 {
		c.CoalesceAfter = 256
	}
	return c
}

// backoff returns the capped exponential delay before attempt n (1-based).
func backoff(n int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}
