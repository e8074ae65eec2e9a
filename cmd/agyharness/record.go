package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
)

// A capture is a JSON-lines file: a header line, then one record per thing
// the session's reconcilers were fed, in the order the session saw them.
// Steps are written exactly as agy sent them (rpc.Step.Raw), so fields this
// version does not decode survive, and a newer mapper can replay an old
// capture.
//
//	{"kind":"capture","version":1,"time":"..."}
//	{"kind":"bind","conversation_id":"C","time":"..."}                      the session bound (or rotated to) C
//	{"kind":"models","models":{"M":{...}},"time":"..."}                    the model catalog (display names)
//	{"kind":"frame","conversation_id":"C","frame":{"update":{...}},"time":"..."}   a StreamAgentStateUpdates data frame
//	{"kind":"snapshot","conversation_id":"C","run_status":"...","steps":[...],"time":"..."}  a GetCascadeTrajectorySteps read
//	{"kind":"turn","conversation_id":"C","text":"...","time":"..."}        this session sent a turn (origin harness)
//	{"kind":"resolved","elicitation_id":"E","action":"accept","step_index":7,"time":"..."}  an answer reached agy
const captureVersion = 1

// captureRecord is one line of a capture.
type captureRecord struct {
	Kind           string                   `json:"kind"`
	Version        int                      `json:"version,omitempty"`
	Time           time.Time                `json:"time"`
	ConversationID string                   `json:"conversation_id,omitempty"`
	Frame          json.RawMessage          `json:"frame,omitempty"`
	RunStatus      rpc.RunStatus            `json:"run_status,omitempty"`
	Steps          []json.RawMessage        `json:"steps,omitempty"`
	Text           string                   `json:"text,omitempty"`
	ElicitationID  string                   `json:"elicitation_id,omitempty"`
	Action         string                   `json:"action,omitempty"`
	StepIndex      *int                     `json:"step_index,omitempty"`
	Models         map[string]rpc.ModelInfo `json:"models,omitempty"`
}

// recorder writes a capture. Record is safe for concurrent use (a host
// may call it from several sessions' goroutines); it never blocks on
// anything but the file.
type recorder struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	err  error
	skip map[string]bool // payload kinds already reported as unknown
}

func createRecorder(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	r := &recorder{f: f, w: bufio.NewWriter(f), skip: make(map[string]bool)}
	r.write(captureRecord{Kind: "capture", Version: captureVersion, Time: time.Now().UTC()})
	return r, nil
}

// Record is the hook the session calls (actors.Spec.Recorder) with what it
// received; see the capture format above for kinds and payloads.
func (r *recorder) Record(kind, conv string, payload any, t time.Time) {
	rec, ok := captureOf(kind, conv, payload, t)
	if !ok {
		r.mu.Lock()
		if !r.skip[kind] && r.err == nil {
			r.skip[kind] = true
			r.err = fmt.Errorf("record: unknown payload %T for kind %q", payload, kind)
		}
		r.mu.Unlock()
		return
	}
	r.write(rec)
}

func (r *recorder) write(rec captureRecord) {
	b, err := json.Marshal(rec)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if err != nil {
		r.err = fmt.Errorf("record: %w", err)
		return
	}
	b = append(b, '\n')
	if _, err := r.w.Write(b); err != nil {
		r.err = fmt.Errorf("record: %w", err)
		return
	}
	// Flush per record: a capture of a session that crashes is the one
	// most worth having.
	if err := r.w.Flush(); err != nil {
		r.err = fmt.Errorf("record: %w", err)
	}
}

// Close flushes and closes the file and reports the first write error.
func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ferr := r.w.Flush()
	cerr := r.f.Close()
	switch {
	case r.err != nil:
		return r.err
	case ferr != nil:
		return fmt.Errorf("record: %w", ferr)
	case cerr != nil:
		return fmt.Errorf("record: %w", cerr)
	}
	return nil
}

// captureOf turns a hook call into a record. It accepts the payload types
// the session passes (see setRecorder) and close relatives, so the hook's
// exact payload type is not a wire contract.
func captureOf(kind, conv string, payload any, t time.Time) (captureRecord, bool) {
	rec := captureRecord{Kind: kind, ConversationID: conv, Time: t.UTC()}
	switch kind {
	case "frame":
		var f *rpc.StreamFrame
		switch p := payload.(type) {
		case *rpc.StreamFrame:
			f = p
		case rpc.StreamFrame:
			f = &p
		case *messages.FrameReceived:
			f = p.Frame
		}
		if f == nil {
			return rec, false
		}
		rec.Frame = rawFrame(f)
	case "snapshot":
		switch p := payload.(type) {
		case *messages.SnapshotRead:
			rec.Steps, rec.RunStatus = rawSteps(p.Steps), p.RunStatus
			if p.ConversationID != "" {
				rec.ConversationID = p.ConversationID
			}
		case mapper.Observation:
			rec.Steps, rec.RunStatus = rawSteps(p.Steps), p.RunStatus
		case []rpc.Step:
			rec.Steps = rawSteps(p)
		default:
			return rec, false
		}
		if rec.Steps == nil {
			rec.Steps = []json.RawMessage{}
		}
	case "turn":
		switch p := payload.(type) {
		case string:
			rec.Text = p
		case *messages.SendTurn:
			rec.Text = p.Text
		default:
			return rec, false
		}
	case "resolved":
		p, ok := payload.(*messages.AnswerDelivered)
		if !ok {
			return rec, false
		}
		rec.ElicitationID, rec.Action, rec.StepIndex = p.ElicitationID, p.Action, messages.Ptr(p.StepIndex)
	case "models":
		switch p := payload.(type) {
		case map[string]rpc.ModelInfo:
			rec.Models = p
		case *messages.ModelsLoaded:
			rec.Models = p.Models
		default:
			return rec, false
		}
	case "bind":
		if s, ok := payload.(string); ok && s != "" {
			rec.ConversationID = s
		}
	default:
		return rec, false
	}
	return rec, true
}

// rawFrame writes a frame with its steps exactly as received.
func rawFrame(f *rpc.StreamFrame) json.RawMessage {
	u := f.Update
	su := u.MainTrajectoryUpdate.StepsUpdate
	type stepsUpdate struct {
		Indices     []rpc.Int         `json:"indices,omitempty"`
		Steps       []json.RawMessage `json:"steps,omitempty"`
		TotalLength rpc.Int           `json:"totalLength,omitempty"`
	}
	type update struct {
		ConversationID       string        `json:"conversationId,omitempty"`
		TrajectoryID         string        `json:"trajectoryId,omitempty"`
		Status               rpc.RunStatus `json:"status,omitempty"`
		MainTrajectoryUpdate struct {
			StepsUpdate stepsUpdate `json:"stepsUpdate"`
		} `json:"mainTrajectoryUpdate"`
	}
	var out struct {
		Update update `json:"update"`
	}
	out.Update.ConversationID, out.Update.TrajectoryID, out.Update.Status = u.ConversationID, u.TrajectoryID, u.Status
	out.Update.MainTrajectoryUpdate.StepsUpdate = stepsUpdate{Indices: su.Indices, Steps: rawSteps(su.Steps), TotalLength: su.TotalLength}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

func rawSteps(steps []rpc.Step) []json.RawMessage {
	if steps == nil {
		return nil
	}
	out := make([]json.RawMessage, len(steps))
	for i := range steps {
		if len(steps[i].Raw) > 0 {
			out[i] = steps[i].Raw
			continue
		}
		b, err := json.Marshal(steps[i])
		if err != nil {
			b = []byte(`{}`)
		}
		out[i] = b
	}
	return out
}
