package agytest

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agyharness/agyharness/wire"
)

// A conversation's history (Options.HistorySteps) is finished turns made
// from their index when they are sent, never stored: a conversation of a
// million steps costs the fake a nil pointer per step. Even indices are
// USER_INPUT steps, odd ones the PLANNER_RESPONSE that answered them.

// historyEpoch is when the history's turns were made (an hour each, before
// the server started).
var historyEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// historyStep makes step i of the conversation's history.
func (c *conversation) historyStep(i int) *fakeStep {
	turn := strconv.Itoa(i / 2)
	model := c.srv.recommendedModel()
	at := timestamp(historyEpoch.Add(time.Duration(i) * time.Second))
	f := &fakeStep{step: wire.Step{
		Status: wire.StatusDone,
		Metadata: wire.StepMetadata{
			CreatedAt: at, CompletedAt: at,
			SourceTrajectoryStepInfo: wire.StepInfo{TrajectoryID: c.trajectoryID, StepIndex: wire.Int(i), CascadeID: c.id},
		},
	}}
	s := &f.step
	if i%2 == 0 {
		text := "history turn " + turn
		s.Type = wire.StepUserInput
		s.Metadata.Source = wire.SourceUserExplicit
		s.UserInput = &wire.UserInput{
			Items: []wire.TextItem{{Text: text}}, UserResponse: text,
			UserConfig: &wire.UserConfig{PlannerConfig: &wire.PlannerConfig{PlanModel: model, RequestedModel: &wire.ModelRef{Model: model}}},
		}
		return f
	}
	text := "history reply " + turn
	if pad := c.srv.opts.HistoryStepBytes - len(text); pad > 0 {
		text += " " + strings.Repeat("x", pad)
	}
	s.Type = wire.StepPlannerResponse
	s.Metadata.Source = wire.SourceModel
	s.Metadata.GeneratorModel = model
	s.Metadata.ModelUsage = &wire.ModelUsage{Model: model, InputTokens: 1000, OutputTokens: wire.Int64(len(text) / 4), ResponseOutputTokens: wire.Int64(len(text) / 4)}
	s.PlannerResponse = &wire.PlannerResponse{Response: text, ModifiedResponse: text}
	return f
}

// stepLocked is step i: the stored one, or the history's made now.
func (c *conversation) stepLocked(i int) *fakeStep {
	if f := c.steps[i]; f != nil {
		return f
	}
	return c.historyStep(i)
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}

// writeSnapshotFrame writes a stream's first frame of a conversation with
// a history: as next builds it, but written as it is made, so that a frame
// of a million steps is never held whole. tail holds the streamed copies
// of the stored steps (from index n-len(tail)).
func writeSnapshotFrame(w io.Writer, c *conversation, status wire.RunStatus, n int, tail [][]byte) error {
	head, _ := json.Marshal(struct {
		ConversationID string         `json:"conversationId,omitempty"`
		TrajectoryID   string         `json:"trajectoryId,omitempty"`
		Status         wire.RunStatus `json:"status,omitempty"`
	}{c.id, c.trajectoryID, status})
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"update":`)
	bw.Write(head[:len(head)-1]) // without its closing brace
	if len(head) > 2 {
		bw.WriteByte(',')
	}
	bw.WriteString(`"mainTrajectoryUpdate":{"stepsUpdate":{"indices":[`)
	var num []byte
	for i := range n {
		if i > 0 {
			bw.WriteByte(',')
		}
		num = strconv.AppendInt(num[:0], int64(i), 10)
		bw.Write(num)
	}
	bw.WriteString(`],"steps":[`)
	first := n - len(tail)
	for i := range n {
		if i > 0 {
			bw.WriteByte(',')
		}
		if i >= first {
			bw.Write(tail[i-first])
		} else {
			bw.Write(c.historyStep(i).wire(true))
		}
	}
	bw.WriteString(`],"totalLength":`)
	bw.WriteString(strconv.Itoa(n))
	bw.WriteString(`}}}}`)
	return bw.Flush()
}

// startWithHistory gives a new conversation n finished steps of history.
func (c *conversation) startWithHistory(n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steps = make([]*fakeStep, n)
	c.lastInputI = (n - 1) &^ 1
	c.lastInput = historyEpoch.Add(time.Duration(c.lastInputI) * time.Second)
	c.lastMod = time.Now()
}
