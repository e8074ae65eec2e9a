package mapper

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// planner maps a PLANNER_RESPONSE step: reasoning and text deltas while it is
// live, then (at its terminal copy) the last delta, the message and usage.
// A step first seen terminal yields the message and usage, and before them
// its whole thinking when the session watched it happen (Reconciler.Watched:
// a late binding or a stream down let it finish unseen); the history the
// session's first read found gives no thinking.
func (r *Reconciler) planner(index int, s *wire.Step, st *slot, first bool) {
	if st.committed {
		return
	}
	pr := s.PlannerResponse
	if pr == nil {
		pr = &wire.PlannerResponse{}
	}
	terminal := s.Status.Terminal()
	if first && !terminal {
		st.streamed = true
	}
	if st.streamed {
		if pr.Thinking != "" {
			r.advance(index, &st.live().thinking, pr.Thinking, false, "reasoning")
		}
		if !terminal {
			live := pr.ModifiedResponse
			if live == "" {
				live = pr.Response
			}
			if live != "" {
				r.advance(index, &st.live().text, live, false, "text")
			}
		}
	}
	if !terminal {
		return
	}
	if first && !st.streamed && pr.Thinking != "" && r.Watched(index) {
		r.advance(index, &st.live().thinking, pr.Thinking, false, "reasoning")
	}
	final := pr.Response
	if final == "" {
		final = pr.ModifiedResponse
	}
	if final == "" {
		// A terminal copy without text (an interrupted step, a thin stream
		// copy): the text shown so far is what there is.
		final = st.shownText()
	}
	if st.streamed && final != "" {
		r.advance(index, &st.live().text, final, true, "text")
	}
	st.committed = true
	st.texts = nil // no longer needed as a delta base
	if final != "" {
		e := r.event(messages.EventMessage, r.itemID(index, "message"))
		e.ItemID = e.ID
		e.Role = "assistant"
		e.Text = final
		r.emit(e)
	}
	if mu := s.Metadata.ModelUsage; mu != nil {
		r.usage(index, s, mu)
	}
	if s.Status == wire.StatusError && !r.saidBy(s) {
		// The model call failed: the driver must know the turn ended in error.
		e := r.event(messages.EventError, r.itemID(index, "error"))
		e.Message = "agy's turn failed: " + stepError(s)
		e.Retryable = messages.Ptr(false)
		r.emit(e)
	}
}

// saidBy reports whether a failed planner step's error was already told by
// an ERROR_MESSAGE of this turn: its text is that error's, or none of its own.
func (r *Reconciler) saidBy(s *wire.Step) bool {
	if r.turnError == "" {
		return false
	}
	text := stepError(s)
	return text == genericStepError || text == r.turnError
}

// genericStepError is stepError's text for a step that carries none.
const genericStepError = "the model returned an error"

// stepError is agy's message for a failed step (error.userErrorMessage, else
// error.shortError), read from the raw step.
func stepError(s *wire.Step) string {
	var body struct {
		Error struct {
			UserErrorMessage string `json:"userErrorMessage"`
			ShortError       string `json:"shortError"`
		} `json:"error"`
	}
	_ = json.Unmarshal(s.Raw, &body)
	switch {
	case body.Error.UserErrorMessage != "":
		return body.Error.UserErrorMessage
	case body.Error.ShortError != "":
		return body.Error.ShortError
	}
	return genericStepError
}

// advance moves the emitted text t toward next: a delta when next extends
// it, nothing when next is stale (a prefix of it, or shorter) unless forced,
// else a snapshot of next. kind is "text", "reasoning" or "output" (a tool
// step's live output).
func (r *Reconciler) advance(index int, t *emitted, next string, forced bool, kind string) {
	if next == t.cur {
		return
	}
	evType, item := messages.EventOutputTextDelta, "message"
	switch kind {
	case "reasoning":
		evType, item = messages.EventReasoningDelta, "reasoning"
	case "output":
		evType, item = messages.EventFunctionCallOutputDelta, "output"
	}
	if t.item == "" {
		t.item = r.itemID(index, item)
	}
	if strings.HasPrefix(next, t.cur) {
		if t.base == "" {
			t.base = r.itemID(index, kind)
			if t.snaps > 0 {
				t.base += "#" + strconv.Itoa(t.snaps)
			}
			t.base += "@"
		}
		e := r.event(evType, t.base+strconv.Itoa(len(t.cur)))
		e.ItemID = t.item
		r.stampCall(&e, index)
		// Copied: a substring would keep all of next alive with the event.
		e.Delta = strings.Clone(next[len(t.cur):])
		r.emit(e)
		t.cur = next
		return
	}
	if !forced && len(next) < len(t.cur) {
		return // an older copy: only move forward
	}
	t.snaps++
	t.base = "" // the deltas after a snapshot have ids of their own
	e := r.event(evType, r.itemID(index, kind)+"#"+strconv.Itoa(t.snaps))
	e.ItemID = t.item
	r.stampCall(&e, index)
	e.Snapshot = next
	r.emit(e)
	t.cur = next
}

// stampCall names the tool call of an output delta.
func (r *Reconciler) stampCall(e *messages.Event, index int) {
	if e.Type == messages.EventFunctionCallOutputDelta {
		e.CallID = r.slots[index].callID
	}
}

// usage reports a model call's tokens and the conversation's running totals.
func (r *Reconciler) usage(index int, s *wire.Step, mu *wire.ModelUsage) {
	r.totalIn += int64(mu.InputTokens)
	r.totalOut += int64(mu.OutputTokens)
	e := r.event(messages.EventUsage, r.itemID(index, "usage"))
	e.Model = mu.Model
	if e.Model == "" {
		e.Model = s.Metadata.GeneratorModel
	}
	e.InputTokens = messages.Ptr(int64(mu.InputTokens))
	e.OutputTokens = messages.Ptr(int64(mu.OutputTokens))
	e.ThinkingTokens = messages.Ptr(int64(mu.ThinkingOutputTokens))
	e.ResponseTokens = messages.Ptr(int64(mu.ResponseOutputTokens))
	e.CacheReadTokens = messages.Ptr(int64(mu.CacheReadTokens))
	// What the context holds after the call: the prompt it read (agy counts
	// the cached part apart from inputTokens) and what it wrote.
	e.ContextTokens = messages.Ptr(int64(mu.InputTokens) + int64(mu.CacheReadTokens) + int64(mu.OutputTokens))
	e.TotalInputTokens = messages.Ptr(r.totalIn)
	e.TotalOutputTokens = messages.Ptr(r.totalOut)
	r.emit(e)
}
