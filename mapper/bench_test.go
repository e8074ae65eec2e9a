package mapper

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/wire"
)

// history builds a finished trajectory of n steps, cycling through a turn, a
// planner message, a command and a checkpoint.
func history(n int) []wire.Step {
	steps := make([]wire.Step, n)
	for i := range steps {
		switch i % 4 {
		case 0:
			steps[i] = userStep(fmt.Sprintf("turn %d", i), "MODEL_M20")
		case 1:
			steps[i] = plannerStep(wire.StatusDone, "Thinking about it.", strings.Repeat("An answer. ", 20))
		case 2:
			s := withOutput(commandStep(wire.StatusDone, "ls"), "a\nb\n", 0)
			s.RequestedInteraction = nil
			steps[i] = s
		default:
			steps[i] = systemStep(wire.StepCheckpoint)
		}
	}
	return indexed(steps)
}

// BenchmarkApplyFrame applies stream frames that each carry one changed step
// (the live planner step at the end, its text one chunk longer) to
// trajectories of growing length: the cost per frame must not grow with it.
func BenchmarkApplyFrame(b *testing.B) {
	const versions = 256
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			hist := history(n - 1)
			frames := make([]Observation, versions)
			text := ""
			for v := range frames {
				text += "chunk "
				live := roundTrip(plannerStep(wire.StatusGenerating, "thinking", text))
				frames[v] = Observation{Kind: Frame, RunStatus: wire.RunRunning, Indices: []int{n - 1}, Steps: []wire.Step{live}, Time: at(v)}
			}
			fresh := func() *Reconciler {
				r := newTestReconciler()
				r.Apply(FromSnapshot(hist, wire.RunRunning, at(0)))
				return r
			}
			r := fresh()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v := i % versions
				if v == 0 && i > 0 {
					b.StopTimer()
					r = fresh()
					b.StartTimer()
				}
				if evs := r.Apply(frames[v]); len(evs) == 0 {
					b.Fatalf("frame %d yielded no delta", v)
				}
			}
		})
	}
}

// BenchmarkApplySnapshotUnchanged re-reads a trajectory in which nothing
// changed, as the reconciling poller does: from its first step that can
// still change (here a command left running, at index 2) to the end, the
// steps a read brings at every poll. decoded: every read is a fresh
// copy of the same bytes (as a whole decode gives), so each step is hashed;
// reused: every read carries the same Raw slices (as
// rpc.Client.GetCascadeTrajectoryStepsReusing hands unchanged steps), known
// unchanged without hashing.
func BenchmarkApplySnapshotUnchanged(b *testing.B) {
	for _, n := range []int{10, 1000} {
		for _, mode := range []string{"decoded", "reused"} {
			b.Run(fmt.Sprintf("steps=%d/%s", n, mode), func(b *testing.B) {
				hist := history(n)
				hist[2].Status = wire.StatusRunning // a background command: every read starts there
				hist = indexed(hist)
				r := newTestReconciler()
				r.Apply(FromSnapshot(hist, wire.RunRunning, at(0)))
				// Two reads alternate: with fresh copies, neither is the slice the
				// reconciler saw last.
				reads := [2]Observation{FromSnapshot(hist, "", at(1)), FromSnapshot(hist, "", at(2))}
				if mode == "decoded" {
					for k := range reads {
						reads[k] = FromSnapshot(copyRaw(hist), "", at(1+k))
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if evs := r.Apply(reads[i%2]); len(evs) != 0 {
						b.Fatal("an unchanged snapshot yielded events")
					}
				}
			})
		}
	}
}

// copyRaw is steps with each Raw copied to a slice of its own.
func copyRaw(steps []wire.Step) []wire.Step {
	out := make([]wire.Step, len(steps))
	for i, s := range steps {
		s.Raw = append([]byte(nil), s.Raw...)
		out[i] = s
	}
	return out
}

// TestDeltaAllocations: a frame that extends a live text costs two
// allocations, the delta's id and its text; the ids the deltas share (the
// item, the id's base) are made once per step.
func TestDeltaAllocations(t *testing.T) {
	hist := history(99)
	frames := make([]Observation, 64)
	text := ""
	for v := range frames {
		text += "chunk "
		live := roundTrip(plannerStep(wire.StatusGenerating, "thinking", text))
		frames[v] = Observation{Kind: Frame, RunStatus: wire.RunRunning, Indices: []int{99}, Steps: []wire.Step{live}, Time: at(v)}
	}
	r := newTestReconciler()
	r.Apply(FromSnapshot(hist, wire.RunRunning, at(0)))
	dst := r.AppendApply(nil, frames[0])
	v := 1
	allocs := testing.AllocsPerRun(len(frames)-2, func() {
		dst = r.AppendApply(dst[:0], frames[v])
		v++
	})
	if len(dst) != 1 || dst[0].Delta != "chunk " {
		t.Fatalf("frame %d: events %+v, want one delta", v-1, dst)
	}
	if allocs > 2 {
		t.Errorf("%.1f allocations per delta, want 2", allocs)
	}
}

// BenchmarkToolDetail maps one step of every detailed row of the step table
// (its case in detailCases), so that the typed detail is read from each
// body: snapshot, a fresh reconciler reads the DONE copies (call and result
// from one read); frames, each step streams a RUNNING copy (the call, the
// live output) then the DONE one (the result).
func BenchmarkToolDetail(b *testing.B) {
	typs := make([]wire.StepType, 0, len(detailCases))
	for typ := range detailCases {
		typs = append(typs, typ)
	}
	sort.Slice(typs, func(i, j int) bool { return typs[i] < typs[j] })
	running, done := make([]wire.Step, len(typs)), make([]wire.Step, len(typs))
	for i, typ := range typs {
		running[i] = toolStep(typ, wire.StatusRunning, "Read the item", nil, detailCases[typ].body)
		done[i] = toolStep(typ, wire.StatusDone, "Read the item", nil, detailCases[typ].body)
	}
	b.Run("snapshot", func(b *testing.B) {
		snap := FromSnapshot(indexed(done), wire.RunIdle, at(0))
		b.ReportAllocs()
		for b.Loop() {
			if evs := newTestReconciler().Apply(snap); len(evs) < 2*len(typs) {
				b.Fatalf("%d events for %d tool steps", len(evs), len(typs))
			}
		}
	})
	b.Run("frames", func(b *testing.B) {
		frames := make([]Observation, 0, 2*len(typs))
		for i := range typs {
			frames = append(frames, frame(2*i, wire.RunRunning, i, running[i]), frame(2*i+1, wire.RunRunning, i, done[i]))
		}
		b.ReportAllocs()
		for b.Loop() {
			r := newTestReconciler()
			n := 0
			for _, f := range frames {
				n += len(r.Apply(f))
			}
			if n < 2*len(typs) {
				b.Fatalf("%d events for %d tool steps", n, len(typs))
			}
		}
	})
}

// BenchmarkChildMemory reports the heap a reconciler holds for each
// subagent child whose parent step is done: kept whole, or forgotten once
// mirrored to its end (ForgetChild, as the session does).
func BenchmarkChildMemory(b *testing.B) {
	for _, forget := range []bool{false, true} {
		b.Run(fmt.Sprintf("forgotten=%v", forget), func(b *testing.B) {
			const n = 10000
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("%08x-1111-2222-3333-444455556666", i)
			}
			var perChild float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				r := newTestReconciler()
				for i, id := range ids {
					s := subagentStep(wire.StatusDone, strings.Clone(id))
					r.noteChildren(i, &s)
					if forget {
						r.ForgetChild(id)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perChild = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(r)
			}
			b.ReportMetric(perChild, "B/child")
		})
	}
}
