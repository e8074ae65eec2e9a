package rpc

import (
	"fmt"
	"strings"
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
