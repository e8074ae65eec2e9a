package mapper

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// Steps built here are shaped like testdata/agy-steps (proto3
// JSON, defaults omitted) and pass through roundTrip() so they carry Raw as a
// decoded agy step does.

const (
	testConv = "conv-1"
	testTraj = "traj-1"
)

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func at(k int) time.Time { return t0.Add(time.Duration(k) * time.Second) }

func meta() wire.StepMetadata {
	return wire.StepMetadata{Source: wire.SourceModel, SourceTrajectoryStepInfo: wire.StepInfo{TrajectoryID: testTraj, CascadeID: testConv}}
}

func userStep(text, model string) wire.Step {
	s := wire.Step{
		Type:   wire.StepUserInput,
		Status: wire.StatusDone,
		Metadata: wire.StepMetadata{
			Source:                   wire.SourceUserExplicit,
			SourceTrajectoryStepInfo: wire.StepInfo{TrajectoryID: testTraj, CascadeID: testConv},
		},
		UserInput: &wire.UserInput{Items: []wire.TextItem{{Text: text}}, UserResponse: text},
	}
	if model != "" {
		s.UserInput.UserConfig = &wire.UserConfig{PlannerConfig: &wire.PlannerConfig{PlanModel: model}}
	}
	return s
}

func systemStep(t wire.StepType) wire.Step {
	m := meta()
	m.Source = wire.SourceSystem
	return wire.Step{Type: t, Status: wire.StatusDone, Metadata: m}
}

// plannerStep is a PLANNER_RESPONSE: while live, text is modifiedResponse;
// at DONE it is response too, with usage.
func plannerStep(status wire.StepStatus, thinking, text string) wire.Step {
	s := wire.Step{
		Type:            wire.StepPlannerResponse,
		Status:          status,
		Metadata:        meta(),
		PlannerResponse: &wire.PlannerResponse{Thinking: thinking, ModifiedResponse: text},
	}
	if status == wire.StatusDone {
		s.PlannerResponse.Response = text
		s.Metadata.ModelUsage = &wire.ModelUsage{
			Model:                "MODEL_M20",
			InputTokens:          wire.Int64(1000 + len(text)),
			OutputTokens:         wire.Int64(len(thinking) + len(text)),
			ThinkingOutputTokens: wire.Int64(len(thinking)),
			ResponseOutputTokens: wire.Int64(len(text)),
			CacheReadTokens:      500,
		}
	}
	return s
}

func commandStep(status wire.StepStatus, line string) wire.Step {
	s := wire.Step{
		Type:       wire.StepRunCommand,
		Status:     status,
		Metadata:   meta(),
		RunCommand: &wire.RunCommand{CommandLine: line, ProposedCommandLine: line, Cwd: "/work"},
	}
	if status != wire.StatusPending {
		s.RequestedInteraction = &wire.Interaction{Permission: &wire.PermissionRequest{
			Resource: &wire.Resource{Action: "command", Target: line},
		}}
	}
	return s
}

// answered adds agy's echo of an answer to a prompt step.
func answered(s wire.Step, index int, resp wire.InteractionResponse) wire.Step {
	resp.TrajectoryID = testTraj
	resp.StepIndex = wire.Int(index)
	s.CompletedInteractions = []wire.CompletedInteraction{{Request: s.RequestedInteraction, Response: &resp}}
	return s
}

func withOutput(s wire.Step, out string, exit int) wire.Step {
	rc := *s.RunCommand
	rc.CombinedOutput = &wire.CombinedOutput{Full: out}
	rc.ExitCode = wire.Int(exit)
	s.RunCommand = &rc
	return s
}

type testQuestion struct {
	text    string
	multi   bool
	options []string
}

func questionStep(status wire.StepStatus, qs ...testQuestion) wire.Step {
	var ask wire.AskQuestion
	type argQ struct {
		Question      string   `json:"question"`
		IsMultiSelect bool     `json:"is_multi_select"`
		Options       []string `json:"options"`
	}
	var args struct {
		Questions []argQ `json:"questions"`
	}
	for _, q := range qs {
		rq := wire.Question{Question: q.text}
		for i, o := range q.options {
			rq.Options = append(rq.Options, wire.Option{ID: string(rune('1' + i)), Text: o})
		}
		ask.Questions = append(ask.Questions, rq)
		args.Questions = append(args.Questions, argQ{q.text, q.multi, q.options})
	}
	b, _ := json.Marshal(args)
	m := meta()
	m.ToolCall = &wire.ToolCall{ID: "call-ask", Name: "ask_question", ArgumentsJSON: string(b)}
	askCopy := ask
	return wire.Step{
		Type:                 wire.StepAskQuestion,
		Status:               status,
		Metadata:             m,
		AskQuestion:          &ask,
		RequestedInteraction: &wire.Interaction{AskQuestion: &askCopy},
	}
}

func genericStep(status wire.StepStatus, name, args, result string) wire.Step {
	m := meta()
	m.ToolCall = &wire.ToolCall{ID: "call-" + name, Name: name, ArgumentsJSON: args}
	s := wire.Step{Type: wire.StepGeneric, Status: status, Metadata: m, Generic: &wire.Generic{Args: json.RawMessage(args)}}
	if result != "" {
		s.Generic.Result = &wire.GenericResult{Result: result}
	}
	return s
}

func subagentStep(status wire.StepStatus, children ...string) wire.Step {
	s := wire.Step{Type: wire.StepInvokeSubagent, Status: status, Metadata: meta(), InvokeSubagent: &wire.InvokeSubagent{}}
	for _, c := range children {
		s.InvokeSubagent.Results = append(s.InvokeSubagent.Results, wire.SubagentResult{ConversationID: c})
	}
	return s
}

// roundTrip round-trips a step through JSON, as the client decodes agy's steps
// (Raw set). The members of Raw that the typed fields do not write (bodies
// set with withBody) are kept.
func roundTrip(s wire.Step) wire.Step {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	if len(s.Raw) > 0 {
		var typed, raw any
		if err := json.Unmarshal(b, &typed); err != nil {
			panic(err)
		}
		if err := json.Unmarshal(s.Raw, &raw); err != nil {
			panic(err)
		}
		if b, err = json.Marshal(keepMissing(typed, raw)); err != nil {
			panic(err)
		}
	}
	var out wire.Step
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// indexed stamps metadata stepIndex from positions (not on USER_INPUT, like
// the fixtures) and sends every step over the wire.
func indexed(steps []wire.Step) []wire.Step {
	out := make([]wire.Step, len(steps))
	for i, s := range steps {
		if s.Type != wire.StepUserInput {
			s.Metadata.SourceTrajectoryStepInfo.StepIndex = wire.Int(i)
		}
		out[i] = roundTrip(s)
	}
	return out
}

func snapshot(k int, run wire.RunStatus, steps ...wire.Step) Observation {
	return FromSnapshot(indexed(steps), run, at(k))
}

// frame is a stream frame carrying steps at the given indices.
func frame(k int, run wire.RunStatus, at0 int, steps ...wire.Step) Observation {
	f := &rpc.StreamFrame{Update: rpc.StateUpdate{ConversationID: testConv, TrajectoryID: testTraj, Status: run}}
	u := &f.Update.MainTrajectoryUpdate.StepsUpdate
	for i, s := range steps {
		s.Metadata.SourceTrajectoryStepInfo.StepIndex = wire.Int(at0 + i)
		u.Indices = append(u.Indices, wire.Int(at0+i))
		u.Steps = append(u.Steps, roundTrip(s))
	}
	u.TotalLength = wire.Int(at0 + len(steps))
	return FromFrame(f, at(k))
}

func newTestReconciler() *Reconciler {
	return NewReconciler(Config{ConversationID: testConv, Models: testModels})
}

var testModels = map[string]wire.ModelInfo{
	"MODEL_M20": {Model: "MODEL_M20", DisplayName: "Gemini 3 Pro (Medium)", Recommended: true},
	"MODEL_M26": {Model: "MODEL_M26", DisplayName: "Claude Opus 4.6 (Thinking)"},
}

// render writes an event as a golden line: the contract JSON without the
// fields the session fills in (session_id, seq) and the conversation id every
// line of a file shares.
func render(e messages.Event) string {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	s := string(b)
	s = strings.Replace(s, `"session_id":"",`, "", 1)
	s = strings.Replace(s, `"seq":0,`, "", 1)
	s = strings.Replace(s, `"conversation_id":"`+testConv+`",`, "", 1)
	return s
}

func types(evs []messages.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type)
		if e.Type == messages.EventStatus {
			out[i] += ":" + e.State
		}
	}
	return out
}

func findEvent(t *testing.T, evs []messages.Event, typ messages.EventType) messages.Event {
	t.Helper()
	for _, e := range evs {
		if e.Type == typ {
			return e
		}
	}
	require.Failf(t, "event not found", "no %s in %v", typ, types(evs))
	return messages.Event{}
}

// keepMissing adds to the object typed the members of raw it lacks, at any
// depth; where both have a member, typed's wins.
func keepMissing(typed, raw any) any {
	t, ok1 := typed.(map[string]any)
	r, ok2 := raw.(map[string]any)
	if !ok1 || !ok2 {
		return typed
	}
	for k, v := range r {
		if tv, ok := t[k]; ok {
			t[k] = keepMissing(tv, v)
		} else {
			t[k] = v
		}
	}
	return t
}

// withBody adds members the typed fields of wire.Step do not have (a step
// type's body, as `"codeAction":{...}`) to a step, as agy sends them.
func withBody(s wire.Step, members string) wire.Step {
	var extra map[string]json.RawMessage
	if err := json.Unmarshal([]byte("{"+members+"}"), &extra); err != nil {
		panic(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	for k, v := range extra {
		m[k] = v
	}
	if b, err = json.Marshal(m); err != nil {
		panic(err)
	}
	var out wire.Step
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// toolStep is a step of a tool type whose body wire.Step does not decode,
// with toolAction and toolSummary as agy writes them (and toolCall when call
// is not nil: a polled copy).
func toolStep(typ wire.StepType, status wire.StepStatus, summary string, call *wire.ToolCall, body string) wire.Step {
	m := meta()
	m.ToolSummary, m.ToolAction = summary, summary
	m.ToolCall = call
	return withBody(wire.Step{Type: typ, Status: status, Metadata: m}, body)
}
