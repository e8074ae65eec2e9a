package main

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

// metrics are the host's counters, written in the Prometheus text format.
type metrics struct {
	mu            sync.Mutex
	attachedTotal uint64
	endedTotal    uint64
	events        map[messages.EventType]uint64
	errors        map[bool]uint64 // error events by retryable
	latencySum    map[string]float64
	latencyCount  map[string]uint64
	// restarts and rebinds of sessions that ended (live ones are read from
	// their Stats at scrape time).
	endedRestarts  map[string]uint64
	endedRPCErrors map[string]uint64
	endedRebinds   uint64
}

func newMetrics() *metrics {
	return &metrics{
		events:         make(map[messages.EventType]uint64),
		errors:         make(map[bool]uint64),
		latencySum:     make(map[string]float64),
		latencyCount:   make(map[string]uint64),
		endedRestarts:  make(map[string]uint64),
		endedRPCErrors: make(map[string]uint64),
	}
}

func (m *metrics) attached() {
	m.mu.Lock()
	m.attachedTotal++
	m.mu.Unlock()
}

func (m *metrics) ended(st actors.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endedTotal++
	for k, v := range st.Restarts {
		m.endedRestarts[k] += uint64(v)
	}
	for k, v := range st.RPCErrors {
		m.endedRPCErrors[k] += uint64(v)
	}
	m.endedRebinds += uint64(st.Rebinds)
}

func (m *metrics) event(ev *messages.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[ev.Type]++
	if ev.Type == messages.EventError {
		m.errors[ev.Retryable != nil && *ev.Retryable]++
	}
}

// promptLatency records how long a prompt stayed open, by who closed it.
func (m *metrics) promptLatency(by string, d time.Duration) {
	if d < 0 {
		d = 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.latencySum[by] += d.Seconds()
	m.latencyCount[by]++
}

func (s *server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	live := make([]*served, 0, len(s.sessions))
	for _, sv := range s.sessions {
		live = append(live, sv)
	}
	s.mu.Unlock()
	restarts := make(map[string]uint64)
	rpcErrors := make(map[string]uint64)
	var rebinds uint64
	for _, sv := range live {
		st := sv.sess.Stats()
		for k, v := range st.Restarts {
			restarts[k] += uint64(v)
		}
		for k, v := range st.RPCErrors {
			rpcErrors[k] += uint64(v)
		}
		rebinds += uint64(st.Rebinds)
	}

	m := s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.endedRestarts {
		restarts[k] += v
	}
	for k, v := range m.endedRPCErrors {
		rpcErrors[k] += v
	}
	rebinds += m.endedRebinds

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("# HELP agyharness_sessions Sessions attached now.")
	p("# TYPE agyharness_sessions gauge")
	p("agyharness_sessions %d", len(live))
	p("# HELP agyharness_sessions_attached_total Sessions attached since the host started.")
	p("# TYPE agyharness_sessions_attached_total counter")
	p("agyharness_sessions_attached_total %d", m.attachedTotal)
	p("# HELP agyharness_sessions_ended_total Sessions that ended (detached or failed).")
	p("# TYPE agyharness_sessions_ended_total counter")
	p("agyharness_sessions_ended_total %d", m.endedTotal)

	p("# HELP agyharness_events_total Events published, by type.")
	p("# TYPE agyharness_events_total counter")
	for _, t := range sortedKeys(m.events) {
		p("agyharness_events_total{type=%q} %d", t, m.events[messages.EventType(t)])
	}
	p("# HELP agyharness_error_events_total Error events (delivery failures, agy unreachable), by retryable.")
	p("# TYPE agyharness_error_events_total counter")
	for _, r := range []bool{false, true} {
		p("agyharness_error_events_total{retryable=\"%t\"} %d", r, m.errors[r])
	}
	p("# HELP agyharness_actor_restarts_total Child actor restarts, by actor kind.")
	p("# TYPE agyharness_actor_restarts_total counter")
	for _, k := range sortedKeys(restarts) {
		p("agyharness_actor_restarts_total{actor=%q} %d", k, restarts[k])
	}
	p("# HELP agyharness_rpc_errors_total Failed RPCs to agy, by class (port_gone, transient, input_not_registered, ...).")
	p("# TYPE agyharness_rpc_errors_total counter")
	for _, k := range sortedKeys(rpcErrors) {
		p("agyharness_rpc_errors_total{class=%q} %d", k, rpcErrors[k])
	}
	p("# HELP agyharness_rebinds_total Port re-discoveries after a session's first binding.")
	p("# TYPE agyharness_rebinds_total counter")
	p("agyharness_rebinds_total %d", rebinds)
	p("# HELP agyharness_prompt_open_seconds How long prompts stayed open, by who closed them.")
	p("# TYPE agyharness_prompt_open_seconds summary")
	for _, by := range sortedKeys(m.latencyCount) {
		p("agyharness_prompt_open_seconds_sum{by=%q} %g", by, m.latencySum[by])
		p("agyharness_prompt_open_seconds_count{by=%q} %d", by, m.latencyCount[by])
	}
}

func sortedKeys[K ~string, V any](m map[K]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}
