package mapper

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

func TestPendingInteraction(t *testing.T) {
	q := questionStep(wire.StatusWaiting, qLang, qExtra)
	p, ok := PendingInteraction(&q, 4)
	require.True(t, ok)
	assert.Equal(t, messages.KindQuestion, p.Kind)
	assert.Equal(t, 4, p.StepIndex)
	assert.Equal(t, testTraj, p.TrajectoryID)
	assert.Empty(t, p.ElicitationID, "assigned by the reconciler")
	require.Len(t, p.Questions, 2)
	assert.Equal(t, []messages.Option{{ID: "1", Text: "Go"}, {ID: "2", Text: "Rust"}, {ID: "3", Text: "Python"}}, p.Questions[0].Options)
	assert.True(t, p.Questions[1].MultiSelect)
	assert.Equal(t, messages.EventElicitationRequest, p.Request.Type)
	assert.Equal(t, p.Questions, p.Request.Questions)

	c := commandStep(wire.StatusWaiting, "pwd")
	p, ok = PendingInteraction(&c, 2)
	require.True(t, ok)
	assert.Equal(t, messages.KindPermission, p.Kind)
	assert.Equal(t, &messages.CommandLine{Line: "pwd", Cwd: "/work"}, p.Command)
	assert.Equal(t, &messages.Resource{Action: "command", Target: "pwd"}, p.Resource)

	// A run_command without its body still says the command, from the resource.
	c.RunCommand = nil
	p, _ = PendingInteraction(&c, 2)
	assert.Equal(t, &messages.CommandLine{Line: "pwd"}, p.Command)

	done := commandStep(wire.StatusDone, "pwd")
	_, ok = PendingInteraction(&done, 2)
	assert.False(t, ok, "only WAITING steps are pending")
	plain := userStep("x", "")
	plain.Status = wire.StatusWaiting
	_, ok = PendingInteraction(&plain, 0)
	assert.False(t, ok)
	_, ok = PendingInteraction(nil, 0)
	assert.False(t, ok)

	// Write-in and multi-select flags by order when texts differ; a broken
	// argumentsJson only loses the flags.
	w := questionStep(wire.StatusWaiting, qLang)
	w.Metadata.ToolCall.ArgumentsJSON = `{"questions":[{"question":"other text","is_multi_select":true,"allow_write_in":true}]}`
	p, _ = PendingInteraction(&w, 0)
	assert.True(t, p.Questions[0].MultiSelect)
	assert.True(t, p.Questions[0].AllowWriteIn)
	w.Metadata.ToolCall.ArgumentsJSON = `{not json`
	p, _ = PendingInteraction(&w, 0)
	assert.False(t, p.Questions[0].MultiSelect)
}

func TestPromptKey(t *testing.T) {
	a := commandStep(wire.StatusWaiting, "pwd")
	b := commandStep(wire.StatusError, "pwd")
	b.Metadata.SourceTrajectoryStepInfo.StepIndex = 9
	c := commandStep(wire.StatusWaiting, "ls")
	assert.Equal(t, PromptKey(&a), PromptKey(&b), "a retry has the same key")
	assert.NotEqual(t, PromptKey(&a), PromptKey(&c))
	q1 := questionStep(wire.StatusWaiting, qLang)
	q2 := questionStep(wire.StatusWaiting, qExtra)
	assert.NotEqual(t, PromptKey(&q1), PromptKey(&q2))
	assert.NotEqual(t, PromptKey(&q1), PromptKey(&a))
	u := userStep("x", "")
	assert.Empty(t, PromptKey(&u))
	assert.Empty(t, PromptKey(nil))
	u.RequestedInteraction = &wire.Interaction{}
	assert.Empty(t, PromptKey(&u))
}

func TestFreshestWaiting(t *testing.T) {
	steps := indexed([]wire.Step{
		userStep("x", ""),
		commandStep(wire.StatusError, "pwd"),
		commandStep(wire.StatusWaiting, "ls"),
		commandStep(wire.StatusWaiting, "pwd"),
		plannerStep(wire.StatusGenerating, "", ""),
	})
	i, s, ok := FreshestWaiting(steps, 0, PromptKey(&steps[1]))
	require.True(t, ok)
	assert.Equal(t, 3, i)
	assert.Equal(t, wire.StatusWaiting, s.Status)
	_, _, ok = FreshestWaiting(steps[:3], 0, PromptKey(&steps[1]))
	assert.False(t, ok, "the only pwd prompt timed out")

	// A window read from index 2 names the step by its trajectory index.
	i, _, ok = FreshestWaiting(steps[2:], 2, PromptKey(&steps[1]))
	require.True(t, ok)
	assert.Equal(t, 3, i)
}

// A prompt's own step says whether an answer to it may still go out: not
// once that step was answered, cancelled or replaced, where FreshestWaiting
// alone would find a later ask of the same command.
func TestNoLongerAsked(t *testing.T) {
	waiting := commandStep(wire.StatusWaiting, "make")
	waiting.Metadata.CreatedAt = "2026-12-02T10:00:00Z"
	p, ok := PendingInteraction(&waiting, 3)
	require.True(t, ok)
	with := func(st wire.Step) []wire.Step {
		st.Metadata.CreatedAt = waiting.Metadata.CreatedAt
		return indexed([]wire.Step{userStep("x", ""), plannerStep(wire.StatusDone, "", ""), plannerStep(wire.StatusDone, "", ""), st,
			userStep("again", ""), commandStep(wire.StatusWaiting, "make")})
	}
	answered := func(status wire.StepStatus, allow bool) wire.Step {
		st := commandStep(status, "make")
		st.CompletedInteractions = []wire.CompletedInteraction{{Request: waiting.RequestedInteraction,
			Response: &wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: allow}}}}
		return st
	}
	reasked := answered(wire.StatusWaiting, true)
	reasked.RequestedInteraction = commandStep(wire.StatusWaiting, "make install").RequestedInteraction
	replaced := commandStep(wire.StatusWaiting, "make")
	for _, tc := range []struct {
		name   string
		steps  []wire.Step
		answer string
		gone   bool
	}{
		{"still WAITING", with(waiting), "", false},
		{"timed out: agy asks again higher", with(commandStep(wire.StatusError, "make")), "", false},
		{"allowed, running", with(answered(wire.StatusRunning, true)), messages.ActionAccept, true},
		{"denied, done", with(answered(wire.StatusDone, false)), messages.ActionDecline, true},
		{"allowed, and the step asks its next segment", with(reasked), messages.ActionAccept, true},
		{"cancelled", with(commandStep(wire.StatusCanceled, "make")), "", true},
		{"nothing read", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer, gone := NoLongerAsked(p, tc.steps, 0)
			assert.Equal(t, tc.gone, gone)
			assert.Equal(t, tc.answer, answer)
		})
	}
	// A rewind put another step at its index, WAITING on the same command.
	steps := with(waiting)
	steps[3] = replaced
	steps[3].Metadata.CreatedAt = "2026-12-02T10:05:00Z"
	_, gone := NoLongerAsked(p, steps, 0)
	assert.True(t, gone, "another step at its index")
	// Read from its own index on, the window names it by trajectory index.
	answer, gone := NoLongerAsked(p, with(answered(wire.StatusDone, true))[3:], 3)
	assert.True(t, gone)
	assert.Equal(t, messages.ActionAccept, answer)
}

func TestCloseKeys(t *testing.T) {
	q := questionStep(wire.StatusWaiting, qLang, qExtra)
	qp, _ := PendingInteraction(&q, 5)
	c := commandStep(wire.StatusWaiting, "pwd")
	cp, _ := PendingInteraction(&c, 5)
	accept, decline := messages.Resolve{Action: messages.ActionAccept}, messages.Resolve{Action: messages.ActionDecline}
	choice := func(c string) messages.Resolve { return messages.Resolve{Action: messages.ChoiceAction(c), Choice: c} }
	four := "agy asks\n| run pwd\n| Do you want to proceed?\n| > 1. Yes\n|   2. Yes, and always allow in this conversation for commands that start with 'pwd'\n" +
		"|   3. Yes, and always allow for commands that start with 'pwd' (Persist to settings.json)\n|   4. No\n> "
	sandbox := "Steps:\n1. read\n2. run\nDo you want to proceed?\n \u276f 1.Yes\n   2.Yes, and run without sandbox restrictions\n   3.No\n"
	file := "Read: /etc/hosts\nReason: outside workspace\nAllow access to this file?\n1. Yes, allow access\n2. Yes, and always allow non-workspace access\n3. No, deny access\n"
	for _, tc := range []struct {
		name   string
		p      *Prompt
		r      messages.Resolve
		screen string
		want   [][]string
	}{
		{"permission allowed", cp, accept, "", [][]string{{"1", "Enter"}}},
		{"permission allowed once by choice", cp, choice(messages.ChoiceAllowOnce), four, [][]string{{"1", "Enter"}}},
		{"permission denied, no screen: agy's reject key", cp, decline, "", [][]string{{"n"}}},
		{"permission cancelled, no screen", cp, messages.Resolve{Action: messages.ActionCancel}, "", [][]string{{"n"}}},
		{"permission denied, four rows", cp, decline, four, [][]string{{"4", "Enter"}}},
		{"permission denied, sandbox's three rows", cp, choice(messages.ChoiceDeny), sandbox, [][]string{{"3", "Enter"}}},
		{"permission denied, file access's three rows", cp, decline, file, [][]string{{"3", "Enter"}}},
		{"always in this conversation, no screen", cp, choice(messages.ChoiceAllowAlwaysConversation), "", [][]string{{"2", "Enter"}}},
		{"always in settings, no screen", cp, choice(messages.ChoiceAllowAlwaysSettings), "", [][]string{{"3", "Enter"}}},
		{"always in this conversation, four rows", cp, choice(messages.ChoiceAllowAlwaysConversation), four, [][]string{{"2", "Enter"}}},
		{"always in settings, four rows", cp, choice(messages.ChoiceAllowAlwaysSettings), four, [][]string{{"3", "Enter"}}},
		{"question: each question in its order, multi-select by arrows and Space", qp, messages.Resolve{Action: messages.ActionAccept, Answers: []messages.Answer{
			{Question: "Which extras?", SelectedOptionIDs: []string{"2", "1"}},
			{Question: "Which language?", SelectedOptionIDs: []string{"3"}},
		}}, "", [][]string{{"3", "Enter"}, {"Space", "Down", "Space", "Enter"}}},
		{"question by order, one extra", qp, messages.Resolve{Action: messages.ActionAccept, Answers: []messages.Answer{
			{SelectedOptionIDs: []string{"1"}}, {SelectedOptionIDs: []string{"2"}},
		}}, "", [][]string{{"1", "Enter"}, {"Down", "Space", "Enter"}}},
		{"question declined", qp, decline, "", [][]string{{"Escape"}}},
		{"question cancelled", qp, messages.Resolve{Action: messages.ActionCancel}, "", [][]string{{"Escape"}}},
		{"question with a write-in first", qp, messages.Resolve{Action: messages.ActionAccept, Answers: []messages.Answer{
			{Question: "Which language?", WriteIn: "Zig"}, {Question: "Which extras?", SelectedOptionIDs: []string{"1"}},
		}}, "", [][]string{{"Escape"}}},
		{"question with a write-in second", qp, messages.Resolve{Action: messages.ActionAccept, Answers: []messages.Answer{
			{Question: "Which language?", SelectedOptionIDs: []string{"2"}}, {Question: "Which extras?", WriteIn: "CI"},
		}}, "", [][]string{{"2", "Enter"}, {"Escape"}}},
		{"no prompt", nil, accept, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := CloseKeys(tc.p, tc.r, tc.screen)
			require.NoError(t, err)
			assert.Equal(t, tc.want, keys)
		})
	}
}

// An "always" choice the dialog on screen has no row for (the sandbox's
// three rows) is an error: no key is pressed for something else.
func TestCloseKeysRefusesAChoiceTheDialogLacks(t *testing.T) {
	c := commandStep(wire.StatusWaiting, "pwd")
	cp, _ := PendingInteraction(&c, 5)
	sandbox := "Do you want to proceed?\n1. Yes\n2. Yes, and run without sandbox restrictions\n3. No\n"
	keys, err := CloseKeys(cp, messages.Resolve{Action: messages.ActionAccept, Choice: messages.ChoiceAllowAlwaysSettings}, sandbox)
	assert.ErrorContains(t, err, "no row for allow_always_settings")
	assert.Nil(t, keys)
}

func TestDialogRowsReadsTheLastNumberedRun(t *testing.T) {
	screen := "Plan:\n1. read\n2. edit\nsome text\n| * 1. Yes\n|   2. No, deny access\n> draft 1. x"
	assert.Equal(t, []string{"Yes", "No, deny access"}, DialogRows(screen))
	assert.Nil(t, DialogRows("nothing numbered\n1. alone"))
}

func TestPermissionChoices(t *testing.T) {
	c := commandStep(wire.StatusWaiting, "git status")
	c.RequestedInteraction.Permission.SuggestedPersistPattern = "git"
	cp, _ := PendingInteraction(&c, 5)
	ids := func(cs []messages.Choice) (out []string) {
		for _, c := range cs {
			out = append(out, c.ID+"="+c.Action)
		}
		return out
	}
	assert.Equal(t, []string{"allow_once=accept", "deny=decline"}, ids(PermissionChoices(cp, false)))
	owned := PermissionChoices(cp, true)
	assert.Equal(t, []string{"allow_once=accept", "allow_always_conversation=accept", "allow_always_settings=accept", "deny=decline"}, ids(owned))
	assert.Equal(t, "Yes, and always allow in this conversation for commands that start with 'git'", owned[1].Text)
	assert.Equal(t, "Yes, and always allow for commands that start with 'git' (Persist to settings.json)", owned[2].Text)
	edit := &Prompt{Kind: messages.KindPermission, Resource: &messages.Resource{Action: "write_file", Target: "/w/a.go"}}
	assert.Equal(t, "Yes, and always allow 'write_file(/w/a.go)' in this conversation", PermissionChoices(edit, true)[1].Text)
}

// Only plain digits are pressed for an option: an id from agy that is a
// tmux key name, a letter agy's terminal acts on, a leading "-" or a ";"
// is refused, and nothing is pressed.
func TestCloseKeysRefusesAnOptionIDThatIsNotDigits(t *testing.T) {
	q := questionStep(wire.StatusWaiting, qLang, qExtra)
	qp, _ := PendingInteraction(&q, 5)
	for _, id := range []string{"Enter", "C-c", "q", "-l", "1;", ";", "#{pane_pid}", " 1", "1 ", "", "1234", "\u0661"} {
		keys, err := CloseKeys(qp, messages.Resolve{Action: messages.ActionAccept, Answers: []messages.Answer{
			{SelectedOptionIDs: []string{"1", id}}, {SelectedOptionIDs: []string{"1"}},
		}}, "")
		assert.ErrorContains(t, err, "mapper: option id ", "%q", id)
		assert.ErrorContains(t, err, "is not plain digits", "%q", id)
		assert.Nil(t, keys, "%q", id)
	}
}

func TestBuildInteraction(t *testing.T) {
	q := questionStep(wire.StatusWaiting, qLang, qExtra)
	qp, _ := PendingInteraction(&q, 5)
	single := questionStep(wire.StatusWaiting, qLang)
	sp, _ := PendingInteraction(&single, 5)
	writeIn := *sp
	writeIn.Questions = []messages.Question{sp.Questions[0]}
	writeIn.Questions[0].AllowWriteIn = true
	c := commandStep(wire.StatusWaiting, "pwd")
	cp, _ := PendingInteraction(&c, 5)

	ok := func(p *Prompt, res messages.Resolve, want string) func(t *testing.T) {
		return func(t *testing.T) {
			got, err := BuildInteraction(p, res, testTraj, 7)
			require.NoError(t, err)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, want, string(b))
		}
	}
	bad := func(p *Prompt, res messages.Resolve, msg string) func(t *testing.T) {
		return func(t *testing.T) {
			got, err := BuildInteraction(p, res, testTraj, 7)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidResolve))
			assert.Contains(t, err.Error(), msg)
			assert.Equal(t, wire.InteractionResponse{}, got, "no payload with an error")
		}
	}
	accept := func(answers ...messages.Answer) messages.Resolve {
		return messages.Resolve{Action: messages.ActionAccept, Answers: answers}
	}

	t.Run("permission accept", ok(cp, accept(), `{"trajectoryId":"traj-1","stepIndex":7,"permission":{"allow":true}}`))
	t.Run("permission decline", ok(cp, messages.Resolve{Action: messages.ActionDecline}, `{"trajectoryId":"traj-1","stepIndex":7,"permission":{}}`))
	t.Run("permission cancel", ok(cp, messages.Resolve{Action: messages.ActionCancel}, `{"trajectoryId":"traj-1","stepIndex":7,"permission":{}}`))
	t.Run("questions by text", ok(qp, accept(
		messages.Answer{Question: "Which extras?", SelectedOptionIDs: []string{"1", "2"}},
		messages.Answer{Question: "Which language?", SelectedOptionIDs: []string{"3"}},
	), `{"trajectoryId":"traj-1","stepIndex":7,"askQuestion":{"responses":[
		{"question":"Which language?","selectedOptionIds":["3"]},
		{"question":"Which extras?","selectedOptionIds":["1","2"]}]}}`))
	t.Run("questions by order", ok(qp, accept(
		messages.Answer{SelectedOptionIDs: []string{"1"}},
		messages.Answer{SelectedOptionIDs: []string{"2"}},
	), `{"trajectoryId":"traj-1","stepIndex":7,"askQuestion":{"responses":[
		{"question":"Which language?","selectedOptionIds":["1"]},
		{"question":"Which extras?","selectedOptionIds":["2"]}]}}`))
	t.Run("single question unnamed", ok(sp, accept(messages.Answer{SelectedOptionIDs: []string{"2"}}),
		`{"trajectoryId":"traj-1","stepIndex":7,"askQuestion":{"responses":[{"question":"Which language?","selectedOptionIds":["2"]}]}}`))
	t.Run("write-in", ok(&writeIn, accept(messages.Answer{WriteIn: "Zig"}),
		`{"trajectoryId":"traj-1","stepIndex":7,"askQuestion":{"responses":[{"question":"Which language?","writeInResponse":"Zig"}]}}`))

	t.Run("unknown option", bad(sp, accept(messages.Answer{SelectedOptionIDs: []string{"Go"}}), `no option id "Go" (option ids are 1, 2, 3)`))
	t.Run("missing answer", bad(qp, accept(messages.Answer{Question: "Which language?", SelectedOptionIDs: []string{"1"}}), `missing answer for question "Which extras?"`))
	t.Run("empty answer", bad(sp, accept(messages.Answer{}), "missing answer"))
	t.Run("no answers", bad(sp, accept(), "missing answer"))
	t.Run("multi on single-select", bad(sp, accept(messages.Answer{SelectedOptionIDs: []string{"1", "2"}}), "single-select"))
	noWriteIn := *sp
	noWriteIn.Questions = []messages.Question{sp.Questions[0]}
	noWriteIn.Questions[0].AllowWriteIn = false
	t.Run("write-in not allowed", bad(&noWriteIn, accept(messages.Answer{WriteIn: "Zig"}), "does not allow a write-in"))
	t.Run("unknown question", bad(qp, accept(messages.Answer{Question: "Which OS?", SelectedOptionIDs: []string{"1"}}), `no question "Which OS?"`))
	t.Run("two answers to one question", bad(qp, accept(
		messages.Answer{Question: "Which language?", SelectedOptionIDs: []string{"1"}},
		messages.Answer{Question: "Which language?", SelectedOptionIDs: []string{"2"}},
	), "two answers"))
	t.Run("unnamed answers in the wrong number", bad(qp, accept(messages.Answer{SelectedOptionIDs: []string{"1"}}), "do not name their question"))
	t.Run("answers on a permission", bad(cp, accept(messages.Answer{SelectedOptionIDs: []string{"1"}}), "permission prompt"))
	t.Run("declining a question", ok(sp, messages.Resolve{Action: messages.ActionDecline},
		`{"trajectoryId":"traj-1","stepIndex":7,"askQuestion":{"responses":[]}}`))
	t.Run("cancelling a question", ok(qp, messages.Resolve{Action: messages.ActionCancel},
		`{"trajectoryId":"traj-1","stepIndex":7,"askQuestion":{"responses":[]}}`))
	t.Run("declining a question with answers", bad(sp, messages.Resolve{Action: messages.ActionDecline,
		Answers: []messages.Answer{{SelectedOptionIDs: []string{"1"}}}}, "answers given to decline a question"))
	t.Run("unknown action", bad(cp, messages.Resolve{Action: "maybe"}, `unknown action "maybe"`))
	t.Run("unknown kind", bad(&Prompt{Kind: "poll"}, accept(), `unknown prompt kind "poll"`))
	t.Run("no questions", bad(&Prompt{Kind: messages.KindQuestion}, accept(), "no questions"))
	t.Run("nil prompt", bad(nil, accept(), "no prompt"))
	t.Run("no trajectory", func(t *testing.T) {
		_, err := BuildInteraction(cp, accept(), "", 7)
		assert.ErrorIs(t, err, ErrInvalidResolve)
		_, err = BuildInteraction(cp, accept(), testTraj, -1)
		assert.ErrorIs(t, err, ErrInvalidResolve)
	})
}

func TestPrompts(t *testing.T) {
	u := userStep("go", "")
	t.Run("harness answer: resolved once, never by terminal after", func(t *testing.T) {
		r := newTestReconciler()
		evs := r.Apply(snapshot(0, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls")))
		eid := findEvent(t, evs, messages.EventElicitationRequest).ElicitationID
		require.Len(t, r.OpenPrompts(), 1)
		p, ok := r.Prompt(eid)
		require.True(t, ok)
		p.StepIndex = 99 // a copy: the reconciler's prompt is untouched
		p2, _ := r.Prompt(eid)
		assert.Equal(t, 1, p2.StepIndex)

		e, ok := r.MarkResolved(eid, messages.ActionAccept, 1, at(1))
		require.True(t, ok)
		assert.Equal(t, messages.ByHarness, e.By)
		assert.Equal(t, at(1), e.Time)
		assert.Equal(t, eid+"/resolved", e.ID)
		_, ok = r.MarkResolved(eid, messages.ActionAccept, 1, at(1))
		assert.False(t, ok, "already closed")
		_, ok = r.MarkResolved("nope", messages.ActionAccept, 1, at(1))
		assert.False(t, ok)
		_, ok = r.Prompt(eid)
		assert.False(t, ok)
		assert.Empty(t, r.OpenPrompts())

		evs = r.Apply(snapshot(2, wire.RunRunning, u, commandStep(wire.StatusDone, "ls")))
		assert.Equal(t, []string{"status:running", "function_call_output"}, types(evs))
	})
	t.Run("canceled prompt expires", func(t *testing.T) {
		r := newTestReconciler()
		r.Apply(snapshot(0, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls")))
		evs := r.Apply(snapshot(1, wire.RunRunning, u, commandStep(wire.StatusCanceled, "ls")))
		assert.Equal(t, []string{"elicitation_resolved", "status:running", "function_call_output"}, types(evs))
		assert.Equal(t, messages.ByExpired, evs[0].By)
		assert.Equal(t, messages.ActionCancel, evs[0].Action)
		assert.Nil(t, evs[0].DeliveredStepIndex)
	})
	t.Run("timed out prompt expires when a later turn or tool moves on", func(t *testing.T) {
		for _, later := range []wire.Step{userStep("next", ""), commandStep(wire.StatusDone, "other")} {
			r := newTestReconciler()
			r.Apply(snapshot(0, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls")))
			assert.Equal(t, []string{"function_call_output"}, types(r.Apply(snapshot(1, wire.RunRunning, u, commandStep(wire.StatusError, "ls")))))
			// A pending retry or a planner step does not expire it.
			assert.Empty(t, r.Apply(snapshot(2, wire.RunRunning, u, commandStep(wire.StatusError, "ls"), plannerStep(wire.StatusGenerating, "", ""))))
			evs := r.Apply(snapshot(3, wire.RunRunning, u, commandStep(wire.StatusError, "ls"), plannerStep(wire.StatusGenerating, "", ""), later))
			require.Equal(t, messages.EventElicitationResolved, evs[0].Type, "%v", types(evs))
			assert.Equal(t, messages.ByExpired, evs[0].By)
			assert.Empty(t, r.OpenPrompts())
		}
	})
	t.Run("answered in the terminal while the command runs", func(t *testing.T) {
		r := newTestReconciler()
		r.Apply(snapshot(0, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls")))
		// A stale pre-prompt RUNNING copy does not close it.
		assert.Empty(t, r.Apply(snapshot(1, wire.RunRunning, u, commandStep(wire.StatusRunning, "ls"))))
		running := answered(commandStep(wire.StatusRunning, "ls"), 1, wire.InteractionResponse{Permission: &wire.PermissionAnswer{}})
		evs := r.Apply(snapshot(2, wire.RunRunning, u, running))
		require.Equal(t, []string{"elicitation_resolved", "status:running"}, types(evs))
		assert.Equal(t, messages.ActionDecline, evs[0].Action)
		assert.Equal(t, messages.ByTerminal, evs[0].By)
		// A stale WAITING copy does not reopen it.
		assert.Empty(t, r.Apply(snapshot(3, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls"))))
	})
	t.Run("retry seen before the timeout, and the old step's error after", func(t *testing.T) {
		r := newTestReconciler()
		r.Apply(frame(0, wire.RunRunning, 1, commandStep(wire.StatusWaiting, "ls")))
		assert.Equal(t, []string{"function_call"}, types(r.Apply(frame(1, wire.RunRunning, 3, commandStep(wire.StatusWaiting, "ls")))))
		assert.Equal(t, []string{"function_call_output"}, types(r.Apply(frame(2, wire.RunRunning, 1, commandStep(wire.StatusError, "ls")))))
		require.Len(t, r.OpenPrompts(), 1)
		assert.Equal(t, 3, r.OpenPrompts()[0].StepIndex)
		// A stale first sighting of an older step binds without moving back.
		r.Apply(frame(3, wire.RunRunning, 2, commandStep(wire.StatusWaiting, "ls")))
		assert.Equal(t, 3, r.OpenPrompts()[0].StepIndex)
	})
	t.Run("a retry first seen done resolves the open prompt", func(t *testing.T) {
		r := newTestReconciler()
		r.Apply(frame(0, wire.RunRunning, 1, commandStep(wire.StatusWaiting, "ls")))
		r.Apply(frame(1, wire.RunRunning, 1, commandStep(wire.StatusError, "ls")))
		evs := r.Apply(frame(2, wire.RunRunning, 2, commandStep(wire.StatusDone, "ls")))
		require.Equal(t, []string{"function_call", "elicitation_resolved", "status:running", "function_call_output"}, types(evs))
		assert.Equal(t, 2, *evs[1].DeliveredStepIndex)
		assert.Equal(t, messages.ActionAccept, evs[1].Action, "ran without an echo: allowed")
	})
	t.Run("history replay opens nothing", func(t *testing.T) {
		r := newTestReconciler()
		evs := r.Apply(snapshot(0, wire.RunIdle, u, commandStep(wire.StatusError, "ls"), commandStep(wire.StatusDone, "ls")))
		assert.NotContains(t, types(evs), "elicitation_request")
		assert.Empty(t, r.OpenPrompts())
	})
	t.Run("two prompts: waiting until both close; open order kept", func(t *testing.T) {
		r := newTestReconciler()
		q := questionStep(wire.StatusWaiting, qLang)
		evs := r.Apply(snapshot(0, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls"), q))
		assert.Equal(t, []string{"user_message", "status:running", "function_call", "elicitation_request", "status:waiting", "function_call", "elicitation_request"}, types(evs))
		open := r.OpenPrompts()
		require.Len(t, open, 2)
		assert.Equal(t, messages.KindPermission, open[0].Kind)
		assert.Equal(t, messages.KindQuestion, open[1].Kind)
		_, ok := r.MarkResolved(open[0].ElicitationID, messages.ActionAccept, 1, at(1))
		require.True(t, ok)
		assert.Empty(t, r.Apply(snapshot(1, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls"), q)), "still waiting on the question")
		_, ok = r.MarkResolved(open[1].ElicitationID, messages.ActionAccept, 2, at(2))
		require.True(t, ok)
		assert.Equal(t, []string{"status:running"}, types(r.Apply(snapshot(2, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls"), q))))
	})
}

func TestQuestionFromAStreamedCopyWaitsForItsFlags(t *testing.T) {
	r := newTestReconciler()
	streamed := questionStep(wire.StatusWaiting, qLang, qExtra)
	streamed.Metadata.ToolCall = nil
	evs := r.Apply(frame(0, wire.RunRunning, 1, streamed))
	assert.NotContains(t, types(evs), "elicitation_request", "a streamed copy cannot tell multi-select: no request yet")
	assert.True(t, r.AwaitingDetail(), "the caller is told to read a polled copy")
	assert.Empty(t, r.OpenPrompts())

	polled := questionStep(wire.StatusWaiting, qLang, qExtra)
	evs = r.Apply(snapshot(1, wire.RunRunning, userStep("x", ""), polled))
	assert.False(t, r.AwaitingDetail())
	req := findEvent(t, evs, messages.EventElicitationRequest)
	assert.True(t, req.Questions[1].MultiSelect, "the request carries the flags of the polled copy")
	p, ok := r.Prompt(req.ElicitationID)
	require.True(t, ok)
	assert.True(t, p.Questions[1].MultiSelect)
	_, err := BuildInteraction(p, messages.Resolve{Action: messages.ActionAccept, Answers: []messages.Answer{
		{Question: qLang.text, SelectedOptionIDs: []string{"1"}},
		{Question: qExtra.text, SelectedOptionIDs: []string{"1", "2"}},
	}}, testTraj, 1)
	assert.NoError(t, err)

	// Once open, later streamed copies keep it open and do not ask again.
	evs = r.Apply(frame(2, wire.RunRunning, 1, streamed))
	assert.NotContains(t, types(evs), "elicitation_request")
	assert.Len(t, r.OpenPrompts(), 1)
}

// answerInFlight has a reconciler see a command wait on its permission
// ("run it", then pwd) and the harness's answer with action go out.
func answerInFlight(t *testing.T, action string) (*Reconciler, wire.Step, messages.Event) {
	t.Helper()
	r := newTestReconciler()
	u := userStep("run it", "")
	evs := r.Apply(snapshot(0, wire.RunRunning, u, commandStep(wire.StatusWaiting, "pwd")))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	r.AnswerInFlight(req.ElicitationID, action)
	return r, u, req
}

// permissionAnswered is the pwd command step with status, agy's record of
// its permission allowed or not.
func permissionAnswered(status wire.StepStatus, allow bool) wire.Step {
	s := commandStep(status, "pwd")
	s.CompletedInteractions = []wire.CompletedInteraction{{Response: &wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: allow}}}}
	return s
}

func TestAnswerInFlightAttributesAnEarlyDoneToTheHarness(t *testing.T) {
	r, u, req := answerInFlight(t, messages.ActionAccept)
	// agy shows the step answered before the delivery's reply reaches the session.
	done := permissionAnswered(wire.StatusDone, true)
	evs := r.Apply(snapshot(1, wire.RunRunning, u, done))
	res := findEvent(t, evs, messages.EventElicitationResolved)
	assert.Equal(t, messages.ByHarness, res.By)
	assert.Equal(t, messages.ActionAccept, res.Action)
	_, ok := r.MarkResolved(req.ElicitationID, messages.ActionAccept, 1, at(2))
	assert.False(t, ok, "resolved once, not twice")

	// A failed delivery clears it: a later answer in agy's terminal is the terminal's.
	r2, _, req := answerInFlight(t, messages.ActionAccept)
	r2.AnswerInFlight(req.ElicitationID, "")
	evs = r2.Apply(snapshot(1, wire.RunRunning, u, done))
	assert.Equal(t, messages.ByTerminal, findEvent(t, evs, messages.EventElicitationResolved).By)
}

// An answer in flight that agy's record contradicts is not the harness's:
// agy (its timeout, or its terminal) answered first, so the prompt closes
// as answered elsewhere, with what agy recorded.
func TestAnswerInFlightIsNotClaimedWhenAgyShowsAnother(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight string
		allow    bool
		want     string
		by       string
	}{
		{"ours accept, agy shows not allowed", messages.ActionAccept, false, messages.ActionDecline, messages.ByTerminal},
		{"ours decline, agy shows allowed", messages.ActionDecline, true, messages.ActionAccept, messages.ByTerminal},
		{"ours cancel, agy shows not allowed: ours", messages.ActionCancel, false, messages.ActionCancel, messages.ByHarness},
		{"ours accept, agy shows allowed: ours", messages.ActionAccept, true, messages.ActionAccept, messages.ByHarness},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, u, _ := answerInFlight(t, tc.inFlight)
			evs := r.Apply(snapshot(1, wire.RunRunning, u, permissionAnswered(wire.StatusRunning, tc.allow)))
			res := findEvent(t, evs, messages.EventElicitationResolved)
			assert.Equal(t, tc.by, res.By)
			assert.Equal(t, tc.want, res.Action)
		})
	}
}

// The campaign's case: an MCP elicitation accepted by the harness while
// agy's own timeout cancelled it; agy shows cancel, so the prompt closes as
// answered elsewhere, cancel.
func TestElicitationAcceptInFlightThatAgyCancelledIsNotTheHarnesss(t *testing.T) {
	r := newTestReconciler()
	u := userStep("go", "")
	s := genericStep(wire.StatusWaiting, "mcp_tool", `{}`, "")
	s.RequestedInteraction = &wire.Interaction{Elicitation: &wire.ElicitationRequest{ServerName: "tracker", Mode: "form", Message: "Which project?", RequestedSchemaJSON: `{"type":"object"}`}}
	evs := r.Apply(snapshot(1, wire.RunRunning, u, s))
	req := findEvent(t, evs, messages.EventElicitationRequest)
	r.AnswerInFlight(req.ElicitationID, messages.ActionAccept)
	done := genericStep(wire.StatusDone, "mcp_tool", `{}`, "")
	done.CompletedInteractions = []wire.CompletedInteraction{{Response: &wire.InteractionResponse{Elicitation: &wire.ElicitationAnswer{Action: messages.ActionCancel}}}}
	evs = r.Apply(snapshot(2, wire.RunRunning, u, done))
	res := findEvent(t, evs, messages.EventElicitationResolved)
	assert.Equal(t, messages.ByTerminal, res.By)
	assert.Equal(t, messages.ActionCancel, res.Action)
}
