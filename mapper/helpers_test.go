package mapper

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
)

// Steps built here are shaped like testdata/agy-steps (proto3
// JSON, defaults omitted) and pass through wire() so they carry Raw as a
// decoded agy step does.

const (
	testConv = "conv-1"
	testTraj = "traj-1"
)

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func at(k int) time.Time { return t0.Add(time.Duration(k) * time.Second) }

func meta() rpc.StepMetadata {
	return rpc.StepMetadata{Source: rpc.SourceModel, SourceTrajectoryStepInfo: rpc.StepInfo{TrajectoryID: testTraj, CascadeID: testConv}}
}

func userStep(text, model string) rpc.Step {
	s := rpc.Step{
		Type:   rpc.StepUserInput,
		Status: rpc.StatusDone,
		Metadata: rpc.StepMetadata{
			Source:                   rpc.SourceUserExplicit,
			SourceTrajectoryStepInfo: rpc.StepInfo{TrajectoryID: testTraj, CascadeID: testConv},
		},
		UserInput: &rpc.UserInput{Items: []rpc.TextItem{{Text: text}}, UserResponse: text},
	}
	if model != "" {
		s.UserInput.UserConfig = &rpc.UserConfig{PlannerConfig: &rpc.PlannerConfig{PlanModel: model}}
	}
	return s
}

func systemStep(t rpc.StepType) rpc.Step {
	m := meta()
	m.Source = rpc.SourceSystem
	return rpc.Step{Type: t, Status: rpc.StatusDone, Metadata: m}
}

// plannerStep is a PLANNER_RESPONSE: while live, text is modifiedResponse;
// at DONE it is response too, with usage.
func plannerStep(status rpc.StepStatus, thinking, text string) rpc.Step {
	s := rpc.Step{
		Type:            rpc.StepPlannerResponse,
		Status:          status,
		Metadata:        meta(),
		PlannerResponse: &rpc.PlannerResponse{Thinking: thinking, ModifiedResponse: text},
	}
	if status == rpc.StatusDone {
		s.PlannerResponse.Response = text
		s.Metadata.ModelUsage = &rpc.ModelUsage{
			Model:                "MODEL_M20",
			InputTokens:          rpc.Int64(1000 + len(text)),
			OutputTokens:         rpc.Int64(len(thinking) + len(text)),
			ThinkingOutputTokens: rpc.Int64(len(thinking)),
			ResponseOutputTokens: rpc.Int64(len(text)),
			CacheReadTokens:      500,
		}
	}
	return s
}

func commandStep(status rpc.StepStatus, line string) rpc.Step {
	s := rpc.Step{
		Type:       rpc.StepRunCommand,
		Status:     status,
		Metadata:   meta(),
		RunCommand: &rpc.RunCommand{CommandLine: line, ProposedCommandLine: line, Cwd: "/work"},
	}
	if status != rpc.StatusPending {
		s.RequestedInteraction = &rpc.Interaction{Permission: &rpc.PermissionRequest{
			Resource: &rpc.Resource{Action: "command", Target: line},
		}}
	}
	return s
}

// answered adds agy's echo of an answer to a prompt step.
func answered(s rpc.Step, index int, resp rpc.InteractionResponse) rpc.Step {
	resp.TrajectoryID = testTraj
	resp.StepIndex = rpc.Int(index)
	s.CompletedInteractions = []rpc.CompletedInteraction{{Request: s.RequestedInteraction, Response: &resp}}
	return s
}

func withOutput(s rpc.Step, out string, exit int) rpc.Step {
	rc := *s.RunCommand
	rc.CombinedOutput = &rpc.CombinedOutput{Full: out}
	rc.ExitCode = rpc.Int(exit)
	s.RunCommand = &rc
	return s
}

type testQuestion struct {
	text    string
	multi   bool
	options []string
}

func questionStep(status rpc.StepStatus, qs ...testQuestion) rpc.Step {
	var ask rpc.AskQuestion
	type argQ struct {
		Question      string   `json:"question"`
		IsMultiSelect bool     `json:"is_multi_select"`
		Options       []string `json:"options"`
	}
	var args struct {
		Questions []argQ `json:"questions"`
	}
	for _, q := range qs {
		rq := rpc.Question{Question: q.text}
		for i, o := range q.options {
			rq.Options = append(rq.Options, rpc.Option{ID: string(rune('1' + i)), Text: o})
		}
		ask.Questions = append(ask.Questions, rq)
		args.Questions = append(args.Questions, argQ{q.text, q.multi, q.options})
	}
	b, _ := json.Marshal(args)
	m := meta()
	m.ToolCall = &rpc.ToolCall{ID: "call-ask", Name: "ask_question", ArgumentsJSON: string(b)}
	askCopy := ask
	return rpc.Step{
		Type:                 rpc.StepAskQuestion,
		Status:               status,
		Metadata:             m,
		AskQuestion:          &ask,
		RequestedInteraction: &rpc.Interaction{AskQuestion: &askCopy},
	}
}

func genericStep(status rpc.StepStatus, name, args, result string) rpc.Step {
	m := meta()
	m.ToolCall = &rpc.ToolCall{ID: "call-" + name, Name: name, ArgumentsJSON: args}
	s := rpc.Step{Type: rpc.StepGeneric, Status: status, Metadata: m, Generic: &rpc.Generic{Args: json.RawMessage(args)}}
	if result != "" {
		s.Generic.Result = &rpc.GenericResult{Result: result}
	}
	return s
}

func subagentStep(status rpc.StepStatus, children ...string) rpc.Step {
	s := rpc.Step{Type: rpc.StepInvokeSubagent, Status: status, Metadata: meta(), InvokeSubagent: &rpc.InvokeSubagent{}}
	for _, c := range children {
		s.InvokeSubagent.Results = append(s.InvokeSubagent.Results, rpc.SubagentResult{ConversationID: c})
	}
	return s
}

// wire round-trips a step through JSON, as the client decodes agy's steps
// (Raw set). The members of Raw that the typed fields do not write (bodies
// set with withBody) are kept.
func wire(s rpc.Step) rpc.Step {
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
	var out rpc.Step
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// indexed stamps metadata stepIndex from positions (not on USER_INPUT, like
// the fixtures) and sends every step over the wire.
func indexed(steps []rpc.Step) []rpc.Step {
	out := make([]rpc.Step, len(steps))
	for i, s := range steps {
		if s.Type != rpc.StepUserInput {
			s.Metadata.SourceTrajectoryStepInfo.StepIndex = rpc.Int(i)
		}
		out[i] = wire(s)
	}
	return out
}

func snapshot(k int, run rpc.RunStatus, steps ...rpc.Step) Observation {
	return FromSnapshot(indexed(steps), run, at(k))
}

// frame is a stream frame carrying steps at the given indices.
func frame(k int, run rpc.RunStatus, at0 int, steps ...rpc.Step) Observation {
	f := &rpc.StreamFrame{Update: rpc.StateUpdate{ConversationID: testConv, TrajectoryID: testTraj, Status: run}}
	u := &f.Update.MainTrajectoryUpdate.StepsUpdate
	for i, s := range steps {
		s.Metadata.SourceTrajectoryStepInfo.StepIndex = rpc.Int(at0 + i)
		u.Indices = append(u.Indices, rpc.Int(at0+i))
		u.Steps = append(u.Steps, wire(s))
	}
	u.TotalLength = rpc.Int(at0 + len(steps))
	return FromFrame(f, at(k))
}

func newTestReconciler() *Reconciler {
	return NewReconciler(Config{ConversationID: testConv, Models: testModels})
}

var testModels = map[string]rpc.ModelInfo{
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

// withBody adds members the typed fields of rpc.Step do not have (a step
// type's body, as `"codeAction":{...}`) to a step, as agy sends them.
func withBody(s rpc.Step, members string) rpc.Step {
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
	var out rpc.Step
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// toolStep is a step of a tool type whose body rpc.Step does not decode,
// with toolAction and toolSummary as agy writes them (and toolCall when call
// is not nil: a polled copy).
func toolStep(typ rpc.StepType, status rpc.StepStatus, summary string, call *rpc.ToolCall, body string) rpc.Step {
	m := meta()
	m.ToolSummary, m.ToolAction = summary, summary
	m.ToolCall = call
	return withBody(rpc.Step{Type: typ, Status: status, Metadata: m}, body)
}
