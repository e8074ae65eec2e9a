package httphost

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agyharness/agyharness/hostcluster"
	"github.com/agyharness/agyharness/wire"
)

// Tickets let a browser's EventSource, which cannot send a header, open an
// event stream: an authenticated POST /v1/tickets mints one, and an SSE
// endpoint takes it as ?ticket=. A ticket is good for ticketTTL and for one
// stream: the first stream it opens binds it to that stream's path, and
// then it reopens that stream alone (an EventSource's own reconnect, which
// sends Last-Event-ID to the same URL), up to ticketTTL after the stream
// it opened last ended; a reopen ends the stream still open with it, so a
// ticket holds one stream at a time. Only its digest is kept.

// ticketTTL is how long a ticket is good for; maxTickets bounds those
// kept (the oldest is dropped to mint one more).
var (
	ticketTTL  = 20 * time.Second
	maxTickets = 1024
)

type tickets struct {
	ttl  time.Duration // 0: ticketTTL
	mu   sync.Mutex
	m    map[[32]byte]*ticket // by digest
	now  func() time.Time
	last uint64 // the last stream opened with a ticket
}

// ticket is one minted ticket.
type ticket struct {
	expires time.Time          // zero while a stream is open with it
	path    string             // the stream it opened ("": unused)
	stream  uint64             // the stream open with it now (0: none)
	cancel  context.CancelFunc // ends that stream
}

func (t *tickets) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

func (t *tickets) lifetime() time.Duration {
	if t.ttl > 0 {
		return t.ttl
	}
	return ticketTTL
}

// mint makes a ticket.
func (t *tickets) mint() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tk := hex.EncodeToString(b)
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[[32]byte]*ticket)
	}
	for k, tc := range t.m {
		if tc.stream == 0 && !now.Before(tc.expires) {
			delete(t.m, k)
		}
	}
	if len(t.m) >= maxTickets {
		// The one expiring first, or, with every ticket holding a stream,
		// any (its stream goes on; only its reopening is lost).
		first := func(a, b *ticket) bool { // a is dropped before b
			if (a.stream == 0) != (b.stream == 0) {
				return a.stream == 0
			}
			return a.expires.Before(b.expires)
		}
		var oldest [32]byte
		var at *ticket
		for k, tc := range t.m {
			if at == nil || first(tc, at) {
				oldest, at = k, tc
			}
		}
		delete(t.m, oldest)
	}
	t.m[sha256.Sum256([]byte(tk))] = &ticket{expires: now.Add(t.lifetime())}
	return tk, nil
}

// use spends a ticket that never opened a stream (a sign-in code): true
// once, if it is good.
func (t *tickets) use(tk string) bool {
	if tk == "" {
		return false
	}
	h := sha256.Sum256([]byte(tk))
	t.mu.Lock()
	defer t.mu.Unlock()
	tc, ok := t.m[h]
	delete(t.m, h)
	return ok && tc.path == "" && t.clock().Before(tc.expires)
}

// open lets a stream at path in with tk: an unused ticket, or one whose
// stream is at path and that is still good. cancel ends the stream: a
// later reopen with the ticket calls it. release, when the stream ends,
// starts the ticket's last ticketTTL.
func (t *tickets) open(tk, path string, cancel context.CancelFunc) (release func(), ok bool) {
	if tk == "" {
		return nil, false
	}
	h := sha256.Sum256([]byte(tk))
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	tc, ok := t.m[h]
	switch {
	case !ok:
		return nil, false
	case tc.stream == 0 && !now.Before(tc.expires), tc.path != "" && tc.path != path:
		delete(t.m, h) // expired, or shown for another stream: spent
		return nil, false
	}
	if tc.cancel != nil {
		tc.cancel()
	}
	t.last++
	id := t.last
	tc.path, tc.stream, tc.cancel, tc.expires = path, id, cancel, time.Time{}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if tc.stream == id {
			tc.stream, tc.cancel = 0, nil
			tc.expires = t.clock().Add(t.lifetime())
		}
	}, true
}

// mintTicket is POST /v1/tickets.
func (s *server) mintTicket(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > 0 {
		var empty struct{}
		if !decodeBody(w, r, &empty) {
			return
		}
	}
	bodyRead(w)
	tk, err := s.tickets.mint()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "ticket: "+err.Error())
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]any{"ticket": tk, "expires_in": int(ticketTTL / time.Second)})
}

// authOrTicket lets an event stream in with the bearer token, or with a
// good ?ticket= (bound to this stream by this request, tickets.open).
func (s *server) authOrTicket(next http.Handler) http.Handler {
	withToken := s.auth(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tk := r.URL.Query().Get("ticket")
		if tk == "" || r.Header.Get("Authorization") != "" {
			withToken.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		release, ok := s.tickets.open(tk, r.URL.Path, cancel)
		if !ok {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusUnauthorized, "unknown, used or expired ticket: mint another (POST /v1/tickets)")
			return
		}
		defer release()
		markAuthenticated(r)
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, ticketKey{}, true)))
	})
}

// ticketKey marks a stream opened with a ticket: a browser's EventSource.
type ticketKey struct{}

// sseRetry is the reconnection delay an EventSource is given (the SSE
// "retry:" field), in milliseconds: its own default is about 3 s.
const sseRetry = 1000

// ModelView is one of agy's models, as GET /v1/sessions/{id}/models lists them.
type ModelView struct {
	Model            string `json:"model"`
	DisplayName      string `json:"display_name,omitempty"`
	Recommended      bool   `json:"recommended,omitempty"`
	SupportsThinking bool   `json:"supports_thinking,omitempty"`
}

// modelList is GET /v1/sessions/{id}/models' answer; maxModels bounds the
// models of another node's answer.
type modelList struct {
	Models []ModelView `json:"models"`
}

const maxModels = 1024

// getModels is GET /v1/sessions/{id}/models: the models a turn of this
// session may name, [] until the session has read agy's catalog; those of
// a session of another node are read from its node.
func (s *server) getModels(w http.ResponseWriter, r *http.Request, sess servedSession) {
	if p, ok := sess.(*proxySession); ok {
		var m modelList
		if s.readRemote(w, r, p, hostcluster.ReadModels, &m) {
			if m.Models == nil {
				m.Models = []ModelView{}
			}
			writeJSON(w, http.StatusOK, m)
		}
		return
	}
	out := []ModelView{}
	if m, ok := sess.(interface{ Models() []wire.ModelInfo }); ok {
		for _, mi := range m.Models() {
			out = append(out, ModelView{Model: mi.Model, DisplayName: mi.DisplayName, Recommended: mi.Recommended, SupportsThinking: mi.SupportsThinking})
		}
	}
	slices.SortFunc(out, func(a, b ModelView) int {
		switch {
		case a.Model < b.Model:
			return -1
		case a.Model > b.Model:
			return 1
		}
		return 0
	})
	writeJSON(w, http.StatusOK, modelList{Models: out})
}
