package actors

import (
	"context"
	"errors"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
)

// poller is the actor that reads the trajectory with
// GetCascadeTrajectorySteps, from the first step that can still change to
// the end (window by window when agy caps an answer). Its one job: keep the
// session's view complete when the stream cannot — at Config.PollFast while
// the stream is down (or in poll mode), at Config.PollSlow otherwise
// (reconciliation; none in stream mode), and once more, with the cascade's
// run status, when the session says agy reported IDLE (*messages.ReadNow),
// retrying at the fast interval until such a read succeeds. Each read goes
// to the session as *messages.SnapshotRead.
//
// While a turn runs (*messages.TurnActive) agy may park a prompt without a
// frame, which the stream cannot show: so while a turn runs and the
// stream's frames do not flow (*messages.StreamState: none for
// Config.PollActive), the poller reads at Config.PollActive, the first read
// as soon as the frames stop. While they flow it makes no such read: agy is
// talking, and the stream carries what changes. A prompt parked without a
// frame is read within Config.PollActive (and a tick's slack) of agy's last
// frame, or of the turn's start when no frame came.
//
// A transient error just waits for the next tick. A lost port is a failure
// (the session re-discovers). An answer over the client's limit
// (rpc.ErrMessageTooLarge) is read past where it can be (the steps skipped
// are reported); when it cannot, the reads back off exponentially (from
// Config.PollFast to Config.ReadBackoffMax, on the host's clock, a ReadNow
// waiting for them too) until one fits. Both go to the session as
// *readOverLimit: a failure once per run of them, each skip once.
type poller struct {
	child
	mode ReadMode
	// window is what the last read read, for the next read to start from
	// and reuse. Only the read in flight touches it, and reads run one at a
	// time (busy).
	window trajectoryWindow

	streamUp  bool
	flowing   bool // the stream's frames flow (StreamState)
	active    bool // a turn runs (TurnActive)
	busy      bool
	readNow   bool // a ReadNow came while a read was running
	tickArmed bool
	// tickActive: the tick armed is the running turn's (interval's
	// Config.PollActive), which frames that flow make needless.
	tickActive bool
	// tickSeq numbers ticks: arming anew (a shorter interval is due)
	// leaves the pending tick stale.
	tickSeq int
	// Reads with the run status owed after a ReadNow: due counts the
	// ReadNows, paid the last one a successful read with status began
	// after. A read already running when a ReadNow arrives does not pay it.
	due, paid int
	// overLimit counts the reads in a row that failed on an answer over
	// the client's limit: the next one waits a backoff.
	overLimit int
}

// readOverLimit is sent by the poller to its session when agy's answer of
// the steps is over the client's limit: the read failed (skipped nil; the
// first failure of a run only), or went on past steps it skipped. No reply.
type readOverLimit struct {
	gen     messages.Gen
	conv    string
	err     error
	skipped *skippedSteps
}

// pollTick and pollDone are the poller's own messages.
type pollTick struct{ seq int }

type pollDone struct {
	settled bool // the read pays what was owed when it began
	due     int  // the ReadNows counted when the read began
	err     error
}

// newPoller reads the conversation from trajectory index from on: where the
// session's view can still change. Steps before it are terminal and mapped;
// a session bound again to agy (a new port) need not read its whole
// history again, which agy may send only a few hundred steps an answer.
// known is the createdAt of the steps the session knows, by index
// (mapper.Reconciler.Identities): a rewind is then read from its cut
// (trajectoryWindow.shorterStart) even where this poller read nothing yet.
func newPoller(c child, mode ReadMode, from int, known map[int]string) actor.Actor {
	w := trajectoryWindow{gen: c.gen, offset: from}
	w.notePrintsOf(known)
	return &poller{child: c, mode: mode, window: w}
}

// interval is the time to the next read; 0 means none (stream mode with
// the stream up reads only on request).
func (p *poller) interval() time.Duration {
	switch {
	case p.overLimit > 0:
		return backoff(p.overLimit, p.cfg.PollFast, p.cfg.ReadBackoffMax)
	case p.owes() || !p.streamUp || p.mode == ReadPoll:
		return p.cfg.PollFast
	case p.turnReads():
		return min(p.cfg.PollActive, p.cfg.PollSlow)
	case p.mode == ReadStream:
		return 0
	}
	return p.cfg.PollSlow
}

// Receive runs reads on ticks and on request.
func (p *poller) Receive(ctx actor.Context) {
	p.lifecycle(ctx)
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.due++
		p.poll(ctx)
	case *pollTick:
		if m.seq != p.tickSeq {
			return // re-armed since
		}
		p.tickArmed = false
		p.poll(ctx)
	case *messages.TurnActive:
		if m.Gen != p.gen || m.Active == p.active {
			return
		}
		p.active = m.Active
		if p.turnReads() && !p.busy {
			// The tick pending is too late for a turn (a slow one), or there
			// is none (stream mode reads at rest only when asked): arm anew.
			p.disarm()
			p.arm(ctx)
		}
	case *messages.ReadNow:
		if m.Gen != p.gen {
			return
		}
		p.due++
		if p.busy {
			p.readNow = true
			return
		}
		if p.overLimit > 0 {
			p.arm(ctx) // the backoff's tick reads
			return
		}
		p.poll(ctx)
	case *messages.StreamState:
		if m.Gen != p.gen {
			return
		}
		stopped := p.flowing && !m.Flowing
		p.streamUp, p.flowing = m.Up, m.Up && m.Flowing
		switch {
		case !m.Up && !p.busy && p.overLimit == 0:
			p.poll(ctx)
		case stopped && p.turnReads() && p.overLimit == 0:
			// A running turn's frames stopped (agy may have parked a prompt):
			// read now, then every PollActive (the tick pending may be a
			// slow one).
			p.disarm()
			if p.busy {
				p.arm(ctx)
			} else {
				p.poll(ctx)
			}
		case p.flowing && p.tickActive:
			p.disarm() // agy talks: the stream shows the turn
			p.arm(ctx)
		default:
			p.arm(ctx)
		}
	case *pollDone:
		p.busy = false
		if m.err != nil && (errors.Is(m.err, rpc.ErrPortGone) || errors.Is(m.err, rpc.ErrTrajectoryNotFound)) {
			fail("poller", m.err)
		}
		if m.settled && m.due > p.paid {
			p.paid = m.due
		}
		switch {
		case m.err != nil && errors.Is(m.err, rpc.ErrMessageTooLarge):
			if p.overLimit == 0 {
				ctx.Send(ctx.Parent(), &readOverLimit{gen: p.gen, conv: p.conv, err: m.err})
			}
			p.overLimit++
			p.readNow = false
			p.tickArmed = false // the tick pending is too soon: arm the backoff's
			p.arm(ctx)
			return
		case m.err == nil:
			p.overLimit = 0
		}
		if p.readNow {
			// A read that began before the ReadNow may have read the steps
			// before agy's IDLE: read again.
			p.readNow = false
			p.poll(ctx)
			return
		}
		// The next read is one interval after this one: a tick armed while
		// it ran (at the fast interval, a read being owed) is too soon.
		p.disarm()
		p.arm(ctx)
	}
}

// owes reports whether a read with the run status is due.
func (p *poller) owes() bool { return p.due > p.paid }

// turnReads reports whether the running turn's reads are due: a turn runs,
// the stream is up and its frames do not flow.
func (p *poller) turnReads() bool { return p.active && p.streamUp && !p.flowing }

func (p *poller) arm(ctx actor.Context) {
	if d := p.interval(); !p.tickArmed && d > 0 {
		p.tickArmed = true
		p.tickActive = p.overLimit == 0 && !p.owes() && p.mode != ReadPoll && p.turnReads()
		p.tickSeq++
		p.t.tick(d, ctx.Self(), &pollTick{seq: p.tickSeq})
	}
}

// disarm leaves the tick pending, if any, stale.
func (p *poller) disarm() {
	if p.tickArmed {
		p.tickArmed = false
		p.tickSeq++
	}
}

// poll reads the steps; withStatus, between two reads of the run status.
// The status goes with the steps only when both reads agree: agy can report
// IDLE before its last steps are flushed (so the steps must be read after
// the IDLE), and a turn can start between a status read and a steps read
// (so an IDLE read before it would be stale).
func (p *poller) poll(ctx actor.Context) {
	if p.busy {
		return
	}
	p.busy = true
	// The status costs two more calls: read it while the stream is down (or
	// in poll mode), and when a read after IDLE is owed.
	withStatus := p.owes() || !p.streamUp || p.mode == ReadPoll
	due := p.due
	self, session := ctx.Self(), ctx.Parent()
	p.t.run(func(c context.Context) {
		deliver := func(steps []wire.Step, offset int) {
			p.t.send(session, &messages.SnapshotRead{Gen: p.gen, ConversationID: p.conv, Steps: steps, Offset: offset, Received: p.cfg.Clock.Now()})
		}
		snap, err := readSnapshot(c, p.client, p.conv, withStatus, &p.window, deliver)
		if err == nil {
			if snap.skipped != nil {
				p.t.send(session, &readOverLimit{gen: p.gen, conv: p.conv, err: snap.skipped.err, skipped: snap.skipped})
			}
			p.t.send(session, snap.read(p.gen, p.conv, p.cfg.Clock.Now()))
		}
		// An owed read is paid by one that could tell the turn's end (its
		// status conclusive), or that saw agy running again (a newer run:
		// its own IDLE will be owed a read).
		settled := err == nil && withStatus && (snap.status != "" || snap.after == wire.RunRunning || snap.after == wire.RunBusy)
		p.t.send(self, &pollDone{settled: settled, due: due, err: err})
	})
}

// snapshot is one read of a conversation's steps, with its run status
// read around them.
type snapshot struct {
	steps  []wire.Step
	offset int // the trajectory index steps start at
	// status is the run status when the two status reads agree (status,
	// step count, last user input): nothing moved while the steps were
	// read. "" when not read, or when something moved.
	status wire.RunStatus
	length int // the trajectory's length when status is set (both summaries agreed), else -1
	// after is the second status read, conclusive or not.
	after wire.RunStatus
	// skipped: steps the read could not read (an answer over the limit).
	skipped *skippedSteps
}

// readSnapshot reads a conversation's steps from the ones that can still
// change (w) and, when withStatus, its trajectory summary before and after
// them. The caller must deliver a snapshot returned without error: w
// starts the next read from it. Steps at rest read on the way go to
// deliver before the read ends (a long history is handed on window by
// window); deliver must hand them to the session as they come. The status goes with the steps only when the two summaries agree:
// equal IDLE statuses alone do not prove the steps were read at rest, since
// a whole turn can start and end between the two reads, and steps read in
// its middle (each terminal, the next not yet written) would close the turn
// early; such a turn moves the step count and the last user input.
// lastModifiedTime is not compared: idle must not hinge on one field that
// an agy build could move at rest (nothing promises it does not), and a
// turn that changes no step count cannot end between two IDLE reads.
func readSnapshot(ctx context.Context, c *rpc.Client, conv string, withStatus bool, w *trajectoryWindow, deliver func(steps []wire.Step, offset int)) (snapshot, error) {
	summaryOf := func() (rpc.TrajectorySummary, error) {
		// conv's entry alone: agy lists every conversation it keeps.
		s, _, err := c.TrajectorySummaryOf(ctx, conv)
		return s, err
	}
	var before rpc.TrajectorySummary
	stepCount := -1
	if withStatus {
		var err error
		if before, err = summaryOf(); err != nil {
			return snapshot{}, err
		}
		if before.Status != "" {
			stepCount = int(before.StepCount)
		}
	}
	hooks := readHooks{deliver: deliver, count: func(context.Context) (int, error) {
		sum, err := summaryOf()
		return int(sum.StepCount), err
	}}
	rd, err := w.read(ctx, c, conv, stepCount, hooks)
	if err != nil {
		return snapshot{}, err
	}
	snap := snapshot{steps: rd.steps, offset: rd.offset, skipped: rd.skipped, length: -1}
	if !withStatus {
		w.keep(rd.steps, rd.offset)
		return snap, nil
	}
	after, err := summaryOf()
	if err != nil {
		return snapshot{}, err // the steps are not delivered: the next read starts where this one did
	}
	w.keep(rd.steps, rd.offset)
	snap.after = after.Status
	if after.Status == before.Status && after.StepCount == before.StepCount &&
		after.LastUserInputStepIndex == before.LastUserInputStepIndex && after.LastUserInputTime == before.LastUserInputTime {
		snap.status = after.Status
		snap.length = int(after.StepCount)
	}
	return snap, nil
}

// read is the snapshot as the session takes it.
func (snap snapshot) read(gen messages.Gen, conv string, at time.Time) *messages.SnapshotRead {
	return &messages.SnapshotRead{Gen: gen, ConversationID: conv, Steps: snap.steps, Offset: snap.offset, RunStatus: snap.status,
		Length: max(snap.length, 0), HasLength: snap.length >= 0, Received: at}
}
