package actors_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func scenario(actions ...agytest.Action) *agytest.Scenario {
	return &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: actions}}}
}

// statusNeverRepeats checks that status events are edges.
func statusNeverRepeats(t *testing.T, evs []*messages.Event) {
	t.Helper()
	last := ""
	for _, ev := range ofType(evs, messages.EventStatus) {
		require.NotEqualf(t, last, ev.State, "status %s repeated\n%s", ev.State, dump(evs))
		last = ev.State
	}
}

func seqIncreasing(t *testing.T, evs []*messages.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		require.Greater(t, evs[i].Seq, evs[i-1].Seq)
	}
}

func TestTextTurnStreamsDeltasThenOneMessage(t *testing.T) {
	const think = "The user greets me; a short answer will do."
	const say = "Hello! This answer arrives in many small chunks, one after another."
	r := newRig(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Think(think), agytest.Say(say, 12))}, actors.Spec{})
	seq := r.turn("hello")
	r.ev.waitIdleAfter(t, seq)
	evs := r.ev.all()

	users := ofType(evs, messages.EventUserMessage)
	require.Len(t, users, 1)
	require.Equal(t, "hello", users[0].Text)
	require.Equal(t, messages.OriginHarness, users[0].Origin)

	var reasoning strings.Builder
	for _, ev := range ofType(evs, messages.EventReasoningDelta) {
		reasoning.WriteString(ev.Delta)
	}
	require.Equal(t, think, reasoning.String(), dump(evs))

	msgs := ofType(evs, messages.EventMessage)
	require.Len(t, msgs, 1)
	require.Equal(t, say, msgs[0].Text)
	require.Equal(t, "assistant", msgs[0].Role)
	deltas := ofType(evs, messages.EventOutputTextDelta)
	require.NotEmpty(t, deltas, "the answer streamed")
	for _, d := range deltas {
		require.Less(t, d.Seq, msgs[0].Seq, "every delta precedes the message")
	}
	require.NotEmpty(t, ofType(evs, messages.EventUsage))
	deltasPrefix(t, evs)
	statusNeverRepeats(t, evs)
	seqIncreasing(t, evs)
	itemsOnce(t, r.srv, r.s.ConversationID(), evs)
	for _, ev := range evs {
		require.Equal(t, r.s.ID(), ev.SessionID)
	}
}

func TestCommandApprovalAcceptedAndDeclined(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{
		{Match: "first", Actions: []agytest.Action{
			agytest.Run(agytest.CommandAction{Line: "ls -la", Cwd: "/w", Output: "main.go\n", NeedsApproval: true}),
			agytest.Say("Listed.", 2),
		}},
		{Match: "second", Actions: []agytest.Action{
			agytest.Run(agytest.CommandAction{Line: "rm -rf build", Cwd: "/w", Output: "", NeedsApproval: true}),
			agytest.Say("Not removed.", 2),
		}},
	}}
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})

	seq := r.turn("first")
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.Equal(t, messages.KindPermission, req.Kind)
	require.NotNil(t, req.Command)
	require.Equal(t, "ls -la", req.Command.Line)
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}))
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	require.Equal(t, messages.ByHarness, res.By)
	require.Equal(t, messages.ActionAccept, res.Action)
	r.ev.waitIdleAfter(t, res.Seq)
	out := r.ev.waitFor(t, messages.EventFunctionCallOutput, func(ev *messages.Event) bool { return ev.Output == "main.go\n" })
	require.NotNil(t, out.ExitCode)

	seq = r.ev.lastSeq()
	r.turn("second")
	req2 := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.NotEqual(t, req.ElicitationID, req2.ElicitationID)
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req2.ElicitationID, Action: messages.ActionDecline}))
	res2 := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req2.ElicitationID })
	require.Equal(t, messages.ActionDecline, res2.Action)
	r.ev.waitIdleAfter(t, res2.Seq)

	// agy recorded exactly the answers we gave.
	var allows []bool
	for _, st := range r.srv.GroundTruth(r.s.ConversationID()) {
		if st.Type == wire.StepRunCommand {
			require.Len(t, st.CompletedInteractions, 1)
			allows = append(allows, st.CompletedInteractions[0].Response.Permission != nil && st.CompletedInteractions[0].Response.Permission.Allow)
		}
	}
	require.Equal(t, []bool{true, false}, allows)
	itemsOnce(t, r.srv, r.s.ConversationID(), r.ev.all())

	// A resolve for a prompt that is gone is refused clearly.
	err := r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept})
	require.ErrorIs(t, err, actors.ErrUnknownElicitation)
}

func TestQuestionAnsweredWithOneAndSeveralOptionsAndWriteIn(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{
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
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})

	seq := r.turn("one")
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.Equal(t, messages.KindQuestion, req.Kind)
	require.Len(t, req.Questions, 1)
	require.Equal(t, []messages.Option{{ID: "1", Text: "Go"}, {ID: "2", Text: "Rust"}, {ID: "3", Text: "Zig"}}, req.Questions[0].Options)

	// A bad answer is refused and changes nothing.
	err := r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{SelectedOptionIDs: []string{"9"}}}})
	require.ErrorIs(t, err, actors.ErrBadAnswer)
	require.False(t, req.Questions[0].AllowWriteIn)
	err = r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{Question: "Which language?", WriteIn: "Haskell"}}})
	require.ErrorContains(t, err, "write-in", "agy would refuse it: refused before sending")

	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{Question: "Which language?", SelectedOptionIDs: []string{"2"}}}}))
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	r.ev.waitIdleAfter(t, res.Seq)

	seq = r.ev.lastSeq()
	r.turn("many")
	req2 := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.Len(t, req2.Questions, 2)
	require.True(t, req2.Questions[0].MultiSelect)
	require.True(t, req2.Questions[1].AllowWriteIn)
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req2.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{
			{Question: "Which targets?", SelectedOptionIDs: []string{"1", "3"}},
			{Question: "Anything else?", WriteIn: "also freebsd"},
		}}))
	res2 := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req2.ElicitationID })
	r.ev.waitIdleAfter(t, res2.Seq)

	var answers [][]wire.QuestionResponse
	for _, st := range r.srv.GroundTruth(r.s.ConversationID()) {
		if st.Type == wire.StepAskQuestion && st.Status == wire.StatusDone {
			require.Len(t, st.CompletedInteractions, 1)
			answers = append(answers, st.CompletedInteractions[0].Response.AskQuestion.Responses)
		}
	}
	require.Len(t, answers, 2)
	require.Equal(t, []string{"2"}, answers[0][0].SelectedOptionIDs)
	require.Equal(t, "Which language?", answers[0][0].Question)
	require.Equal(t, []string{"1", "3"}, answers[1][0].SelectedOptionIDs)
	require.Equal(t, "also freebsd", answers[1][1].WriteInResponse)
	itemsOnce(t, r.srv, r.s.ConversationID(), r.ev.all())
}

func TestPromptTimesOutBeforeAnswerAndIsDeliveredToRetry(t *testing.T) {
	sc := scenario(
		agytest.Run(agytest.CommandAction{Line: "make test", Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Tests pass.", 2),
	)
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultPromptTimeout})
	seq := r.turn("run the tests")
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })

	// Wait until agy has timed the first step out and re-opened the prompt higher up.
	conv := r.s.ConversationID()
	first := -1
	for _, st := range r.srv.Steps(conv) {
		if st.Type == wire.StepRunCommand && first < 0 {
			first = st.Index()
		}
	}
	var retry wire.Step
	require.Eventually(t, func() bool {
		st, ok := r.srv.OpenPrompt(conv)
		retry = st
		return ok && st.Index() > first
	}, waitLong, 5*time.Millisecond, "agy never retried the prompt")

	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}))
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	require.Equal(t, messages.ByHarness, res.By)
	require.NotNil(t, res.DeliveredStepIndex)
	require.Equal(t, retry.Index(), *res.DeliveredStepIndex)
	r.ev.waitIdleAfter(t, res.Seq)
	require.Len(t, ofType(r.ev.all(), messages.EventElicitationRequest), 1, "one request per logical prompt, not per retry")
}

func TestPromptAnsweredInAgysTerminalIsWithdrawn(t *testing.T) {
	sc := scenario(
		agytest.Ask(agytest.QuestionSpec{Question: "Proceed?", Options: []string{"Yes", "No"}}),
		agytest.Say("Proceeding.", 1),
	)
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	seq := r.turn("go")
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	conv := r.s.ConversationID()
	st, ok := r.srv.OpenPrompt(conv)
	require.True(t, ok)
	require.NoError(t, r.srv.AnswerFromTerminal(conv, wire.InteractionResponse{
		TrajectoryID: st.TrajectoryID(), StepIndex: wire.Int(st.Index()),
		AskQuestion: &wire.QuestionResponses{Responses: []wire.QuestionResponse{{Question: "Proceed?", SelectedOptionIDs: []string{"1"}}}},
	}))
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	require.Equal(t, messages.ByTerminal, res.By)
	r.ev.waitIdleAfter(t, res.Seq)
	err := r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{SelectedOptionIDs: []string{"1"}}}})
	require.Error(t, err, "the withdrawn prompt takes no answer")
}

func TestUserTurnTypedInAgyIsATerminalTurn(t *testing.T) {
	r := newRig(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say("Hi.", 1))}, actors.Spec{})
	require.NoError(t, r.srv.TypeTurn("typed by a person"))
	ev := r.ev.waitFor(t, messages.EventUserMessage, nil)
	require.Equal(t, messages.OriginTerminal, ev.Origin)
	require.Equal(t, "typed by a person", ev.Text)
	r.ev.waitIdleAfter(t, ev.Seq)
}

func TestStreamDroppedMidAnswerPollerCovers(t *testing.T) {
	long := strings.Repeat("All work and no play. ", 40)
	r := newRig(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say(long, 200))}, actors.Spec{})
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultDropStream, N: 20})
	seq := r.turn("write")
	r.ev.waitIdleAfter(t, seq)
	evs := r.ev.all()
	itemsOnce(t, r.srv, r.s.ConversationID(), evs)
	deltasPrefix(t, evs)
	msgs := ofType(evs, messages.EventMessage)
	require.Len(t, msgs, 1)
	require.Equal(t, long, msgs[0].Text)
	require.GreaterOrEqual(t, r.s.Stats().Restarts["stream"], 1, "the reader was restarted")
}

func TestLanguageServerRestartsOnNewPortMidTurn(t *testing.T) {
	long := strings.Repeat("Port churn should not lose a word. ", 30)
	// Found by PID (this test process hosts the fake), as agy is: an explicit
	// port cannot follow agy to a new one.
	srvOpts := agytest.Options{Conversation: true, Scenario: scenario(agytest.Say(long, 150)), ChunkDelay: 2 * time.Millisecond}
	r := newRigPID(t, srvOpts)
	old := r.s.Port()
	seq := r.turn("write")
	r.ev.waitFor(t, messages.EventOutputTextDelta, func(ev *messages.Event) bool { return ev.Seq > seq })
	port, err := r.srv.Restart()
	require.NoError(t, err)
	require.NotEqual(t, old, port)
	r.ev.waitIdleAfter(t, seq)
	r.ev.waitFor(t, messages.EventMessage, nil)
	require.Eventually(t, func() bool { return r.s.Port() == port }, waitLong, 10*time.Millisecond)
	evs := r.ev.all()
	itemsOnce(t, r.srv, r.s.ConversationID(), evs)
	deltasPrefix(t, evs)
	require.GreaterOrEqual(t, r.s.Stats().Rebinds, 1)
}

func TestClearRotatesToNewConversation(t *testing.T) {
	r := newRig(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say("Fresh start.", 2))}, actors.Spec{})
	seq := r.turn("before")
	r.ev.waitIdleAfter(t, seq)
	from := r.s.ConversationID()
	to := r.srv.Clear()
	rot := r.ev.waitFor(t, messages.EventConversationRotated, nil)
	require.Equal(t, from, rot.From)
	require.Equal(t, to, rot.To)
	require.Eventually(t, func() bool { return r.s.ConversationID() == to }, waitLong, 10*time.Millisecond)
	seq = r.turn("after")
	r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.ConversationID == to && ev.Seq > seq })
	itemsOnce(t, r.srv, to, r.ev.all())
	itemsOnce(t, r.srv, from, r.ev.all())
}

// A conversation agy minted while the session watched (a /clear's) is
// watched from its first step: a turn typed into it that finished before
// the session followed gives its thinking. Here the session polls only and
// reads agy's list seldom, so it follows the /clear after the turn ran.
func TestATurnFinishedBeforeAClearIsFollowedKeepsItsThinking(t *testing.T) {
	cfg := testConfig()
	cfg.RotationInterval = 400 * time.Millisecond
	sc := scenario(agytest.Think("Thinking it over."), agytest.Say("Fresh start.", 2))
	r := newRigWith(t, cfg, agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond}), actors.Spec{ReadMode: actors.ReadPoll})
	r.ev.waitIdleAfter(t, r.turn("before")) // the rotation watcher has read agy's list by now
	to := r.srv.Clear()
	require.NoError(t, r.srv.TypeTurn("typed in agy's terminal"))
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, r.srv.WaitIdle(ctx, to))
	msg := r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.ConversationID == to })
	require.Equal(t, "Fresh start.", msg.Text)
	thinking := ""
	for _, ev := range r.ev.all() {
		if ev.Type == messages.EventReasoningDelta && ev.ConversationID == to {
			thinking += ev.Delta
		}
	}
	require.Equal(t, "Thinking it over.", thinking)
	itemsOnce(t, r.srv, to, r.ev.all())
}

func TestSubagentMirrored(t *testing.T) {
	sc := scenario(
		agytest.Subagents(2, "look around",
			agytest.Tool(agytest.ToolAction{Name: "list_dir", Target: "/w", Result: "a\nb\n"}),
			agytest.Say("Child done.", 2)),
		agytest.Say("Both children finished.", 2),
	)
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	seq := r.turn("delegate")
	r.ev.waitIdleAfter(t, seq)
	root := r.s.ConversationID()
	children := r.conversationsBut(root)
	require.Len(t, children, 2)
	for _, child := range children {
		msg := r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.ConversationID == child })
		require.Equal(t, root, msg.ParentConversationID)
		require.Equal(t, "Child done.", msg.Text)
		itemsOnce(t, r.srv, child, r.ev.all())
	}
	itemsOnce(t, r.srv, root, r.ev.all())
}

// A subagent spawned by a turn the session watched is watched from its
// first step: its thinking is mirrored even when the child's first read
// finds its planner step already finished. Here the session polls only,
// slowly, so it learns of the children after they ran.
func TestASubagentsThinkingIsMirrored(t *testing.T) {
	sc := scenario(
		agytest.Subagents(2, "look around", agytest.Think("Child thinking."), agytest.Say("Child done.", 2)),
		agytest.Say("Both children finished.", 2),
	)
	cfg := testConfig()
	cfg.PollFast = 300 * time.Millisecond
	r := newRigWith(t, cfg, agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond}), actors.Spec{ReadMode: actors.ReadPoll})
	r.ev.waitIdleAfter(t, r.turn("delegate"))
	root := r.s.ConversationID()
	children := r.conversationsBut(root)
	require.Len(t, children, 2)
	for _, child := range children {
		r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.ConversationID == child })
		thinking := ""
		for _, ev := range r.ev.all() {
			if ev.Type == messages.EventReasoningDelta && ev.ConversationID == child {
				thinking += ev.Delta
			}
		}
		require.Equal(t, "Child thinking.", thinking, "child %s", child)
		itemsOnce(t, r.srv, child, r.ev.all())
	}
}

// A session keeps no reconciler for a subagent mirrored to its end: one that
// runs subagent after subagent does not grow with them.
func TestASubagentMirroredToItsEndKeepsNoReconciler(t *testing.T) {
	sc := scenario(
		agytest.Subagents(2, "look around", agytest.Say("Child done.", 2)),
		agytest.Say("Both children finished.", 2),
	)
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	const turns = 4
	for range turns {
		r.ev.waitIdleAfter(t, r.turn("delegate"))
	}
	root := r.s.ConversationID()
	children := r.conversationsBut(root)
	require.Len(t, children, 2*turns)
	for _, child := range children {
		r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.ConversationID == child })
		itemsOnce(t, r.srv, child, r.ev.all())
	}
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		n, records, err := actors.Reconcilers(ctx, r.s)
		return err == nil && n == 1 && records == 0
	}, waitLong, 5*time.Millisecond, "only the root's reconciler left, and no child's record in it")
	itemsOnce(t, r.srv, root, r.ev.all())
}

func TestInterruptDuringGeneration(t *testing.T) {
	long := strings.Repeat("This answer will be cut short. ", 200)
	r := newRig(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say(long, 2000)), ChunkDelay: 3 * time.Millisecond}, actors.Spec{})
	seq := r.turn("talk")
	r.ev.waitFor(t, messages.EventOutputTextDelta, func(ev *messages.Event) bool { return ev.Seq > seq })
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, r.s.Interrupt(ctx))
	require.Equal(t, wire.RunIdle, r.srv.RunStatus(r.s.ConversationID()))
	r.ev.waitIdleAfter(t, seq)
	evs := r.ev.all()
	deltasPrefix(t, evs)
	itemsOnce(t, r.srv, r.s.ConversationID(), evs)
}

// agy's cancel methods answer 200 and change nothing while a prompt is
// WAITING: an interrupt declines the open prompt first (the harness closes
// the driver's prompt, as cancelled), then cancels, and ends idle.
func TestInterruptDuringPrompt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		action agytest.Action
	}{
		{"permission", agytest.Run(agytest.CommandAction{Line: "deploy", NeedsApproval: true})},
		{"question", agytest.Ask(agytest.QuestionSpec{Question: "Deploy where?", Options: []string{"staging", "prod"}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario(tc.action, agytest.Say("Deployed.", 1))
			r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
			seq := r.turn("deploy it")
			req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			require.NoError(t, r.s.Interrupt(ctx))
			res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
			assert.Equal(t, messages.ByHarness, res.By)
			assert.Equal(t, messages.ActionCancel, res.Action, "the driver's prompt is withdrawn, not answered")
			r.ev.waitIdleAfter(t, res.Seq)
			assert.Equal(t, wire.RunIdle, r.srv.RunStatus(r.s.ConversationID()))
			for _, st := range r.srv.Steps(r.s.ConversationID()) {
				assert.True(t, st.Status.Terminal(), "step %d %s", st.Index(), st.Status)
			}
		})
	}
}

func Test5xxBursts(t *testing.T) {
	sc := scenario(agytest.Think("Under load."), agytest.Say("Still here, despite the errors.", 10))
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultBurst5xx, Method: rpc.MethodGetCascadeTrajectorySteps, Count: 5})
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultBurst5xx, Method: rpc.MethodStreamAgentStateUpdates, Count: 2})
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultBurst5xx, Method: rpc.MethodGetAllCascadeTrajectories, Count: 3})
	seq := r.turn("hello")
	r.ev.waitIdleAfter(t, seq)
	evs := r.ev.all()
	itemsOnce(t, r.srv, r.s.ConversationID(), evs)
	require.Len(t, ofType(evs, messages.EventMessage), 1)
	require.Positive(t, r.s.Stats().RPCErrors["transient"], "the bursts are counted by class")
}

func TestTwoSessionsOneAgyDiesOtherUntouched(t *testing.T) {
	cfg := testConfig()
	clock := actors.NewTestClock()
	cfg.Clock, cfg.GiveUpAfter = clock, time.Minute
	host := newHost(t, cfg)
	sc := scenario(agytest.Say("Alive.", 2))
	srvA := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	srvB := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	a := attach(t, host, actors.Spec{Port: srvA.Port()})
	b := attach(t, host, actors.Spec{Port: srvB.Port()})
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	evA, evB := collect(a.Events()), collect(b.Events())

	require.NoError(t, srvA.Close())
	advanceUntil(t, clock, cfg.GiveUpAfter, "session A to end after agy died", closed(a.Done()))
	errEv := evA.waitFor(t, messages.EventError, func(ev *messages.Event) bool { return ev.Retryable != nil && !*ev.Retryable })
	require.Contains(t, errEv.Message, "gone")
	require.Error(t, a.Err())

	require.NoError(t, b.SendTurn(ctx, "still there?", ""))
	evB.waitFor(t, messages.EventMessage, nil)
	require.Len(t, host.Sessions(), 1)
	require.Equal(t, b.ID(), host.Sessions()[0].ID())
}

func TestShutdownWithBusySessionsLeavesNoGoroutine(t *testing.T) {
	host := actors.NewHost(testConfig())
	long := strings.Repeat("busy ", 500)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var cols []*collector
	for i := 0; i < 3; i++ {
		srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say(long, 500)), ChunkDelay: 2 * time.Millisecond})
		s, err := host.Attach(ctx, actors.Spec{Port: srv.Port()})
		require.NoError(t, err)
		c := collect(s.Events())
		cols = append(cols, c)
		require.NoError(t, s.SendTurn(ctx, "go", ""))
		c.waitFor(t, messages.EventOutputTextDelta, nil)
	}
	require.NoError(t, host.Shutdown(ctx))
	for _, c := range cols {
		<-c.done // every event channel closed
	}
	_, err := host.Attach(ctx, actors.Spec{Port: 1})
	require.ErrorIs(t, err, actors.ErrHostClosed)
	// goleak (TestMain) checks that nothing is left running.
}

func TestResubscribeGetsOpenPromptsAgain(t *testing.T) {
	sc := scenario(agytest.Ask(agytest.QuestionSpec{Question: "Pick one", Options: []string{"a", "b"}}), agytest.Say("ok", 1))
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc}, actors.Spec{})
	seq := r.turn("ask me")
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	// A driver that resumes after the request's seq still gets the open prompt.
	sub, err := r.s.Subscribe(ctx, req.Seq)
	require.NoError(t, err)
	defer sub.Close()
	timeout := time.After(waitLong)
	for got := false; !got; {
		select {
		case ev := <-sub.C():
			require.Greater(t, ev.Seq, req.Seq-1, "nothing before the resume point but the open prompt")
			got = ev.Type == messages.EventElicitationRequest && ev.ElicitationID == req.ElicitationID
		case <-timeout:
			t.Fatal("no prompt re-sent")
		}
	}
	// One that resumes from 0 replays the whole log.
	sub2, err := r.s.Subscribe(ctx, 0)
	require.NoError(t, err)
	defer sub2.Close()
	first := <-sub2.C()
	require.Equal(t, r.ev.all()[0].ID, first.ID)
}

func TestAttachErrors(t *testing.T) {
	host := newHost(t, testConfig())
	// Attach's context is the requester's, on the machine's clock.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := host.Attach(ctx, actors.Spec{})
	require.ErrorContains(t, err, "is required")
	_, err = host.Attach(ctx, actors.Spec{Port: 1, Host: "10.0.0.1"})
	require.ErrorContains(t, err, "not loopback")
	_, err = host.Attach(ctx, actors.Spec{Port: 1, ReadMode: "sometimes"})
	require.ErrorContains(t, err, "read mode")
	// A dead port: Attach gives up when its context ends, naming the last error.
	_, err = host.Attach(ctx, actors.Spec{Port: 1})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, host.Sessions())
}

// newRigPID attaches by this process's PID and the fake's conversation, as
// the CLI attaches to agy.
func newRigPID(t *testing.T, opts agytest.Options) *rig {
	t.Helper()
	srv, err := agytest.NewServer(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return newRigOn(t, srv, actors.Spec{PID: os.Getpid(), ConversationID: srv.ConversationID()})
}

// promptOpenWhenAgyMoves runs a turn whose command asks for approval and,
// once the prompt is out, restarts agy on a new port: the session (bound by
// PID) has not found it yet when the test acts.
func promptOpenWhenAgyMoves(t *testing.T, line, output string) (*rig, *messages.Event) {
	t.Helper()
	sc := scenario(agytest.Run(agytest.CommandAction{Line: line, Output: output, NeedsApproval: true}), agytest.Say("Done.", 2))
	r := newRigPID(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	seq := r.turn("run " + line)
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	_, err := r.srv.Restart()
	require.NoError(t, err)
	return r, req
}

func TestAnswerGivenWhileAgyMovesToANewPortIsDelivered(t *testing.T) {
	r, req := promptOpenWhenAgyMoves(t, "make", "built\n")
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}))
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	require.Equal(t, messages.ByHarness, res.By)
	r.ev.waitIdleAfter(t, res.Seq)
	r.ev.waitFor(t, messages.EventFunctionCallOutput, func(ev *messages.Event) bool { return ev.Output == "built\n" })
	for _, ev := range r.ev.all() {
		require.NotEqual(t, messages.EventError, ev.Type, "no delivery failure: %s", ev.Message)
	}
	itemsOnce(t, r.srv, r.s.ConversationID(), r.ev.all())
}

// An answer that reached agy, whose reply was lost as agy moved to a new
// port, is not sent again on the new port: the next turn asks the same
// command, and the answer would approve that one, which nobody did.
func TestAnAnswerWhoseReplyWasLostIsNotGivenToTheNextSameAsk(t *testing.T) {
	sc := scenario(agytest.Run(agytest.CommandAction{Line: "make deploy", Output: "deployed\n", NeedsApproval: true}), agytest.Say("Done.", 2))
	r := newRigPID(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	conv := r.s.ConversationID()
	seq := r.turn("deploy")
	first := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	// agy takes the answer; its reply comes late, and agy moves before it.
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlowReply, Method: rpc.MethodHandleCascadeUserInteraction, Duration: 5 * time.Second})
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: first.ElicitationID, Action: messages.ActionAccept}))
	require.Eventually(t, func() bool { _, open := r.srv.OpenPrompt(conv); return !open }, waitLong, time.Millisecond, "agy took the answer")
	_, err := r.srv.Restart()
	require.NoError(t, err)
	// Someone types the same request in agy's terminal: agy asks again.
	require.NoError(t, r.srv.TypeTurn("deploy again"))
	second := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > first.Seq })
	require.NotEqual(t, first.ElicitationID, second.ElicitationID)
	// The first answer's delivery has settled (it reports at its first
	// look on the new port): one answer sent in all, and the second
	// prompt still waits for someone.
	r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == first.ElicitationID })
	assert.Never(t, func() bool { return r.srv.Calls(rpc.MethodHandleCascadeUserInteraction) > 1 }, time.Second, 10*time.Millisecond, "the first answer went out again")
	st, open := r.srv.OpenPrompt(conv)
	require.True(t, open, "the second ask is nobody's yet")
	assert.True(t, strings.HasSuffix(second.ElicitationID, fmt.Sprintf("/prompt/%d", st.Index())), "%s waits at step %d", second.ElicitationID, st.Index())
	for _, ev := range r.ev.all() {
		assert.False(t, ev.Type == messages.EventError && strings.Contains(ev.Message, first.ElicitationID), "no failure reported for the answer agy took: %s", ev.Message)
	}
}

// An interrupt that meets agy's port gone (agy moved) is carried out on
// agy's new port once the session has found it: the prompt is declined and
// the turn ends, as if agy had not moved.
// A prompt that opens between the interrupt's decline and its cancel is
// spared by agy's cancel: the interrupt declines it as soon as it sees it
// and cancels again, with the same method, not after waiting out that
// method's share of InterruptDeadline for the next one.
func TestInterruptMeetingAPromptAsItOpensDeclinesItAtOnce(t *testing.T) {
	sc := scenario(agytest.Say("Looking at the deployment first, then asking.", 20),
		agytest.Run(agytest.CommandAction{Line: "make deploy", Output: "deployed\n", NeedsApproval: true}), agytest.Say("Deployed.", 1))
	cfg := testConfig()
	cfg.InterruptDeadline = 40 * time.Second // each method's share: 10 s
	r := newRigWith(t, cfg, agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: 2 * time.Millisecond}), actors.Spec{})
	seq := r.turn("deploy it")
	r.ev.waitFor(t, messages.EventOutputTextDelta, func(ev *messages.Event) bool { return ev.Seq > seq })
	// The first cancel takes effect only once agy asks.
	first := rpc.CancelMethods[0]
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlow, Method: first, Count: 1, Duration: 600 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, r.s.Interrupt(ctx))
	assert.Equal(t, wire.RunIdle, r.srv.RunStatus(r.s.ConversationID()))
	for _, m := range rpc.CancelMethods[1:] {
		assert.Zero(t, r.srv.Calls(m), "%s: not needed", m)
	}
	req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	assert.NotEqual(t, messages.ActionAccept, res.Action)
	r.ev.waitIdleAfter(t, res.Seq)
	for _, ev := range r.ev.all() {
		assert.False(t, ev.Type == messages.EventFunctionCallOutput && ev.Output == "deployed\n", "the declined command never ran")
	}
}

func TestInterruptWhileAgyMovesToANewPortIsCarriedOut(t *testing.T) {
	r, req := promptOpenWhenAgyMoves(t, "make deploy", "deployed\n")
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, r.s.Interrupt(ctx))
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(ev *messages.Event) bool { return ev.ElicitationID == req.ElicitationID })
	assert.Equal(t, messages.ByHarness, res.By)
	assert.NotEqual(t, messages.ActionAccept, res.Action)
	r.ev.waitIdleAfter(t, res.Seq)
	assert.Equal(t, wire.RunIdle, r.srv.RunStatus(r.s.ConversationID()))
	for _, ev := range r.ev.all() {
		assert.False(t, ev.Type == messages.EventFunctionCallOutput && ev.Output == "deployed\n", "the declined command never ran")
	}
}

func TestShutdownDoesNotWaitForeverOnAConsumerThatNeverReads(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say("Nobody listens.", 4)), ChunkDelay: time.Millisecond})
	host := actors.NewHost(testConfig())
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	s, err := host.Attach(ctx, actors.Spec{Port: srv.Port()})
	require.NoError(t, err)
	require.NoError(t, s.SendTurn(ctx, "hello", ""))
	require.NoError(t, srv.WaitIdle(ctx, s.ConversationID()))
	// Events() is never read: its events stay queued. (Shutdown's context
	// is the caller's, on the machine's clock.)
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	err = host.Shutdown(short)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the undrained consumer is reported")
	// The channel is closed, and nothing is left running (goleak).
	for range s.Events() {
	}
}

func TestSubagentsMirroredAcrossFaults(t *testing.T) {
	sc := scenario(
		agytest.Think("Delegating."),
		agytest.Subagents(2, "look around",
			agytest.Think("Looking."),
			agytest.Tool(agytest.ToolAction{Name: "list_dir", Target: "/w", Result: "a\nb\n"}),
			agytest.Say("Child done, with a somewhat longer answer to stream.", 12)),
		agytest.Say("Both children finished.", 6),
	)
	for _, fault := range []string{"truncated-frame", "port-churn", "stream-drop"} {
		t.Run(fault, func(t *testing.T) {
			r := newRigPID(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: 2 * time.Millisecond})
			switch fault {
			case "truncated-frame":
				r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultTruncatedFrame})
			case "stream-drop":
				r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultDropStream, N: 3})
			}
			seq := r.turn("delegate")
			if fault == "port-churn" {
				r.ev.waitFor(t, messages.EventFunctionCall, func(ev *messages.Event) bool { return ev.Seq > seq && ev.Name != "" })
				_, err := r.srv.Restart()
				require.NoError(t, err)
			}
			root := r.s.ConversationID()
			require.NoError(t, r.srv.WaitIdle(context.Background(), root))
			r.ev.waitIdleAfter(t, seq)
			children := r.conversationsBut(root)
			require.Len(t, children, 2)
			for _, child := range children {
				r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.ConversationID == child })
				itemsOnce(t, r.srv, child, r.ev.all())
			}
			itemsOnce(t, r.srv, root, r.ev.all())
		})
	}
}

// A stream that drops at any point of a turn, even right around agy's IDLE,
// still ends the turn in idle with every item once. (Seeds that once left the
// session stuck: a read already running when IDLE arrived paid the read owed
// after it.)
func TestIdleAfterStreamDropsAtEveryPoint(t *testing.T) {
	sc := scenario(agytest.Think("Hmm."), agytest.Say("Some text that streams in a few chunks here.", 8))
	for _, seed := range []int64{4, 8, 13, 14, 17} {
		for n := 0; n < 6; n++ {
			t.Run(fmt.Sprintf("seed=%d/drop-after=%d", seed, n), func(t *testing.T) {
				r := newRig(t, agytest.Options{Conversation: true, Scenario: sc, Seed: seed, ChunkDelay: time.Millisecond}, actors.Spec{})
				r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultDropStreamAfter, N: n})
				seq := r.turn("go")
				r.ev.waitIdleAfter(t, seq)
				itemsOnce(t, r.srv, r.s.ConversationID(), r.ev.all())
			})
		}
	}
}

func TestTurnSentWhileAgyMovesWaitsForTheNewPort(t *testing.T) {
	r := newRigPID(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say("Still here.", 2)), ChunkDelay: time.Millisecond})
	seq := r.ev.lastSeq()
	// agy moves, and answers its first heartbeat slowly (the fake's
	// slowness is on the machine's clock): the session is without a port
	// for a while.
	r.srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlow, Method: rpc.MethodHeartbeat, Count: 1, Duration: 300 * time.Millisecond})
	_, err := r.srv.Restart()
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.s.Port() == 0 }, waitLong, time.Millisecond, "the session noticed")
	// The turn is held until the session is bound again, then sent once.
	require.NoError(t, r.s.SendTurn(context.Background(), "are you there?", ""))
	r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.Seq > seq })
	require.Equal(t, 1, r.srv.Calls(rpc.MethodSendUserCascadeMessage))
}

func TestTurnHeldPastItsDeadlineIsNeverSent(t *testing.T) {
	cfg := testConfig()
	clock := actors.NewTestClock()
	cfg.Clock, cfg.GiveUpAfter = clock, time.Minute
	host := newHost(t, cfg)
	srv, err := agytest.NewServer(agytest.Options{Conversation: true, Scenario: scenario(agytest.Say("x", 1))})
	require.NoError(t, err)
	s := attach(t, host, actors.Spec{Port: srv.Port()})
	ev := collect(s.Events())
	calls := srv.Calls(rpc.MethodSendUserCascadeMessage)
	require.NoError(t, srv.Close()) // agy is gone; the session looks for it
	require.Eventually(t, func() bool { return s.Port() == 0 }, waitLong, time.Millisecond, "the session noticed")
	// The requester's deadline is on the machine's clock (its context's).
	short, cancelShort := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancelShort()
	err = s.SendTurn(short, "too late", "")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, calls, srv.Calls(rpc.MethodSendUserCascadeMessage))
	advanceUntil(t, clock, cfg.GiveUpAfter, "the session to give up on a gone agy", closed(s.Done()))
	<-ev.done
	for _, e := range ev.all() {
		require.False(t, e.Type == messages.EventUserMessage, "nothing was sent")
	}
}

func TestSessionFollowsAgyThroughItsLogFile(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "agy.log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	defer f.Close()
	srv, err := agytest.NewServer(agytest.Options{Conversation: true, Scenario: scenario(agytest.Say("Found you.", 2)), ChunkDelay: time.Millisecond, AgyLog: f})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	r := newRigOn(t, srv, actors.Spec{LogFile: logPath, ConversationID: srv.ConversationID()})
	require.Equal(t, srv.Port(), r.s.Port())
	port, err := srv.Restart()
	require.NoError(t, err)
	require.Eventuallyf(t, func() bool { return r.s.Port() == port }, waitLong, 5*time.Millisecond, "found again through the log:\n%s", dumpLazy{r.ev})
	seq := r.turn("hello")
	r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.Seq > seq })
}

// agy's /clear while subagents run: the session follows the new root, and
// the old root's children are still mirrored to their end (the rotation
// moves the generation on; children read under the new one).
func TestSubagentsOutliveARotation(t *testing.T) {
	sc := scenario(
		agytest.Subagents(2, "look around",
			agytest.Think("Looking."),
			agytest.Say("Child done, with an answer that takes a while to stream out.", 40)),
		agytest.Say("Both children finished.", 2),
	)
	r := newRig(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: 5 * time.Millisecond}, actors.Spec{})
	old := r.s.ConversationID()
	seq := r.turn("delegate")
	// A child has started: rotate while it streams.
	r.ev.waitFor(t, messages.EventUserMessage, func(ev *messages.Event) bool { return ev.Seq > seq && ev.ConversationID != old })
	to := r.srv.Clear()
	r.ev.waitFor(t, messages.EventConversationRotated, func(ev *messages.Event) bool { return ev.To == to })
	require.NoError(t, r.srv.WaitIdle(context.Background(), old))
	children := r.conversationsBut(old, to)
	require.Len(t, children, 2)
	for _, child := range children {
		r.ev.waitFor(t, messages.EventMessage, func(ev *messages.Event) bool { return ev.ConversationID == child })
		itemsOnce(t, r.srv, child, r.ev.all())
	}
}
