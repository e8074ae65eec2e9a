package httphost

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agyharness/agyharness/hostcluster"
	"github.com/agyharness/agyharness/messages"
)

// The board: one row per session of the host, kept by the session
// watchers from the events they read, streamed to every board client as
// rows change (GET /v1/board, docs/HTTP.md). One stream for the whole
// host: a browser holds about six connections per host over HTTP/1.1.

// Board states beyond a status event's: a session whose node does not
// answer, and one still waiting for its first status.
const (
	BoardStarting = "starting"
)

// maxTitle bounds a row's title (agy's first turn), in runes.
const maxTitle = 120

// BoardRow is one session on the board.
type BoardRow struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversation_id"`
	Port           int    `json:"port"`
	// Node is the session's node in a cluster.
	Node string `json:"node,omitempty"`
	// State is the session's last status (running, waiting, idle, error,
	// no_conversation), starting before its first, or node_lost.
	State        string    `json:"state"`
	Model        string    `json:"model,omitempty"`
	OpenPrompts  int       `json:"open_prompts"`
	LastActivity time.Time `json:"last_activity"`
	// Title is the session's first user turn, cut to 120 characters.
	Title   string    `json:"title,omitempty"`
	Created time.Time `json:"created"`
	Events  uint64    `json:"events"`
}

// board holds the rows and tells its clients which changed.
type board struct {
	mu      sync.Mutex
	rows    map[string]*BoardRow
	clients map[*boardClient]struct{}
}

// boardClient is one board stream: the ids changed since it last looked,
// and a signal (capacity 1) that some did. Updates never wait for a
// client: they mark the id and signal.
type boardClient struct {
	dirty  map[string]bool
	notify chan struct{}
}

func newBoard() *board {
	return &board{rows: make(map[string]*BoardRow), clients: make(map[*boardClient]struct{})}
}

// changedLocked marks id changed for every client.
func (b *board) changedLocked(id string) {
	for c := range b.clients {
		c.dirty[id] = true
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
}

// add puts a session on the board.
func (b *board) add(row BoardRow) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if row.State == "" {
		row.State = BoardStarting
	}
	b.rows[row.ID] = &row
	b.changedLocked(row.ID)
}

// row is a session's row now.
func (b *board) row(id string) (BoardRow, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[id]
	if !ok {
		return BoardRow{}, false
	}
	return *r, true
}

// remove takes a session off the board.
func (b *board) remove(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.rows, id)
	b.changedLocked(id)
}

// event folds one of the session's events into its row.
func (b *board) event(id string, ev *messages.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[id]
	if !ok {
		return
	}
	changed := true
	switch ev.Type {
	case messages.EventStatus:
		if ev.ParentConversationID != "" { // a subagent's status is not the session's
			changed = false
			break
		}
		r.State = ev.State
	case messages.EventUserMessage:
		if r.Title == "" {
			r.Title = cutRunes(strings.Join(strings.Fields(ev.Text), " "), maxTitle)
		}
	case messages.EventUsage:
		changed = ev.Model != "" && ev.Model != r.Model
		if changed {
			r.Model = ev.Model
		}
	case messages.EventModelChanged:
		r.Model = ev.To
	case messages.EventElicitationRequest:
		r.OpenPrompts++
	case messages.EventElicitationResolved:
		r.OpenPrompts = max(r.OpenPrompts-1, 0)
	case messages.EventConversationRotated:
		r.ConversationID = ev.To
	default:
		// Deltas and the rest move only the activity and the count: a
		// client sees them with the next change, not one update each.
		changed = false
	}
	if !ev.Time.IsZero() {
		r.LastActivity = ev.Time.UTC()
	}
	r.Events = max(r.Events, ev.Seq)
	if changed {
		b.changedLocked(id)
	}
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// subscribe adds a client; every row counts as changed for it.
func (b *board) subscribe() *boardClient {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &boardClient{dirty: make(map[string]bool), notify: make(chan struct{}, 1)}
	for id := range b.rows {
		c.dirty[id] = true
	}
	c.notify <- struct{}{}
	b.clients[c] = struct{}{}
	return c
}

func (b *board) unsubscribe(c *boardClient) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.clients, c)
}

// take returns what changed for c since it last took: the rows now (ids
// in order), and the ids gone.
func (b *board) take(c *boardClient) (rows []BoardRow, gone []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(c.dirty)) {
		if r, ok := b.rows[id]; ok {
			rows = append(rows, *r)
		} else {
			gone = append(gone, id)
		}
	}
	clear(c.dirty)
	return rows, gone
}

// boardStream is GET /v1/board: SSE of "event: session" (a row, whole)
// and "event: gone" ({"id"}), every row first, then "event: ready", then
// each change. In a cluster the other nodes' sessions are listed every
// clusterBoardEvery and sent as rows with their node: each node lists its
// sessions with their rows (remoteRow), and a node that does not answer
// has its sessions' rows sent as node_lost.
func (s *server) boardStream(w http.ResponseWriter, r *http.Request) {
	bodyRead(w)
	c := s.board.subscribe()
	defer s.board.unsubscribe(c)
	out, stop, ok := s.openSSE(w, r, "board")
	defer stop()
	if !ok {
		return
	}
	tick := time.NewTicker(s.cfg.heartbeat)
	defer tick.Stop()
	var remote <-chan time.Time
	remoteRows := map[string]BoardRow{}
	if s.cluster != nil {
		rt := time.NewTicker(clusterBoardEvery)
		defer rt.Stop()
		remote = rt.C
	}
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return out.write(fmt.Sprintf("event: %s\ndata: %s\n\n", event, b))
	}
	ready := false
	sendRemote := func() error {
		if s.cluster == nil {
			return nil
		}
		seen := map[string]bool{}
		for _, cs := range s.cluster.Sessions(r.Context()) {
			if cs.Info.Node == s.cluster.Name() {
				continue
			}
			row := remoteRow(cs)
			seen[row.ID] = true
			if old, ok := remoteRows[row.ID]; ok && old == row {
				continue
			}
			remoteRows[row.ID] = row
			if err := send("session", row); err != nil {
				return err
			}
		}
		for id := range remoteRows {
			if !seen[id] {
				delete(remoteRows, id)
				if err := send("gone", map[string]string{"id": id}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	const end = "event: end\ndata: {}\n\n"
	for {
		select {
		case <-c.notify:
			rows, gone := s.board.take(c)
			for i := range rows {
				if s.cluster != nil {
					rows[i].Node = s.cluster.Name()
				}
				if send("session", rows[i]) != nil {
					return
				}
			}
			for _, id := range gone {
				if send("gone", map[string]string{"id": id}) != nil {
					return
				}
			}
			if !ready {
				ready = true
				if sendRemote() != nil || out.write("event: ready\ndata: {}\n\n") != nil {
					return
				}
			}
		case <-remote:
			if sendRemote() != nil {
				return
			}
		case <-tick.C:
			if out.write(": ping\n\n") != nil {
				return
			}
		case <-r.Context().Done():
			if s.base.Err() != nil {
				_ = out.write(end)
			}
			return
		}
	}
}

// maxRemoteModel bounds the model name of another node's row, in runes.
const maxRemoteModel = 200

// remoteRow is the board row of another node's session, from its node's
// listing: the row its node keeps (a node of a release before rows gives
// none: live), its state node_lost when the node does not answer now. What
// another node sends is bounded here as the owner bounds it.
func remoteRow(cs hostcluster.ClusterSession) BoardRow {
	info := cs.Info
	v := viewOfInfo(info)
	row := BoardRow{ID: v.ID, ConversationID: v.ConversationID, Port: v.Port, Node: v.Node,
		State: boardState(info.State), Model: cutRunes(info.Model, maxRemoteModel), Title: cutRunes(info.Title, maxTitle),
		OpenPrompts: len(v.OpenPrompts), LastActivity: v.Created, Created: v.Created, Events: v.Events}
	if info.LastActivityUnixNano > 0 {
		row.LastActivity = time.Unix(0, info.LastActivityUnixNano).UTC()
	}
	if cs.Lost {
		row.State = SessionNodeLost
	}
	return row
}

// boardState is a state another node sent, if it is one a row has.
func boardState(state string) string {
	switch state {
	case messages.StateRunning, messages.StateWaiting, messages.StateIdle, messages.StateError,
		messages.StateNoConversation, BoardStarting:
		return state
	}
	return SessionLive
}

// clusterBoardEvery is how often a board stream lists the other nodes'
// sessions.
var clusterBoardEvery = 2 * time.Second
