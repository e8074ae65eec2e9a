package rpc

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agyharness/agyharness/wire"
)

// BenchmarkSummaryOf1000 is one status read's decode of a list of 1,000
// conversations: the entry alone (findSummary), the whole list, or the
// list again into a SummaryCache, unchanged or with one entry changed.
func BenchmarkSummaryOf1000(b *testing.B) {
	const conv = "0b5c2a9e-7d1f-4c3e-9a8b-1f2e3d4c5b6a"
	all := TrajectoriesResponse{TrajectorySummaries: map[string]TrajectorySummary{conv: {Status: wire.RunIdle, StepCount: 4}}}
	for i := range 1000 {
		all.TrajectorySummaries[fmt.Sprintf("%08d-7d1f-4c3e-9a8b-1f2e3d4c5b6a", i)] = TrajectorySummary{Status: wire.RunIdle, StepCount: 90,
			TrajectoryID: "1f2e3d4c-7d1f-4c3e-9a8b-0b5c2a9e5b6a", TrajectoryType: "CORTEX_TRAJECTORY_TYPE_CASCADE",
			LastUserInputTime: "2026-11-30T10:00:00.123456789Z", LastModifiedTime: "2026-11-30T10:00:02.123456789Z", LastUserInputStepIndex: 88}
	}
	data, err := json.Marshal(all)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("entry", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, ok, err := summaryIn(data, conv); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var all TrajectoriesResponse
			if err := wire.Unmarshal(data, &all); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A safety read of agy's list at rest: the last answer again.
	b.Run("unchanged", func(b *testing.B) {
		var l SummaryCache[TrajectorySummary]
		keep := func(_ string, s TrajectorySummary) TrajectorySummary { return s }
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := l.update(data, keep); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The rotation watcher's read: the list again, the bound conversation's
	// entry changed (by turns, two answers taken in turn).
	b.Run("cached", func(b *testing.B) {
		all.TrajectorySummaries[conv] = TrajectorySummary{Status: wire.RunIdle, StepCount: 6}
		other, err := json.Marshal(all)
		if err != nil {
			b.Fatal(err)
		}
		var l SummaryCache[TrajectorySummary]
		keep := func(_ string, s TrajectorySummary) TrajectorySummary { return s }
		b.SetBytes(int64(len(data)))
		i := 0
		for b.Loop() {
			i++
			if err := l.update([][]byte{data, other}[i%2], keep); err != nil {
				b.Fatal(err)
			}
		}
	})
}
