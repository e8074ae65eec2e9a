package agytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

func allow(s wire.Step, yes bool) wire.InteractionResponse {
	return wire.InteractionResponse{TrajectoryID: s.TrajectoryID(), StepIndex: wire.Int(s.Index()), Permission: &wire.PermissionAnswer{Allow: yes}}
}

func choose(s wire.Step, answers ...wire.QuestionResponse) wire.InteractionResponse {
	return wire.InteractionResponse{TrajectoryID: s.TrajectoryID(), StepIndex: wire.Int(s.Index()), AskQuestion: &wire.QuestionResponses{Responses: answers}}
}

func TestCommandApprovalAllowed(t *testing.T) {
	srv, c, conv := start(t, fast(script(
		agytest.Run(agytest.CommandAction{Line: "make test", Cwd: "/w", Output: "ok\n", ExitCode: 3, NeedsApproval: true}),
		agytest.Say("Ran it.", 2),
	)))
	send(t, c, conv, "run the tests")
	p := waitPrompt(t, srv, conv, 0)
	assert.Equal(t, wire.StepRunCommand, p.Type)
	assert.Equal(t, wire.StatusWaiting, p.Status)
	require.NotNil(t, p.RequestedInteraction.Permission)
	assert.Equal(t, "command", p.RequestedInteraction.Permission.Resource.Action)
	assert.Equal(t, "make test", p.RequestedInteraction.Permission.Resource.Target)
	assert.Equal(t, "make test", p.RunCommand.CommandLine)
	assert.Equal(t, "/w", p.RunCommand.Cwd)
	assert.Nil(t, p.RunCommand.CombinedOutput, "not run yet")

	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(p, true)))
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[p.Index()]
	assert.Equal(t, wire.StatusDone, done.Status)
	assert.Equal(t, 3, int(done.RunCommand.ExitCode))
	assert.Equal(t, "ok\n", done.RunCommand.CombinedOutput.Full)
	require.Len(t, done.CompletedInteractions, 1)
	assert.Equal(t, allow(p, true), *done.CompletedInteractions[0].Response, "the answer is echoed")
	assert.NotNil(t, done.CompletedInteractions[0].Request.Permission)

	err := c.HandleCascadeUserInteraction(testCtx(t), conv, allow(p, true))
	require.ErrorIs(t, err, rpc.ErrInputNotRegistered, "an answered step is not WAITING any more")
}

func TestCommandApprovalDenied(t *testing.T) {
	srv, c, conv := start(t, fast(script(
		agytest.Run(agytest.CommandAction{Line: "rm -rf /", Output: "gone\n", NeedsApproval: true}),
		agytest.Say("Not removed.", 2),
	)))
	send(t, c, conv, "clean up")
	p := waitPrompt(t, srv, conv, 0)
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(p, false)))
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[p.Index()]
	assert.Equal(t, wire.StatusDone, done.Status, "a denied command ends DONE")
	assert.Nil(t, done.RunCommand.CombinedOutput, "and never ran")
	require.Len(t, done.CompletedInteractions, 1)
	assert.Contains(t, string(done.Raw), `"permission":{}`, "allow:false is omitted, as proto3 does")
	last := srv.Steps(conv)
	assert.Equal(t, wire.RunIdle, srv.RunStatus(conv))
	assert.NotEmpty(t, last)
}

func TestToolPermissionPrompt(t *testing.T) {
	srv, c, conv := start(t, fast(script(
		agytest.Tool(agytest.ToolAction{Name: "read_file", Target: "/w/.env", Result: "A=1\n", NeedsApproval: true}),
		agytest.Say("Read.", 1),
	)))
	send(t, c, conv, "read it")
	p := waitPrompt(t, srv, conv, 0)
	assert.Equal(t, wire.StepGeneric, p.Type)
	assert.Equal(t, &wire.Resource{Action: "read", Target: "/w/.env"}, p.RequestedInteraction.Permission.Resource)
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(p, true)))
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[p.Index()]
	assert.Equal(t, wire.StatusDone, done.Status)
	assert.Equal(t, "A=1\n", done.Generic.Result.Result)
}

func questionScenario() *agytest.Scenario {
	return &agytest.Scenario{Turns: []agytest.TurnScript{
		{Match: "one", Actions: []agytest.Action{
			agytest.Ask(agytest.QuestionSpec{Question: "Which language?", Options: []string{"Go", "Rust", "Zig"}}),
			agytest.Say("Noted.", 1),
		}},
		{Match: "many", Actions: []agytest.Action{
			agytest.Ask(
				agytest.QuestionSpec{Question: "Which targets?", Options: []string{"linux", "darwin", "windows"}, MultiSelect: true},
				agytest.QuestionSpec{Question: "Anything else?", Options: []string{"No"}, AllowWriteIn: true},
			),
			agytest.Say("Noted all.", 1),
		}},
	}}
}

func TestQuestionAnswered(t *testing.T) {
	srv, c, conv := start(t, fast(questionScenario()))
	send(t, c, conv, "ask me one")
	p := waitPrompt(t, srv, conv, 0)
	assert.Equal(t, wire.StepAskQuestion, p.Type)
	q := p.RequestedInteraction.AskQuestion.Questions[0]
	assert.Equal(t, "Which language?", q.Question)
	assert.Equal(t, []wire.Option{{ID: "1", Text: "Go"}, {ID: "2", Text: "Rust"}, {ID: "3", Text: "Zig"}}, q.Options)
	assert.Contains(t, p.Metadata.ToolCall.ArgumentsJSON, `"is_multi_select":false`)

	ctx := testCtx(t)
	bad := []wire.InteractionResponse{
		choose(p, wire.QuestionResponse{Question: "which language?", SelectedOptionIDs: []string{"1"}}),  // not verbatim
		choose(p, wire.QuestionResponse{Question: "Which language?", SelectedOptionIDs: []string{"Go"}}), // text, not id
		choose(p, wire.QuestionResponse{Question: "Which language?", SelectedOptionIDs: []string{"4"}}),
		choose(p, wire.QuestionResponse{Question: "Which language?", SelectedOptionIDs: []string{"1", "2"}}), // single select
		choose(p, wire.QuestionResponse{Question: "Which language?", WriteInResponse: "Haskell"}),            // no write-in
		allow(p, true), // wrong variant
	}
	for i, in := range bad {
		err := c.HandleCascadeUserInteraction(ctx, conv, in)
		assert.Error(t, err, "bad answer %d accepted", i)
	}
	_, open := srv.OpenPrompt(conv)
	assert.True(t, open, "bad answers leave the prompt open")

	good := choose(p, wire.QuestionResponse{Question: "Which language?", SelectedOptionIDs: []string{"2"}})
	require.NoError(t, c.HandleCascadeUserInteraction(ctx, conv, good))
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[p.Index()]
	assert.Equal(t, wire.StatusDone, done.Status)
	assert.Equal(t, []string{"2"}, done.AskQuestion.Questions[0].SelectedOptionIDs)
	assert.Equal(t, good, *done.CompletedInteractions[0].Response)
}

func TestSeveralQuestionsMultiSelectAndWriteIn(t *testing.T) {
	srv, c, conv := start(t, fast(questionScenario()))
	send(t, c, conv, "ask me many")
	p := waitPrompt(t, srv, conv, 0)
	require.Len(t, p.RequestedInteraction.AskQuestion.Questions, 2)
	assert.Contains(t, p.Metadata.ToolCall.ArgumentsJSON, `"is_multi_select":true`)
	ctx := testCtx(t)
	partial := choose(p, wire.QuestionResponse{Question: "Which targets?", SelectedOptionIDs: []string{"1", "3"}})
	require.Error(t, c.HandleCascadeUserInteraction(ctx, conv, partial), "every question needs an answer")
	full := choose(p,
		wire.QuestionResponse{Question: "Which targets?", SelectedOptionIDs: []string{"1", "3"}},
		wire.QuestionResponse{Question: "Anything else?", WriteInResponse: "ship it friday"},
	)
	require.NoError(t, c.HandleCascadeUserInteraction(ctx, conv, full))
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[p.Index()]
	assert.Equal(t, []string{"1", "3"}, done.AskQuestion.Questions[0].SelectedOptionIDs)
	assert.Equal(t, "ship it friday", done.AskQuestion.Questions[1].WriteInResponse)
}

func TestAnswerFromTerminal(t *testing.T) {
	srv, c, conv := start(t, fast(questionScenario()))
	require.Error(t, srv.AnswerFromTerminal(conv, wire.InteractionResponse{}), "no prompt open")
	require.NoError(t, srv.TypeTurn("ask me one"))
	p := waitPrompt(t, srv, conv, 0)
	require.NoError(t, srv.AnswerFromTerminal(conv, wire.InteractionResponse{AskQuestion: &wire.QuestionResponses{
		Responses: []wire.QuestionResponse{{Question: "Which language?", SelectedOptionIDs: []string{"3"}}},
	}}))
	err := c.HandleCascadeUserInteraction(testCtx(t), conv, choose(p, wire.QuestionResponse{Question: "Which language?", SelectedOptionIDs: []string{"1"}}))
	require.ErrorIs(t, err, rpc.ErrInputNotRegistered, "the terminal answered first")
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[p.Index()]
	resp := done.CompletedInteractions[0].Response
	assert.Equal(t, p.TrajectoryID(), resp.TrajectoryID)
	assert.Equal(t, p.Index(), int(resp.StepIndex))
	assert.Equal(t, []string{"3"}, done.AskQuestion.Questions[0].SelectedOptionIDs)
	assert.Equal(t, wire.SourceUserExplicit, srv.Steps(conv)[0].Metadata.Source)
}

func TestMissingTrajectoryIDIsInputNotRegistered(t *testing.T) {
	srv, c, conv := start(t, fast(questionScenario()))
	send(t, c, conv, "one")
	p := waitPrompt(t, srv, conv, 0)
	in := choose(p, wire.QuestionResponse{Question: "Which language?", SelectedOptionIDs: []string{"1"}})
	in.TrajectoryID = ""
	body, err := json.Marshal(rpc.InteractionRequest{CascadeID: conv, Interaction: in})
	require.NoError(t, err)
	r := post(t, rawHTTPS(t), srv.Port(), rpc.MethodHandleCascadeUserInteraction, "application/json", body)
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.JSONEq(t, fmt.Sprintf(`{"code":"unknown","message":"input not registered for step %d"}`, p.Index()), string(r.body))
	_, open := srv.OpenPrompt(conv)
	assert.True(t, open)
	require.NoError(t, srv.AnswerFromTerminal(conv, in))
	waitIdle(t, srv, conv)
}

func TestPromptTimesOutAndIsRetriedAtAHigherIndex(t *testing.T) {
	opts := fast(script(agytest.Run(agytest.CommandAction{Line: "deploy", Output: "deployed\n", NeedsApproval: true}), agytest.Say("Deployed.", 1)))
	opts.PromptTimeout = 30 * time.Millisecond
	srv, c, conv := start(t, opts)
	st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st.Close()
	r := newReader()
	r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true })
	send(t, c, conv, "deploy")
	first := waitPrompt(t, srv, conv, 0)
	retry := waitPrompt(t, srv, conv, first.Index()+1)
	assert.Equal(t, first.Type, retry.Type)
	assert.Equal(t, first.RequestedInteraction.Permission.Resource, retry.RequestedInteraction.Permission.Resource)
	assert.Equal(t, wire.StatusError, srv.Steps(conv)[first.Index()].Status, "the expired prompt turned ERROR")

	ctx := testCtx(t)
	err = c.HandleCascadeUserInteraction(ctx, conv, allow(first, true))
	require.ErrorIs(t, err, rpc.ErrInputNotRegistered, "the timed-out step is not registered any more")

	// Answer the freshest WAITING step, racing its own timeout: retry until
	// one answer lands, as the harness does.
	for {
		p := waitPrompt(t, srv, conv, 0)
		err := c.HandleCascadeUserInteraction(ctx, conv, allow(p, true))
		if err == nil {
			break
		}
		require.ErrorIs(t, err, rpc.ErrInputNotRegistered)
	}
	waitIdle(t, srv, conv)
	truth := srv.GroundTruth(conv)
	var errs, dones int
	for _, s := range truth {
		if s.Type == wire.StepRunCommand {
			switch s.Status {
			case wire.StatusError:
				errs++
			case wire.StatusDone:
				dones++
				assert.Equal(t, "deployed\n", s.RunCommand.CombinedOutput.Full)
			}
		}
	}
	assert.GreaterOrEqual(t, errs, 1)
	assert.Equal(t, 1, dones)

	// Every copy the stream carried is well formed: a requested permission
	// always says what it asks about, and only WAITING or later steps ask.
	r.readUntil(t, st, idleFrame)
	for _, f := range r.frames {
		for _, s := range f.Update.MainTrajectoryUpdate.StepsUpdate.Steps {
			if s.Type != wire.StepRunCommand {
				continue
			}
			if s.Status == wire.StatusPending {
				assert.Nil(t, s.RequestedInteraction, "step %d asks before it waits", s.Index())
			}
			if s.RequestedInteraction != nil {
				require.NotNil(t, s.RequestedInteraction.Permission)
				assert.NotNil(t, s.RequestedInteraction.Permission.Resource)
			}
		}
	}
}

func TestCancelStopsGeneration(t *testing.T) {
	long := ""
	for range 200 {
		long += "word "
	}
	opts := fast(script(agytest.Say(long, 200)))
	srv, c, conv := start(t, opts)
	ctx := testCtx(t)
	require.NoError(t, c.CancelCascadeSteps(ctx, conv), "nothing to cancel is fine")
	send(t, c, conv, "talk")
	require.Eventually(t, func() bool {
		for _, s := range srv.Steps(conv) {
			if s.Type == wire.StepPlannerResponse && s.PlannerResponse.ModifiedResponse != "" {
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, c.CancelCascadeSteps(ctx, conv))
	assert.Equal(t, wire.RunIdle, srv.RunStatus(conv), "idle when the cancel returns")
	for _, s := range srv.Steps(conv) {
		assert.True(t, s.Status.Terminal(), "step %d %s", s.Index(), s.Status)
		if s.Type == wire.StepPlannerResponse {
			assert.Equal(t, wire.StatusCanceled, s.Status)
		}
	}
}

func TestCancelNoopBuilds(t *testing.T) {
	opts := fast(script(agytest.Say(strings.Repeat("a long answer ", 200), 400)))
	opts.CancelNoop = []string{rpc.MethodCancelCascadeSteps}
	srv, c, conv := start(t, opts)
	ctx := testCtx(t)
	send(t, c, conv, "talk")
	require.Eventually(t, func() bool { return srv.RunStatus(conv) == wire.RunRunning }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.CancelCascadeSteps(ctx, conv))
	assert.Equal(t, wire.RunRunning, srv.RunStatus(conv), "this build ignores CancelCascadeSteps")
	require.NoError(t, c.CancelCascadeInvocation(ctx, conv))
	assert.Equal(t, wire.RunIdle, srv.RunStatus(conv))

	_, err := agytest.NewServer(agytest.Options{CancelNoop: []string{"Heartbeat"}})
	require.Error(t, err)
}

// agy answers a cancel with 200 and changes nothing while a prompt is
// WAITING: the prompt must be declined first.
func TestCancelLeavesAWaitingPromptAlone(t *testing.T) {
	for _, stops := range []bool{false, true} {
		t.Run(fmt.Sprintf("CancelStopsPrompts=%v", stops), func(t *testing.T) {
			opts := fast(script(agytest.Run(agytest.CommandAction{Line: "sleep", NeedsApproval: true}), agytest.Say("after", 2)))
			opts.CancelStopsPrompts = stops
			srv, c, conv := start(t, opts)
			ctx := testCtx(t)
			send(t, c, conv, "wait")
			p := waitPrompt(t, srv, conv, 0)
			for _, m := range rpc.CancelMethods {
				require.NoError(t, c.Cancel(ctx, m, conv))
			}
			if stops {
				assert.Equal(t, wire.RunIdle, srv.RunStatus(conv))
				return
			}
			assert.Equal(t, wire.RunRunning, srv.RunStatus(conv), "the cancels changed nothing")
			still, open := srv.OpenPrompt(conv)
			require.True(t, open)
			assert.Equal(t, p.Index(), still.Index())
			assert.Equal(t, wire.StatusWaiting, still.Status)

			// Declined, then cancelled: the turn stops.
			require.NoError(t, c.HandleCascadeUserInteraction(ctx, conv, allow(p, false)))
			require.NoError(t, c.CancelCascadeSteps(ctx, conv))
			waitIdle(t, srv, conv)
			for _, s := range srv.Steps(conv) {
				assert.True(t, s.Status.Terminal(), "step %d %s", s.Index(), s.Status)
			}
		})
	}
}

// A question declined with no responses leaves WAITING (DONE, the empty
// answer echoed) and the turn goes on.
func TestDeclinedQuestion(t *testing.T) {
	srv, c, conv := start(t, fast(questionScenario()))
	send(t, c, conv, "ask me one")
	p := waitPrompt(t, srv, conv, 0)
	decline := choose(p)
	body, err := json.Marshal(decline)
	require.NoError(t, err)
	assert.Contains(t, string(body), `"askQuestion":{"responses":[]}`, "a decline is written as agy takes it")
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, decline))
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[p.Index()]
	assert.Equal(t, wire.StatusDone, done.Status)
	require.Len(t, done.CompletedInteractions, 1)
	assert.True(t, done.CompletedInteractions[0].Response.AskQuestion.Declined())
	assert.Empty(t, done.AskQuestion.Questions[0].SelectedOptionIDs)
}

func TestSubagentChildren(t *testing.T) {
	srv, c, conv := start(t, fast(script(
		agytest.Subagents(2, "look around",
			agytest.Tool(agytest.ToolAction{Name: "list_dir", Target: "/w", Result: "a\nb/\n"}),
			agytest.Say("Child done.", 2)),
		agytest.Say("Both children finished.", 2),
	)))
	ctx := testCtx(t)
	send(t, c, conv, "delegate")
	waitIdle(t, srv, conv)
	var invoke wire.Step
	for _, s := range srv.Steps(conv) {
		if s.Type == wire.StepInvokeSubagent {
			invoke = s
		}
	}
	require.NotNil(t, invoke.InvokeSubagent)
	assert.Equal(t, wire.StatusDone, invoke.Status)
	require.Len(t, invoke.InvokeSubagent.Results, 2)
	all, err := c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	for _, r := range invoke.InvokeSubagent.Results {
		child := r.ConversationID
		assert.Contains(t, srv.Conversations(), child)
		sum, ok := all.TrajectorySummaries[child]
		require.True(t, ok)
		assert.Equal(t, conv, sum.TrajectoryMetadata.ParentConversationID)
		assert.Equal(t, conv, sum.TrajectoryMetadata.RootConversationID)
		assert.NotEqual(t, child, sum.TrajectoryMetadata.RootConversationID)
		assert.Equal(t, wire.RunIdle, sum.Status)
		steps, err := c.GetCascadeTrajectorySteps(ctx, child)
		require.NoError(t, err)
		types := []wire.StepType{}
		for _, s := range steps {
			types = append(types, s.Type)
			assert.True(t, s.Status.Terminal())
		}
		assert.Contains(t, types, wire.StepListDirectory)
		assert.Contains(t, types, wire.StepPlannerResponse)
	}
	assert.Equal(t, conv, srv.ConversationID(), "children never become the active conversation")
}

func TestFailingTurn(t *testing.T) {
	sc, err := agytest.LoadScenario("../../testdata/scenarios/failing.json")
	require.NoError(t, err)
	srv, c, conv := start(t, fast(sc))
	send(t, c, conv, "test it")
	waitIdle(t, srv, conv)
	steps := srv.Steps(conv)
	last := steps[len(steps)-1]
	assert.Equal(t, wire.StepPlannerResponse, last.Type)
	assert.Equal(t, wire.StatusError, last.Status)
	assert.Contains(t, string(last.Raw), "quota exceeded")
	for _, s := range steps {
		if s.Type == wire.StepRunCommand {
			assert.Equal(t, 1, int(s.RunCommand.ExitCode))
		}
	}
}

func TestTurnsQueueBehindTheRunningOne(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Say("Answer.", 3))))
	send(t, c, conv, "first")
	send(t, c, conv, "second")
	require.NoError(t, srv.TypeTurn("third"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.WaitIdle(ctx, conv))
	var inputs []string
	for _, s := range srv.Steps(conv) {
		if s.Type == wire.StepUserInput {
			inputs = append(inputs, s.UserInput.UserResponse)
		}
	}
	assert.Equal(t, []string{"first", "second", "third"}, inputs)
}
