package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// itemTypes are the events that stand for committed items: each appears
// exactly once per ground-truth step.
var itemTypes = []messages.EventType{messages.EventUserMessage, messages.EventMessage, messages.EventFunctionCall, messages.EventFunctionCallOutput}

func isItem(t messages.EventType) bool {
	for _, it := range itemTypes {
		if t == it {
			return true
		}
	}
	return false
}

// expected returns the items a conversation's ground truth commits, as
// counts by type: every USER_INPUT one user_message, every terminal planner
// step with text one message (an interrupted one too), every terminal tool
// step (of a tool type, or carrying toolAction) one function_call and one
// function_call_output.
func expected(steps []wire.Step) map[messages.EventType]int {
	want := map[messages.EventType]int{}
	for _, st := range steps {
		switch st.Type {
		case wire.StepUserInput:
			want[messages.EventUserMessage]++
		case wire.StepPlannerResponse:
			if st.Status.Terminal() && st.PlannerResponse != nil &&
				(st.PlannerResponse.Response != "" || st.PlannerResponse.ModifiedResponse != "") {
				want[messages.EventMessage]++
			}
		case wire.StepRunCommand, wire.StepViewFile, wire.StepListDirectory, wire.StepGeneric, wire.StepAskQuestion, wire.StepInvokeSubagent,
			wire.StepCodeAction, wire.StepGrepSearch, wire.StepFind, wire.StepSearchWeb, wire.StepReadURLContent, wire.StepMCPTool, wire.StepCommandStatus:
			if st.Status.Terminal() {
				want[messages.EventFunctionCall]++
				want[messages.EventFunctionCallOutput]++
			}
		default:
			// Any other step the model called as a tool (agy's tool steps
			// carry toolAction, whatever their type).
			if st.Status.Terminal() && st.Metadata.ToolAction != "" {
				want[messages.EventFunctionCall]++
				want[messages.EventFunctionCallOutput]++
			}
		}
	}
	return want
}

// itemsMatch says whether every conversation's item counts equal the
// ground truth's (the settle condition).
func (d *driver) itemsMatch() bool {
	got := map[string]map[messages.EventType]int{}
	for _, ev := range d.events() {
		if isItem(ev.Type) {
			if got[ev.ConversationID] == nil {
				got[ev.ConversationID] = map[messages.EventType]int{}
			}
			got[ev.ConversationID][ev.Type]++
		}
	}
	for _, conv := range d.srv.Conversations() {
		want := expected(d.srv.GroundTruth(conv))
		for _, t := range itemTypes {
			if got[conv][t] != want[t] {
				return false
			}
		}
	}
	return true
}

// stepIndex reads the step index out of an item id (conversation/index/kind).
func stepIndex(id, conv string) (int, bool) {
	rest, ok := strings.CutPrefix(id, conv) // not conv+"/": no string made per event
	if !ok || !strings.HasPrefix(rest, "/") {
		return 0, false
	}
	n, _, _ := strings.Cut(rest[1:], "/")
	i, err := strconv.Atoi(n)
	return i, err == nil
}

// check compares the session's events with its fake's ground truth and
// adds what it finds to res.
func (d *driver) check(res *Result) {
	evs := d.events()
	res.Turns += d.turns
	res.Interrupts += d.interrupts
	res.PromptInterrupts += d.promptInterrupts
	res.QuestionsDeclined += d.questionsDeclined
	if d.fake.live.coldStart {
		res.ColdStarts++
	}
	if d.fake.live.window > 0 {
		res.WindowedSessions++
	}
	res.TurnsFailedClearly += d.turnsFailed
	res.Rewinds += d.rewinds
	d.mu.Lock()
	rewound, wakes, doubled := d.rewound, d.wakes, maps.Clone(d.doubled)
	d.mu.Unlock()
	if rewound != d.rewinds {
		res.RewindsUnreported += max(rewound-d.rewinds, d.rewinds-rewound)
		res.problem("session %d: %d rewinds, %d conversation_rewound events", d.i, d.rewinds, rewound)
	}
	res.Wakes += wakes
	res.StuckTurns += d.stuck
	res.Events += d.received
	tag := fmt.Sprintf("session %d (fault %q, fake seed %d%s)", d.i, d.fault, res.Seed+int64(d.i), d.fake.live)
	d.checkNotTaken(res, tag)
	if d.ended {
		res.StuckTurns++
		res.problem("%s: the session ended during the run: %v", tag, d.s.Err())
	}
	if d.stuck > 0 {
		res.problem("%s: %d turns did not reach idle", tag, d.stuck)
	}
	for i, seq := range d.stuckAfter {
		// Its events, and the 10 before it: what the driver saw before it sent.
		from := len(evs)
		for j, ev := range evs {
			if ev.Seq > seq {
				from = j
				break
			}
		}
		around := evs[max(0, from-10):]
		res.problem("%s: the turn sent after seq %d did not reach idle (%s); the events from 10 before it on:%s", tag, seq, d.stuckState[i], dumpTail(around[:min(len(around), 50)], 50))
	}

	for _, e := range d.seqErrors {
		res.SeqErrors++
		res.problem("%s: %s", tag, e)
	}
	for _, id := range slices.Sorted(maps.Keys(doubled)) {
		n := doubled[id]
		res.Duplicated += n - 1
		res.problem("%s: item %s emitted %d times", tag, id, n)
	}

	if d.srv == nil {
		return // external fakes: their ground truth is in another process
	}
	for _, conv := range d.srv.Conversations() {
		steps := d.srv.GroundTruth(conv)
		want := expected(steps)
		got := map[messages.EventType]int{}
		maxIndex := -1
		for _, ev := range evs {
			if ev.ConversationID != conv || !isItem(ev.Type) {
				continue
			}
			got[ev.Type]++
			if i, ok := stepIndex(ev.ID, conv); ok {
				if i < maxIndex {
					res.OutOfOrder++
					res.problem("%s: conversation %s: %s of step %d after an item of step %d%s", tag, conv, ev.Type, i, maxIndex, orderContext(evs, d.srv.Steps(conv), conv, i, maxIndex))
				}
				maxIndex = max(maxIndex, i)
			}
		}
		shown := 0
		for _, ev := range evs {
			if ev.ConversationID == conv && ev.ShownByAgy() {
				shown++
			}
		}
		errSteps := 0
		for _, st := range steps {
			if st.Type == "CORTEX_STEP_TYPE_ERROR_MESSAGE" {
				errSteps++
			}
		}
		res.AgyErrors += errSteps
		if shown < errSteps {
			res.Lost += errSteps - shown
			res.problem("%s: conversation %s: agy wrote %d ERROR_MESSAGE steps, the session emitted %d errors with a code", tag, conv, errSteps, shown)
		}
		d.checkThinking(res, steps, conv, tag)
		for _, t := range itemTypes {
			res.ItemsExpected += want[t]
			res.ItemsEmitted += got[t]
			if got[t] < want[t] {
				res.Lost += want[t] - got[t]
				res.problem("%s: conversation %s: %s: ground truth has %d, the session emitted %d%s", tag, conv, t, want[t], got[t], missingItems(evs, d.srv.Steps(conv), conv, t))
			}
		}
	}
	d.checkPrompts(res, evs, tag)
}

// checkNotTaken counts the turns the session reported agy did not take,
// and checks each against the fake's ground truth: no conversation of it
// has a user turn with its text (the driver's texts are its own, each sent
// once).
func (d *driver) checkNotTaken(res *Result, tag string) {
	d.mu.Lock()
	notTaken := slices.Clone(d.notTaken)
	d.mu.Unlock()
	res.TurnsNotTaken += len(notTaken)
	if d.srv == nil {
		return
	}
	for _, text := range notTaken {
		for _, conv := range d.srv.Conversations() {
			if slices.ContainsFunc(d.srv.GroundTruth(conv), func(st wire.Step) bool {
				return st.Type == wire.StepUserInput && st.UserInput != nil && st.UserInput.UserResponse == text
			}) {
				res.TurnsNotTakenWrongly++
				res.problem("%s: the session reported that agy did not take the turn %q, which agy recorded in conversation %s", tag, text, conv)
			}
		}
	}
}

// checkThinking checks that every committed planner step of conv with
// thinking has its thinking told: the reasoning deltas of one item add up
// to it (a snapshot starts the text over; the driver keeps their text,
// d.thinking). The ground truth is in commit order, where a rewind makes
// a step's index no key, so the texts are matched as a multiset. The
// campaign's conversations start empty, so every step is one the session
// watched happen (docs/EVENTS.md, reasoning_delta).
func (d *driver) checkThinking(res *Result, steps []wire.Step, conv, tag string) {
	told := map[string]int{}
	prefix := conv + "/"
	d.mu.Lock()
	for id, text := range d.thinking {
		if strings.HasPrefix(id, prefix) {
			told[text]++
		}
	}
	d.mu.Unlock()
	for _, st := range steps {
		if st.Type != wire.StepPlannerResponse || !st.Status.Terminal() || st.Status == wire.StatusCleared ||
			st.PlannerResponse == nil || st.PlannerResponse.Thinking == "" {
			continue
		}
		res.Thinking++
		thinking := st.PlannerResponse.Thinking
		if told[thinking] > 0 {
			told[thinking]--
			continue
		}
		res.ThinkingLost++
		res.problem("%s: conversation %s: the thinking %q of step %d was never told in reasoning deltas", tag, conv,
			clip(thinking), st.Index())
	}
}

// clip is s cut to at most 80 bytes, at a character's start, for a problem
// line.
func clip(s string) string { return clipTo(s, 80) }

// clipTo is s cut to at most n bytes, at a character's start.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := 0
	for i := range s {
		if i > n {
			break
		}
		cut = i
	}
	return s[:cut] + "…"
}

// checkPrompts checks every answer we gave: resolved by the harness at the
// step where agy echoes exactly that answer.
func (d *driver) checkPrompts(res *Result, evs []*messages.Event, tag string) {
	resolved := map[string]*messages.Event{}
	trajectories := map[string][]wire.Step{} // by conversation, read once: a read decodes every step
	for _, ev := range evs {
		if ev.Type == messages.EventElicitationResolved {
			resolved[ev.ElicitationID] = ev
		}
	}
	for _, a := range d.answers {
		res.Prompts++
		if a.leftToAgy {
			switch ev := resolved[a.elicitationID]; {
			case ev == nil:
				res.PromptsUnresolved++
				res.problem("%s: prompt %s (%s), left to agy's terminal, was never withdrawn%s", tag, a.elicitationID, a.kind, dumpTail(evs, 20))
			case ev.By == messages.ByHarness:
				res.PromptsMisdelivered++
				res.problem("%s: prompt %s (%s), never answered, resolved by the harness", tag, a.elicitationID, a.kind)
			default:
				res.PromptsLeftToAgy++
			}
			continue
		}
		if a.err != nil {
			res.PromptsFailedClearly++
			continue
		}
		ev := resolved[a.elicitationID]
		switch {
		case ev == nil && errorNames(evs, a.elicitationID):
			// Not delivered, and the session said so in an error event.
			res.PromptsFailedClearly++
			res.problem("%s: prompt %s (%s) failed with an error event%s", tag, a.elicitationID, a.kind, dumpTail(evs, 5))
			continue
		case ev == nil:
			res.PromptsUnresolved++
			res.problem("%s: prompt %s (%s) answered, never resolved%s\n    events:%s", tag, a.elicitationID, a.kind,
				truthSummary(d.srv.GroundTruth(d.s.ConversationID())), dumpTail(evs, 40))
			continue
		case ev.By != messages.ByHarness:
			// Expired or answered elsewhere, and said so.
			res.PromptsFailedClearly++
			continue
		case (ev.Action == messages.ActionAccept) != a.accept && errorNames(evs, a.elicitationID):
			// The harness's other answer to it reached agy first (an
			// interrupt's decline while this answer was on its way), and
			// the session said this one was not delivered.
			res.PromptsFailedClearly++
			continue
		case ev.DeliveredStepIndex == nil:
			res.PromptsMisdelivered++
			res.problem("%s: prompt %s resolved by the harness without a delivered step", tag, a.elicitationID)
			continue
		}
		conv := ev.ConversationID
		steps, ok := trajectories[conv] // by trajectory index
		if !ok {
			steps = d.srv.Steps(conv)
			trajectories[conv] = steps
		}
		idx := *ev.DeliveredStepIndex
		if idx >= 0 && idx < len(steps) && echoes(steps[idx], a) {
			continue
		}
		if cutAfter(evs, ev, idx) && echoedAt(d.srv.GroundTruth(conv), idx, a) {
			// A rewind after the answer cut its step away (another now
			// stands at idx, or none): agy recorded the answer on the
			// step before it was cut.
			continue
		}
		res.PromptsMisdelivered++
		res.problem("%s: prompt %s (%s, accept=%v option=%q) resolved at step %d, where agy does not echo that answer%s%s\n    events from its request on:%s",
			tag, a.elicitationID, a.kind, a.accept, a.option, idx, recorded(steps, idx), truthSummary(steps), naming(evs, a.elicitationID))
	}
}

// cutAfter says whether the session reported a rewind of the answer's
// conversation to idx or before, after the answer's resolution: the step at
// idx was cut away after it.
func cutAfter(evs []*messages.Event, resolved *messages.Event, idx int) bool {
	return slices.ContainsFunc(evs, func(ev *messages.Event) bool {
		return ev.Type == messages.EventConversationRewound && ev.ConversationID == resolved.ConversationID &&
			ev.Seq > resolved.Seq && ev.ToStep != nil && *ev.ToStep <= idx
	})
}

// echoedAt says whether a committed step at index idx of truth (every
// step as it first finished, rewound ones too) echoes answer a.
func echoedAt(truth []wire.Step, idx int, a answer) bool {
	return slices.ContainsFunc(truth, func(st wire.Step) bool { return st.Index() == idx && echoes(st, a) })
}

// echoes says whether agy recorded answer a on step st: in its first
// completed interaction, or, for the n-th ask of a step (elicitation id
// ending ".n"), in its n-th.
func echoes(st wire.Step, a answer) bool {
	n := askNumber(a.elicitationID)
	if len(st.CompletedInteractions) < n || st.CompletedInteractions[n-1].Response == nil {
		return false
	}
	r := st.CompletedInteractions[n-1].Response
	switch {
	case r.FilePermission != nil:
		return r.FilePermission.Allow == a.accept
	case r.Elicitation != nil:
		return (r.Elicitation.Action == messages.ActionAccept) == a.accept
	}
	if a.kind == messages.KindQuestion {
		if !a.accept {
			return r.AskQuestion.Declined()
		}
		return r.AskQuestion != nil && len(r.AskQuestion.Responses) > 0 &&
			reflect.DeepEqual(r.AskQuestion.Responses[0].SelectedOptionIDs, []string{a.option})
	}
	allowed := r.Permission != nil && r.Permission.Allow
	return allowed == a.accept
}

// askNumber is n of an elicitation id c/prompt/i.n (1 without a suffix).
func askNumber(id string) int {
	i := strings.LastIndexByte(id, '/')
	j := strings.LastIndexByte(id, '.')
	if j <= i {
		return 1
	}
	n, err := strconv.Atoi(id[j+1:])
	if err != nil || n < 2 {
		return 1
	}
	return n
}

// recorded shows the interactions agy recorded on step idx, for a
// misdelivery report.
func recorded(steps []wire.Step, idx int) string {
	if idx < 0 || idx >= len(steps) {
		return "\n    no such step"
	}
	var b strings.Builder
	b.WriteString("\n    recorded on that step:")
	for i, ci := range steps[idx].CompletedInteractions {
		raw, err := json.Marshal(ci)
		if err != nil {
			raw = []byte(err.Error())
		}
		fmt.Fprintf(&b, "\n      %d %s", i+1, raw)
	}
	return b.String()
}

// naming is dumpTail of the events from the first that carries
// elicitationID (or one of its re-asks, elicitationID.n) on, up to 30.
func naming(evs []*messages.Event, elicitationID string) string {
	for i, ev := range evs {
		if ev.ElicitationID == elicitationID || strings.HasPrefix(ev.ElicitationID, elicitationID+".") {
			return dumpTail(evs[i:min(len(evs), i+30)], 30)
		}
	}
	return " none"
}

// truthSummary lists a conversation's ground truth, one step a line, for a
// problem report.
func truthSummary(steps []wire.Step) string {
	var b strings.Builder
	b.WriteString("\n    ground truth:")
	for i, st := range steps {
		fmt.Fprintf(&b, "\n      %d %s %s", i, st.Type, st.Status)
	}
	return b.String()
}

// orderContext shows the trajectory's steps lo..hi (and the few before:
// the run they end) and the session's events that name steps lo..hi, for
// an out-of-order report.
func orderContext(evs []*messages.Event, steps []wire.Step, conv string, lo, hi int) string {
	var b strings.Builder
	b.WriteString("\n    trajectory:")
	for i := max(0, lo-6); i <= hi && i < len(steps); i++ {
		fmt.Fprintf(&b, "\n      %d %s %s", i, steps[i].Type, steps[i].Status)
	}
	names := func(ev *messages.Event) bool {
		i, ok := stepIndex(ev.ID, conv)
		return ev.ConversationID == conv && ok && i >= lo && i <= hi
	}
	var first, last uint64
	for _, ev := range evs {
		if names(ev) {
			if first == 0 {
				first = ev.Seq
			}
			last = ev.Seq
		}
	}
	b.WriteString("\n    events:")
	for _, ev := range evs {
		if ev.Seq+40 < first || ev.Seq > last {
			continue
		}
		switch {
		case ev.Type == messages.EventStatus:
			fmt.Fprintf(&b, "\n      %d status %s", ev.Seq, ev.State)
		case ev.Type.Delta():
			if names(ev) {
				fmt.Fprintf(&b, "\n      %d %s id=%s", ev.Seq, ev.Type, ev.ID)
			}
		default:
			fmt.Fprintf(&b, "\n      %d %s id=%s", ev.Seq, ev.Type, ev.ID)
		}
	}
	return b.String()
}

// dumpTail lists the last n events, one a line, for a problem report.
func dumpTail(evs []*messages.Event, n int) string {
	var b strings.Builder
	for _, ev := range evs[max(0, len(evs)-n):] {
		fmt.Fprintf(&b, "\n      %d %s id=%s", ev.Seq, ev.Type, ev.ID)
		switch ev.Type {
		case messages.EventStatus:
			fmt.Fprintf(&b, " %s", ev.State)
		case messages.EventError:
			fmt.Fprintf(&b, " %q", ev.Message)
		case messages.EventElicitationRequest, messages.EventElicitationResolved:
			fmt.Fprintf(&b, " elicitation=%s action=%s by=%s", ev.ElicitationID, ev.Action, ev.By)
		}
	}
	return b.String()
}

// errorNames says whether an error event names the elicitation.
func errorNames(evs []*messages.Event, elicitationID string) bool {
	for _, ev := range evs {
		if ev.Type == messages.EventError && strings.Contains(ev.Message, elicitationID) {
			return true
		}
	}
	return false
}
