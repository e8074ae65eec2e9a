package httphost

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

// Buckets of the histograms, in seconds. A prompt stays open while a person
// reads it: from a fraction of a second to an hour. An event reaches a
// subscriber in a millisecond or so on an idle host, in seconds on an
// overloaded one.
var (
	promptOpenBuckets   = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	eventLatencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 14) // 0.5 ms to 4.1 s
)

// metrics are the host's Prometheus metrics (GET /metrics): what the
// session watchers count, the live sessions' counters read at scrape time,
// and the Go runtime's and the process's collectors.
type metrics struct {
	host     hostAPI
	registry *prometheus.Registry

	attachedTotal prometheus.Counter
	endedTotal    prometheus.Counter
	events        *prometheus.CounterVec   // by type
	errorEvents   *prometheus.CounterVec   // by retryable
	agyErrors     *prometheus.CounterVec   // errors agy showed the user, by code and final
	promptOpen    *prometheus.HistogramVec // by who closed the prompt
	eventLatency  prometheus.Histogram

	// The restarts, RPC errors and rebinds of sessions that ended; a live
	// session's are read from its Stats at scrape time. mu is held over a
	// whole scrape, so a session that ends during one is counted once.
	mu             sync.Mutex
	endedRestarts  map[string]uint64
	endedRPCErrors map[string]uint64
	endedRebinds   uint64
}

var (
	sessionsDesc  = prometheus.NewDesc("agyharness_sessions", "Sessions attached now.", nil, nil)
	restartsDesc  = prometheus.NewDesc("agyharness_actor_restarts_total", "Child actor restarts, by actor kind.", []string{"actor"}, nil)
	rpcErrorsDesc = prometheus.NewDesc("agyharness_rpc_errors_total",
		"Failed RPCs to agy, by class (port_gone, transient, input_not_registered, ...).", []string{"class"}, nil)
	rebindsDesc = prometheus.NewDesc("agyharness_rebinds_total", "Port re-discoveries after a session's first binding.", nil, nil)
)

func newMetrics(host hostAPI) *metrics {
	m := &metrics{
		host:     host,
		registry: prometheus.NewRegistry(),
		attachedTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agyharness_sessions_attached_total", Help: "Sessions attached since the host started."}),
		endedTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agyharness_sessions_ended_total", Help: "Sessions that ended (detached or failed)."}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agyharness_events_total", Help: "Events published, by type."}, []string{"type"}),
		errorEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agyharness_error_events_total", Help: "Error events (delivery failures, agy unreachable), by retryable."},
			[]string{"retryable"}),
		agyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agyharness_agy_errors_total",
			Help: "Errors agy showed the user (quota, usage limit, provider failures), by code; final=false counts the notices of attempts agy retried."},
			[]string{"code", "final"}),
		promptOpen: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agyharness_prompt_open_seconds", Help: "How long prompts stayed open, by who closed them.",
			Buckets: promptOpenBuckets}, []string{"by"}),
		eventLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agyharness_event_latency_seconds",
			Help:    "From the read of agy's frame or steps that made an event to the event's arrival at the host's own subscriber.",
			Buckets: eventLatencyBuckets}),
		endedRestarts:  make(map[string]uint64),
		endedRPCErrors: make(map[string]uint64),
	}
	for _, retryable := range []bool{false, true} {
		m.errorEvents.WithLabelValues(strconv.FormatBool(retryable))
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.attachedTotal, m.endedTotal, m.events, m.errorEvents, m.agyErrors, m.promptOpen, m.eventLatency,
		liveFigures{m},
	)
	return m
}

// handler serves the metrics in the Prometheus text format (or another the
// scraper asks for).
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

func (m *metrics) attached() { m.attachedTotal.Inc() }

// follow reads sess's events until its stream ends: it counts them, times
// their delivery, and times each prompt from its request to its
// resolution (asked holds the request times of prompts not yet resolved,
// for that alone: which prompts are open is the session's to say). Once
// the session is done, its counters move to the ended totals.
func (m *metrics) follow(sess servedSession, also func(*messages.Event)) {
	asked := make(map[string]time.Time)
	events, done := sess.Events(), sess.Done()
	ended := false
	end := func() {
		if !ended {
			ended = true
			m.ended(sess.Stats())
		}
	}
	for events != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			m.event(ev, time.Now(), asked)
			also(ev)
		case <-done:
			done = nil
			end()
		}
	}
	end()
}

func (m *metrics) event(ev *messages.Event, now time.Time, asked map[string]time.Time) {
	m.events.WithLabelValues(string(ev.Type)).Inc()
	if ev.Type == messages.EventError {
		m.errorEvents.WithLabelValues(strconv.FormatBool(ev.Retryable != nil && *ev.Retryable)).Inc()
		if ev.ShownByAgy() {
			m.agyErrors.WithLabelValues(errorCodeLabel(ev.Code), strconv.FormatBool(ev.Final == nil || *ev.Final)).Inc()
		}
	}
	if !ev.Time.IsZero() {
		m.eventLatency.Observe(max(now.Sub(ev.Time), 0).Seconds())
	}
	switch ev.Type {
	case messages.EventElicitationRequest:
		asked[ev.ElicitationID] = ev.Time
	case messages.EventElicitationResolved:
		if at, ok := asked[ev.ElicitationID]; ok {
			m.promptOpen.WithLabelValues(ev.By).Observe(max(ev.Time.Sub(at), 0).Seconds())
			delete(asked, ev.ElicitationID)
		}
	}
}

// ended adds a session that ended to the totals.
func (m *metrics) ended(st actors.Stats) {
	m.endedTotal.Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range st.Restarts {
		m.endedRestarts[k] += uint64(v)
	}
	for k, v := range st.RPCErrors {
		m.endedRPCErrors[k] += uint64(v)
	}
	m.endedRebinds += uint64(st.Rebinds)
}

// liveFigures collects, at scrape time, the sessions attached now and the
// restarts, RPC errors and rebinds of every session, live or ended.
type liveFigures struct{ m *metrics }

func (l liveFigures) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sessionsDesc, restartsDesc, rpcErrorsDesc, rebindsDesc} {
		ch <- d
	}
}

func (l liveFigures) Collect(ch chan<- prometheus.Metric) {
	m := l.m
	m.mu.Lock()
	defer m.mu.Unlock()
	live := attachedSessions(m.host)
	restarts := make(map[string]uint64)
	rpcErrors := make(map[string]uint64)
	rebinds := m.endedRebinds
	for k, v := range m.endedRestarts {
		restarts[k] += v
	}
	for k, v := range m.endedRPCErrors {
		rpcErrors[k] += v
	}
	for _, sess := range live {
		st := sess.Stats()
		for k, v := range st.Restarts {
			restarts[k] += uint64(v)
		}
		for k, v := range st.RPCErrors {
			rpcErrors[k] += uint64(v)
		}
		rebinds += uint64(st.Rebinds)
	}
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(len(live)))
	for k, v := range restarts {
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(v), k)
	}
	for k, v := range rpcErrors {
		ch <- prometheus.MustNewConstMetric(rpcErrorsDesc, prometheus.CounterValue, float64(v), k)
	}
	ch <- prometheus.MustNewConstMetric(rebindsDesc, prometheus.CounterValue, float64(rebinds))
}

// errorCodeLabel is an error code as a label value: one of the codes the
// mapper gives, else "other" (a label never takes an unbounded value).
func errorCodeLabel(code string) string {
	switch code {
	case messages.ErrorQuotaExhausted, messages.ErrorRateLimited, messages.ErrorUsageLimit, messages.ErrorAccountIneligible,
		messages.ErrorRefusal, messages.ErrorMaxTokens, messages.ErrorProviderError:
		return code
	}
	return "other"
}
