package actors

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/agyharness/agyharness/messages"
)

// eventLog is a session's events on their way out. The session actor alone
// uses it: publish numbers an event (seq), keeps it among the last
// Config.EventLog events (for subscribers that resume after a seq), keeps
// the requests of prompts still open (for subscribers that come later), and
// hands it to every subscription, which merges lagging deltas
// (subscription.go). Only published is read elsewhere (Session.Stats).
type eventLog struct {
	sessionID string
	size      int // Config.EventLog

	seq          uint64
	ring         []logEntry        // the last size events: a ring once full
	start        int               // index of the oldest event in ring, once full
	openRequests []*messages.Event // elicitation_request events of prompts still open, as published
	resolved     map[string]bool   // elicitations that were open and have been resolved
	subs         []*Subscription
	closed       bool // no event follows (close)

	// published counts the events published; the session actor alone
	// writes it (it is seq), the embedding API reads it.
	published atomic.Uint64
}

func newEventLog(sessionID string, size int) eventLog {
	return eventLog{sessionID: sessionID, size: size}
}

// publish stamps ev with the session id and the next seq, keeps it, and
// pushes it to every subscription. It never blocks.
func (l *eventLog) publish(ev *messages.Event) {
	l.seq++
	ev.Seq = l.seq
	ev.SessionID = l.sessionID
	l.keep(ev)
	switch ev.Type {
	case messages.EventElicitationRequest:
		l.openRequests = append(l.openRequests, ev)
	case messages.EventElicitationResolved:
		if i := slices.IndexFunc(l.openRequests, func(req *messages.Event) bool { return req.ElicitationID == ev.ElicitationID }); i >= 0 {
			l.openRequests = slices.Delete(l.openRequests, i, i+1)
		}
		if l.resolved == nil {
			l.resolved = make(map[string]bool)
		}
		l.resolved[ev.ElicitationID] = true
	}
	live := l.subs[:0]
	for _, sub := range l.subs {
		if sub.push(ev) {
			live = append(live, sub)
		}
	}
	clear(l.subs[len(live):])
	l.subs = live
	l.published.Store(l.seq)
}

// openIDs lists the elicitation ids of the open prompts' requests, in the
// order they opened (never nil).
func (l *eventLog) openIDs() []string {
	ids := make([]string, len(l.openRequests))
	for i, ev := range l.openRequests {
		ids[i] = ev.ElicitationID
	}
	return ids
}

// subscribe adds sub: it gets the kept events after afterSeq, then the
// open prompts those did not carry, then every event published after.
func (l *eventLog) subscribe(sub *Subscription, afterSeq uint64) {
	if l.closed {
		sub.finish()
		return
	}
	sent := make(map[string]bool)
	for _, ev := range l.logged() {
		if ev.Seq > afterSeq {
			sub.push(ev)
			sent[ev.ID] = true
		}
	}
	for _, ev := range l.openRequests {
		if !sent[ev.ID] {
			sub.push(ev)
		}
	}
	l.subs = append(l.subs, sub)
}

// close says no event follows: each subscription drains, then closes.
func (l *eventLog) close() {
	l.closed = true
	for _, sub := range l.subs {
		sub.finish()
	}
	l.subs = nil
}

// keep keeps ev among the last size events. Once the log is full it is a
// ring: the newest event overwrites the oldest, in constant time (shifting
// the whole log per event cost every long session).
func (l *eventLog) keep(ev *messages.Event) {
	e := l.entryOf(ev)
	if len(l.ring) < l.size {
		l.ring = append(l.ring, e)
		return
	}
	l.ring[l.start] = e
	l.start = (l.start + 1) % len(l.ring)
}

// logged returns the kept events, oldest first.
func (l *eventLog) logged() []*messages.Event {
	out := make([]*messages.Event, 0, len(l.ring))
	for _, part := range [][]logEntry{l.ring[l.start:], l.ring[:l.start]} {
		for i := range part {
			out = append(out, l.eventOf(&part[i]))
		}
	}
	return out
}

// logEntry is an event as the log keeps it. A text, reasoning or tool
// output delta, most of what a streaming session publishes, is kept in the
// fields a delta has, a fraction of a whole event's size, so a log of
// streamed deltas takes about a third of the room (TestFullLogOfDeltas).
// Any other event, and a delta with any other field set, is kept whole.
type logEntry struct {
	whole  *messages.Event // nil: a delta kept in the fields below
	typ    messages.EventType
	seq    uint64
	time   time.Time
	id     string
	conv   string
	parent string
	item   string
	delta  string
	call   string // a tool output delta's call_id
}

// entryOf is ev as the log keeps it.
func (l *eventLog) entryOf(ev *messages.Event) logEntry {
	if !ev.Type.Delta() || ev.SessionID != l.sessionID || !deltaOnly(ev) ||
		(ev.CallID != "" && ev.Type != messages.EventFunctionCallOutputDelta) {
		return logEntry{whole: ev}
	}
	return logEntry{typ: ev.Type, seq: ev.Seq, time: ev.Time, id: ev.ID, conv: ev.ConversationID,
		parent: ev.ParentConversationID, item: ev.ItemID, delta: ev.Delta, call: ev.CallID}
}

// eventOf is the event a log entry keeps (a delta's, made anew).
func (l *eventLog) eventOf(e *logEntry) *messages.Event {
	if e.whole != nil {
		return e.whole
	}
	return &messages.Event{Type: e.typ, ID: e.id, SessionID: l.sessionID, ConversationID: e.conv,
		ParentConversationID: e.parent, Seq: e.seq, Time: e.time, ItemID: e.item, Delta: e.delta, CallID: e.call}
}

// deltaOnly says whether every field of ev a logEntry does not keep is
// unset (CallID is kept, for tool output deltas). (TestLogKeepsEveryFieldOfAnEvent
// sets each field of Event in turn: a field added to Event must be added here.)
func deltaOnly(ev *messages.Event) bool {
	return ev.State == "" && ev.Text == "" && ev.Origin == "" && ev.Role == "" && ev.Snapshot == "" &&
		ev.Name == "" && ev.Arguments == "" && ev.Output == "" && ev.ExitCode == nil &&
		ev.Title == "" && ev.Locations == nil && ev.Diffs == nil && ev.Hits == nil && ev.HitCount == nil && ev.URL == "" &&
		ev.ElicitationID == "" && ev.Kind == "" && ev.Questions == nil && ev.Command == nil && ev.Resource == nil &&
		ev.Choices == nil && ev.Choice == "" &&
		ev.Action == "" && ev.By == "" && ev.DeliveredStepIndex == nil &&
		ev.Interaction == "" && ev.Raw == nil && ev.RawSize == nil && ev.Elicitation == nil &&
		ev.Model == "" && ev.InputTokens == nil && ev.OutputTokens == nil && ev.ThinkingTokens == nil &&
		ev.ResponseTokens == nil && ev.CacheReadTokens == nil && ev.ContextTokens == nil &&
		ev.TotalInputTokens == nil && ev.TotalOutputTokens == nil &&
		ev.From == "" && ev.To == "" && ev.DisplayName == "" && ev.StepType == "" && ev.StepIndex == nil &&
		ev.Message == "" && ev.Retryable == nil && ev.Code == "" && ev.Final == nil &&
		ev.ToStep == nil && ev.Epoch == 0
}
