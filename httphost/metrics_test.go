package httphost

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

// scrape reads GET /metrics and parses it.
func (h *runningHost) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	res, body := h.request(t, "GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain"), res.Header.Get("Content-Type"))
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err, body)
	return families
}

// sample is the metric of family name whose labels are labels (name,
// value pairs); nil when there is none.
func sample(families map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	mf := families[name]
	if mf == nil {
		return nil
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := len(got) == len(labels)/2
		for i := 0; match && i+1 < len(labels); i += 2 {
			match = got[labels[i]] == labels[i+1]
		}
		if match {
			return m
		}
	}
	return nil
}

// counter is a counter's or a gauge's value (-1 when absent).
func counter(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	m := sample(families, name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return -1
}

func TestHostMetricsCountLiveAndEndedSessions(t *testing.T) {
	ended := &feedSession{stats: actors.Stats{
		Restarts: map[string]int{"stream": 2}, RPCErrors: map[string]int{"transient": 3}, Rebinds: 1}}
	live := &feedSession{stats: actors.Stats{
		Restarts: map[string]int{"stream": 1, "poller": 1}, RPCErrors: map[string]int{"port_gone": 1}, Rebinds: 2}}
	host := &feedHost{newSession: func(spec actors.Spec) *feedSession {
		s := live
		if spec.SessionID == "a" {
			s = ended
		}
		s.id = spec.SessionID
		return s
	}}
	h := startHost(t, serverConfig{host: host})
	for _, id := range []string{"a", "b"} {
		res, body := h.request(t, "POST", "/v1/sessions", `{"port":4242,"session_id":"`+id+`"}`, nil)
		require.Equal(t, http.StatusCreated, res.StatusCode, body)
	}

	asked := time.Now().Add(-time.Minute)
	retryable := true
	for _, ev := range []*messages.Event{
		{Type: messages.EventElicitationRequest, ElicitationID: "e1", Time: asked},
		{Type: messages.EventElicitationResolved, ElicitationID: "e1", By: messages.ByHarness, Time: asked.Add(3 * time.Second)},
		{Type: messages.EventError, Retryable: &retryable, Time: time.Now()},
		{Type: messages.EventMessage, Text: "hi", Time: time.Now()},
	} {
		select {
		case ended.events <- ev:
		case <-time.After(10 * time.Second):
			t.Fatal("the session's watcher does not read its events")
		}
	}
	host.end(ended)
	var m map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		m = h.scrape(t)
		return counter(m, "agyharness_sessions_ended_total") == 1
	}, 10*time.Second, 5*time.Millisecond, "the ended session is counted")

	assert.Equal(t, 1.0, counter(m, "agyharness_sessions"))
	assert.Equal(t, 2.0, counter(m, "agyharness_sessions_attached_total"))
	for typ, n := range map[messages.EventType]float64{
		messages.EventElicitationRequest: 1, messages.EventElicitationResolved: 1, messages.EventError: 1, messages.EventMessage: 1,
	} {
		assert.Equal(t, n, counter(m, "agyharness_events_total", "type", string(typ)), typ)
	}
	assert.Equal(t, 1.0, counter(m, "agyharness_error_events_total", "retryable", "true"))
	assert.Equal(t, 0.0, counter(m, "agyharness_error_events_total", "retryable", "false"))
	// The live session's counters and the ended one's, summed.
	assert.Equal(t, 3.0, counter(m, "agyharness_actor_restarts_total", "actor", "stream"))
	assert.Equal(t, 1.0, counter(m, "agyharness_actor_restarts_total", "actor", "poller"))
	assert.Equal(t, 3.0, counter(m, "agyharness_rpc_errors_total", "class", "transient"))
	assert.Equal(t, 1.0, counter(m, "agyharness_rpc_errors_total", "class", "port_gone"))
	assert.Equal(t, 3.0, counter(m, "agyharness_rebinds_total"))

	open := sample(m, "agyharness_prompt_open_seconds", "by", messages.ByHarness)
	require.NotNil(t, open, "a histogram of prompt-open time by who closed the prompt")
	require.Equal(t, dto.MetricType_HISTOGRAM, m["agyharness_prompt_open_seconds"].GetType())
	assert.Equal(t, uint64(1), open.GetHistogram().GetSampleCount())
	assert.InDelta(t, 3.0, open.GetHistogram().GetSampleSum(), 1e-9)
	assert.NotEmpty(t, open.GetHistogram().GetBucket())

	latency := sample(m, "agyharness_event_latency_seconds")
	require.NotNil(t, latency)
	require.Equal(t, dto.MetricType_HISTOGRAM, m["agyharness_event_latency_seconds"].GetType())
	assert.Equal(t, uint64(4), latency.GetHistogram().GetSampleCount(), "every event with a time")
	assert.GreaterOrEqual(t, latency.GetHistogram().GetSampleSum(), 60.0, "the request was read a minute ago")

	assert.Positive(t, counter(m, "go_goroutines"), "the Go runtime's collector")
	if runtime.GOOS == "linux" {
		assert.Contains(t, m, "process_cpu_seconds_total", "the process collector")
	}

	res, _ := h.request(t, "GET", "/metrics", "", map[string]string{"Authorization": "Bearer wrong-token-0123456789"})
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "the metrics need the token")
}

// TestMetricsCountAgyErrorsByCode: the errors agy showed the user are
// counted by code (an unknown code as "other"), retries apart from finals.
func TestMetricsCountAgyErrorsByCode(t *testing.T) {
	m := newMetrics(nil)
	for _, ev := range []*messages.Event{
		{Type: messages.EventError, Code: messages.ErrorQuotaExhausted, Final: messages.Ptr(false)},
		{Type: messages.EventError, Code: messages.ErrorQuotaExhausted, Final: messages.Ptr(false)},
		{Type: messages.EventError, Code: messages.ErrorQuotaExhausted, Final: messages.Ptr(true)},
		{Type: messages.EventError, Code: messages.ErrorUsageLimit, Final: messages.Ptr(true)},
		{Type: messages.EventError, Code: "\x1b[31mmade up", Final: messages.Ptr(true)},
		{Type: messages.EventError, Message: "agy unreachable"},
	} {
		m.event(ev, time.Now(), map[string]time.Time{})
	}
	assert.Equal(t, 2.0, counterValue(t, m.agyErrors.WithLabelValues(messages.ErrorQuotaExhausted, "false")))
	assert.Equal(t, 1.0, counterValue(t, m.agyErrors.WithLabelValues(messages.ErrorQuotaExhausted, "true")))
	assert.Equal(t, 1.0, counterValue(t, m.agyErrors.WithLabelValues(messages.ErrorUsageLimit, "true")))
	assert.Equal(t, 1.0, counterValue(t, m.agyErrors.WithLabelValues("other", "true")))
	series := make(chan prometheus.Metric, 16)
	m.agyErrors.Collect(series)
	assert.Len(t, series, 4, "four series; the harness's own errors have no code")
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, c.Write(&out))
	return out.GetCounter().GetValue()
}
