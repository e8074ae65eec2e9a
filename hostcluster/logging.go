package hostcluster

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// quietHandler is the handler of Proto.Actor's logs. It passes a record on
// at most once per interval for each message: Proto.Actor's cluster logs
// the same failure each time it tries (automanaged asks an absent peer twice
// a second, at ERROR), which would bury the host's own logs while a node is
// down. Once its generation leaves (leaving), it passes warnings and errors
// on at INFO, marked leaving=true: Proto.Actor logs its own orderly stop as
// failures ("Automanaged server stopping..!" with "http: Server closed", an
// endpoint writer's "lost connection" to a connection it is closing), which
// would read as faults of a node that was told to stop.
type quietHandler struct {
	next     slog.Handler
	interval time.Duration
	now      func() time.Time
	state    *quietState
}

type quietState struct {
	mu      sync.Mutex
	last    map[string]time.Time
	leaving atomic.Bool
}

// leave marks what is logged from now on as the generation's leaving.
func (h *quietHandler) leave() { h.state.leaving.Store(true) }

func newQuietHandler(next slog.Handler, interval time.Duration) *quietHandler {
	return &quietHandler{next: next, interval: interval, now: time.Now, state: &quietState{last: make(map[string]time.Time)}}
}

func (h *quietHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *quietHandler) Handle(ctx context.Context, r slog.Record) error {
	now := h.now()
	h.state.mu.Lock()
	last, seen := h.state.last[r.Message]
	pass := !seen || now.Sub(last) >= h.interval
	if pass {
		h.state.last[r.Message] = now
		if len(h.state.last) > 1024 { // messages are constant texts; bound it all the same
			clear(h.state.last)
		}
	}
	h.state.mu.Unlock()
	if !pass {
		return nil
	}
	if r.Level > slog.LevelInfo && h.state.leaving.Load() {
		if !h.next.Enabled(ctx, slog.LevelInfo) {
			return nil
		}
		r = r.Clone()
		r.Level = slog.LevelInfo
		r.AddAttrs(slog.Bool("leaving", true))
	}
	return h.next.Handle(ctx, r)
}

func (h *quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &quietHandler{next: h.next.WithAttrs(attrs), interval: h.interval, now: h.now, state: h.state}
}

func (h *quietHandler) WithGroup(name string) slog.Handler {
	return &quietHandler{next: h.next.WithGroup(name), interval: h.interval, now: h.now, state: h.state}
}
