package mapper

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

func TestPlannerResponse(t *testing.T) {
	gen := func(thinking, text string) wire.Step { return plannerStep(wire.StatusGenerating, thinking, text) }
	done := func(text string) wire.Step { return plannerStep(wire.StatusDone, "", text) }
	tests := []struct {
		name   string
		copies []wire.Step
		want   []string // "type id delta|snapshot|text"
	}{
		{
			name:   "deltas then message",
			copies: []wire.Step{gen("Think", ""), gen("Thinking.", "Hel"), gen("Thinking.", "Hello"), done("Hello world")},
			want: []string{
				"reasoning_delta conv-1/0/reasoning@0 Δ=Think",
				"reasoning_delta conv-1/0/reasoning@5 Δ=ing.",
				"output_text_delta conv-1/0/text@0 Δ=Hel",
				"output_text_delta conv-1/0/text@3 Δ=lo",
				"output_text_delta conv-1/0/text@5 Δ= world",
				"message conv-1/0/message =Hello world",
				"usage conv-1/0/usage",
			},
		},
		{
			name:   "first seen done: message only",
			copies: []wire.Step{plannerStep(wire.StatusDone, "Thought.", "Hi.")},
			want:   []string{"message conv-1/0/message =Hi.", "usage conv-1/0/usage"},
		},
		{
			name:   "rewrite is a snapshot, later deltas extend it",
			copies: []wire.Step{gen("", "Hello wor"), gen("", "Hi there, world"), gen("", "Hi there, world!"), done("Hi there, world!")},
			want: []string{
				"output_text_delta conv-1/0/text@0 Δ=Hello wor",
				"output_text_delta conv-1/0/text#1 S=Hi there, world",
				"output_text_delta conv-1/0/text#1@15 Δ=!",
				"message conv-1/0/message =Hi there, world!",
				"usage conv-1/0/usage",
			},
		},
		{
			name:   "stale shorter copies are ignored",
			copies: []wire.Step{gen("", "Hello wor"), gen("", "Hello"), gen("", "Help"), gen("", "Hello world"), done("Hello world")},
			want: []string{
				"output_text_delta conv-1/0/text@0 Δ=Hello wor",
				"output_text_delta conv-1/0/text@9 Δ=ld",
				"message conv-1/0/message =Hello world",
				"usage conv-1/0/usage",
			},
		},
		{
			name:   "committed text that rewrites the stream: snapshot before the message",
			copies: []wire.Step{gen("", "Hello world, how"), done("Hello world.")},
			want: []string{
				"output_text_delta conv-1/0/text@0 Δ=Hello world, how",
				"output_text_delta conv-1/0/text#1 S=Hello world.",
				"message conv-1/0/message =Hello world.",
				"usage conv-1/0/usage",
			},
		},
		{
			name:   "regression after done emits nothing",
			copies: []wire.Step{gen("", "Hi"), done("Hi!"), gen("", "Hi"), gen("", "Hi! And more"), done("Hi!")},
			want: []string{
				"output_text_delta conv-1/0/text@0 Δ=Hi",
				"output_text_delta conv-1/0/text@2 Δ=!",
				"message conv-1/0/message =Hi!",
				"usage conv-1/0/usage",
			},
		},
		{
			name:   "tool calls only: usage, no message",
			copies: []wire.Step{gen("Plan.", ""), plannerStep(wire.StatusDone, "Plan.", "")},
			want:   []string{"reasoning_delta conv-1/0/reasoning@0 Δ=Plan.", "usage conv-1/0/usage"},
		},
		{
			name: "streamed done copy without response uses modifiedResponse",
			copies: func() []wire.Step {
				d := done("Full text")
				d.PlannerResponse.Response = ""
				return []wire.Step{gen("", "Full"), d}
			}(),
			want: []string{
				"output_text_delta conv-1/0/text@0 Δ=Full",
				"output_text_delta conv-1/0/text@4 Δ= text",
				"message conv-1/0/message =Full text",
				"usage conv-1/0/usage",
			},
		},
		{
			name: "interrupted without text in the terminal copy keeps what was shown",
			copies: []wire.Step{gen("", "Partial"), func() wire.Step {
				s := plannerStep(wire.StatusCanceled, "", "")
				s.PlannerResponse = nil
				return s
			}()},
			want: []string{"output_text_delta conv-1/0/text@0 Δ=Partial", "message conv-1/0/message =Partial"},
		},
		{
			name:   "reasoning rewrite is a reasoning snapshot",
			copies: []wire.Step{gen("abc", ""), gen("xyz!", "")},
			want:   []string{"reasoning_delta conv-1/0/reasoning@0 Δ=abc", "reasoning_delta conv-1/0/reasoning#1 S=xyz!"},
		},
		{
			name:   "response only while live is read too",
			copies: []wire.Step{{Type: wire.StepPlannerResponse, Status: wire.StatusGenerating, PlannerResponse: &wire.PlannerResponse{Response: "R"}}},
			want:   []string{"output_text_delta conv-1/0/text@0 Δ=R"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestReconciler()
			var got []string
			for k, c := range tc.copies {
				for _, e := range r.Apply(snapshot(k, "", c)) {
					got = append(got, describe(e))
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func describe(e messages.Event) string {
	s := string(e.Type) + " " + e.ID
	switch {
	case e.Delta != "":
		s += " Δ=" + e.Delta
	case e.Snapshot != "":
		s += " S=" + e.Snapshot
	case e.Text != "":
		s += " =" + e.Text
	}
	return s
}

func TestUsageTotals(t *testing.T) {
	r := newTestReconciler()
	evs := r.Apply(snapshot(0, "", plannerStep(wire.StatusDone, "", "ab"), plannerStep(wire.StatusDone, "x", "abc")))
	var totals []int64
	for _, e := range evs {
		if e.Type == messages.EventUsage {
			totals = append(totals, *e.TotalInputTokens, *e.TotalOutputTokens)
		}
	}
	assert.Equal(t, []int64{1002, 2, 2005, 6}, totals)

	// No model in modelUsage: the generator model names it.
	s := plannerStep(wire.StatusDone, "", "c")
	s.Metadata.ModelUsage.Model = ""
	s.Metadata.GeneratorModel = "MODEL_GEN"
	evs = r.Apply(snapshot(1, "", plannerStep(wire.StatusDone, "", "ab"), plannerStep(wire.StatusDone, "x", "abc"), s))
	assert.Equal(t, "MODEL_GEN", findEvent(t, evs, messages.EventUsage).Model)
}

func TestIdempotence(t *testing.T) {
	steps := []wire.Step{
		userStep("hi", "MODEL_M20"),
		plannerStep(wire.StatusGenerating, "t", "Hel"),
		commandStep(wire.StatusWaiting, "ls"),
	}
	r := newTestReconciler()
	first := r.Apply(snapshot(0, wire.RunRunning, steps...))
	require.NotEmpty(t, first)
	assert.Empty(t, r.Apply(snapshot(1, wire.RunRunning, steps...)), "the same snapshot twice")
	assert.Empty(t, r.Apply(frame(2, wire.RunRunning, 0, steps...)), "a frame of the same steps")
	assert.Empty(t, r.Apply(frame(3, wire.RunRunning, 1, steps[1])), "a sparse frame of one unchanged step")
	assert.Equal(t, 3, r.Steps())
}

func TestUserInput(t *testing.T) {
	t.Run("harness turns matched by text in order", func(t *testing.T) {
		r := newTestReconciler()
		r.ExpectTurn("a")
		r.ExpectTurn("b")
		evs := r.Apply(snapshot(0, "", userStep("b", ""), userStep("a", ""), userStep("a", "")))
		var origins []string
		for _, e := range evs {
			if e.Type == messages.EventUserMessage {
				origins = append(origins, e.Text+":"+e.Origin)
			}
		}
		assert.Equal(t, []string{"b:harness", "a:harness", "a:terminal"}, origins)
	})
	t.Run("typed turns matched as agy takes a paste, once", func(t *testing.T) {
		r := newTestReconciler()
		r.ExpectTypedTurn("  fix it\r\nthen \x1btest\x07 \n")
		r.ExpectTurn(" sent ")
		evs := r.Apply(snapshot(0, "", userStep("fix it\nthen test", ""), userStep("fix it\nthen test", ""),
			userStep("sent", ""), userStep(" sent ", "")))
		var origins []string
		for _, e := range evs {
			if e.Type == messages.EventUserMessage {
				origins = append(origins, e.Text+":"+e.Origin)
			}
		}
		assert.Equal(t, []string{"fix it\nthen test:harness", "fix it\nthen test:terminal", "sent:terminal", " sent :harness"}, origins,
			"a typed turn once; a turn sent over RPC by its exact text")
	})
	t.Run("text from items when userResponse is absent", func(t *testing.T) {
		s := userStep("", "")
		s.UserInput.Items = []wire.TextItem{{Text: "line one"}, {Text: "line two"}}
		evs := newTestReconciler().Apply(snapshot(0, "", s))
		assert.Equal(t, "line one\nline two", findEvent(t, evs, messages.EventUserMessage).Text)
	})
	t.Run("a live empty turn waits to be filled", func(t *testing.T) {
		r := newTestReconciler()
		s := userStep("", "")
		s.Status = wire.StatusRunning
		assert.Empty(t, r.Apply(snapshot(0, "", s)))
		evs := r.Apply(snapshot(1, "", userStep("now", "")))
		assert.Equal(t, []string{"user_message", "status:running"}, types(evs))
	})
	t.Run("an empty finished turn still starts running", func(t *testing.T) {
		evs := newTestReconciler().Apply(snapshot(0, "", userStep("", "")))
		assert.Equal(t, []string{"status:running"}, types(evs))
	})
}

func TestModelChanged(t *testing.T) {
	r := NewReconciler(Config{ConversationID: testConv})
	evs := r.Apply(snapshot(0, "", userStep("one", "MODEL_A")))
	assert.NotContains(t, types(evs), "model_changed", "the first turn's model is not a change")
	assert.Equal(t, "MODEL_A", r.LastModel())

	r.SetModels(map[string]wire.ModelInfo{"gemini-key": {Model: "MODEL_B", DisplayName: "Model B"}, "z-key": {Model: "MODEL_B", DisplayName: "Other B"}})
	evs = r.Apply(snapshot(1, "", userStep("one", "MODEL_A"), userStep("two", "MODEL_B")))
	mc := findEvent(t, evs, messages.EventModelChanged)
	assert.Equal(t, "MODEL_A", mc.From)
	assert.Equal(t, "MODEL_B", mc.To)
	assert.Equal(t, "Model B", mc.DisplayName, "catalog keyed otherwise: found by model, smallest key first")
	assert.Equal(t, testConv+"/1/model", mc.ID)

	// Same model again, a turn without a model, and a model from metadata.
	third := userStep("three", "")
	third.Metadata.RequestedModel = &wire.ModelRef{Model: "MODEL_C"}
	evs = r.Apply(snapshot(2, "", userStep("one", "MODEL_A"), userStep("two", "MODEL_B"), userStep("x", "MODEL_B"), userStep("y", ""), third))
	mc = findEvent(t, evs, messages.EventModelChanged)
	assert.Equal(t, "MODEL_B", mc.From)
	assert.Equal(t, "MODEL_C", mc.To)
	assert.Empty(t, mc.DisplayName)

	// requestedModel in the planner config wins over planModel.
	s := userStep("four", "MODEL_C")
	s.UserInput.UserConfig.PlannerConfig.RequestedModel = &wire.ModelRef{Model: "MODEL_D"}
	r.Apply(FromFrame(&rpc.StreamFrame{Update: rpc.StateUpdate{MainTrajectoryUpdate: rpc.TrajectoryUpdate{StepsUpdate: rpc.StepsUpdate{Indices: []wire.Int{5}, Steps: []wire.Step{roundTrip(s)}}}}}, at(3)))
	assert.Equal(t, "MODEL_D", r.LastModel())
}

func TestStatusEdges(t *testing.T) {
	type step struct {
		obs  Observation
		want []string
	}
	u := userStep("go", "")
	tests := []struct {
		name  string
		steps []step
	}{
		{"snapshot idle closes the turn", []step{
			{snapshot(0, wire.RunRunning, u), []string{"user_message", "status:running"}},
			{snapshot(1, wire.RunIdle, u), []string{"status:idle"}},
			{snapshot(2, wire.RunIdle, u), nil},
		}},
		{"a frame's idle does not close; a snapshot read after it does", []step{
			{snapshot(0, wire.RunRunning, u), []string{"user_message", "status:running"}},
			{frame(1, wire.RunIdle, 0), nil},
			{frame(2, "", 0), nil},
			{snapshot(3, "", u), nil}, // may have been read before the IDLE
			{snapshot(4, wire.RunIdle, u), []string{"status:idle"}},
		}},
		{"a running frame after an idle frame disarms", []step{
			{snapshot(0, wire.RunRunning, u), []string{"user_message", "status:running"}},
			{frame(1, wire.RunIdle, 0), nil},
			{frame(2, wire.RunRunning, 0), nil},
			{snapshot(3, "", u), nil},
		}},
		{"running after idle, and at the start", []step{
			{frame(0, wire.RunRunning, 0), []string{"status:running"}},
			{snapshot(1, wire.RunIdle), []string{"status:idle"}},
			{frame(2, wire.RunBusy, 0), []string{"status:running"}},
			{frame(3, wire.RunCanceling, 0), nil},
			{snapshot(4, wire.RunIdle), []string{"status:idle"}},
		}},
		{"a snapshot read before the turn's first step does not close it", []step{
			{snapshot(0, wire.RunIdle), []string{"status:idle"}},
			{frame(1, wire.RunRunning, 0, u), []string{"user_message", "status:running"}},
			// Read (IDLE, no steps) before the turn began; applied after its
			// first frame (the poller and the stream reader race).
			{snapshot(2, wire.RunIdle), nil},
			{snapshot(3, wire.RunIdle, u), []string{"status:idle"}},
		}},
		{"no idle while a prompt waits", []step{
			{snapshot(0, wire.RunRunning, u, commandStep(wire.StatusWaiting, "ls")), []string{"user_message", "status:running", "function_call", "elicitation_request", "status:waiting"}},
			{snapshot(1, wire.RunIdle, u, commandStep(wire.StatusWaiting, "ls")), nil},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestReconciler()
			for i, s := range tc.steps {
				got := r.Apply(s.obs)
				if len(s.want) == 0 {
					assert.Empty(t, got, "observation %d", i)
				} else {
					assert.Equal(t, s.want, types(got), "observation %d", i)
				}
			}
		})
	}
}

func TestStatusIDsAreUnique(t *testing.T) {
	r := newTestReconciler()
	var all []messages.Event
	for k := 0; k < 4; k++ {
		all = append(all, r.Apply(frame(k, wire.RunRunning, 0))...)
		all = append(all, r.Apply(snapshot(k, wire.RunIdle))...)
	}
	require.Len(t, all, 8)
	assertUniqueIDs(t, all)
	assert.Equal(t, testConv+"/status/0/running.2", all[2].ID)
}

func TestUnknownAndSystemSteps(t *testing.T) {
	r := newTestReconciler()
	odd := wire.Step{Type: "CORTEX_STEP_TYPE_FUTURE_THING", Status: wire.StatusDone}
	odd2 := wire.Step{Type: "CORTEX_STEP_TYPE_FUTURE_THING", Status: wire.StatusRunning}
	withTool := wire.Step{Type: "CORTEX_STEP_TYPE_WRITE_TO_FILE", Status: wire.StatusDone, Metadata: wire.StepMetadata{ToolCall: &wire.ToolCall{ID: "w1", Name: "write_to_file", ArgumentsJSON: `{"path":"a"}`}, ToolSummary: "Wrote a"}}
	evs := r.Apply(snapshot(0, "", systemStep(wire.StepSystemMessage), odd, odd2, withTool, wire.Step{}))
	require.Equal(t, []string{"unknown_step", "function_call", "function_call_output", "unknown_step"}, types(evs))
	assert.Equal(t, "CORTEX_STEP_TYPE_FUTURE_THING", evs[0].StepType)
	assert.Equal(t, 1, *evs[0].StepIndex)
	assert.Equal(t, "write_to_file", evs[1].Name)
	assert.Equal(t, `{"path":"a"}`, evs[1].Arguments)
	assert.Equal(t, "Wrote a", evs[2].Output)
	assert.Equal(t, "", evs[3].StepType)
}

func TestToolSteps(t *testing.T) {
	t.Run("call once, output once at the end, call id decided once", func(t *testing.T) {
		r := newTestReconciler()
		pending := commandStep(wire.StatusPending, "make")
		pending.RunCommand.CommandLine = ""
		evs := r.Apply(snapshot(0, "", pending))
		require.Equal(t, []string{"function_call"}, types(evs))
		assert.Equal(t, testTraj+":0", evs[0].CallID)
		assert.JSONEq(t, `{"command":"make","cwd":"/work"}`, evs[0].Arguments, "the proposed command line when not yet set")

		running := commandStep(wire.StatusRunning, "make")
		running.RequestedInteraction = nil
		running.Metadata.ToolCall = &wire.ToolCall{ID: "late-id", Name: "run_command"}
		assert.Empty(t, r.Apply(snapshot(1, "", running)))

		doneStep := withOutput(running, "built\n", 2)
		doneStep.Status = wire.StatusDone
		evs = r.Apply(snapshot(2, "", doneStep))
		require.Equal(t, []string{"function_call_output_delta", "function_call_output"}, types(evs), "seen live: its output streamed")
		assert.Equal(t, "built\n", evs[0].Delta)
		assert.Equal(t, testTraj+":0", evs[1].CallID, "stable although a later copy has toolCall")
		assert.Equal(t, "built\n", evs[1].Output)
		assert.Equal(t, 2, *evs[1].ExitCode)
		assert.Empty(t, r.Apply(snapshot(3, "", running)), "a stale live copy")
	})
	t.Run("outputs by type and status", func(t *testing.T) {
		noTraj := wire.Step{Type: wire.StepViewFile, Status: wire.StatusCanceled}
		evs := NewReconciler(Config{ConversationID: "cv"}).Apply(snapshot(0, "", noTraj))
		assert.Equal(t, "cv:0", evs[0].CallID)
		assert.Equal(t, "view_file", evs[0].Name)
		assert.Equal(t, "{}", evs[0].Arguments)
		assert.Equal(t, "the tool step ended canceled", evs[1].Output)

		failed := genericStep(wire.StatusError, "grep", `{"q":"x"}`, "")
		evs = newTestReconciler().Apply(snapshot(0, "", failed))
		assert.Equal(t, "error: the tool step failed", evs[1].Output)

		bare := wire.Step{Type: wire.StepGeneric, Status: wire.StatusDone}
		evs = newTestReconciler().Apply(snapshot(0, "", bare))
		assert.Equal(t, "generic", evs[0].Name)
		assert.Equal(t, "done", evs[1].Output)

		emptySub := subagentStep(wire.StatusDone)
		evs = newTestReconciler().Apply(snapshot(0, "", emptySub))
		assert.Equal(t, "done", evs[1].Output)

		bad := wire.Step{Type: wire.StepListDirectory, Status: wire.StatusDone, ListDirectory: []byte(`[1]`)}
		evs = newTestReconciler().Apply(snapshot(0, "", bad))
		assert.Equal(t, "listed a directory", evs[1].Output)
		badView := wire.Step{Type: wire.StepViewFile, Status: wire.StatusDone, ViewFile: []byte(`"x"`)}
		evs = newTestReconciler().Apply(snapshot(0, "", badView))
		assert.Equal(t, "viewed a file", evs[1].Output)
	})
	t.Run("body key", func(t *testing.T) {
		assert.Equal(t, "viewFile", bodyKey(wire.StepViewFile))
		assert.Equal(t, "invokeSubagent", bodyKey(wire.StepInvokeSubagent))
		assert.Equal(t, "generic", bodyKey(wire.StepGeneric))
	})
}

func TestObservationEdges(t *testing.T) {
	t.Run("frame of another conversation is ignored", func(t *testing.T) {
		r := newTestReconciler()
		f := &rpc.StreamFrame{Update: rpc.StateUpdate{ConversationID: "other", Status: wire.RunRunning}}
		f.Update.MainTrajectoryUpdate.StepsUpdate = rpc.StepsUpdate{Indices: []wire.Int{0}, Steps: []wire.Step{roundTrip(userStep("x", ""))}}
		assert.Nil(t, r.Apply(FromFrame(f, at(0))))
	})
	t.Run("frame without indices is positional; extra steps dropped", func(t *testing.T) {
		f := &rpc.StreamFrame{}
		f.Update.MainTrajectoryUpdate.StepsUpdate = rpc.StepsUpdate{Steps: []wire.Step{{}, {}}, TotalLength: 2}
		obs := FromFrame(f, at(0))
		assert.Equal(t, []int{0, 1}, obs.Indices)
		assert.Equal(t, 2, obs.TotalLength)
		f.Update.MainTrajectoryUpdate.StepsUpdate.Indices = []wire.Int{7}
		obs = FromFrame(f, at(0))
		assert.Equal(t, []int{7}, obs.Indices)
		assert.Len(t, obs.Steps, 1)
		assert.Equal(t, Frame, FromFrame(nil, at(0)).Kind)
		assert.Equal(t, "frame", Frame.String())
		assert.Equal(t, "snapshot", Snapshot.String())
		assert.Equal(t, "unknown", ObservationKind(9).String())
	})
	t.Run("negative indices are ignored", func(t *testing.T) {
		r := newTestReconciler()
		assert.Empty(t, r.Apply(Observation{Kind: Frame, Indices: []int{-1}, Steps: []wire.Step{userStep("x", "")}}))
		assert.Equal(t, 0, r.Steps())
	})
	t.Run("a slot whose type changes is a new step", func(t *testing.T) {
		r := newTestReconciler()
		r.Apply(snapshot(0, "", userStep("x", "")))
		evs := r.Apply(snapshot(1, "", plannerStep(wire.StatusDone, "", "new")))
		assert.Equal(t, []string{"message", "usage"}, types(evs))
	})
	t.Run("events carry the parent conversation of a subagent", func(t *testing.T) {
		r := NewReconciler(Config{ConversationID: "child", ParentConversationID: "parent"})
		evs := r.Apply(FromSnapshot([]wire.Step{userStep("x", "")}, "", at(0)))
		for _, e := range evs {
			assert.Equal(t, "child", e.ConversationID)
			assert.Equal(t, "parent", e.ParentConversationID)
			assert.Equal(t, at(0), e.Time)
		}
	})
	t.Run("steps built without Raw are hashed by their encoding", func(t *testing.T) {
		r := newTestReconciler()
		s := userStep("x", "")
		require.Nil(t, s.Raw)
		assert.NotEmpty(t, r.Apply(FromSnapshot([]wire.Step{s}, "", at(0))))
		assert.Empty(t, r.Apply(FromSnapshot([]wire.Step{s}, "", at(1))))
	})
}

// A child forgotten once mirrored to its end keeps nothing but its id's
// hash: it is not listed, is reported with its parent terminal, and no
// copy of its step (a new stream's first frame) brings it back; the count
// of children seen goes on. Past the fingerprints' bound, a child is kept.
func TestForgottenChildren(t *testing.T) {
	r := NewReconciler(Config{ConversationID: testConv, Models: testModels, Fingerprints: 3})
	steps := []wire.Step{userStep("x", ""), subagentStep(wire.StatusRunning, "a", "b")}
	r.Apply(snapshot(0, "", steps...))
	r.ForgetChild("a")
	assert.Equal(t, []Child{{ConversationID: "a", ParentStepIndex: 1}, {ConversationID: "b", ParentStepIndex: 1}}, r.Children(),
		"a child whose parent step runs is kept")

	steps[1] = subagentStep(wire.StatusDone, "a", "b")
	r.Apply(snapshot(1, "", steps...))
	r.ForgetChild("a")
	assert.Equal(t, []Child{{ConversationID: "b", ParentStepIndex: 1, ParentTerminal: true}}, r.Children())
	c, ok := r.Child("a")
	assert.True(t, ok)
	assert.Equal(t, Child{ConversationID: "a", ParentTerminal: true}, c)
	steps[1] = subagentStep(wire.StatusDone, "a", "b", "e") // agy fills a child in after DONE
	r.Apply(snapshot(2, "", steps...))
	added, n := r.ChildrenSince(0)
	assert.Equal(t, []Child{{ConversationID: "b", ParentStepIndex: 1, ParentTerminal: true}, {ConversationID: "e", ParentStepIndex: 1, ParentTerminal: true}}, added,
		"a copy of its step does not bring it back")
	assert.Equal(t, 3, n)

	r.ForgetChild("e")
	r.ForgetChild("b")
	assert.Empty(t, r.Children())
	fp := r.Footprint()
	assert.Equal(t, 0, fp.Children, "no record left, holes included")
	assert.Equal(t, 3, fp.Forgotten)
	steps = append(steps, subagentStep(wire.StatusDone, "c", "d"))
	r.Apply(snapshot(3, "", steps...))
	added, n = r.ChildrenSince(n)
	assert.Equal(t, []Child{{ConversationID: "c", ParentStepIndex: 2, ParentTerminal: true}, {ConversationID: "d", ParentStepIndex: 2, ParentTerminal: true}}, added)
	assert.Equal(t, 5, n)
	r.ForgetChild("d")
	assert.Equal(t, []Child{{ConversationID: "c", ParentStepIndex: 2, ParentTerminal: true}, {ConversationID: "d", ParentStepIndex: 2, ParentTerminal: true}}, r.Children(), "three forgotten at most here")
	_, ok = r.Child("z")
	assert.False(t, ok)
}

func TestChildren(t *testing.T) {
	r := newTestReconciler()
	r.Apply(snapshot(0, "", userStep("x", ""), subagentStep(wire.StatusRunning, "a", "", "a")))
	assert.Equal(t, []Child{{ConversationID: "a", ParentStepIndex: 1}}, r.Children())
	added, n := r.ChildrenSince(0)
	assert.Equal(t, r.Children(), added)
	assert.Equal(t, 1, n)
	r.Apply(snapshot(1, "", userStep("x", ""), subagentStep(wire.StatusDone, "a", "b")))
	assert.Equal(t, []Child{{"a", 1, true, ""}, {"b", 1, true, ""}}, r.Children())
	added, n = r.ChildrenSince(n)
	assert.Equal(t, []Child{{"b", 1, true, ""}}, added, "only the child that appeared since")
	assert.Equal(t, 2, n)
	added, n = r.ChildrenSince(n)
	assert.Empty(t, added)
	assert.Equal(t, 2, n)
	c, ok := r.Child("a")
	assert.True(t, ok)
	assert.True(t, c.ParentTerminal, "its parent step finished since it appeared")
	_, ok = r.Child("z")
	assert.False(t, ok)
	assert.Nil(t, ChildConversations(nil))
	u := userStep("x", "")
	assert.Nil(t, ChildConversations(&u))
}

// TestDeltasDoNotPinTheirStep: a delta is the new tail of the text, copied.
// A substring would keep the whole text of its copy alive for as long as
// the event is kept (a session's log keeps thousands): a 100-chunk answer
// would hold 100 copies of itself.
func TestDeltasDoNotPinTheirStep(t *testing.T) {
	r := newTestReconciler()
	text := ""
	for k := range 5 {
		text += strings.Repeat(string(rune('a'+k)), 100)
		thinking := strings.Repeat("t", 100*(k+1))
		obs := frame(k, wire.RunRunning, 0, plannerStep(wire.StatusGenerating, thinking, text))
		s := obs.Steps[0].PlannerResponse
		for _, e := range r.Apply(obs) {
			if e.Delta == "" {
				continue
			}
			for _, whole := range []string{s.ModifiedResponse, s.Thinking} {
				start := uintptr(unsafe.Pointer(unsafe.StringData(whole)))
				p := uintptr(unsafe.Pointer(unsafe.StringData(e.Delta)))
				assert.False(t, p >= start && p < start+uintptr(len(whole)), "%s %s shares the step's text", e.Type, e.ID)
			}
		}
	}
}

// TestAppendApplyAppends: AppendApply leaves what dst holds and appends what
// Apply would return; a frame for another conversation appends nothing.
func TestAppendApplyAppends(t *testing.T) {
	obs := []Observation{
		frame(0, wire.RunRunning, 0, plannerStep(wire.StatusGenerating, "Think", "Hel")),
		frame(1, wire.RunRunning, 0, plannerStep(wire.StatusDone, "Think", "Hello")),
	}
	a, b := newTestReconciler(), newTestReconciler()
	mark := messages.Event{Type: messages.EventStatus, ID: "mark"}
	buf := []messages.Event{mark}
	for _, o := range obs {
		want := a.Apply(o)
		require.NotEmpty(t, want)
		buf = b.AppendApply(buf[:1], o)
		require.Equal(t, mark, buf[0])
		require.Equal(t, want, buf[1:])
	}
	other := obs[0]
	other.ConversationID = "another"
	require.Equal(t, []messages.Event{mark}, b.AppendApply(buf[:1], other))
}
