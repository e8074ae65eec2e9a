package mapper

import (
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// ObservationKind tells a full snapshot from a sparse stream frame.
type ObservationKind int

// Observation kinds.
const (
	// Snapshot is the steps of the trajectory from Offset on
	// (GetCascadeTrajectorySteps): each step's index is the trajectory index
	// it carries (see Indexer), else Offset plus its position.
	Snapshot ObservationKind = iota
	// Frame is a sparse, index-addressed StreamAgentStateUpdates frame.
	Frame
)

// String names the kind.
func (k ObservationKind) String() string {
	switch k {
	case Snapshot:
		return "snapshot"
	case Frame:
		return "frame"
	}
	return "unknown"
}

// Observation is one read of a trajectory, the unit Reconciler.Apply takes.
type Observation struct {
	Kind           ObservationKind
	ConversationID string         // frame's update.conversationId ("" for snapshots)
	RunStatus      wire.RunStatus // cascade run status if known ("" = unknown)
	Indices        []int          // Frame: Indices[i] is the step index of Steps[i]; Snapshot: nil (see Offset)
	Offset         int            // Snapshot: the trajectory index the read started at (stepOffset)
	Steps          []wire.Step
	TotalLength    int       // frames: stepsUpdate.totalLength (0 = unknown)
	Time           time.Time // stamped on the events it yields
	// Length is the trajectory's length as agy's summary gave it in the
	// reads around a snapshot, when HasLength (the reader read the summary
	// before and after the steps and both agreed). A length shorter than
	// the steps already seen, in two snapshots in a row, is a rewind.
	Length    int
	HasLength bool
}

// FromFrame makes an observation of a stream frame. A frame without indices
// is read as a snapshot of its steps by position (a stream's first frame may
// come so); when indices and steps differ in number, steps without an index
// are dropped.
func FromFrame(f *rpc.StreamFrame, t time.Time) Observation {
	if f == nil {
		return Observation{Kind: Frame, Time: t}
	}
	u := &f.Update.MainTrajectoryUpdate.StepsUpdate
	obs := Observation{
		Kind:           Frame,
		ConversationID: f.Update.ConversationID,
		RunStatus:      f.Update.Status,
		Steps:          u.Steps,
		TotalLength:    int(u.TotalLength),
		Time:           t,
	}
	n := len(u.Steps)
	if len(u.Indices) == 0 {
		obs.Indices = make([]int, n)
		for i := range obs.Indices {
			obs.Indices[i] = i
		}
		return obs
	}
	if len(u.Indices) < n {
		n = len(u.Indices)
		obs.Steps = u.Steps[:n]
	}
	obs.Indices = make([]int, n)
	for i := 0; i < n; i++ {
		obs.Indices[i] = int(u.Indices[i])
	}
	return obs
}

// FromSnapshot makes an observation of a full read of the steps. runStatus is
// the cascade status read around the steps, or "" when unknown.
func FromSnapshot(steps []wire.Step, runStatus wire.RunStatus, t time.Time) Observation {
	return FromWindow(steps, 0, runStatus, t)
}

// FromWindow makes an observation of a read of the steps from trajectory
// index offset to the trajectory's end (GetCascadeTrajectorySteps with
// stepOffset, every window of it read): the steps before offset are known
// and can no longer change.
func FromWindow(steps []wire.Step, offset int, runStatus wire.RunStatus, t time.Time) Observation {
	return Observation{Kind: Snapshot, RunStatus: runStatus, Offset: offset, Steps: steps, Time: t}
}

// WithLength is obs with the trajectory length the summary reads around it
// agreed on (a negative length: unknown).
func (obs Observation) WithLength(length int) Observation {
	if length >= 0 {
		obs.Length, obs.HasLength = length, true
	}
	return obs
}
