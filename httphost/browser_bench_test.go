package httphost

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

// The console's figures in a real browser (docs/PERFORMANCE.md, "The web
// console"): go test -run '^$' -bench BenchmarkConsole -benchtime 5x ./httphost/

// signedInTab is a tab on the host's console with the token already kept.
func signedInTab(t testing.TB, base string) *tab {
	tb := newTab(t, base)
	tb.js(fmt.Sprintf(`sessionStorage.setItem("agyharness.token", %q)`, hostTestToken))
	return tb
}

// BenchmarkConsoleBoard200: from the navigation's start to the board
// showing 200 sessions (the page's own clock, read every few ms).
func BenchmarkConsoleBoard200(b *testing.B) {
	host := &feedHost{newSession: func(spec actors.Spec) *feedSession { return &feedSession{id: spec.SessionID} }}
	tt := testing.TB(b)
	h := startHost(tt, serverConfig{host: host})
	for i := range 200 {
		res, body := h.request(tt, "POST", "/v1/sessions", fmt.Sprintf(`{"port":4242,"session_id":"s%03d"}`, i), nil)
		require.Equal(b, http.StatusCreated, res.StatusCode, body)
	}
	tb := signedInTab(tt, h.base)
	var ms []float64
	for b.Loop() {
		tb.run(chromedp.Navigate(h.base + "/#/"))
		tb.run(chromedp.Reload())
		var at float64
		for at == 0 {
			at = eval[float64](tb, `document.querySelectorAll("#board li").length === 200 ? performance.now() : 0`)
			if at == 0 {
				time.Sleep(2 * time.Millisecond)
			}
		}
		ms = append(ms, at)
	}
	slices.Sort(ms)
	b.ReportMetric(ms[len(ms)/2], "ms-to-200-rows-p50")
	b.ReportMetric(ms[len(ms)-1], "ms-to-200-rows-max")
}

// chanStream is an eventStream of a channel the benchmark feeds.
type chanStream struct{ ch chan *messages.Event }

func (c chanStream) C() <-chan *messages.Event { return c.ch }
func (c chanStream) Close()                    {}

// BenchmarkConsoleEventToDOM: from the moment the host is handed an event
// (it writes it to the SSE stream at once) to the moment a MutationObserver
// in the page sees the event's text in the transcript, over 300 text
// deltas 10 ms apart: p50 and p99.
func BenchmarkConsoleEventToDOM(b *testing.B) {
	tt := testing.TB(b)
	feed := chanStream{ch: make(chan *messages.Event)}
	sess := &feedSession{subscribe: func(uint64) eventStream { return feed }}
	h := startHost(tt, serverConfig{host: oneSession(sess)})
	res, body := h.request(tt, "POST", "/v1/sessions", `{"port":4242}`, nil)
	require.Equal(b, http.StatusCreated, res.StatusCode, body)
	tb := signedInTab(tt, h.base)
	tb.run(chromedp.Navigate(h.base+"/#/s/s1"), chromedp.Reload())
	tb.waitJS("the session page", `document.querySelector("#transcript")`)
	tb.js(`(() => { window.__seen = {}; const re = /mark(\d+_\d+)x/g;
		new MutationObserver(() => { const now = performance.timeOrigin + performance.now();
			const text = document.querySelector("#transcript").textContent;
			for (const m of text.matchAll(re)) if (!(m[1] in window.__seen)) window.__seen[m[1]] = now;
		}).observe(document.querySelector("#transcript"), {childList: true, subtree: true, characterData: true}); })()`)
	const n = 300
	var lat []float64
	seq := uint64(0)
	for b.Loop() {
		sent := make([]float64, n)
		base := seq
		tb.js(`window.__seen = {}`)
		for i := range n {
			seq++
			sess.published.Store(seq)
			ev := &messages.Event{Type: messages.EventOutputTextDelta, ID: "bench/" + strconv.FormatUint(seq, 10), SessionID: "s1",
				Seq: seq, Time: time.Now().UTC(), ItemID: "item" + strconv.FormatUint(base, 10), Delta: fmt.Sprintf("mark%d_%dx ", base, i)}
			sent[i] = float64(time.Now().UnixNano()) / 1e6
			feed.ch <- ev
			time.Sleep(10 * time.Millisecond)
		}
		tb.waitJS("every event on the page", fmt.Sprintf(`Object.keys(window.__seen).length >= %d`, n))
		seen := eval[map[string]float64](tb, `window.__seen`)
		for i := range n {
			at, ok := seen[fmt.Sprintf("%d_%d", base, i)]
			require.True(b, ok, "event %d seen", i)
			lat = append(lat, at-sent[i])
		}
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "ms-event-to-DOM-p50")
	b.ReportMetric(lat[len(lat)*99/100], "ms-event-to-DOM-p99")
}
