package httphost

import (
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
// stream; only its digest is kept.

// ticketTTL is how long a ticket is good for; maxTickets bounds those
// outstanding (the oldest is dropped to mint one more).
var (
	ticketTTL  = 20 * time.Second
	maxTickets = 1024
)

type tickets struct {
	ttl time.Duration // 0: ticketTTL
	mu  sync.Mutex
	m   map[[32]byte]time.Time // digest -> expiry
	now func() time.Time
}

func (t *tickets) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
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
		t.m = make(map[[32]byte]time.Time)
	}
	for k, exp := range t.m {
		if !now.Before(exp) {
			delete(t.m, k)
		}
	}
	if len(t.m) >= maxTickets {
		var oldest [32]byte
		var at time.Time
		for k, exp := range t.m {
			if at.IsZero() || exp.Before(at) {
				oldest, at = k, exp
			}
		}
		delete(t.m, oldest)
	}
	ttl := t.ttl
	if ttl <= 0 {
		ttl = ticketTTL
	}
	t.m[sha256.Sum256([]byte(tk))] = now.Add(ttl)
	return tk, nil
}

// use spends a ticket: true once, if it is good.
func (t *tickets) use(tk string) bool {
	if tk == "" {
		return false
	}
	h := sha256.Sum256([]byte(tk))
	t.mu.Lock()
	defer t.mu.Unlock()
	exp, ok := t.m[h]
	delete(t.m, h)
	return ok && t.clock().Before(exp)
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

// authOrTicket lets a request in with the bearer token, or with a good
// ?ticket= (spent by this request).
func (s *server) authOrTicket(next http.Handler) http.Handler {
	withToken := s.auth(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tk := r.URL.Query().Get("ticket")
		if tk == "" || r.Header.Get("Authorization") != "" {
			withToken.ServeHTTP(w, r)
			return
		}
		if !s.tickets.use(tk) {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusUnauthorized, "unknown, used or expired ticket: mint another (POST /v1/tickets)")
			return
		}
		markAuthenticated(r)
		next.ServeHTTP(w, r)
	})
}

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
