package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

func TestTheCheckReportsEachDoubledItemOnce(t *testing.T) {
	d := &driver{mode: actors.ReadStream, wake: make(chan struct{}, 1)}
	now := time.Now()
	seq := uint64(0)
	for _, ev := range []messages.Event{
		{Type: messages.EventMessage, ID: "c/1/message"},
		{Type: messages.EventFunctionCall, ID: "c/2/call"},
		{Type: messages.EventMessage, ID: "c/1/message"},
		{Type: messages.EventMessage, ID: "c/1/message"},
		{Type: messages.EventError, ID: "c/3/error", Code: "quota"},
		{Type: messages.EventError, ID: "c/3/error", Code: "quota"},
		{Type: messages.EventError, ID: "e", Message: "not sent"}, // uncoded errors may repeat
		{Type: messages.EventError, ID: "e", Message: "not sent"},
		{Type: messages.EventOutputTextDelta, ID: "c/1/text@0", ItemID: "c/1/message", ConversationID: "c", Delta: "a"},
		{Type: messages.EventOutputTextDelta, ID: "c/1/text@0", ItemID: "c/1/message", ConversationID: "c", Delta: "a"},
	} {
		seq++
		ev.Seq = seq
		d.receive(&ev, now)
	}
	var res Result
	d.check(&res)
	assert.Equal(t, 3, res.Duplicated, "c/1/message twice more, c/3/error once more")
	problems := strings.Join(res.Problems, "\n")
	assert.Contains(t, problems, "item c/1/message emitted 3 times")
	assert.Contains(t, problems, "item c/3/error emitted 2 times")
	assert.NotContains(t, problems, "c/2/call")
}

func TestALeanDriverKeepsNoEventAndSamplesTheLatencies(t *testing.T) {
	d := &driver{mode: actors.ReadStream, wake: make(chan struct{}, 1), rewinds: 1}
	d.leanen(newRand(1, 1))
	now := time.Now()
	seq := uint64(0)
	receive := func(ev messages.Event) {
		seq++
		ev.Seq, ev.Time = seq, now.Add(-time.Duration(seq)*time.Microsecond)
		d.receive(&ev, now)
	}
	n := 3 * leanSample
	for i := range n {
		receive(messages.Event{Type: messages.EventMessage, ID: fmt.Sprintf("c/%d/message", i), Text: "an essay"})
		receive(messages.Event{Type: messages.EventOutputTextDelta, ID: fmt.Sprintf("c/%d/text@0", i), ItemID: fmt.Sprintf("c/%d/message", i), ConversationID: "c", Delta: "a"})
	}
	receive(messages.Event{Type: messages.EventConversationRewound, ConversationID: "c"})
	rewoundAt := seq
	receive(messages.Event{Type: messages.EventMessage, ID: "c/x/message", Text: backgroundReply})
	receive(messages.Event{Type: messages.EventElicitationResolved, ElicitationID: "p1"})
	receive(messages.Event{Type: messages.EventMessage, ID: "c/0/message", Text: "again"})

	assert.Empty(t, d.events(), "no event kept")
	assert.Len(t, d.latencies.xs, leanSample, "a sample of the latencies")
	assert.Len(t, d.deltas.xs, leanSample, "a sample of the deltas")
	assert.Equal(t, 2*n+4, d.received)
	assert.True(t, d.sawRewind(rewoundAt-1))
	assert.False(t, d.sawRewind(rewoundAt))

	var res Result
	d.check(&res)
	assert.Equal(t, 1, res.Wakes)
	assert.Zero(t, res.RewindsUnreported)
	assert.Equal(t, 1, res.Duplicated, "items are counted though not kept")
	assert.Equal(t, 2*n+4, res.Events)
}

func TestASampleIsUniform(t *testing.T) {
	s := newSample[int](1000, newRand(7, 0))
	const n = 100_000
	for i := range n {
		s.add(i)
	}
	require.Len(t, s.xs, 1000)
	sum, late := 0, 0
	for _, x := range s.xs {
		sum += x
		if x >= n/2 {
			late++
		}
	}
	mean := float64(sum) / float64(len(s.xs))
	assert.InDelta(t, n/2, mean, n*0.05, "the mean of a uniform sample of 0..n-1")
	assert.InDelta(t, 500, late, 80, "half the sample from the second half")

	all := newSample[int](0, nil)
	for i := range 5000 {
		all.add(i)
	}
	assert.Len(t, all.xs, 5000, "no limit: every value")
}

// The check finds a committed step's thinking in the reasoning deltas of
// one item (a snapshot starting it over), whatever its index after a
// rewind, and counts each step whose thinking was never told.
func TestTheCheckFindsEveryStepsThinking(t *testing.T) {
	d := &driver{mode: actors.ReadStream, wake: make(chan struct{}, 1)}
	seq := uint64(0)
	for _, ev := range []messages.Event{
		{Type: messages.EventReasoningDelta, ItemID: "c/1/reasoning", Delta: "Think"},
		{Type: messages.EventReasoningDelta, ItemID: "c/1/reasoning", Delta: "ing."},
		{Type: messages.EventReasoningDelta, ItemID: "c/r1/1/reasoning", Delta: "Oops"},
		{Type: messages.EventReasoningDelta, ItemID: "c/r1/1/reasoning", Snapshot: "Again."},
		{Type: messages.EventReasoningDelta, ItemID: "other/1/reasoning", Delta: "Lost."},
	} {
		seq++
		ev.Seq = seq
		d.receive(&ev, time.Now())
	}
	planner := func(status wire.StepStatus, thinking string) wire.Step {
		return wire.Step{Type: wire.StepPlannerResponse, Status: status, PlannerResponse: &wire.PlannerResponse{Thinking: thinking}}
	}
	steps := []wire.Step{
		planner(wire.StatusDone, "Thinking."),
		planner(wire.StatusCleared, "Thinking."), // rewound away: committed before, not again
		planner(wire.StatusDone, "Again."),       // the same index, after the rewind
		planner(wire.StatusDone, "Lost."),        // told in another conversation only
		planner(wire.StatusGenerating, "Live."),  // not committed
		planner(wire.StatusDone, ""),
	}
	var res Result
	d.checkThinking(&res, steps, "c", "session 0")
	assert.Equal(t, 3, res.Thinking)
	assert.Equal(t, 1, res.ThinkingLost)
	require.Len(t, res.Problems, 1)
	assert.Contains(t, res.Problems[0], `"Lost."`)
}

// A stuck turn's report names the turn and shows the events from the ten
// before it was sent: what the driver saw before it sent it.
func TestAStuckTurnsReportShowsTheEventsBeforeIt(t *testing.T) {
	d := &driver{mode: actors.ReadStream, wake: make(chan struct{}, 1)}
	for i := 1; i <= 30; i++ {
		d.receive(&messages.Event{Type: messages.EventMessage, ID: fmt.Sprintf("c/%d/message", i), Seq: uint64(i)}, time.Now())
	}
	d.stuck = 1
	d.stuckAfter = []uint64{25}
	d.stuckState = []string{`turn "text turn 3"; fake: …`}
	var res Result
	d.check(&res)
	problems := strings.Join(res.Problems, "\n")
	assert.Contains(t, problems, `the turn sent after seq 25 did not reach idle (turn "text turn 3"`)
	assert.Contains(t, problems, "c/16/message", "the tenth event before it")
	assert.NotContains(t, problems, "c/15/message")
	assert.Contains(t, problems, "c/30/message")
}

// A turn the session reported agy did not take is counted; one the fake
// recorded after all is a wrong report, counted in Failed.
func TestTheCheckFindsATurnReportedNotTakenThatAgyTook(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true})
	require.NoError(t, srv.TypeTurn("text turn 1"))
	require.Eventually(t, func() bool {
		for _, conv := range srv.Conversations() {
			for _, st := range srv.GroundTruth(conv) {
				if st.Type == wire.StepUserInput {
					return true
				}
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	d := &driver{mode: actors.ReadStream, wake: make(chan struct{}, 1), srv: srv}
	for i, text := range []string{"text turn 1", "text turn 2"} {
		d.receive(&messages.Event{Type: messages.EventError, ID: fmt.Sprintf("s/error/%d", i+1), Seq: uint64(i + 1),
			Code: messages.ErrorTurnNotTaken, Text: text, Message: "agy accepted the turn but did not take it"}, time.Now())
	}
	var res Result
	d.checkNotTaken(&res, "session 0")
	assert.Equal(t, 2, res.TurnsNotTaken)
	assert.Equal(t, 1, res.TurnsNotTakenWrongly)
	require.Len(t, res.Problems, 1)
	assert.Contains(t, res.Problems[0], `"text turn 1"`)
	assert.True(t, res.Failed())
}

// An answer whose step a later rewind cut away is checked against the step
// as it first finished (the ground truth keeps it), not against the step
// that now stands at its index; a rewind before the answer, or of another
// conversation, or to a later step, does not make it so.
func TestAnAnswerWhoseStepWasRewoundIsCheckedOnTheStepItReached(t *testing.T) {
	at := func(i int, allow bool) wire.Step {
		st := wire.Step{Type: wire.StepRunCommand, Status: wire.StatusDone,
			CompletedInteractions: []wire.CompletedInteraction{{Response: &wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: allow}}}}}
		st.Metadata.SourceTrajectoryStepInfo.StepIndex = wire.Int(i)
		return st
	}
	accept := answer{elicitationID: "c/r1/prompt/7", kind: messages.KindPermission, accept: true}
	truth := []wire.Step{at(7, true), at(7, false)} // answered, then another step at 7 after a rewind
	assert.True(t, echoedAt(truth, 7, accept))
	assert.False(t, echoedAt(truth[1:], 7, accept))
	assert.False(t, echoedAt(truth, 6, accept))

	resolved := &messages.Event{Type: messages.EventElicitationResolved, ConversationID: "c", Seq: 10}
	rewound := func(conv string, seq uint64, to int) []*messages.Event {
		return []*messages.Event{resolved, {Type: messages.EventConversationRewound, ConversationID: conv, Seq: seq, ToStep: messages.Ptr(to)}}
	}
	assert.True(t, cutAfter(rewound("c", 12, 5), resolved, 7))
	assert.True(t, cutAfter(rewound("c", 12, 7), resolved, 7))
	assert.False(t, cutAfter(rewound("c", 12, 8), resolved, 7), "cut after the step")
	assert.False(t, cutAfter(rewound("c", 8, 5), resolved, 7), "cut before the answer")
	assert.False(t, cutAfter(rewound("d", 12, 5), resolved, 7), "another conversation")
}

// An answer beaten by the harness's own other answer (an interrupt's
// decline reached agy first) is failed clearly when the session said the
// answer was not delivered, and misdelivered when it did not.
func TestAnAnswerBeatenByTheInterruptsDeclineFailsClearlyWhenSaidSo(t *testing.T) {
	resolved := &messages.Event{Type: messages.EventElicitationResolved, ConversationID: "c", Seq: 2, ElicitationID: "c/prompt/5",
		Action: messages.ActionCancel, By: messages.ByHarness, DeliveredStepIndex: messages.Ptr(5)}
	notDelivered := &messages.Event{Type: messages.EventError, Seq: 3,
		Message: "answer to c/prompt/5 not delivered: agy no longer asks it (answered decline elsewhere at step 5): the answer was not sent"}
	for _, said := range []bool{true, false} {
		d := &driver{mode: actors.ReadStream, wake: make(chan struct{}, 1), srv: agytest.Start(t, agytest.Options{}),
			answers: []answer{{elicitationID: "c/prompt/5", kind: messages.KindPermission, accept: true}}}
		evs := []*messages.Event{resolved}
		if said {
			evs = append(evs, notDelivered)
		}
		var res Result
		d.checkPrompts(&res, evs, "session 0")
		if said {
			assert.Equal(t, 1, res.PromptsFailedClearly)
			assert.Zero(t, res.PromptsMisdelivered)
		} else {
			assert.Equal(t, 1, res.PromptsMisdelivered)
		}
	}
}

func TestClipCutsAtACharactersStart(t *testing.T) {
	assert.Equal(t, "short", clip("short"))
	long := strings.Repeat("a", 79) + "éé"
	got := clip(long)
	assert.Equal(t, strings.Repeat("a", 79)+"…", got, "é at bytes 79–80 does not fit")
	assert.True(t, utf8.ValidString(got))
}
