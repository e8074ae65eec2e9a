package actors

import (
	"encoding/json"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/agyharness/agyharness/messages"
)

// eventLog is a session's events on their way out. The session actor alone
// uses it: publish numbers an event (seq), keeps it among the last events
// (for subscribers that resume after a seq: the resume window, at most
// Config.EventLog events and Config.EventLogBytes bytes, the newest event
// always), keeps the requests of prompts still open (for subscribers that
// come later), and hands it to every subscription, which merges lagging
// deltas (subscription.go). Only published is read elsewhere
// (Session.Stats).
type eventLog struct {
	sessionID string
	size      int // Config.EventLog
	budget    int // Config.EventLogBytes (0: no bound in bytes)

	seq          uint64
	ring         []logEntry        // the kept events, a ring: n of them from start
	start, n     int               // the oldest kept event's index in ring, and how many are kept
	bytes        int               // the kept entries' bytes beyond their slots in ring (logEntry.size)
	openRequests []*messages.Event // elicitation_request events of prompts still open, as published
	resolved     map[string]bool   // elicitations that were open and have been resolved: the last maxResolved
	resolvedIDs  []string          // resolved's keys, oldest first
	subs         []*Subscription
	closed       bool // no event follows (close)

	// published counts the events published; the session actor alone
	// writes it (it is seq), the embedding API reads it.
	published atomic.Uint64
}

// DefaultEventLogBytes is Config.EventLogBytes' default.
const DefaultEventLogBytes = 256 << 10

// newEventLog keeps at most size events and budget bytes (0: no bound in
// bytes).
func newEventLog(sessionID string, size, budget int) eventLog {
	return eventLog{sessionID: sessionID, size: size, budget: budget}
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
		l.noteResolved(ev.ElicitationID)
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

// maxResolved bounds the resolved prompts the log remembers (to tell an
// answer to one from an answer to a prompt never asked): the latest ones.
const maxResolved = 1024

// noteResolved remembers that the prompt id was resolved, forgetting the
// oldest past maxResolved.
func (l *eventLog) noteResolved(id string) {
	if l.resolved == nil {
		l.resolved = make(map[string]bool)
	}
	if l.resolved[id] {
		return
	}
	if len(l.resolvedIDs) == maxResolved {
		delete(l.resolved, l.resolvedIDs[0])
		l.resolvedIDs = slices.Delete(l.resolvedIDs, 0, 1)
	}
	l.resolved[id] = true
	l.resolvedIDs = append(l.resolvedIDs, id)
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

// keep keeps ev, the newest event, and lets go of the oldest ones past
// the log's bounds: size events, and budget bytes (the ring's slots and
// what the kept entries hold beyond them, as entryBytes estimates it). The
// ring grows only while the budget has room for its larger slice, so its
// slots count too; adding and letting go are constant time.
func (l *eventLog) keep(ev *messages.Event) {
	e := l.entryOf(ev)
	for l.n > 0 {
		need := len(l.ring)
		if l.n == need {
			need = l.grown()
		}
		if l.n < l.size && (l.budget <= 0 || need*logEntrySize+l.bytes+e.size <= l.budget) {
			break
		}
		l.dropOldest()
	}
	if l.n == len(l.ring) {
		ring := make([]logEntry, l.grown())
		for i := range l.n {
			ring[i] = l.ring[(l.start+i)%len(l.ring)]
		}
		l.ring, l.start = ring, 0
	}
	l.ring[(l.start+l.n)%len(l.ring)] = e
	l.n++
	l.bytes += e.size
}

// grown is the ring's length once it grows: twice as many slots, within
// size and what budget has room for (one slot at least).
func (l *eventLog) grown() int {
	n := min(l.size, max(16, 2*len(l.ring)))
	if l.budget > 0 {
		n = min(n, max(1, l.budget/logEntrySize))
	}
	return max(n, len(l.ring)+1)
}

// dropOldest lets go of the oldest kept event.
func (l *eventLog) dropOldest() {
	l.bytes -= l.ring[l.start].size
	l.ring[l.start] = logEntry{}
	l.start = (l.start + 1) % len(l.ring)
	l.n--
}

// logged returns the kept events, oldest first.
func (l *eventLog) logged() []*messages.Event {
	out := make([]*messages.Event, 0, l.n)
	for i := range l.n {
		out = append(out, l.eventOf(&l.ring[(l.start+i)%len(l.ring)]))
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
	size   int    // what it holds beyond its slot (entryBytes)
}

// logEntrySize is a logEntry's slot in the ring.
const logEntrySize = int(unsafe.Sizeof(logEntry{}))

// eventSize is an Event's struct alone.
const eventSize = int(unsafe.Sizeof(messages.Event{}))

// entryBytes estimates what e holds beyond its slot: a delta's strings, or
// a whole event's struct and texts (its structured parts, rare, by their
// JSON's length). Strings it shares with other events (the ids of the
// session, the conversation and the item) are counted for each, so the
// estimate errs high.
func entryBytes(e *logEntry) int {
	ev := e.whole
	if ev == nil {
		return len(e.id) + len(e.item) + len(e.delta) + len(e.call)
	}
	n := eventSize + len(ev.ID) + len(ev.ItemID) + len(ev.Text) + len(ev.Delta) + len(ev.Snapshot) +
		len(ev.CallID) + len(ev.Name) + len(ev.Arguments) + len(ev.Output) + len(ev.Title) + len(ev.URL) +
		len(ev.Message) + len(ev.Raw) + len(ev.DisplayName) + len(ev.Model) + len(ev.From) + len(ev.To)
	if ev.Locations != nil || ev.Diffs != nil || ev.Hits != nil || ev.Questions != nil || ev.Command != nil ||
		ev.Resource != nil || ev.Choices != nil || ev.Elicitation != nil {
		b, _ := json.Marshal(struct {
			L []messages.Location      `json:"l"`
			D []messages.FileDiff      `json:"d"`
			H []messages.Hit           `json:"h"`
			Q []messages.Question      `json:"q"`
			C *messages.CommandLine    `json:"c"`
			R *messages.Resource       `json:"r"`
			O []messages.Choice        `json:"o"`
			E *messages.MCPElicitation `json:"e"`
		}{ev.Locations, ev.Diffs, ev.Hits, ev.Questions, ev.Command, ev.Resource, ev.Choices, ev.Elicitation})
		n += len(b)
	}
	return n
}

// entryOf is ev as the log keeps it.
func (l *eventLog) entryOf(ev *messages.Event) logEntry {
	e := logEntry{whole: ev}
	if ev.Type.Delta() && ev.SessionID == l.sessionID && deltaOnly(ev) &&
		(ev.CallID == "" || ev.Type == messages.EventFunctionCallOutputDelta) {
		e = logEntry{typ: ev.Type, seq: ev.Seq, time: ev.Time, id: ev.ID, conv: ev.ConversationID,
			parent: ev.ParentConversationID, item: ev.ItemID, delta: ev.Delta, call: ev.CallID}
	}
	e.size = entryBytes(&e)
	return e
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
