package actors

import (
	"encoding/json"
	"time"

	"github.com/agyharness/agyharness/rpc"
)

// Recorder receives every frame and snapshot a session reads, as it reads
// them: kind is "frame" or "snapshot", conv the conversation, payload the
// raw JSON (a frame as agy sent it, {"update":{...}}; a snapshot as
// {"steps":[...],"runStatus":"..."}), t when it arrived. Steps are agy's
// bytes, unknown fields included. It is called on the session's goroutine
// and must not block (buffer, write elsewhere).
type Recorder func(kind, conv string, payload json.RawMessage, t time.Time)

// rawSteps returns each step's bytes as agy sent them.
func rawSteps(steps []rpc.Step) []json.RawMessage {
	out := make([]json.RawMessage, len(steps))
	for i := range steps {
		if len(steps[i].Raw) > 0 {
			out[i] = steps[i].Raw
		} else {
			out[i], _ = json.Marshal(&steps[i])
		}
	}
	return out
}

// SnapshotCapture is the payload of a "snapshot" record.
type SnapshotCapture struct {
	Steps     []json.RawMessage `json:"steps"`
	RunStatus rpc.RunStatus     `json:"runStatus,omitempty"`
}

func captureFrame(f *rpc.StreamFrame) json.RawMessage {
	u := f.Update
	type stepsUpdate struct {
		Indices     []rpc.Int         `json:"indices,omitempty"`
		Steps       []json.RawMessage `json:"steps,omitempty"`
		TotalLength rpc.Int           `json:"totalLength,omitempty"`
	}
	var frame struct {
		Update struct {
			ConversationID       string        `json:"conversationId,omitempty"`
			TrajectoryID         string        `json:"trajectoryId,omitempty"`
			Status               rpc.RunStatus `json:"status,omitempty"`
			MainTrajectoryUpdate struct {
				StepsUpdate stepsUpdate `json:"stepsUpdate"`
			} `json:"mainTrajectoryUpdate"`
		} `json:"update"`
	}
	frame.Update.ConversationID = u.ConversationID
	frame.Update.TrajectoryID = u.TrajectoryID
	frame.Update.Status = u.Status
	su := u.MainTrajectoryUpdate.StepsUpdate
	frame.Update.MainTrajectoryUpdate.StepsUpdate = stepsUpdate{Indices: su.Indices, Steps: rawSteps(su.Steps), TotalLength: su.TotalLength}
	b, _ := json.Marshal(&frame)
	return b
}

func captureSnapshot(steps []rpc.Step, status rpc.RunStatus) json.RawMessage {
	b, _ := json.Marshal(&SnapshotCapture{Steps: rawSteps(steps), RunStatus: status})
	return b
}
