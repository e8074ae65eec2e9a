package agytest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/agyharness/agyharness/wire"
)

// TextVersion names one version of a live planner step's text: the
// conversation, the step index and the text's length in bytes (the text
// only grows while the step is live, so the length names the version). A
// consumer that sums an item's text deltas knows the version it holds.
type TextVersion struct {
	ConversationID string
	StepIndex      int
	Length         int
}

// VersionTimes are when the server changed a step's text to a version, and
// when it first wrote a stream frame carrying it (zero when no stream did,
// e.g. nobody streamed, or a later version replaced it before the frame).
type VersionTimes struct {
	Changed, Written time.Time
}

// timing is the server's record for benchmarks (Options.RecordTimes).
type timing struct {
	frames     atomic.Int64
	frameBytes atomic.Int64
	stepsRead  atomic.Int64 // steps sent in GetCascadeTrajectorySteps answers

	mu       sync.Mutex
	versions map[TextVersion]VersionTimes
}

// liveTextVersion is the version a live planner step shows, if any: the
// text the harness streams deltas of (modifiedResponse, else response).
func liveTextVersion(conv string, idx int, f *fakeStep) (TextVersion, bool) {
	s := &f.step
	if s.Type != wire.StepPlannerResponse || s.PlannerResponse == nil || s.Status.Terminal() {
		return TextVersion{}, false
	}
	n := len(s.PlannerResponse.ModifiedResponse)
	if n == 0 {
		n = len(s.PlannerResponse.Response)
	}
	if n == 0 {
		return TextVersion{}, false
	}
	return TextVersion{ConversationID: conv, StepIndex: idx, Length: n}, true
}

// changed records when a step's text became a version (the first time).
func (t *timing) changed(v TextVersion, at time.Time) {
	t.mu.Lock()
	if _, ok := t.versions[v]; !ok {
		t.versions[v] = VersionTimes{Changed: at}
	}
	t.mu.Unlock()
}

// written records when a frame carrying these versions was written.
func (t *timing) written(vs []TextVersion, at time.Time) {
	if len(vs) == 0 {
		return
	}
	t.mu.Lock()
	for _, v := range vs {
		vt := t.versions[v]
		if vt.Written.IsZero() {
			vt.Written = at
			t.versions[v] = vt
		}
	}
	t.mu.Unlock()
}

// FramesWritten reports how many stream data frames the server wrote, and
// their payload bytes, since it started (all its streams, every port).
func (s *Server) FramesWritten() (frames, bytes int64) {
	return s.timing.frames.Load(), s.timing.frameBytes.Load()
}

// StepsServed reports how many steps the server sent in
// GetCascadeTrajectorySteps answers: what readers of its trajectories read.
func (s *Server) StepsServed() int64 { return s.timing.stepsRead.Load() }

// TextTimes returns, when Options.RecordTimes is set, when every live
// planner text version changed and was first streamed (nil otherwise).
// It is for latency benchmarks: a consumer's arrival time minus these.
func (s *Server) TextTimes() map[TextVersion]VersionTimes {
	if !s.opts.RecordTimes {
		return nil
	}
	s.timing.mu.Lock()
	defer s.timing.mu.Unlock()
	out := make(map[TextVersion]VersionTimes, len(s.timing.versions))
	for k, v := range s.timing.versions {
		out[k] = v
	}
	return out
}
