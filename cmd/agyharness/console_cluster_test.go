package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/hostcluster"
	"github.com/agyharness/agyharness/internal/browsertest"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// The console of a cluster in a real browser: two serve --cluster
// processes (mutual TLS on remote, the default), Debian's headless
// chromium on node A's console. Without chromium the test fails under CI
// and is skipped elsewhere (as httphost's browser tests).

// clusterBrowser starts a headless chromium for the test and returns a
// tab's context.
func clusterBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := browsertest.Path()
	if err != nil {
		browsertest.Unavailable(t, err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browsertest.Options(path, t.TempDir())...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx)) // starts the browser and its tab
	return ctx
}

// waitPage waits until a JavaScript expression is true on the page.
func waitPage(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(ectx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText.slice(-1500)`))
			t.Fatalf("timed out waiting for %s (%s); the page shows:\n%s", what, expr, shown)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pageValue[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ectx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// TestConsoleOfAClusterShowsAnotherNodesSession: a session on node B is on
// node A's board with its node and its own state (running, then waiting
// on you once agy asks), and its page on A shows its transcript and
// agy's models, read from B.
func TestConsoleOfAClusterShowsAnotherNodesSession(t *testing.T) {
	ports := freeLoopbackPorts(t, 2)
	peers := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	var nodes []*clusterNodeProc
	for i, name := range []string{"A", "B"} {
		nodes = append(nodes, startClusterNode(t, name, "--cluster", "web", "--cluster-provider", "automanaged",
			"--peers", peers, "--provider-port", strconv.Itoa(ports[i])))
	}
	a, b := nodes[0], nodes[1]
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			st := n.nodeStates()
			return st["A"] == hostcluster.StateAlive && st["B"] == hostcluster.StateAlive
		}, wait, 50*time.Millisecond, "node %s sees A and B alive", n.name)
	}

	// agy of B speaks for a few seconds (longer than a board's listing
	// period), then asks.
	reply := strings.Repeat("Reading the workspace, one file at a time. ", 40)
	fake := agytest.Start(t, agytest.Options{Conversation: true, Seed: 31, ChunkDelay: 40 * time.Millisecond,
		Scenario: &agytest.Scenario{Name: "cluster console", Turns: []agytest.TurnScript{{Actions: []agytest.Action{
			agytest.Say(reply, 150),
			agytest.Ask(agytest.QuestionSpec{Question: "Which file first?", Options: []string{"main.go", "README.md"}}),
		}}}}})
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/sessions",
		map[string]any{"port": fake.Port(), "conversation_id": fake.ConversationID(), "session_id": "b1"}, true, nil))

	ctx := clusterBrowser(t)
	run := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		require.NoError(t, chromedp.Do(rctx, actions...))
	}
	run(chromedp.Navigate(a.base + "/"))
	run(chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.CSS(`#signin button[type=submit]`)))
	row := `document.querySelector('#board li[data-id="b1"]')`
	waitPage(t, ctx, "B's session on A's board with its node", row+` && `+row+`.querySelector(".node").textContent === "node B"`)
	waitPage(t, ctx, "its state on B (not live)", row+`.dataset.state === "idle"`)

	// A turn sent to B's session through A.
	require.Equal(t, http.StatusAccepted, a.do("POST", "/v1/sessions/b1/turns", map[string]string{"text": "Look around the workspace"}, true, nil))
	waitPage(t, ctx, "B's session running on A's board", row+`.dataset.state === "running"`)
	waitPage(t, ctx, "B's session waiting on a person on A's board",
		row+`.dataset.state === "waiting" && `+row+`.classList.contains("waiting") && `+row+`.querySelector(".prompts").textContent === "1 open prompt"`)
	assert.Equal(t, "Look around the workspace", pageValue[string](t, ctx, row+`.querySelector(".title").textContent`), "its title, from B")

	// Its page on A: the conversation from B's transcript, agy's models
	// from B's catalog, the open question.
	var tr struct {
		SessionID string `json:"session_id"`
		Through   uint64 `json:"through"`
		Events    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"events"`
	}
	require.Equal(t, http.StatusOK, a.do("GET", "/v1/sessions/b1/transcript", nil, true, &tr), "B's transcript through A")
	assert.Equal(t, "b1", tr.SessionID)
	assert.Positive(t, tr.Through)
	var models struct{ Models []struct{ Model string } }
	require.Equal(t, http.StatusOK, a.do("GET", "/v1/sessions/b1/models", nil, true, &models))
	assert.Len(t, models.Models, len(agytest.DefaultModels()), "agy's models on B, through A")

	run(chromedp.Navigate(a.base + "/#/s/b1"))
	waitPage(t, ctx, "the session's page", `document.querySelector("#turnbox")`)
	waitPage(t, ctx, "the turn and the reply from B's transcript",
		`document.querySelector(".turn.user") && document.querySelector(".turn.user").textContent.includes("Look around the workspace") && `+
			`document.querySelector(".turn.reply") && document.querySelector(".turn.reply").textContent.includes("one file at a time")`)
	waitPage(t, ctx, "the open question", `document.querySelector("#prompts form.prompt") && document.querySelector("#prompts").textContent.includes("Which file first?")`)
	waitPage(t, ctx, "agy's models in the picker", fmt.Sprintf(`document.querySelectorAll("#model-picker option[value]:not([value=''])").length === %d`, len(agytest.DefaultModels())))
	assert.Equal(t, 1, pageValue[int](t, ctx, `document.querySelectorAll(".turn.user").length`), "the turn once")
}
