package agytest_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// streamed is a ground-truth step as a stream carries it: without the tool
// call (GENERIC keeps its id and name), and, where got shows agy's quirk of a
// DONE planner copy without response, without response.
func streamed(s, got wire.Step) wire.Step {
	if s.Metadata.ToolCall != nil {
		if s.Type == wire.StepGeneric {
			s.Metadata.ToolCall = &wire.ToolCall{ID: s.Metadata.ToolCall.ID, Name: s.Metadata.ToolCall.Name}
		} else {
			s.Metadata.ToolCall = nil
		}
	}
	if s.PlannerResponse != nil {
		pr := *s.PlannerResponse
		pr.ToolCalls = nil
		if got.PlannerResponse != nil && got.PlannerResponse.Response == "" && got.PlannerResponse.ModifiedResponse == pr.Response {
			pr.Response = ""
		}
		s.PlannerResponse = &pr
	}
	return s
}

// answerAll answers every prompt of the default scenario from the terminal
// until the turn ends.
func autoAnswer(t *testing.T, srv *agytest.Server, c *rpc.Client, conv string, min int) {
	t.Helper()
	for {
		p, ok := srv.OpenPrompt(conv)
		if !ok {
			if srv.RunStatus(conv) == wire.RunIdle {
				return
			}
			waitPromptOrIdle(t, srv, conv)
			continue
		}
		in := wire.InteractionResponse{TrajectoryID: p.TrajectoryID(), StepIndex: wire.Int(p.Index())}
		if p.RequestedInteraction.AskQuestion != nil {
			q := p.RequestedInteraction.AskQuestion.Questions[0]
			in.AskQuestion = &wire.QuestionResponses{Responses: []wire.QuestionResponse{{Question: q.Question, SelectedOptionIDs: []string{"1"}}}}
		} else {
			in.Permission = &wire.PermissionAnswer{Allow: true}
		}
		require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, in))
	}
}

func waitPromptOrIdle(t *testing.T, srv *agytest.Server, conv string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, ok := srv.OpenPrompt(conv)
		return ok || srv.RunStatus(conv) == wire.RunIdle
	}, 10*time.Second, time.Millisecond)
}

func TestStreamReassemblesIntoGroundTruth(t *testing.T) {
	opts := fast(nil) // the default scenario: every kind of step
	opts.IdleBeforeFlush = -1
	srv, c, conv := start(t, opts)
	ctx := testCtx(t)
	st, err := c.StreamAgentStateUpdates(ctx, conv, "")
	require.NoError(t, err)
	defer st.Close()

	r := newReader()
	r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true }) // the snapshot
	send(t, c, conv, "what is in the workspace?")
	done := make(chan struct{})
	go func() {
		defer close(done)
		autoAnswer(t, srv, c, conv, 0)
	}()
	r.readUntil(t, st, idleFrame)
	<-done

	truth := srv.GroundTruth(conv)
	require.NotEmpty(t, truth)
	assert.Len(t, r.latest, len(truth), "every committed step reached the stream")
	for _, want := range truth {
		got, ok := r.latest[want.Index()]
		require.True(t, ok, "step %d missing from the stream", want.Index())
		assert.Equal(t, canon(t, streamed(want, got)), canon(t, got), "step %d", want.Index())
	}
	// Every kind of step the default scenario promises.
	kinds := map[wire.StepType]bool{}
	for _, s := range truth {
		kinds[s.Type] = true
	}
	for _, k := range []wire.StepType{wire.StepUserInput, wire.StepConversationHistory, wire.StepPlannerResponse, wire.StepRunCommand, wire.StepAskQuestion, wire.StepViewFile, wire.StepCheckpoint} {
		assert.True(t, kinds[k], "default scenario has %s", k)
	}
}

func TestStreamFramesAreSparseCumulativeSnapshots(t *testing.T) {
	think := "First I consider the question carefully."
	say := "Here is a fairly long answer that streams in many small chunks."
	opts := fast(script(agytest.Think(think), agytest.Say(say, 10)))
	opts.IdleBeforeFlush = -1
	_, c, conv := start(t, opts)
	st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st.Close()
	r := newReader()
	r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true })
	send(t, c, conv, "hi")
	r.readUntil(t, st, idleFrame)

	var copies []wire.Step
	for i, f := range r.frames[1:] {
		su := f.Update.MainTrajectoryUpdate.StepsUpdate
		require.Len(t, su.Steps, len(su.Indices), "frame %d", i+1)
		assert.Equal(t, conv, f.Update.ConversationID)
		assert.NotEmpty(t, f.Update.Status)
		assert.LessOrEqual(t, len(su.Indices), 3, "frames are sparse")
		for j, s := range su.Steps {
			assert.Equal(t, int(su.Indices[j]), s.Index(), "indices[i] is the step index of steps[i]")
			if s.Type == wire.StepPlannerResponse {
				copies = append(copies, s)
			}
		}
	}
	require.Greater(t, len(copies), 5)
	prevThink, prevText := "", ""
	for _, s := range copies {
		pr := s.PlannerResponse
		require.NotNil(t, pr)
		assert.True(t, strings.HasPrefix(pr.Thinking, prevThink), "thinking only grows")
		assert.True(t, strings.HasPrefix(pr.ModifiedResponse, prevText), "modifiedResponse only grows")
		if pr.ModifiedResponse != "" {
			assert.Equal(t, think, pr.Thinking, "thinking is complete before text streams")
		}
		if s.Status == wire.StatusGenerating {
			assert.Empty(t, pr.Response, "response only at DONE")
			assert.Nil(t, s.Metadata.ModelUsage)
		}
		prevThink, prevText = pr.Thinking, pr.ModifiedResponse
	}
	last := copies[len(copies)-1]
	if last.Status == wire.StatusDone {
		assert.Equal(t, say, last.PlannerResponse.ModifiedResponse)
	}
	steps, err := c.GetCascadeTrajectorySteps(testCtx(t), conv)
	require.NoError(t, err)
	var planner wire.Step
	for _, s := range steps {
		if s.Type == wire.StepPlannerResponse {
			planner = s
		}
	}
	assert.Equal(t, say, planner.PlannerResponse.Response)
	require.NotNil(t, planner.Metadata.ModelUsage)
	assert.Equal(t, model, planner.Metadata.GeneratorModel)
	assert.Contains(t, string(planner.Raw), `"outputTokens":"`, "64-bit counts are strings")
}

func TestStreamSnapshotFirst(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Say("Hi.", 2))))
	send(t, c, conv, "hello")
	waitIdle(t, srv, conv)
	n := len(srv.Steps(conv))
	st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st.Close()
	f, err := st.Next()
	require.NoError(t, err)
	su := f.Update.MainTrajectoryUpdate.StepsUpdate
	require.Len(t, su.Steps, n)
	assert.Equal(t, n, int(su.TotalLength))
	for i := range n {
		assert.Equal(t, i, int(su.Indices[i]))
	}
	assert.Equal(t, wire.RunIdle, f.Update.Status)
	truth := srv.GroundTruth(conv)
	for _, s := range truth {
		assert.Equal(t, canon(t, streamed(s, su.Steps[s.Index()])), canon(t, su.Steps[s.Index()]))
	}
}

func TestStreamedToolStepsLackToolCall(t *testing.T) {
	opts := fast(script(agytest.Run(agytest.CommandAction{Line: "pwd", Output: "/w\n"}), agytest.Say("Done.", 1)))
	opts.IdleBeforeFlush = -1
	_, c, conv := start(t, opts)
	st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st.Close()
	r := newReader()
	r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true })
	send(t, c, conv, "where am I")
	r.readUntil(t, st, idleFrame)
	steps, err := c.GetCascadeTrajectorySteps(testCtx(t), conv)
	require.NoError(t, err)
	sawRun := false
	for _, s := range steps {
		got := r.latest[s.Index()]
		switch {
		case s.Type == wire.StepRunCommand:
			sawRun = true
			require.NotNil(t, s.Metadata.ToolCall, "unary copies carry the tool call")
			assert.Equal(t, "run_command", s.Metadata.ToolCall.Name)
			assert.Nil(t, got.Metadata.ToolCall, "streamed copies drop it")
			assert.Equal(t, "/w\n", got.RunCommand.CombinedOutput.Full)
			assert.Contains(t, string(s.Raw), `"exitCode":0`, "a command that ran carries exitCode, 0 included, as recorded")
		case s.Type == wire.StepPlannerResponse && len(s.PlannerResponse.ToolCalls) > 0:
			assert.Empty(t, got.PlannerResponse.ToolCalls)
		}
	}
	assert.True(t, sawRun)
}

func TestIdleCanArriveBeforeTheLastStepIsFlushed(t *testing.T) {
	// The stream can pick up the last step's final copy before the status
	// turns IDLE when its goroutine is scheduled late (a loaded machine), so
	// the quirk is required in most seeds, not in every one.
	const seeds = 6
	early := 0
	for seed := int64(1); seed <= seeds; seed++ {
		opts := fast(script(agytest.Say("Short answer.", 3)))
		opts.Seed = seed
		opts.IdleBeforeFlush = 1
		srv, c, conv := start(t, opts)
		st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
		require.NoError(t, err)
		r := newReader()
		r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true })
		send(t, c, conv, "hi")
		r.readUntil(t, st, idleFrame)
		truth := srv.GroundTruth(conv)
		last := truth[len(truth)-1]
		if got, ok := r.latest[last.Index()]; !ok || !got.Status.Terminal() {
			early++
		}
		steps, err := c.GetCascadeTrajectorySteps(testCtx(t), conv)
		require.NoError(t, err)
		assert.Equal(t, wire.StatusDone, steps[last.Index()].Status, "a read after IDLE has it")
		st.Close()
		require.NoError(t, srv.Close())
	}
	assert.GreaterOrEqual(t, early, seeds/2, "IDLE came before the last step's final copy in %d of %d seeds", early, seeds)
}

func TestRepeatedSubscriberIDClosesTheOlderStream(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Say("Hi.", 2))))
	ctx := testCtx(t)
	older, err := c.StreamAgentStateUpdates(ctx, conv, "sub-1")
	require.NoError(t, err)
	defer older.Close()
	_, err = older.Next()
	require.NoError(t, err)
	other, err := c.StreamAgentStateUpdates(ctx, conv, "sub-2")
	require.NoError(t, err)
	defer other.Close()
	_, err = other.Next()
	require.NoError(t, err)

	newer, err := c.StreamAgentStateUpdates(ctx, conv, "sub-1")
	require.NoError(t, err)
	defer newer.Close()
	_, err = newer.Next()
	require.NoError(t, err)
	err = drainErr(older)
	assert.True(t, isEOF(err), "the older stream ends cleanly, got %v", err)

	require.NoError(t, srv.TypeTurn("hello"))
	f, err := newer.Next()
	require.NoError(t, err)
	assert.Equal(t, conv, f.Update.ConversationID)
	f, err = other.Next()
	require.NoError(t, err, "a different subscriber id is untouched")
	assert.Equal(t, conv, f.Update.ConversationID)
	waitIdle(t, srv, conv)
}

func TestClearRotatesToANewRootConversation(t *testing.T) {
	srv, c, _ := start(t, fast(script(agytest.Say("Hi.", 2))))
	ctx := testCtx(t)
	old := srv.ConversationID()
	send(t, c, old, "hello")
	waitIdle(t, srv, old)
	st, err := c.StreamAgentStateUpdates(ctx, old, "")
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Next()
	require.NoError(t, err)

	fresh := srv.Clear()
	assert.NotEqual(t, old, fresh)
	assert.Equal(t, fresh, srv.ConversationID())
	f, err := st.Next()
	require.NoError(t, err)
	assert.Equal(t, fresh, f.Update.ConversationID, "the stream names the active conversation")
	assert.Empty(t, f.Update.MainTrajectoryUpdate.StepsUpdate.Steps)

	all, err := c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	require.Contains(t, all.TrajectorySummaries, old)
	require.Contains(t, all.TrajectorySummaries, fresh)
	assert.Empty(t, all.TrajectorySummaries[fresh].LastUserInputTime)
	assert.Equal(t, fresh, all.TrajectorySummaries[fresh].TrajectoryMetadata.RootConversationID)

	steps, err := c.GetCascadeTrajectorySteps(ctx, old)
	require.NoError(t, err)
	assert.NotEmpty(t, steps, "the old conversation stays reachable")

	require.NoError(t, srv.TypeTurn("typed after clear"))
	waitIdle(t, srv, fresh)
	all, err = c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	assert.Greater(t, all.TrajectorySummaries[fresh].LastUserInputTime, all.TrajectorySummaries[old].LastUserInputTime)
	assert.Equal(t, []wire.TextItem{{Text: "typed after clear"}}, srv.Steps(fresh)[0].UserInput.Items)
}

func TestPollerSeesGroundTruth(t *testing.T) {
	srv, c, conv := start(t, fast(script(
		agytest.Think("Plan."),
		agytest.Run(agytest.CommandAction{Line: "ls", Output: "a\n"}),
		agytest.Tool(agytest.ToolAction{Name: "list_dir", Target: "/w", Result: "a\nb/\n"}),
		agytest.Say("Listed the files.", 4),
	)))
	ctx := testCtx(t)
	seen := map[int]wire.Step{}
	send(t, c, conv, "list")
	for {
		idle := srv.RunStatus(conv) == wire.RunIdle
		steps, err := c.GetCascadeTrajectorySteps(ctx, conv)
		require.NoError(t, err)
		for _, s := range steps {
			if s.Status.Terminal() {
				if prev, ok := seen[s.Index()]; ok {
					assert.Equal(t, canon(t, prev), canon(t, s), "a committed step never changes")
				}
				seen[s.Index()] = s
			}
		}
		if idle {
			break
		}
	}
	truth := srv.GroundTruth(conv)
	require.Len(t, seen, len(truth))
	for _, s := range truth {
		assert.JSONEq(t, string(s.Raw), string(seen[s.Index()].Raw))
	}
	var raw []json.RawMessage
	for _, s := range truth {
		raw = append(raw, s.Raw)
	}
	assert.NotEmpty(t, raw)
}

func TestStreamOfAnUnhostedConversation(t *testing.T) {
	srv, c, _ := start(t, fast(nil))
	st, err := c.StreamAgentStateUpdates(testCtx(t), "not-hosted", "")
	if err == nil {
		defer st.Close()
		_, err = st.Next()
	}
	require.ErrorIs(t, err, rpc.ErrTrajectoryNotFound, "a stream answers 200 and reports the error in its end-of-stream envelope")

	r := post(t, rawHTTPS(t), srv.Port(), rpc.MethodStreamAgentStateUpdates, "application/connect+json", envelopeJSON(`{"conversationId":"not-hosted"}`))
	assert.Equal(t, 200, r.status)
	require.GreaterOrEqual(t, len(r.body), 5)
	assert.Equal(t, rpc.FlagEndStream, r.body[0])
	assert.JSONEq(t, `{"error":{"code":"unknown","message":"trajectory not found"}}`, string(r.body[5:]))
}
