package actors

import (
	"encoding/json"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// Recorder receives everything a session reads and the decisions that shape
// its events, in order, so that a capture replays to the same events:
//
//	kind        payload
//	frame       a frame as agy sent it, {"update":{...}}
//	snapshot    {"steps":[...],"offset":N,"runStatus":"...","length":L}: steps read from trajectory index N
//	            (length: the trajectory's length by the summaries around the read, when known)
//	bind        null: the session bound conversation conv
//	models      the model catalog, keyed by model enum
//	turn        {"text"}: the session sent a turn (its USER_INPUT is the harness's)
//	delivering  {"elicitation_id","action"}: an answer is on its way ("" action: it failed)
//	resolved    {"elicitation_id","action","step_index"}: agy took our answer
//
// conv is the conversation, t when it happened. Steps are agy's bytes,
// unknown fields included. It is called on the session's goroutine and must
// not block (buffer, write elsewhere).
type Recorder func(kind, conv string, payload json.RawMessage, t time.Time)

// rawSteps returns each step's bytes as agy sent them.
func rawSteps(steps []wire.Step) []json.RawMessage {
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
	Offset    int               `json:"offset,omitempty"` // the trajectory index the read started at
	RunStatus wire.RunStatus    `json:"runStatus,omitempty"`
	// Length is the trajectory's length by the summaries read around the
	// steps, when they agreed (absent: unknown).
	Length *int `json:"length,omitempty"`
}

// Observation is the snapshot as the mapper takes it, at t.
func (c *SnapshotCapture) Observation(steps []wire.Step, t time.Time) mapper.Observation {
	obs := mapper.FromWindow(steps, c.Offset, c.RunStatus, t)
	if c.Length != nil {
		obs = obs.WithLength(*c.Length)
	}
	return obs
}

func captureFrame(f *rpc.StreamFrame) json.RawMessage {
	u := f.Update
	type stepsUpdate struct {
		Indices     []wire.Int        `json:"indices,omitempty"`
		Steps       []json.RawMessage `json:"steps,omitempty"`
		TotalLength wire.Int          `json:"totalLength,omitempty"`
	}
	var frame struct {
		Update struct {
			ConversationID       string         `json:"conversationId,omitempty"`
			TrajectoryID         string         `json:"trajectoryId,omitempty"`
			Status               wire.RunStatus `json:"status,omitempty"`
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

func captureSnapshot(m *messages.SnapshotRead) json.RawMessage {
	c := SnapshotCapture{Steps: rawSteps(m.Steps), Offset: m.Offset, RunStatus: m.RunStatus}
	if m.HasLength {
		c.Length = &m.Length
	}
	b, _ := json.Marshal(&c)
	return b
}

// record passes one record to the spec's Recorder, if any.
func (s *session) record(kind, conv string, payload any, t time.Time) {
	rec := s.shared.spec.Recorder
	if rec == nil {
		return
	}
	raw, ok := payload.(json.RawMessage)
	if !ok {
		raw, _ = json.Marshal(payload)
	}
	rec(kind, conv, raw, t)
}

type answerRecord struct {
	ElicitationID string `json:"elicitation_id"`
	Action        string `json:"action"`
	StepIndex     *int   `json:"step_index,omitempty"`
	Choice        string `json:"choice,omitempty"`
}
