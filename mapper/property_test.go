package mapper

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// genTrajectory draws a trajectory as the moments agy goes through: steps
// appear one after another, each through its versions (a planner's text
// growing in chunks, sometimes rewritten; a command pending, running, done).
// It returns the moments and, per planner step index, every text it had.
func genTrajectory(t *rapid.T) ([][]wire.Step, map[int][]string) {
	var cur []wire.Step
	var moments [][]wire.Step
	texts := map[int][]string{}
	snap := func() { moments = append(moments, indexed(cur)) }
	n := rapid.IntRange(1, 6).Draw(t, "steps")
	for i := 0; i < n; i++ {
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			cur = append(cur, userStep("turn "+strconv.Itoa(i), "MODEL_M20"))
			snap()
		case 1:
			idx := len(cur)
			cur = append(cur, wire.Step{})
			thinking, text := "", ""
			versions := rapid.IntRange(0, 5).Draw(t, "versions")
			for v := 0; v < versions; v++ {
				thinking += rapid.StringMatching(`[a-z ]{0,4}`).Draw(t, "think")
				if rapid.IntRange(0, 9).Draw(t, "rewrite") == 0 {
					text = rapid.StringMatching(`[A-Z][a-z ]{0,12}`).Draw(t, "rewritten")
				} else {
					text += rapid.StringMatching(`[a-zé ]{1,5}`).Draw(t, "chunk")
				}
				texts[idx] = append(texts[idx], text)
				cur[idx] = plannerStep(wire.StatusGenerating, thinking, text)
				snap()
			}
			final := text
			if rapid.IntRange(0, 4).Draw(t, "final rewrite") == 0 {
				final = rapid.StringMatching(`[a-z]{0,8}`).Draw(t, "final")
			}
			texts[idx] = append(texts[idx], final)
			cur[idx] = plannerStep(wire.StatusDone, thinking, final)
			snap()
		default:
			idx := len(cur)
			cur = append(cur, commandStep(wire.StatusPending, "cmd"+strconv.Itoa(i)))
			snap()
			if rapid.Bool().Draw(t, "runs") {
				running := commandStep(wire.StatusRunning, "cmd"+strconv.Itoa(i))
				running.RequestedInteraction = nil
				cur[idx] = running
				snap()
			}
			done := withOutput(commandStep(wire.StatusDone, "cmd"+strconv.Itoa(i)), "out", 0)
			done.RequestedInteraction = nil
			cur[idx] = done
			snap()
		}
	}
	return moments, texts
}

// genFeed draws what a session might see of those moments: each as a frame
// (changed steps only) or a poll, or missed; duplicates, replays of older
// frames and stale polls in between; and a last poll once agy is idle.
func genFeed(t *rapid.T, moments [][]wire.Step) []Observation {
	frameOf := func(k int) Observation {
		var prev []wire.Step
		if k > 0 {
			prev = moments[k-1]
		}
		obs := Observation{Kind: Frame, RunStatus: wire.RunRunning, Time: at(k)}
		for i, s := range moments[k] {
			if i < len(prev) && string(prev[i].Raw) == string(s.Raw) {
				continue
			}
			obs.Indices = append(obs.Indices, i)
			obs.Steps = append(obs.Steps, s)
		}
		return obs
	}
	var feed []Observation
	for k := range moments {
		switch rapid.IntRange(0, 3).Draw(t, "delivery") {
		case 0:
			feed = append(feed, frameOf(k))
		case 1:
			feed = append(feed, FromSnapshot(moments[k], wire.RunRunning, at(k)))
		case 2: // missed
		default:
			feed = append(feed, frameOf(k), frameOf(k))
		}
		for extra := rapid.IntRange(0, 2).Draw(t, "extras"); extra > 0; extra-- {
			j := rapid.IntRange(0, k).Draw(t, "stale")
			if rapid.Bool().Draw(t, "stale kind") {
				o := frameOf(j)
				o.RunStatus = ""
				feed = append(feed, o)
			} else {
				feed = append(feed, FromSnapshot(moments[j], "", at(k)))
			}
		}
	}
	last := moments[len(moments)-1]
	feed = append(feed, FromSnapshot(last, wire.RunIdle, at(len(moments))))
	return feed
}

// TestPropertyExactlyOnce: whatever the interleaving, duplication and stale
// reordering of observations, each committed item is emitted exactly once,
// the text deltas (from the last snapshot) always rebuild a text the step
// really had and end at the committed text, and no state repeats.
func TestPropertyExactlyOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		moments, texts := genTrajectory(t)
		feed := genFeed(t, moments)
		r := newTestReconciler()
		var evs []messages.Event
		for _, o := range feed {
			evs = append(evs, r.Apply(o)...)
		}
		final := moments[len(moments)-1]

		count := map[string]int{}
		for _, e := range evs {
			count[e.ID]++
			if count[e.ID] > 1 {
				t.Fatalf("event id %s emitted twice", e.ID)
			}
		}
		for i, s := range final {
			base := testConv + "/" + strconv.Itoa(i) + "/"
			switch s.Type {
			case wire.StepUserInput:
				if count[base+"user"] != 1 {
					t.Fatalf("user turn %d: %d user_message", i, count[base+"user"])
				}
			case wire.StepRunCommand:
				if count[base+"call"] != 1 || count[base+"output"] != 1 {
					t.Fatalf("command %d: %d calls, %d outputs", i, count[base+"call"], count[base+"output"])
				}
			case wire.StepPlannerResponse:
				// A step committed without text has no message, unless text
				// was streamed: then the text shown is committed (checked
				// against the deltas below).
				ok := count[base+"message"] == 1 || (s.PlannerResponse.Response == "" && count[base+"message"] == 0)
				if !ok || count[base+"usage"] != 1 {
					t.Fatalf("planner %d: %d messages, %d usage", i, count[base+"message"], count[base+"usage"])
				}
			}
		}

		// Rebuild each planner step's text from its deltas and snapshots.
		built := map[string]string{}
		started := map[string]bool{}
		committed := map[string]bool{}
		lastState := ""
		for _, e := range evs {
			switch e.Type {
			case messages.EventOutputTextDelta:
				item := e.ItemID
				if committed[item] {
					t.Fatalf("delta %s after its message", e.ID)
				}
				started[item] = true
				if e.Snapshot != "" {
					built[item] = e.Snapshot
				} else {
					off := e.ID[strings.LastIndex(e.ID, "@")+1:]
					if off != strconv.Itoa(len(built[item])) {
						t.Fatalf("delta %s at the wrong offset (have %d bytes)", e.ID, len(built[item]))
					}
					built[item] += e.Delta
				}
				idx, _ := strconv.Atoi(strings.Split(item, "/")[1])
				if !contains(texts[idx], built[item]) {
					t.Fatalf("step %d: deltas rebuild %q, a text it never had (%q)", idx, built[item], texts[idx])
				}
			case messages.EventMessage:
				committed[e.ItemID] = true
				idx, _ := strconv.Atoi(strings.Split(e.ItemID, "/")[1])
				if !contains(texts[idx], e.Text) {
					t.Fatalf("step %d: message %q is a text it never had", idx, e.Text)
				}
				if started[e.ItemID] && built[e.ItemID] != e.Text {
					t.Fatalf("message %q but deltas rebuild %q", e.Text, built[e.ItemID])
				}
			case messages.EventStatus:
				if e.State == lastState {
					t.Fatalf("status %s twice in a row", e.State)
				}
				lastState = e.State
			}
		}
		if lastState != messages.StateIdle {
			t.Fatalf("the last status is %q, want idle", lastState)
		}
		// And a replay of the whole feed's steps changes nothing (a run
		// status has no version, so it is not replayed).
		for _, o := range feed {
			o.RunStatus = ""
			if got := r.Apply(o); len(got) > 0 {
				t.Fatalf("replay yielded %v", types(got))
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPropertyReusedStepsAsDecoded: a reconciler fed snapshots whose
// unchanged steps carry the previous snapshot's very Raw slices (as
// rpc.Client.GetCascadeTrajectoryStepsReusing hands them to the poller, and
// the reconciler then skips them without hashing) emits exactly what one fed
// fresh copies of every step does (each hashed), whatever the feed.
func TestPropertyReusedStepsAsDecoded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		moments, _ := genTrajectory(t)
		feed := genFeed(t, moments)
		var prev []wire.Step // the poller's last read
		reused := make([]Observation, len(feed))
		decoded := make([]Observation, len(feed))
		for k, o := range feed {
			decoded[k], reused[k] = o, o
			decoded[k].Steps = copyRaw(o.Steps)
			if o.Kind != Snapshot {
				reused[k].Steps = copyRaw(o.Steps)
				continue
			}
			read := copyRaw(o.Steps)
			for i := range read {
				if i < len(prev) && string(prev[i].Raw) == string(read[i].Raw) {
					read[i] = prev[i]
				}
			}
			reused[k].Steps, prev = read, read
		}
		a, b := newTestReconciler(), newTestReconciler()
		for k := range feed {
			want, got := a.Apply(decoded[k]), b.Apply(reused[k])
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("observation %d (%s): fresh copies yield %v, reused steps %v", k, feed[k].Kind, types(want), types(got))
			}
			// And each slot knows the same: a skip must never leave a slot
			// with the hash of an older copy than hashing would have.
			for i, sa := range a.slots {
				x, y := *sa, *b.slots[i]
				x.raw, y.raw = nil, nil
				if !reflect.DeepEqual(x, y) {
					t.Fatalf("observation %d (%s): slot %d differs: fresh copies %+v, reused steps %+v", k, feed[k].Kind, i, x, y)
				}
			}
		}
	})
}
