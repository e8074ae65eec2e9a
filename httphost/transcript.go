package httphost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agyharness/agyharness/hostcluster"

	"github.com/agyharness/agyharness/messages"
)

// A session's transcript (GET /v1/sessions/{id}/transcript): the whole
// conversation since the host attached the session, folded by the
// session's watcher from the session's own stream, which holds every event
// from the start (the bounded event log a subscription replays does not).
// The deltas of an item are folded into one event carrying the item's text
// so far as its snapshot; once the item is complete (its message, its
// tool output) the folded delta gives way to it. Statuses are not kept:
// the last one is the transcript's state.

// maxTranscript bounds a transcript's text, in bytes: past it the oldest
// entries are dropped and the transcript says it is truncated.
var maxTranscript = 16 << 20

// Transcript is GET /v1/sessions/{id}/transcript's answer. Through is
// the seq of the last event folded in: a client streams the events after
// it (GET .../events with Last-Event-ID: Through).
type Transcript struct {
	SessionID string            `json:"session_id"`
	Through   uint64            `json:"through"`
	State     string            `json:"state,omitempty"`
	Truncated bool              `json:"truncated"`
	Events    []*messages.Event `json:"events"`
}

type transcript struct {
	mu        sync.Mutex
	entries   []*messages.Event // nil: dropped (folded away)
	live      int               // entries not nil
	byItem    map[string]int    // a folded delta's key -> its entry
	size      int
	through   uint64
	state     string
	truncated bool
}

func newTranscript() *transcript { return &transcript{byItem: make(map[string]int)} }

func deltaKey(ev *messages.Event) string {
	return string(ev.Type) + "\x00" + ev.CallID + "\x00" + ev.ItemID
}

func eventSize(ev *messages.Event) int {
	n := 256 + len(ev.Text) + len(ev.Snapshot) + len(ev.Delta) + len(ev.Arguments) + len(ev.Output)
	for _, d := range ev.Diffs {
		n += len(d.NewText) + len(d.Unified)
		if d.OldText != nil {
			n += len(*d.OldText)
		}
	}
	for _, h := range ev.Hits {
		n += len(h.Path) + len(h.Text)
	}
	for _, q := range ev.Questions {
		n += len(q.Question)
		for _, o := range q.Options {
			n += len(o.Text)
		}
	}
	return n
}

func (t *transcript) append(ev *messages.Event) {
	t.entries = append(t.entries, ev)
	t.live++
	t.size += eventSize(ev)
}

// drop folds entry i away.
func (t *transcript) drop(i int) {
	if ev := t.entries[i]; ev != nil {
		t.size -= eventSize(ev)
		t.entries[i] = nil
		t.live--
	}
}

// add folds one event in.
func (t *transcript) add(ev *messages.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.through = max(t.through, ev.Seq)
	switch {
	case ev.Type == messages.EventStatus:
		if ev.ParentConversationID == "" {
			t.state = ev.State
		}
		return
	case ev.Type.Delta():
		key := deltaKey(ev)
		if i, ok := t.byItem[key]; ok && t.entries[i] != nil {
			old := t.entries[i]
			text := old.Snapshot + ev.Delta
			if ev.Snapshot != "" || ev.Delta == "" {
				text = ev.Snapshot
			}
			folded := *ev
			folded.Delta, folded.Snapshot = "", text
			t.size += len(text) - len(old.Snapshot)
			t.entries[i] = &folded
			return
		}
		folded := *ev
		if folded.Snapshot == "" {
			folded.Snapshot, folded.Delta = ev.Delta, ""
		} else {
			folded.Delta = ""
		}
		t.byItem[key] = len(t.entries)
		t.append(&folded)
	case ev.Type == messages.EventMessage:
		t.complete(string(messages.EventOutputTextDelta) + "\x00" + "\x00" + ev.ItemID)
		t.append(ev)
	case ev.Type == messages.EventFunctionCallOutput:
		for key, i := range t.byItem {
			if e := t.entries[i]; e != nil && e.Type == messages.EventFunctionCallOutputDelta && e.CallID == ev.CallID {
				t.drop(i)
				delete(t.byItem, key)
			}
		}
		t.append(ev)
	default:
		t.append(ev)
	}
	t.bound()
}

// complete drops the folded delta of key: its item is complete.
func (t *transcript) complete(key string) {
	if i, ok := t.byItem[key]; ok {
		t.drop(i)
		delete(t.byItem, key)
	}
}

// bound drops the oldest entries past maxTranscript, and compacts the
// entries when most are dropped.
func (t *transcript) bound() {
	for i := 0; t.size > maxTranscript && i < len(t.entries); i++ {
		if t.entries[i] != nil {
			t.drop(i)
			t.truncated = true
		}
	}
	if len(t.entries) > 64 && t.live < len(t.entries)/2 {
		kept := make([]*messages.Event, 0, t.live)
		clear(t.byItem)
		for _, ev := range t.entries {
			if ev == nil {
				continue
			}
			if ev.Type.Delta() {
				t.byItem[deltaKey(ev)] = len(kept)
			}
			kept = append(kept, ev)
		}
		t.entries = kept
	}
}

// snapshot is the transcript now.
func (t *transcript) snapshot(sessionID string) Transcript {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := Transcript{SessionID: sessionID, Through: t.through, State: t.state, Truncated: t.truncated,
		Events: make([]*messages.Event, 0, t.live)}
	for _, ev := range t.entries {
		if ev != nil {
			out.Events = append(out.Events, ev)
		}
	}
	return out
}

// transcripts are the transcripts of the sessions this server attached.
type transcripts struct {
	mu sync.Mutex
	m  map[string]*transcript
}

func (ts *transcripts) start(id string) *transcript {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = make(map[string]*transcript)
	}
	t := newTranscript()
	ts.m[id] = t
	return t
}

func (ts *transcripts) end(id string, t *transcript) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m[id] == t {
		delete(ts.m, id)
	}
}

func (ts *transcripts) get(id string) (*transcript, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.m[id]
	return t, ok
}

// getTranscript is GET /v1/sessions/{id}/transcript; a session of another
// node of a cluster has its transcript read from its node. A session whose
// node keeps none: 404 with "code": "no_transcript" (its events stream
// from the start of its bounded log instead).
func (s *server) getTranscript(w http.ResponseWriter, r *http.Request, sess servedSession) {
	if p, ok := sess.(*proxySession); ok {
		var tr Transcript
		if s.readRemote(w, r, p, hostcluster.ReadTranscript, &tr) {
			if tr.Events == nil {
				tr.Events = []*messages.Event{}
			}
			writeJSON(w, http.StatusOK, tr)
		}
		return
	}
	t, ok := s.transcripts.get(sess.ID())
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no transcript of this session on this node: stream its events", "code": "no_transcript"})
		return
	}
	writeJSON(w, http.StatusOK, t.snapshot(sess.ID()))
}

// remoteReadTimeout bounds reading a document of another node's session.
const remoteReadTimeout = 30 * time.Second

// readRemote reads a document of another node's session into out (at most
// hostcluster.MaxDocument bytes, checked to be what was asked for) or
// writes why not; it reports whether out is read.
func (s *server) readRemote(w http.ResponseWriter, r *http.Request, p *proxySession, what string, out any) bool {
	bodyRead(w)
	ctx, cancel := context.WithTimeout(r.Context(), remoteReadTimeout)
	defer cancel()
	data, err := s.cluster.Read(ctx, p.info.Node, p.info.Id, what)
	if err != nil {
		clusterError(w, err)
		return false
	}
	err = json.Unmarshal(data, out)
	if tr, ok := out.(*Transcript); ok && err == nil && tr.SessionID != p.info.Id {
		err = fmt.Errorf("the transcript of session %q", tr.SessionID)
	}
	if m, ok := out.(*modelList); ok && err == nil && len(m.Models) > maxModels {
		err = fmt.Errorf("%d models, over %d", len(m.Models), maxModels)
	}
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("node %q sent a %s that is not one: %v", p.info.Node, what, err))
		return false
	}
	return true
}
