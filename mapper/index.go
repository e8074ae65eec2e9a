package mapper

import "github.com/agyharness/agyharness/wire"

// Indexer returns the trajectory index of each step of a window read from
// trajectory index offset (GetCascadeTrajectorySteps' stepOffset): the
// index each step carries in metadata.sourceTrajectoryStepInfo.stepIndex.
// agy omits it when it is 0, and USER_INPUT steps can lack it anywhere: a
// step without it is offset plus its position (index 0 is only ever at
// position 0 of a window from 0). Steps are identified by these indices,
// never by position alone: a window does not start at 0, and a build may
// not list every index.
//
// When the carried indices cannot be the window's (not strictly
// increasing, below offset, or from different trajectories), positions are
// used for the whole window, as a reader of a full snapshot always could.
func Indexer(steps []wire.Step, offset int) func(i int) int {
	if carriedIndices(steps, offset) {
		return func(i int) int { return ownIndex(&steps[i], offset+i) }
	}
	return func(i int) int { return offset + i }
}

// ownIndex is the trajectory index a step carries, or fallback.
func ownIndex(s *wire.Step, fallback int) int {
	if n := int(s.Metadata.SourceTrajectoryStepInfo.StepIndex); n > 0 {
		return n
	}
	return fallback
}

// carriedIndices reports whether the indices the steps carry are usable.
func carriedIndices(steps []wire.Step, offset int) bool {
	prev := offset - 1
	traj := ""
	for i := range steps {
		info := &steps[i].Metadata.SourceTrajectoryStepInfo
		if info.TrajectoryID != "" {
			if traj != "" && info.TrajectoryID != traj {
				return false
			}
			traj = info.TrajectoryID
		}
		idx := ownIndex(&steps[i], offset+i)
		if idx <= prev {
			return false
		}
		prev = idx
	}
	return true
}
