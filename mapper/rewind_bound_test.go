package mapper

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// TestRetiredIdentitiesStayBounded: a long run of rewinds of the last turn
// keeps the identities of the rewound steps for the last
// maxRetiredRewinds rewinds only, and a stale copy of the latest rewound
// steps is still taken as stale.
func TestRetiredIdentitiesStayBounded(t *testing.T) {
	r := newTestReconciler()
	r.Apply(snapshot(1, wire.RunIdle, twoTurns()...))
	prev := twoTurns()
	const rewinds = 200
	for k := range rewinds {
		at := fmt.Sprintf("%02d.%03d", 10+k%40, k)
		steps := append(twoTurns()[:2], created(userStep("again", "MODEL_M20"), at), created(plannerStep(wire.StatusDone, "", "again"), at+"1"))
		evs := r.Apply(snapshot(2+k, wire.RunIdle, steps...))
		require.Len(t, ofType(evs, messages.EventConversationRewound), 1, "rewind %d", k)
		require.LessOrEqual(t, len(r.rewinds.retired), 2*maxRetiredRewinds, "after rewind %d", k)
		if k == rewinds-1 {
			assert.Empty(t, r.Apply(snapshot(3+k, wire.RunIdle, prev...)), "a stale copy of the last rewound steps")
		}
		prev = steps
	}
	assert.Equal(t, rewinds, r.Epoch())
}

// TestRetiredIdentitiesBehindTheWindowGo: identities of rewound steps that
// fall behind the window as the trajectory grows are let go.
func TestRetiredIdentitiesBehindTheWindowGo(t *testing.T) {
	const window = 2
	r := NewReconciler(Config{ConversationID: testConv, Window: window})
	var steps []wire.Step
	for k := range 40 {
		// A turn, then a rewind of it and the turn again, further on each time.
		turn := func(at string) []wire.Step {
			return []wire.Step{created(userStep("t", "MODEL_M20"), at), created(plannerStep(wire.StatusDone, "", "a"), at+"1")}
		}
		first := append(append([]wire.Step{}, steps...), turn(fmt.Sprintf("%02d.%03d", k%60, 2*k))...)
		r.Apply(snapshot(2*k, wire.RunIdle, first...))
		steps = append(append([]wire.Step{}, steps...), turn(fmt.Sprintf("%02d.%03d", k%60, 2*k+1))...)
		evs := r.Apply(snapshot(2*k+1, wire.RunIdle, steps...))
		require.Len(t, ofType(evs, messages.EventConversationRewound), 1, "turn %d", k)
		for id := range r.rewinds.retired {
			require.GreaterOrEqual(t, id.index, 2*k-window, "turn %d: %v behind the window at the rewind", k, id)
		}
		require.LessOrEqual(t, len(r.rewinds.retired), 2*window, "turn %d", k)
	}
}
