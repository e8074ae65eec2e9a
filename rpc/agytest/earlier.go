package agytest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/agyharness/agyharness/wire"
)

// addEarlierRunsLocked adds n root conversations of earlier runs, as agy
// lists the conversations it keeps on disk: each an idle trajectory of one
// finished turn, last active hours ago (the i-th more recently than the
// one before it). None is active: agy's terminal starts on a new one.
// With Options.EarlierSubagents every fourth is a subagent child of the
// conversation before it (a root: the one before a child never is one).
func (s *Server) addEarlierRunsLocked(n int) {
	model := s.recommendedModel()
	var parent *conversation
	for i := range n {
		c := newConversation(s, uuidFrom(s.rng), uuidFrom(s.rng))
		if s.opts.EarlierSubagents && i%4 == 3 && parent != nil {
			c.parentID, c.rootID = parent.id, parent.rootID
		} else {
			parent = c
		}
		at := time.Now().Add(-time.Duration(n-i) * time.Hour)
		text := "Earlier run " + strconv.Itoa(i+1) + ": tidy the workspace"
		c.mu.Lock()
		c.appendLocked(&fakeStep{step: wire.Step{
			Type:   wire.StepUserInput,
			Status: wire.StatusDone,
			Metadata: wire.StepMetadata{
				Source:      wire.SourceUserExplicit,
				ExecutionID: uuidFrom(s.rng),
				CreatedAt:   timestamp(at),
			},
			UserInput: &wire.UserInput{
				Items:        []wire.TextItem{{Text: text}},
				UserResponse: text,
				UserConfig: &wire.UserConfig{PlannerConfig: &wire.PlannerConfig{
					PlanModel: model, RequestedModel: &wire.ModelRef{Model: model},
				}},
			},
		}})
		c.appendLocked(&fakeStep{step: wire.Step{
			Type:   wire.StepPlannerResponse,
			Status: wire.StatusDone,
			Metadata: wire.StepMetadata{
				Source:         wire.SourceModel,
				CreatedAt:      timestamp(at.Add(time.Second)),
				CompletedAt:    timestamp(at.Add(2 * time.Second)),
				GeneratorModel: model,
				ModelUsage:     &wire.ModelUsage{Model: model, InputTokens: 1200, OutputTokens: 12, ResponseOutputTokens: 12},
			},
			PlannerResponse: &wire.PlannerResponse{
				Response:         fmt.Sprintf("Done with earlier run %d.", i+1),
				ModifiedResponse: fmt.Sprintf("Done with earlier run %d.", i+1),
				MessageID:        "bot-" + uuidFrom(s.rng),
				StopReason:       "STOP_REASON_STOP_PATTERN",
			},
		}})
		c.turns = 1
		c.lastModel = model
		c.lastInput = at
		c.lastInputI = 0
		c.lastMod = at.Add(2 * time.Second)
		c.mu.Unlock()
		s.registerLocked(c)
	}
}
