package mapper

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.jsonl from the scenarios")

// A scenario is a conversation as a sequence of moments: the whole
// trajectory at that time, the cascade's run status, and what the harness did
// just before (sent a turn, delivered an answer).
type scenario struct {
	name    string
	moments []moment
	check   func(t *testing.T, r *Reconciler, evs []messages.Event)
}

type moment struct {
	steps   []wire.Step
	run     wire.RunStatus
	harness func(r *Reconciler, k int) []messages.Event
	records []captureLine // the harness action as a capture records it
}

// captureLine is a record of a capture (cmd/agyharness/record.go) that is
// not an observation: a turn sent, an answer delivered.
type captureLine struct {
	Kind    string `json:"kind"`
	Payload any    `json:"payload"`
}

// script builds a scenario's moments by editing a trajectory.
type script struct {
	steps   []wire.Step
	moments []moment
	pending func(r *Reconciler, k int) []messages.Event
	records []captureLine
}

func (s *script) push(st wire.Step) int   { s.steps = append(s.steps, st); return len(s.steps) - 1 }
func (s *script) set(i int, st wire.Step) { s.steps[i] = st }

// harness queues a harness action before the next moment.
func (s *script) harness(f func(r *Reconciler, k int) []messages.Event) { s.pending = f }

func (s *script) expectTurn(text string) {
	s.harness(func(r *Reconciler, _ int) []messages.Event { r.ExpectTurn(text); return nil })
	s.records = []captureLine{{Kind: "turn", Payload: map[string]string{"text": text}}}
}

func (s *script) resolve(eid, action string, index int) {
	s.records = []captureLine{{Kind: "resolved", Payload: map[string]any{"elicitation_id": eid, "action": action, "step_index": index}}}
	s.harness(func(r *Reconciler, k int) []messages.Event {
		e, ok := r.MarkResolved(eid, action, index, at(k))
		if !ok {
			panic("MarkResolved: unknown prompt " + eid)
		}
		return []messages.Event{e}
	})
}

// now records the trajectory as it stands as the next moment.
func (s *script) now(run wire.RunStatus) {
	s.moments = append(s.moments, moment{steps: indexed(s.steps), run: run, harness: s.pending, records: s.records})
	s.pending, s.records = nil, nil
}

func scenarios() []scenario {
	return []scenario{
		textTurn(), commandApproval(), questionAnswered(), promptRetried(),
		promptExpired(), interrupt(), modelSwitch(), subagent(),
		codeEdit(), newFile(), grepSearch(), findFiles(), webRead(),
		commandStreamed(), mcpTool(),
	}
}

func textTurn() scenario {
	var s script
	s.expectTurn("Say hello in one short sentence.")
	s.push(userStep("Say hello in one short sentence.", "MODEL_M20"))
	s.push(systemStep(wire.StepConversationHistory))
	s.now(wire.RunRunning)
	p := s.push(plannerStep(wire.StatusGenerating, "The user wants", ""))
	s.now(wire.RunRunning)
	s.set(p, plannerStep(wire.StatusGenerating, "The user wants a greeting.", "Hello!"))
	s.now(wire.RunRunning)
	s.set(p, plannerStep(wire.StatusGenerating, "The user wants a greeting.", "Hello! I am Antigravity"))
	s.now(wire.RunRunning)
	s.set(p, plannerStep(wire.StatusDone, "The user wants a greeting.", "Hello! I am Antigravity, ready to help."))
	s.push(systemStep(wire.StepCheckpoint))
	s.now(wire.RunRunning)
	s.now(wire.RunIdle)
	return scenario{name: "text_turn", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		assert.Equal(t, messages.OriginHarness, findEvent(t, evs, messages.EventUserMessage).Origin)
		assert.Equal(t, "Hello! I am Antigravity, ready to help.", findEvent(t, evs, messages.EventMessage).Text)
		assert.Equal(t, "MODEL_M20", r.LastModel())
	}}
}

func commandApproval() scenario {
	var s script
	s.push(userStep("Where am I?", "MODEL_M20"))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "Run pwd.", ""))
	c := s.push(commandStep(wire.StatusPending, "pwd"))
	s.now(wire.RunRunning)
	s.set(c, commandStep(wire.StatusWaiting, "pwd"))
	s.now(wire.RunRunning)
	s.resolve(testConv+"/prompt/2", messages.ActionAccept, 2)
	s.set(c, answered(commandStep(wire.StatusRunning, "pwd"), 2, wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}}))
	s.now(wire.RunRunning)
	s.set(c, withOutput(answered(commandStep(wire.StatusDone, "pwd"), 2, wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}}), "/work\n", 0))
	s.push(plannerStep(wire.StatusGenerating, "", "You are in"))
	s.now(wire.RunRunning)
	s.set(3, plannerStep(wire.StatusDone, "", "You are in /work."))
	s.now(wire.RunIdle)
	return scenario{name: "command_approval", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		req := findEvent(t, evs, messages.EventElicitationRequest)
		assert.Equal(t, &messages.CommandLine{Line: "pwd", Cwd: "/work"}, req.Command)
		res := findEvent(t, evs, messages.EventElicitationResolved)
		assert.Equal(t, messages.ByHarness, res.By)
		assert.Empty(t, r.OpenPrompts())
	}}
}

var (
	qLang  = testQuestion{text: "Which language?", options: []string{"Go", "Rust", "Python"}}
	qExtra = testQuestion{text: "Which extras?", multi: true, options: []string{"Tests", "Docs"}}
)

func questionAnswered() scenario {
	var s script
	s.expectTurn("Start a project")
	s.push(userStep("Start a project", "MODEL_M20"))
	s.now(wire.RunRunning)
	q := s.push(questionStep(wire.StatusWaiting, qLang, qExtra))
	s.now(wire.RunRunning)
	// Answered in agy's own terminal.
	s.set(q, answered(questionStep(wire.StatusDone, qLang, qExtra), q, wire.InteractionResponse{AskQuestion: &wire.QuestionResponses{Responses: []wire.QuestionResponse{
		{Question: qLang.text, SelectedOptionIDs: []string{"1"}},
		{Question: qExtra.text, SelectedOptionIDs: []string{"1", "2"}},
	}}}))
	s.now(wire.RunRunning)
	s.push(plannerStep(wire.StatusDone, "", "A Go project with tests and docs, then."))
	s.now(wire.RunIdle)
	return scenario{name: "question_answered", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		req := findEvent(t, evs, messages.EventElicitationRequest)
		require.Len(t, req.Questions, 2)
		assert.False(t, req.Questions[0].MultiSelect)
		assert.True(t, req.Questions[1].MultiSelect)
		res := findEvent(t, evs, messages.EventElicitationResolved)
		assert.Equal(t, messages.ByTerminal, res.By)
		assert.Equal(t, messages.ActionAccept, res.Action)
		out := findEvent(t, evs, messages.EventFunctionCallOutput)
		assert.Equal(t, "Which language?: Go\nWhich extras?: Tests; Docs", out.Output)
	}}
}

func promptRetried() scenario {
	var s script
	s.push(userStep("Delete the build dir", "MODEL_M20"))
	s.push(plannerStep(wire.StatusDone, "", ""))
	c := s.push(commandStep(wire.StatusWaiting, "rm -rf build"))
	s.now(wire.RunRunning)
	// Nobody answered in time: agy turns the step ERROR and asks again.
	s.set(c, commandStep(wire.StatusError, "rm -rf build"))
	s.now(wire.RunRunning)
	retry := s.push(commandStep(wire.StatusWaiting, "rm -rf build"))
	s.now(wire.RunRunning)
	s.resolve(testConv+"/prompt/2", messages.ActionDecline, retry)
	s.set(retry, answered(commandStep(wire.StatusDone, "rm -rf build"), retry, wire.InteractionResponse{Permission: &wire.PermissionAnswer{}}))
	s.push(plannerStep(wire.StatusDone, "", "Understood, I left build/ alone."))
	s.now(wire.RunIdle)
	return scenario{name: "prompt_retried", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		n := 0
		for _, e := range evs {
			if e.Type == messages.EventElicitationRequest {
				n++
			}
		}
		assert.Equal(t, 1, n, "one request per logical prompt")
		res := findEvent(t, evs, messages.EventElicitationResolved)
		assert.Equal(t, retry, *res.DeliveredStepIndex)
	}}
}

func promptExpired() scenario {
	var s script
	s.push(userStep("Show my hosts file", "MODEL_M20"))
	g := s.push(genericStep(wire.StatusWaiting, "read_file", `{"path":"/etc/hosts"}`, ""))
	st := s.steps[g]
	st.RequestedInteraction = &wire.Interaction{Permission: &wire.PermissionRequest{Resource: &wire.Resource{Action: "read", Target: "/etc/hosts"}}}
	s.set(g, st)
	s.now(wire.RunRunning)
	st.Status = wire.StatusError
	s.set(g, st)
	s.push(plannerStep(wire.StatusDone, "", "I could not read /etc/hosts without permission."))
	s.now(wire.RunRunning)
	s.now(wire.RunIdle)
	return scenario{name: "prompt_expired", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		req := findEvent(t, evs, messages.EventElicitationRequest)
		assert.Equal(t, &messages.Resource{Action: "read", Target: "/etc/hosts"}, req.Resource)
		assert.Nil(t, req.Command)
		res := findEvent(t, evs, messages.EventElicitationResolved)
		assert.Equal(t, messages.ByExpired, res.By)
	}}
}

func interrupt() scenario {
	var s script
	s.expectTurn("Write a long essay")
	s.push(userStep("Write a long essay", "MODEL_M20"))
	p := s.push(plannerStep(wire.StatusGenerating, "", "Once upon"))
	s.now(wire.RunRunning)
	s.set(p, plannerStep(wire.StatusGenerating, "", "Once upon a time"))
	s.now(wire.RunRunning)
	s.set(p, plannerStep(wire.StatusCanceled, "", "Once upon a time"))
	s.now(wire.RunCanceling)
	s.now(wire.RunIdle)
	return scenario{name: "interrupt", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		assert.Equal(t, "Once upon a time", findEvent(t, evs, messages.EventMessage).Text)
		assert.Equal(t, messages.StateIdle, evs[len(evs)-1].State)
	}}
}

func modelSwitch() scenario {
	var s script
	s.push(userStep("First question", "MODEL_M20"))
	s.push(plannerStep(wire.StatusDone, "", "First answer."))
	s.now(wire.RunIdle)
	s.expectTurn("Second question")
	s.push(userStep("Second question", "MODEL_M26"))
	s.now(wire.RunRunning)
	second := plannerStep(wire.StatusDone, "", "Second answer.")
	second.Metadata.ModelUsage.Model = "MODEL_M26"
	s.push(second)
	s.now(wire.RunIdle)
	return scenario{name: "model_switch", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		mc := findEvent(t, evs, messages.EventModelChanged)
		assert.Equal(t, "MODEL_M20", mc.From)
		assert.Equal(t, "MODEL_M26", mc.To)
		assert.Equal(t, "Claude Opus 4.6 (Thinking)", mc.DisplayName)
		assert.Equal(t, "MODEL_M26", r.LastModel())
	}}
}

func subagent() scenario {
	var s script
	s.push(userStep("Review the repo with two reviewers", "MODEL_M20"))
	s.push(plannerStep(wire.StatusDone, "Spawn reviewers.", ""))
	a := s.push(subagentStep(wire.StatusRunning, "child-a"))
	s.now(wire.RunRunning)
	s.set(a, subagentStep(wire.StatusDone, "child-a", "child-b"))
	s.push(plannerStep(wire.StatusDone, "", "Both reviewers are done."))
	s.now(wire.RunIdle)
	return scenario{name: "subagent", moments: s.moments, check: func(t *testing.T, r *Reconciler, evs []messages.Event) {
		assert.Equal(t, []Child{
			{ConversationID: "child-a", ParentStepIndex: a, ParentTerminal: true},
			{ConversationID: "child-b", ParentStepIndex: a, ParentTerminal: true},
		}, r.Children())
	}}
}

// feedSnapshots reads every moment as a poll.
func feedSnapshots(sc scenario) (*Reconciler, []messages.Event) {
	r := newTestReconciler()
	var evs []messages.Event
	for k, m := range sc.moments {
		if m.harness != nil {
			evs = append(evs, m.harness(r, k)...)
		}
		evs = append(evs, r.Apply(FromSnapshot(m.steps, m.run, at(k)))...)
	}
	return r, evs
}

// framesOf turns moments into stream frames carrying only the steps that
// changed, each with the run status; after an IDLE frame the poller reads the
// steps once more (a snapshot without status), as the session does.
func framesOf(sc scenario) [][]Observation {
	var prev []wire.Step
	out := make([][]Observation, len(sc.moments))
	for k, m := range sc.moments {
		f := &rpc.StreamFrame{Update: rpc.StateUpdate{ConversationID: testConv, TrajectoryID: testTraj, Status: m.run}}
		u := &f.Update.MainTrajectoryUpdate.StepsUpdate
		for i, st := range m.steps {
			if i < len(prev) && bytes.Equal(prev[i].Raw, st.Raw) {
				continue
			}
			u.Indices = append(u.Indices, wire.Int(i))
			u.Steps = append(u.Steps, st)
		}
		u.TotalLength = wire.Int(len(m.steps))
		obs := []Observation{FromFrame(f, at(k))}
		if m.run == wire.RunIdle {
			// The session's read after an IDLE frame, with the status.
			obs = append(obs, FromSnapshot(m.steps, wire.RunIdle, at(k)))
		}
		out[k] = obs
		prev = m.steps
	}
	return out
}

func feedFrames(sc scenario) (*Reconciler, []messages.Event) {
	r := newTestReconciler()
	var evs []messages.Event
	for k, obs := range framesOf(sc) {
		if h := sc.moments[k].harness; h != nil {
			evs = append(evs, h(r, k)...)
		}
		for _, o := range obs {
			evs = append(evs, r.Apply(o)...)
		}
	}
	return r, evs
}

// feedMixed feeds the frames with, around them, what a session really sees:
// duplicates, replays of older frames (a reader restart), stale polls read
// before the frame that arrived first, and the poller catching up.
func feedMixed(sc scenario, seed int64) (*Reconciler, []messages.Event) {
	rng := rand.New(rand.NewSource(seed))
	r := newTestReconciler()
	frames := framesOf(sc)
	var evs []messages.Event
	for k, obs := range frames {
		if h := sc.moments[k].harness; h != nil {
			evs = append(evs, h(r, k)...)
		}
		for _, o := range obs {
			evs = append(evs, r.Apply(o)...)
		}
		for n := rng.Intn(4); n > 0; n-- {
			var o Observation
			switch rng.Intn(4) {
			case 0: // the same frame again
				o = frames[k][0]
			case 1: // an older frame's steps replayed (a run status is
				// never replayed: it has no version to tell it stale)
				o = frames[rng.Intn(k+1)][0]
				o.RunStatus = ""
			case 2: // a stale poll, read before the current moment
				old := sc.moments[rng.Intn(k+1)]
				o = FromSnapshot(old.steps, "", at(k))
			default: // the poller catching up
				o = FromSnapshot(sc.moments[k].steps, sc.moments[k].run, at(k))
			}
			evs = append(evs, r.Apply(o)...)
		}
	}
	// A reader restart replays everything once more.
	last := sc.moments[len(sc.moments)-1]
	evs = append(evs, r.Apply(FromSnapshot(last.steps, last.run, at(len(sc.moments))))...)
	return r, evs
}

func renderAll(evs []messages.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(render(e))
		b.WriteString("\n")
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			r, evs := feedSnapshots(sc)
			got := renderAll(evs)
			sc.check(t, r, evs)
			assertUniqueIDs(t, evs)

			rf, fevs := feedFrames(sc)
			assert.Equal(t, got, renderAll(fevs), "frames must yield the same events as snapshots")
			sc.check(t, rf, fevs)
			for seed := int64(1); seed <= 20; seed++ {
				rm, mevs := feedMixed(sc, seed)
				require.Equal(t, got, renderAll(mevs), "mixed feed (seed %d) must yield the same events", seed)
				sc.check(t, rm, mevs)
			}

			path := filepath.Join("..", "testdata", "golden", sc.name+".jsonl")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./mapper -update to create the golden file")
			assert.Equal(t, string(want), got)
			for i, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
				assert.True(t, json.Valid([]byte(line)), "golden line %d is not JSON", i+1)
			}

			// The same moments as a capture, which cmd/agyharness's
			// TestReplayOfEveryGoldenCapture replays against this golden file.
			capPath := filepath.Join("..", "testdata", "captures", sc.name+".capture.jsonl")
			capture := captureOf(t, sc)
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(capPath), 0o755))
				require.NoError(t, os.WriteFile(capPath, capture, 0o644))
			}
			wantCap, err := os.ReadFile(capPath)
			require.NoError(t, err, "run go test ./mapper -update to create the capture")
			assert.Equal(t, string(wantCap), string(capture), "the capture is out of date: go test ./mapper -update")
		})
	}
}

func assertUniqueIDs(t *testing.T, evs []messages.Event) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range evs {
		assert.False(t, seen[e.ID], "duplicate event id %s", e.ID)
		seen[e.ID] = true
	}
}

// captureOf writes a scenario as a capture of what a session reads: its
// stream frames (steps as agy sends them, raw), the read after each IDLE,
// and the harness's turns and answers.
func captureOf(t *testing.T, sc scenario) []byte {
	t.Helper()
	var b bytes.Buffer
	line := func(rec map[string]any) {
		enc, err := json.Marshal(rec)
		require.NoError(t, err)
		b.Write(enc)
		b.WriteByte('\n')
	}
	line(map[string]any{"kind": "capture", "version": 1, "time": at(0)})
	line(map[string]any{"kind": "models", "time": at(0), "payload": testModels})
	line(map[string]any{"kind": "bind", "conversation_id": testConv, "time": at(0)})
	for k, obs := range framesOf(sc) {
		for _, r := range sc.moments[k].records {
			line(map[string]any{"kind": r.Kind, "time": at(k), "payload": r.Payload})
		}
		for _, o := range obs {
			raws := make([]json.RawMessage, len(o.Steps))
			for i := range o.Steps {
				raws[i] = o.Steps[i].Raw
			}
			if o.Kind == Frame {
				line(map[string]any{"kind": "frame", "conversation_id": testConv, "time": at(k), "payload": map[string]any{
					"update": map[string]any{"conversationId": testConv, "trajectoryId": testTraj, "status": o.RunStatus,
						"mainTrajectoryUpdate": map[string]any{"stepsUpdate": map[string]any{
							"indices": o.Indices, "steps": raws, "totalLength": len(sc.moments[k].steps)}}}}})
				continue
			}
			line(map[string]any{"kind": "snapshot", "conversation_id": testConv, "time": at(k), "payload": map[string]any{
				"steps": raws, "runStatus": o.RunStatus}})
		}
	}
	return b.Bytes()
}
