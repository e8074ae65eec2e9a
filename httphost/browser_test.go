package httphost

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/hostcluster"
	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/internal/browsertest"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// The console in a real browser: Debian's chromium, headless, one for the
// package's tests (started by the first test that needs it, closed by
// TestMain), a tab per test. Without chromium a test fails under CI and is
// skipped elsewhere.

var browserState struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

func browser(t testing.TB) context.Context {
	t.Helper()
	browserState.once.Do(func() {
		path, err := browsertest.Path()
		if err != nil {
			browserState.err = fmt.Errorf("no chromium on PATH (apt-get install chromium): %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "agyharness-chromium-")
		if err != nil {
			browserState.err = err
			return
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browsertest.Options(path, dir)...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil { // starts the browser
			cancelBrowser()
			cancelAlloc()
			os.RemoveAll(dir)
			browserState.err = fmt.Errorf("start chromium: %w", err)
			return
		}
		browserState.ctx = bctx
		browserState.cancel = func() {
			cancelBrowser()
			cancelAlloc()
			os.RemoveAll(dir)
		}
	})
	if browserState.err != nil {
		browsertest.Unavailable(t, browserState.err)
	}
	return browserState.ctx
}

// closeBrowser ends the tests' browser, if one was started.
func closeBrowser() {
	if browserState.cancel != nil {
		browserState.cancel()
	}
}

// tab is one browser tab on a console.
type tab struct {
	t    testing.TB
	ctx  context.Context
	base string
}

func newTab(t testing.TB, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t))
	t.Cleanup(cancel)
	// The first run opens the tab, for as long as the context of that run:
	// no timeout on it.
	require.NoError(t, chromedp.Do(ctx))
	tb := &tab{t: t, ctx: ctx, base: base}
	tb.run(chromedp.Navigate(base + "/"))
	return tb
}

func (tb *tab) run(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	require.NoError(tb.t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(tb.t, err, expr)
	return v
}

// js runs a JavaScript statement.
func (tb *tab) js(stmt string) {
	tb.t.Helper()
	eval[bool](tb, "("+stmt+", true)")
}

// waitJS waits until a JavaScript expression is true.
func (tb *tab) waitJS(what, expr string) {
	tb.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`(document.querySelector("[role=alert]")||{}).textContent + "\n" + document.querySelector("main").innerText.slice(-1500)`))
			tb.t.Fatalf("timed out waiting for %s (%s); the page shows:\n%s", what, expr, body)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (tb *tab) signIn(token string) {
	tb.t.Helper()
	tb.run(chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`#signin button[type=submit]`)))
}

// pressTabUntil presses Tab until the focused element matches the selector.
func (tb *tab) pressTabUntil(selector string) {
	tb.t.Helper()
	for range 60 {
		if eval[bool](tb, fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, selector)) {
			return
		}
		tb.run(chromedp.KeyEvent(kb.Tab))
	}
	tb.t.Fatalf("Tab never reached %s", selector)
}

// console is a host with the console, on a fake agy.
type console struct {
	*runningHost
	fake *agytest.Server
	host *actors.Host
	ln   *cutListener
}

// cutListener is a listener whose connections the test cuts, as a network
// would, from the host's side.
type cutListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *cutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

// cut closes every connection accepted so far (and the test's client
// forgets its own, which the cut closed too).
func (l *cutListener) cut() {
	defer http.DefaultClient.CloseIdleConnections()
	l.mu.Lock()
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

func startConsole(t *testing.T, opts agytest.Options) *console {
	t.Helper()
	opts.Conversation = true
	if opts.ChunkDelay == 0 {
		opts.ChunkDelay = 2 * time.Millisecond
	}
	fake := agytest.Start(t, opts)
	ah := actors.NewHost(actors.Config{})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &cutListener{Listener: inner}
	h := startHostOn(t, serverConfig{host: actorsHost{ah}, heartbeat: time.Second}, ln)
	return &console{runningHost: h, fake: fake, host: ah, ln: ln}
}

// attach attaches the fake as session id over the API.
func (c *console) attach(t *testing.T, id string) {
	t.Helper()
	res, body := c.request(t, "POST", "/v1/sessions",
		fmt.Sprintf(`{"port":%d,"conversation_id":%q,"session_id":%q}`, c.fake.Port(), c.fake.ConversationID(), id), nil)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
}

func oneTurn(actions ...agytest.Action) *agytest.Scenario {
	return &agytest.Scenario{Name: "console", Turns: []agytest.TurnScript{{Actions: actions}}}
}

func TestConsoleSignIn(t *testing.T) {
	c := startConsole(t, agytest.Options{})
	tb := newTab(t, c.base)

	tb.signIn("not-the-token-at-all")
	tb.waitJS("the refusal", `document.querySelector("#signin-error").textContent.includes("Wrong token")`)
	stored := eval[string](tb, `sessionStorage.getItem("agyharness.token") || ""`)
	assert.Empty(t, stored, "a wrong token is not kept")

	tb.js(`document.querySelector("#token").value = ""`)
	tb.signIn(hostTestToken)
	tb.waitJS("the board", `document.querySelector("#board-empty") && document.querySelector("#board-empty").textContent.includes("No sessions")`)
	stored = eval[string](tb, `sessionStorage.getItem("agyharness.token") || ""`)
	assert.Equal(t, hostTestToken, stored, "kept for the tab")
	cookies := eval[string](tb, `document.cookie`)
	assert.Empty(t, cookies, "no cookie")

	tb.run(chromedp.Click(chromedp.ID("signout")))
	tb.waitJS("the sign-in form", `document.querySelector("#token")`)
	stored = eval[string](tb, `sessionStorage.getItem("agyharness.token") || ""`)
	assert.Empty(t, stored, "sign out forgets the token")
}

func TestConsoleSignInLinkIsOneTime(t *testing.T) {
	c := startConsole(t, agytest.Options{})
	srv := &Server{s: c.server}
	code, err := srv.SignInCode()
	require.NoError(t, err)
	tb := newTab(t, c.base)
	tb.run(chromedp.Navigate(c.base + "/#code=" + code))
	tb.waitJS("the board", `document.querySelector("#board")`)
	hash := eval[string](tb, `location.hash`)
	assert.NotContains(t, hash, code, "the code leaves the address bar")

	other := newTab(t, c.base)
	other.run(chromedp.Navigate(c.base + "/#code=" + code))
	other.waitJS("the sign-in form", `document.querySelector("#token")`)
}

func TestConsoleBoardShowsSessionsLive(t *testing.T) {
	c := startConsole(t, agytest.Options{Scenario: oneTurn(
		agytest.Ask(agytest.QuestionSpec{Question: "Which one?", Options: []string{"A", "B"}}),
		agytest.Say("Done.", 1),
	)})
	tb := newTab(t, c.base)
	tb.signIn(hostTestToken)
	tb.waitJS("the empty board", `document.querySelector("#board-empty").textContent.includes("No sessions")`)

	c.attach(t, "b1")
	tb.waitJS("the session's row", `document.querySelector('#board li[data-id="b1"]')`)
	res, body := c.request(t, "POST", "/v1/sessions/b1/turns", `{"text":"pick one for me"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	tb.waitJS("the row waiting on a person", `document.querySelector('#board li[data-id="b1"].waiting')`)
	title := eval[string](tb, `document.querySelector('#board li[data-id="b1"] .title').textContent`)
	assert.Equal(t, "pick one for me", title, "the title is the first turn")

	res, body = c.request(t, "DELETE", "/v1/sessions/b1", "", nil)
	require.Equal(t, http.StatusNoContent, res.StatusCode, body)
	tb.waitJS("the row gone", `!document.querySelector('#board li[data-id="b1"]')`)

	// A session that ends while the board's stream is cut leaves the
	// board once the browser has reopened it.
	c.attach(t, "b2")
	tb.waitJS("the second session's row", `document.querySelector('#board li[data-id="b2"]')`)
	tb.waitJS("the board's stream", `window.agyharnessConsole.live() > 0`)
	before := eval[int](tb, `window.agyharnessConsole.resumed()`)
	c.ln.cut()
	res, body = c.request(t, "DELETE", "/v1/sessions/b2", "", nil)
	require.Equal(t, http.StatusNoContent, res.StatusCode, body)
	tb.waitJS("the browser's own reopening", fmt.Sprintf(`window.agyharnessConsole.resumed() > %d`, before))
	tb.waitJS("the row of the session that ended in the cut gone", `!document.querySelector('#board li[data-id="b2"]')`)
}

// openSession signs in and opens a session's page.
func openSession(t *testing.T, c *console, id string) *tab {
	t.Helper()
	tb := newTab(t, c.base)
	tb.signIn(hostTestToken)
	tb.waitJS("the board", `document.querySelector("#board")`)
	tb.run(chromedp.Navigate(c.base + "/#/s/" + id))
	tb.waitJS("the session page", `document.querySelector("#turnbox")`)
	return tb
}

func TestConsoleTurnPromptsAndDiffFromThePage(t *testing.T) {
	c := startConsole(t, agytest.Options{})
	c.attach(t, "s1")
	tb := openSession(t, c, "s1")
	tb.waitJS("the model picker filled", `document.querySelectorAll("#model-picker option").length > 1`)

	// Keyboard only: Tab to the turn box, type, Tab to Send, Enter.
	tb.js(`document.activeElement && document.activeElement.blur()`)
	tb.pressTabUntil("#turn-text")
	tb.run(chromedp.KeyEvent("Show me what you can do"))
	tb.pressTabUntil("#send")
	tb.run(chromedp.KeyEvent(kb.Enter))

	tb.waitJS("the turn shown", `[...document.querySelectorAll(".turn.user")].some(e => e.textContent === "Show me what you can do")`)
	tb.waitJS("the reply streamed", `document.querySelector(".turn.reply") && document.querySelector(".turn.reply").textContent.includes("Let me look at the workspace first.")`)
	tb.waitJS("the permission", `document.querySelector('#prompts form.prompt[aria-label="Permission"]')`)
	perm := eval[string](tb, `document.querySelector('#prompts form.prompt[aria-label="Permission"]').textContent`)
	assert.Contains(t, perm, "ls -la", "the command it asks to run")
	rows := eval[[]string](tb, `[...document.querySelectorAll('#prompts form.prompt[aria-label="Permission"] button')].map(b => b.textContent)`)
	assert.Equal(t, []string{"Yes", "No"}, rows, "agy's rows, as the request offers them: allow once and deny where no pane is owned")
	// Tab to the permission's Allow, Enter.
	tb.pressTabUntil(`#prompts form.prompt[aria-label="Permission"] button.primary`)
	tb.run(chromedp.KeyEvent(kb.Enter))
	tb.waitJS("the permission withdrawn", `!document.querySelector('#prompts form.prompt[aria-label="Permission"]')`)
	tb.waitJS("the command's output", `[...document.querySelectorAll(".tool pre.out")].some(e => e.textContent.includes("main.go"))`)

	tb.waitJS("the question", `document.querySelector('#prompts form.prompt[aria-label="Question"]')`)
	tb.run(chromedp.Click(chromedp.CSS(`#prompts form.prompt[aria-label="Question"] label.opt:nth-of-type(2) input`)),
		chromedp.Click(chromedp.CSS(`#prompts form.prompt[aria-label="Question"] button.primary`)))
	tb.waitJS("the question withdrawn", `!document.querySelector('#prompts form.prompt')`)

	tb.waitJS("the edit's diff", `[...document.querySelectorAll(".diff .l.add")].some(e => e.textContent.includes("fmt.Println"))`)
	tb.waitJS("the removed line", `[...document.querySelectorAll(".diff .l.del")].some(e => e.textContent.includes("func main() {}"))`)
	tb.waitJS("the search hits", `[...document.querySelectorAll(".hits li")].some(e => e.textContent.includes("/workspace/main.go:3"))`)
	tb.waitJS("the last reply, as Markdown", `[...document.querySelectorAll(".turn.reply code")].some(e => e.textContent === "main.go")`)
	tb.waitJS("usage and model", `document.querySelector(".usage") && document.querySelector("#model").textContent !== ""`)
	tb.waitJS("idle", `document.querySelector("#state").dataset.state === "idle"`)

	// A reload shows the whole conversation, from the transcript.
	before := eval[int](tb, `document.querySelectorAll("#transcript > *").length`)
	tb.run(chromedp.Reload())
	tb.waitJS("the transcript again", `document.querySelector(".diff .l.add") && [...document.querySelectorAll(".turn.reply code")].some(e => e.textContent === "main.go")`)
	after := eval[int](tb, `document.querySelectorAll("#transcript > *").length`)
	assert.Equal(t, before, after, "the reload shows what the live page showed")
}

func TestConsolePromptAnsweredInAgysTerminalDisappears(t *testing.T) {
	c := startConsole(t, agytest.Options{Scenario: oneTurn(
		agytest.Ask(agytest.QuestionSpec{Question: "Proceed?", Options: []string{"Yes", "No"}}),
		agytest.Say("Proceeding.", 1),
	)})
	c.attach(t, "s1")
	tb := openSession(t, c, "s1")
	res, body := c.request(t, "POST", "/v1/sessions/s1/turns", `{"text":"go"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	tb.waitJS("the question", `document.querySelector('#prompts form.prompt')`)

	conv := c.fake.ConversationID()
	st, ok := c.fake.OpenPrompt(conv)
	require.True(t, ok)
	require.NoError(t, c.fake.AnswerFromTerminal(conv, wire.InteractionResponse{
		TrajectoryID: st.TrajectoryID(), StepIndex: wire.Int(st.Index()),
		AskQuestion: &wire.QuestionResponses{Responses: []wire.QuestionResponse{{Question: "Proceed?", SelectedOptionIDs: []string{"1"}}}},
	}))
	tb.waitJS("the question withdrawn", `!document.querySelector('#prompts form.prompt')`)
	tb.waitJS("the note", `[...document.querySelectorAll(".note")].some(e => e.textContent.includes("in agy's terminal"))`)
}

func TestConsoleInterrupt(t *testing.T) {
	long := strings.Repeat("word ", 400)
	c := startConsole(t, agytest.Options{ChunkDelay: 30 * time.Millisecond, Scenario: oneTurn(agytest.Say(long, 300))})
	c.attach(t, "s1")
	tb := openSession(t, c, "s1")
	tb.run(chromedp.SendKeys(chromedp.ID("turn-text"), "talk a lot"), chromedp.Click(chromedp.ID("send")))
	tb.waitJS("running", `document.querySelector("#state").dataset.state === "running" && document.querySelector(".turn.reply")`)
	tb.run(chromedp.Click(chromedp.ID("interrupt")))
	tb.waitJS("idle after the interrupt", `document.querySelector("#state").dataset.state === "idle"`)
	shown := eval[int](tb, `document.querySelector(".turn.reply").textContent.length`)
	assert.Less(t, shown, len(strings.TrimSpace(long)), "the reply stopped short")
}

func TestConsoleResumesACutStreamWithoutDuplicates(t *testing.T) {
	c := startConsole(t, agytest.Options{ChunkDelay: 15 * time.Millisecond})
	c.attach(t, "s1")
	tb := openSession(t, c, "s1")
	res, body := c.request(t, "POST", "/v1/sessions/s1/turns", `{"text":"Show me what you can do"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)

	// Cut the stream again and again while agy streams, in turn from the
	// page (it reopens with a fresh ticket after the last id it saw) and
	// from the host's side as a network would (the browser reopens it
	// itself, with Last-Event-ID); answer the prompts as they come.
	answered := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	// The page opens its stream after the session page shows, and the
	// board's stream, opened before, counts in opened(): a count read
	// before the session's stream is open would let the first cut's wait
	// pass on its first opening, and the second cut land while no stream
	// is open.
	tb.waitJS("the session's event stream", `window.agyharnessConsole.live() > 0`)
	for i := 0; ; i++ {
		// Each cut waits for the stream to be open again, so that the next
		// one cuts it.
		if i%2 == 0 {
			before := eval[int](tb, `window.agyharnessConsole.opened()`)
			tb.js(`window.agyharnessConsole.dropStreams()`)
			tb.waitJS("the page's reopening", fmt.Sprintf(`window.agyharnessConsole.opened() > %d && window.agyharnessConsole.live() > 0`, before))
		} else {
			before := eval[int](tb, `window.agyharnessConsole.resumed()`)
			c.ln.cut()
			tb.waitJS("the browser's own reopening", fmt.Sprintf(`window.agyharnessConsole.resumed() > %d`, before))
		}
		open := eval[[]string](tb, `[...document.querySelectorAll("#prompts form.prompt")].map(f => f.dataset.eid)`)
		for _, eid := range open {
			if !answered[eid] {
				answered[eid] = true
				tb.run(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#prompts form.prompt[data-eid=%q] button.primary`, eid))))
			}
		}
		done := eval[bool](tb, `[...document.querySelectorAll(".turn.reply code")].some(e => e.textContent === "main.go") && document.querySelector("#state").dataset.state === "idle"`)
		if done {
			break
		}
		require.False(t, time.Now().After(deadline), "the turn did not finish")
		time.Sleep(150 * time.Millisecond)
	}
	assert.Len(t, answered, 2, "the permission and the question, each once")
	assert.GreaterOrEqual(t, eval[int](tb, `window.agyharnessConsole.opened()`), 4, "the stream was cut and reopened")
	assert.GreaterOrEqual(t, eval[int](tb, `window.agyharnessConsole.resumed()`), 2, "the browser reopened it itself, with Last-Event-ID")

	users := eval[int](tb, `document.querySelectorAll(".turn.user").length`)
	assert.Positive(t, eval[int](tb, `document.querySelectorAll(".turn.tool").length`), "tool calls shown")
	prompts := eval[int](tb, `document.querySelectorAll("#transcript .note[data-eid]").length`)
	assert.Equal(t, 1, users, "the turn once")
	assert.Equal(t, 2, prompts, "each prompt once")
	calls := eval[[]string](tb, `[...document.querySelectorAll(".turn.tool")].map(e => e.dataset.call)`)
	seen := map[string]bool{}
	for _, id := range calls {
		assert.False(t, seen[id], "tool call %s twice", id)
		seen[id] = true
	}
	// Every reply's text is its message's, once: nothing doubled or lost.
	replies := eval[[]string](tb, `[...document.querySelectorAll(".turn.reply")].map(e => e.textContent)`)
	res, body = c.request(t, "GET", "/v1/sessions/s1/transcript", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	var tr Transcript
	require.NoError(t, json.Unmarshal([]byte(body), &tr))
	var want []string
	for _, ev := range tr.Events {
		if ev.Type == "message" {
			want = append(want, ev.Text)
		}
	}
	require.Len(t, replies, len(want))
	for i := range want {
		plain := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " ") }
		assert.Equal(t, plain(want[i]), plain(replies[i]), "reply %d", i)
	}
}

func TestConsoleFitsAPhone(t *testing.T) {
	c := startConsole(t, agytest.Options{})
	c.attach(t, "s1")
	tb := openSession(t, c, "s1")
	tb.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	res, body := c.request(t, "POST", "/v1/sessions/s1/turns", `{"text":"Show me what you can do"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	tb.waitJS("the permission", `document.querySelector('#prompts form.prompt')`)
	tb.run(chromedp.Click(chromedp.CSS(`#prompts form.prompt button.primary`)))
	tb.waitJS("the question", `document.querySelector('#prompts form.prompt[aria-label="Question"]')`)
	wide := `(() => { const w = document.documentElement.clientWidth; const out = [];
		if (document.documentElement.scrollWidth > w) out.push("page " + document.documentElement.scrollWidth + " > " + w);
		for (const e of document.querySelectorAll("body *")) { const r = e.getBoundingClientRect();
			if (r.width && (r.right > w + 0.5 || r.left < -0.5)) out.push(e.tagName + "." + e.className + " " + Math.round(r.left) + ".." + Math.round(r.right)); }
		return out; })()`
	over := eval[[]string](tb, wide)
	assert.Empty(t, over, "nothing wider than the page at 390 px (session, with a prompt open)")
	tb.run(chromedp.Click(chromedp.CSS(`#prompts form.prompt button.primary`)))
	tb.waitJS("the diff", `document.querySelector(".diff .l.add")`)
	over = eval[[]string](tb, wide)
	assert.Empty(t, over, "nothing wider than the page at 390 px (a diff)")
	tb.run(chromedp.Navigate(c.base + "/#/"))
	tb.waitJS("the board", `document.querySelector('#board li[data-id="s1"]')`)
	over = eval[[]string](tb, wide)
	assert.Empty(t, over, "nothing wider than the page at 390 px (the board)")
}

func TestConsoleCSPAndNoInlineScript(t *testing.T) {
	c := startConsole(t, agytest.Options{})
	res, body := c.request(t, "GET", "/", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	csp := res.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self'")
	assert.NotContains(t, csp, "unsafe-inline")
	assert.NotContains(t, body, "<script>", "no inline script")
	assert.NotContains(t, body, "style=", "no inline style")
	for _, p := range []string{"/console/app.js", "/console/markdown.js", "/console/style.css"} {
		res, _ := http.Get(c.base + p)
		require.NoError(t, res.Body.Close())
		assert.Equal(t, http.StatusOK, res.StatusCode, p)
		assert.NotEmpty(t, res.Header.Get("Content-Security-Policy"), p)
	}
	res, _ = http.Get(c.base + "/console/")
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "no directory listing")
}

func TestConsoleShowsAgysTextAsTextOnly(t *testing.T) {
	evil := "# Title\n\nSee <img src=x onerror=\"window.pwned=1\"> and [a](javascript:window.pwned=2) " +
		"and [docs](https://example.com/a?b=1) and **bold** `<script>window.pwned=3</script>`\n\n" +
		"- one\n- two <b>not bold</b>\n\n```\n<svg onload=window.pwned=4>\n```\n"
	c := startConsole(t, agytest.Options{Scenario: oneTurn(agytest.Say(evil, 3))})
	c.attach(t, "s1")
	tb := openSession(t, c, "s1")
	res, body := c.request(t, "POST", "/v1/sessions/s1/turns", `{"text":"<img src=y onerror=window.pwned=5>"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	tb.waitJS("the reply", `document.querySelector(".turn.reply pre code")`)
	tb.waitJS("idle", `document.querySelector("#state").dataset.state === "idle"`)
	assert.Zero(t, eval[int](tb, `document.querySelectorAll("#transcript img, #transcript script, #transcript svg, #transcript b").length`), "no element from agy's markup")
	assert.Zero(t, eval[int](tb, `document.querySelectorAll("#transcript a[href^='javascript']").length`), "no javascript: link")
	assert.Equal(t, "noopener noreferrer", eval[string](tb, `document.querySelector("#transcript a[href^='https://example.com']").rel`))
	assert.Equal(t, 1, eval[int](tb, `document.querySelectorAll("#transcript .reply h3, #transcript .reply strong").length > 1 ? 1 : 0`), "Markdown is rendered")
	assert.Equal(t, 2, eval[int](tb, `document.querySelectorAll("#transcript .reply li").length`))
	assert.False(t, eval[bool](tb, `"pwned" in window`), "nothing of agy's ran")
	assert.Contains(t, eval[string](tb, `document.querySelector(".turn.user").textContent`), "<img src=y", "a turn is shown as typed")
}

func TestConsoleBoardShowsAnotherNodesSession(t *testing.T) {
	old := clusterBoardEvery
	clusterBoardEvery = 50 * time.Millisecond
	t.Cleanup(func() { clusterBoardEvery = old })
	cl := &stubCluster{}
	cl.set(hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "b1", Node: "B", Port: 4242}})
	s := newServer(serverConfig{host: &feedHost{}, token: hostTestToken, heartbeat: time.Hour})
	s.cluster = cl
	srv := httptest.NewServer(s.handler())
	t.Cleanup(func() { s.stop(); srv.CloseClientConnections(); srv.Close(); s.wait() })

	tb := newTab(t, srv.URL)
	tb.signIn(hostTestToken)
	tb.waitJS("B's session with its node", `document.querySelector('#board li[data-id="b1"] .node') && document.querySelector('#board li[data-id="b1"] .node').textContent === "node B"`)
	cl.set(hostcluster.ClusterSession{Info: &clusterpb.SessionInfo{Id: "b1", Node: "B", Port: 4242}, Lost: true})
	tb.waitJS("B's session lost", `document.querySelector('#board li[data-id="b1"]').dataset.state === "node_lost"`)
}

// TestConsoleShowsAgysErrorsAndARewind: an error agy showed its user is
// shown with its code (a retry agy makes itself as a note, not an alert),
// and agy's /rewind is said in the transcript.
func TestConsoleShowsAgysErrorsAndARewind(t *testing.T) {
	sc := &agytest.Scenario{Name: "console", Turns: []agytest.TurnScript{
		{Match: "quota", Actions: []agytest.Action{agytest.ProviderErr(agytest.ProviderQuota)}},
		{Actions: []agytest.Action{agytest.Say("Done.", 1)}},
	}}
	c := startConsole(t, agytest.Options{Scenario: sc})
	c.attach(t, "s1")
	tb := openSession(t, c, "s1")
	res, body := c.request(t, "POST", "/v1/sessions/s1/turns", `{"text":"quota"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	tb.waitJS("agy's final error with its code", `[...document.querySelectorAll("#transcript .turn.error[role=alert]")].some(e => e.textContent.endsWith("(quota_exhausted)"))`)
	tb.waitJS("idle", `document.querySelector("#state").dataset.state === "idle"`)
	assert.Positive(t, eval[int](tb, `[...document.querySelectorAll("#transcript .note")].filter(e => e.textContent.endsWith("(quota_exhausted)")).length`), "agy's retries are notes")

	res, body = c.request(t, "POST", "/v1/sessions/s1/turns", `{"text":"again"}`, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	tb.waitJS("the reply", `[...document.querySelectorAll("#transcript .turn.reply")].some(e => e.textContent.includes("Done."))`)
	tb.waitJS("idle", `document.querySelector("#state").dataset.state === "idle"`)
	at := -1
	for i, st := range c.fake.Steps(c.fake.ConversationID()) {
		if st.Type == wire.StepUserInput && st.UserInput != nil && st.UserInput.UserResponse == "again" {
			at = i
		}
	}
	require.GreaterOrEqual(t, at, 0)
	require.NoError(t, c.fake.Rewind(c.fake.ConversationID(), at))
	tb.waitJS("the rewind", fmt.Sprintf(`[...document.querySelectorAll("#transcript .note.rewound")].some(e => e.textContent.includes("rewound to step %d"))`, at))
}
