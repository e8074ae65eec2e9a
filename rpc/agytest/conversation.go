package agytest

import (
	"context"
	"sync"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// Trajectory types of the summaries (agy's names are not recorded; these
// only need to be stable).
const (
	trajectoryTypeRoot     = "CORTEX_TRAJECTORY_TYPE_CASCADE"
	trajectoryTypeSubagent = "CORTEX_TRAJECTORY_TYPE_SUBAGENT"
)

// lagMode says how a stream treats a turn's last step when the cascade has
// already reported IDLE (agy reports IDLE before it flushes the last step).
type lagMode int

const (
	lagNone  lagMode = iota
	lagLater         // the DONE copy comes in a later frame
	lagNever         // the DONE copy never comes on this stream: read it with GetCascadeTrajectorySteps
)

// conversation is one hosted cascade: its trajectory, run state, open prompt
// and stream subscribers, guarded by mu. Its turns run on one worker
// goroutine at a time (work), owned by the server.
type conversation struct {
	srv            *Server
	id             string
	trajectoryID   string
	parentID       string
	rootID         string
	trajectoryType string

	mu         sync.Mutex
	steps      []*fakeStep
	truth      []wire.Step
	status     wire.RunStatus
	lastInput  time.Time
	lastMod    time.Time
	lastInputI int
	subs       map[*subscriber]struct{}
	changed    chan struct{} // closed and replaced on every change
	lag        map[int]lagMode

	// turn machinery
	running          bool
	queue            []*turnRequest
	cancelTurn       context.CancelFunc
	turnDone         chan struct{}
	turns            int // turns started, for rngs and the first-turn steps
	fallthroughTurns int
	prompt           *prompt
	lastModel        string
	calls            int // model calls so far (metadata.sourceTrajectoryStepInfo.metadataIndex)
	children         []*conversation
	tasks            int    // background tasks started, for their ids
	wakes            []wake // task notifications due after the running turn
	wakesPending     int    // task notifications scheduled, not yet run (scheduleWakes)
}

func newConversation(s *Server, id, trajectoryID string) *conversation {
	return &conversation{
		srv:            s,
		id:             id,
		trajectoryID:   trajectoryID,
		rootID:         id,
		trajectoryType: trajectoryTypeRoot,
		status:         wire.RunIdle,
		subs:           map[*subscriber]struct{}{},
		changed:        make(chan struct{}),
		lag:            map[int]lagMode{},
	}
}

// broadcastLocked wakes WaitIdle callers and anyone waiting on a change.
func (c *conversation) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
	c.lastMod = time.Now()
}

// appendLocked adds a step at the next index and returns the index.
func (c *conversation) appendLocked(f *fakeStep) int {
	idx := len(c.steps)
	f.step.Metadata.SourceTrajectoryStepInfo.StepIndex = wire.Int(idx)
	f.step.Metadata.SourceTrajectoryStepInfo.TrajectoryID = c.trajectoryID
	f.step.Metadata.SourceTrajectoryStepInfo.CascadeID = c.id
	c.steps = append(c.steps, f)
	c.touchLocked(idx)
	return idx
}

// touchLocked records that step idx changed: its caches go stale, ground
// truth gains it when it first turns terminal, and subscribers mark it.
func (c *conversation) touchLocked(idx int) {
	f := c.steps[idx]
	f.rev++
	if c.srv.opts.RecordTimes {
		if v, ok := liveTextVersion(c.id, idx, f); ok {
			c.srv.timing.changed(v, time.Now())
		}
	}
	delete(c.lag, idx)
	if !f.committed && f.step.Status.Terminal() {
		f.committed = true
		c.truth = append(c.truth, f.decoded())
	}
	for sub := range c.subs {
		sub.mark(idx)
	}
	c.broadcastLocked()
}

func (c *conversation) update(idx int, fn func(f *fakeStep)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(c.steps[idx])
	c.touchLocked(idx)
}

func (c *conversation) add(f *fakeStep) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appendLocked(f)
}

func (c *conversation) setStatusLocked(st wire.RunStatus) {
	if c.status == st {
		return
	}
	c.status = st
	for sub := range c.subs {
		sub.markStatus()
	}
	c.broadcastLocked()
}

// snapshot returns the decoded current trajectory.
func (c *conversation) snapshot() []wire.Step {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]wire.Step, len(c.steps))
	for i := range c.steps {
		out[i] = c.stepLocked(i).decoded()
	}
	return out
}

// wireSteps returns the steps from trajectory index offset on, at most limit
// of them (limit 0: all), as GetCascadeTrajectorySteps sends them.
func (c *conversation) wireSteps(offset, limit int) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if offset >= len(c.steps) {
		return nil
	}
	n := len(c.steps) - offset
	if limit > 0 && n > limit {
		n = limit
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = c.stepLocked(offset + i).wire(false)
	}
	return out
}

func (c *conversation) groundTruth() []wire.Step {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []wire.Step
	for i := 0; i < len(c.steps) && c.steps[i] == nil; i++ {
		out = append(out, c.historyStep(i).decoded())
	}
	return append(out, c.truth...)
}

func (c *conversation) summary() rpc.TrajectorySummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := rpc.TrajectorySummary{
		Status:                 c.status,
		StepCount:              wire.Int(len(c.steps)),
		TrajectoryID:           c.trajectoryID,
		TrajectoryType:         c.trajectoryType,
		LastUserInputStepIndex: wire.Int(c.lastInputI),
		TrajectoryMetadata: rpc.TrajectoryMetadata{
			ParentConversationID: c.parentID,
			RootConversationID:   c.rootID,
		},
	}
	if !c.lastInput.IsZero() {
		s.LastUserInputTime = timestamp(c.lastInput)
	}
	if len(c.steps) > 0 {
		s.LastModifiedTime = timestamp(c.lastMod)
		if c.srv.opts.MovingModifiedTime {
			s.LastModifiedTime = timestamp(time.Now())
		}
	}
	return s
}

func (c *conversation) runStatus() wire.RunStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// atRest reports whether the cascade is IDLE with no turn running or
// queued and no task notification due: nothing will change by itself.
func (c *conversation) atRest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status == wire.RunIdle && !c.running && len(c.queue) == 0 && len(c.wakes) == 0 && c.wakesPending == 0
}

// waitIdle blocks until no turn runs or is queued and the cascade is IDLE.
func (c *conversation) waitIdle(ctx context.Context) error {
	for {
		c.mu.Lock()
		idle := !c.running && c.status == wire.RunIdle
		ch := c.changed
		c.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// subscriber is one open StreamAgentStateUpdates. The conversation marks
// what changed; the stream goroutine coalesces the marks into one frame.
type subscriber struct {
	id     string
	notify chan struct{} // capacity 1: a pending wake-up
	done   chan struct{} // closed when a newer stream reuses the id
	once   sync.Once

	mu          sync.Mutex
	conv        *conversation
	full        bool // next frame is a snapshot of every step
	dirty       map[int]struct{}
	statusDirty bool
}

func newSubscriber(id string, c *conversation) *subscriber {
	return &subscriber{
		id:     id,
		notify: make(chan struct{}, 1),
		done:   make(chan struct{}),
		conv:   c,
		full:   true,
		dirty:  map[int]struct{}{},
	}
}

func (s *subscriber) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *subscriber) mark(idx int) {
	s.mu.Lock()
	s.dirty[idx] = struct{}{}
	s.mu.Unlock()
	s.wake()
}

func (s *subscriber) markStatus() {
	s.mu.Lock()
	s.statusDirty = true
	s.mu.Unlock()
	s.wake()
}

// follow moves the subscription to another conversation (a /clear while
// streaming the active one): its next frame is a snapshot of the new one.
func (s *subscriber) follow(c *conversation) {
	s.mu.Lock()
	s.conv = c
	s.full = true
	s.dirty = map[int]struct{}{}
	s.mu.Unlock()
	s.wake()
}

func (s *subscriber) close() { s.once.Do(func() { close(s.done) }) }

func (s *subscriber) current() *conversation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conv
}
