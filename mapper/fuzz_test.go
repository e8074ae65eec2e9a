package mapper

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// FuzzApply maps arbitrary step JSON: it must never panic, every event needs
// a type and a unique id, and the same observation twice yields nothing the
// second time.
func FuzzApply(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, uint8(3))
		}
	}
	for _, s := range []wire.Step{
		userStep("hi", "MODEL_M20"),
		plannerStep(wire.StatusGenerating, "think", "text"),
		commandStep(wire.StatusWaiting, "pwd"),
		questionStep(wire.StatusWaiting, qLang, qExtra),
		subagentStep(wire.StatusDone, "a"),
	} {
		b, _ := json.Marshal(s)
		f.Add(b, uint8(1))
	}
	f.Add([]byte(`{"type":"CORTEX_STEP_TYPE_X","status":"CORTEX_STEP_STATUS_WAITING","requestedInteraction":{"askQuestion":{}}}`), uint8(0))
	for typ, c := range detailCases { // every tool body the step table details
		f.Add([]byte(`{"type":"`+string(typ)+`","status":"CORTEX_STEP_STATUS_RUNNING","metadata":{"toolAction":"a"},`+c.body+`}`), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, index uint8) {
		var s wire.Step
		if json.Unmarshal(data, &s) != nil {
			return
		}
		r := newTestReconciler()
		seen := map[string]bool{}
		check := func(evs []messages.Event) {
			for _, e := range evs {
				if e.Type == "" || e.ID == "" {
					t.Fatalf("event without type or id: %+v", e)
				}
				if seen[e.ID] {
					t.Fatalf("duplicate id %s", e.ID)
				}
				seen[e.ID] = true
			}
		}
		obs := Observation{Kind: Frame, RunStatus: wire.RunRunning, Indices: []int{int(index)}, Steps: []wire.Step{s}, Time: at(0)}
		check(r.Apply(obs))
		if evs := r.Apply(obs); len(evs) > 0 {
			t.Fatalf("the same frame twice yielded %v", types(evs))
		}
		check(r.Apply(FromSnapshot([]wire.Step{s, s}, wire.RunIdle, at(1))))

		if p, ok := PendingInteraction(&s, int(index)); ok {
			res := messages.Resolve{Action: messages.ActionAccept}
			for _, q := range p.Questions {
				a := messages.Answer{Question: q.Question}
				if len(q.Options) > 0 {
					a.SelectedOptionIDs = []string{q.Options[0].ID}
				}
				res.Answers = append(res.Answers, a)
			}
			if _, err := BuildInteraction(p, res, "traj", int(index)); err != nil && p.Kind == messages.KindPermission {
				t.Fatalf("accepting a permission failed: %v", err)
			}
		}
	})
}
