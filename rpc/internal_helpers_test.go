package rpc

import (
	"fmt"
	"strings"

	"github.com/agyharness/agyharness/wire"
)

// PlannerAnswer is a GetCascadeTrajectorySteps answer of n finished planner
// steps, step i answering "i text" (for the tests of package rpc_test too).
func PlannerAnswer(n int, text string) string {
	var b strings.Builder
	b.WriteString(`{"steps":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE","plannerResponse":{"response":"%d %s"}}`, i, text)
	}
	b.WriteString(`]}`)
	return b.String()
}

// ListedWith is agy's list of conv, summarized by s, and n conversations
// more, with ids and times of every hex digit; each of those names parent
// as its parent unless parent is "" (for the tests of package rpc_test too).
func ListedWith(conv string, s TrajectorySummary, n int, parent string) TrajectoriesResponse {
	all := TrajectoriesResponse{TrajectorySummaries: map[string]TrajectorySummary{conv: s}}
	for i := range n {
		other := TrajectorySummary{Status: wire.RunIdle, StepCount: wire.Int(i), TrajectoryID: fmt.Sprintf("%08x-1d2e-4c3b-9a8f-%012x", i*97, i*31),
			LastUserInputTime: "2026-11-30T10:00:00.123456789Z", LastModifiedTime: "2026-11-30T10:00:02.123456789Z", LastUserInputStepIndex: 88}
		if parent != "" {
			other.TrajectoryMetadata = TrajectoryMetadata{ParentConversationID: parent, RootConversationID: parent}
		}
		all.TrajectorySummaries[fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", i*2654435761, i, i%4096, (i*7)%4096, i*40503)] = other
	}
	return all
}
