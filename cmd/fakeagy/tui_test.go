package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

const wait = 10 * time.Second

// screenBuffer collects what the terminal writes; screen is the last whole
// screen drawn.
type screenBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *screenBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *screenBuffer) all() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *screenBuffer) screen() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if i := strings.LastIndex(s, clearScreen); i >= 0 {
		return s[i+len(clearScreen):]
	}
	return ""
}

func newTestTerminal(t *testing.T) (*agytest.Server, *terminal, *screenBuffer) {
	return newTestTerminalWith(t, nil)
}

func newTestTerminalWith(t *testing.T, sc *agytest.Scenario) (*agytest.Server, *terminal, *screenBuffer) {
	t.Helper()
	srv := agytest.Start(t, agytest.Options{Conversation: true, Seed: 7, ChunkDelay: -1, PromptTimeout: -1, Scenario: sc})
	out := &screenBuffer{}
	return srv, newTerminal(srv, out, time.Millisecond), out
}

// openPrompt waits until the active conversation has a WAITING step of typ.
func openPrompt(t *testing.T, srv *agytest.Server, typ wire.StepType) wire.Step {
	t.Helper()
	var step wire.Step
	require.Eventually(t, func() bool {
		s, ok := srv.OpenPrompt(srv.ConversationID())
		step = s
		return ok && s.Type == typ
	}, wait, time.Millisecond, "a WAITING %s step", typ)
	return step
}

// committed waits for the ground truth of step index idx.
func committed(t *testing.T, srv *agytest.Server, idx int) wire.Step {
	t.Helper()
	var step wire.Step
	require.Eventually(t, func() bool {
		for _, s := range srv.GroundTruth(srv.ConversationID()) {
			if s.Index() == idx {
				step = s
				return true
			}
		}
		return false
	}, wait, time.Millisecond, "step %d committed", idx)
	return step
}

func press(term *terminal, keys string) {
	ks, rest := parseKeys([]byte(keys))
	if len(rest) > 0 {
		panic(fmt.Sprintf("press %q: %q left over", keys, rest))
	}
	for _, k := range ks {
		term.handle(k)
	}
	term.update()
}

// paste is what tmux paste-buffer -p sends for text.
func paste(text string) string { return "\x1b[200~" + text + "\x1b[201~" }

func TestTypedTextAndEnterSendATerminalTurn(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	term.update()
	assert.Contains(t, out.screen(), "-- idle --")
	press(term, "helo\x7flo")
	assert.True(t, strings.HasSuffix(out.screen(), "\n> hello"), "the draft, backspace applied:\n%s", out.screen())
	press(term, "\x01say \x05!")
	assert.True(t, strings.HasSuffix(out.screen(), "\n> say hello!"), "C-a goes home, C-e to the end:\n%s", out.screen())

	press(term, "\r")
	steps := srv.Steps(srv.ConversationID())
	require.NotEmpty(t, steps, "Enter sends the turn at once")
	first := steps[0]
	assert.Equal(t, wire.StepUserInput, first.Type)
	assert.Equal(t, "say hello!", first.UserInput.UserResponse)
	assert.Equal(t, wire.SourceUserExplicit, first.Metadata.Source, "typed in agy's terminal")
	assert.True(t, strings.HasSuffix(out.screen(), "\n> "), "the draft is empty again")
	assert.Contains(t, out.screen(), "\n> say hello!\n", "the turn is in the conversation")

	press(term, "   \r")
	assert.Equal(t, 1, countUserInputs(srv), "a blank line sends nothing")
}

func TestCtrlKKillsToTheEndOfTheLine(t *testing.T) {
	_, term, out := newTestTerminal(t)
	press(term, "leftover draft\x01\x0b")
	assert.True(t, strings.HasSuffix(out.screen(), "\n> "), "C-a C-k clears a one-line draft:\n%s", out.screen())
	press(term, "keep this\x01\x05 and\x01\x0bnew")
	assert.True(t, strings.HasSuffix(out.screen(), "\n> new"), "C-k kills from the cursor:\n%s", out.screen())
}

// A bracketed paste goes into the draft, line breaks and all; Enter after
// it sends the turn.
func TestBracketedPasteGoesIntoTheDraft(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	press(term, paste("fix the build\rthen run 1 test\x07"))
	assert.True(t, strings.HasSuffix(out.screen(), "\n> fix the build\n  then run 1 test"), "a two-line draft:\n%s", out.screen())
	assert.Zero(t, countUserInputs(srv), "a line break in a paste sends nothing")
	press(term, "\r")
	steps := srv.Steps(srv.ConversationID())
	require.NotEmpty(t, steps)
	assert.Equal(t, "fix the build\nthen run 1 test", steps[0].UserInput.UserResponse)
}

func countUserInputs(srv *agytest.Server) int {
	n := 0
	for _, s := range srv.Steps(srv.ConversationID()) {
		if s.Type == wire.StepUserInput {
			n++
		}
	}
	return n
}

const permissionDialog = "| command ls -la\n| Do you want to proceed?\n|   1. Yes\n|   2. Yes, and always allow this in this conversation\n|   3. Yes, and always allow this\n|   4. No\n"

func TestPromptsAnsweredFromTheTerminal(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	require.NoError(t, srv.TypeTurn("what is here?"))
	perm := openPrompt(t, srv, wire.StepRunCommand)
	term.update()
	screen := out.screen()
	assert.Contains(t, screen, permissionDialog+"| [1-4 then Enter; Esc declines]")
	assert.Contains(t, screen, "$ ls -la")
	assert.Contains(t, screen, "-- running --")

	press(term, "\r")
	assert.Contains(t, out.screen(), "! pick an option (1-4), or Esc")
	press(term, "1")
	assert.Contains(t, out.screen(), "| * 1. Yes", "a digit picks its option")
	press(term, "\r")
	assert.NotContains(t, out.screen(), "Do you want to proceed?", "answering in the dialog closes it")
	got := committed(t, srv, perm.Index())
	require.Len(t, got.CompletedInteractions, 1)
	require.NotNil(t, got.CompletedInteractions[0].Response.Permission)
	assert.True(t, got.CompletedInteractions[0].Response.Permission.Allow)
	assert.Zero(t, srv.Calls("HandleCascadeUserInteraction"), "answered from the terminal, not over RPC")

	q := openPrompt(t, srv, wire.StepAskQuestion)
	term.update()
	screen = out.screen()
	assert.Contains(t, screen, "| Which part should I focus on?\n|   1. The Go code\n|   2. The build setup\n|   3. The tests\n| [1-3 then Enter; Esc declines]")
	press(term, "4")
	assert.Contains(t, out.screen(), "! no option 4")
	press(term, "3")
	press(term, "2")
	assert.Contains(t, out.screen(), "|   3. The tests", "a single-choice question keeps the last digit")
	press(term, "\r")
	assert.NotContains(t, out.screen(), "[1-3")
	got = committed(t, srv, q.Index())
	assert.Equal(t, []string{"2"}, got.AskQuestion.Questions[0].SelectedOptionIDs)
	require.NoError(t, srv.WaitIdle(context.Background(), srv.ConversationID()))
	term.update()
	assert.Contains(t, out.screen(), "? Which part should I focus on? -> The build setup")
	assert.Contains(t, out.screen(), "-- idle --")
}

func TestOptionFourDeniesAPermission(t *testing.T) {
	srv, term, _ := newTestTerminal(t)
	require.NoError(t, srv.TypeTurn("what is here?"))
	perm := openPrompt(t, srv, wire.StepRunCommand)
	term.update()
	press(term, "4\r")
	got := committed(t, srv, perm.Index())
	require.Len(t, got.CompletedInteractions, 1)
	require.NotNil(t, got.CompletedInteractions[0].Response.Permission)
	assert.False(t, got.CompletedInteractions[0].Response.Permission.Allow)
}

func TestMultiSelectQuestionTakesSeveralDigits(t *testing.T) {
	srv, term, out := newTestTerminalWith(t, &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
		agytest.Ask(agytest.QuestionSpec{Question: "Which checks?", Options: []string{"vet", "lint", "test"}, MultiSelect: true}),
		agytest.Say("Checked.", 1),
	}}}})
	require.NoError(t, srv.TypeTurn("check it"))
	q := openPrompt(t, srv, wire.StepAskQuestion)
	term.update()
	assert.Contains(t, out.screen(), "| [1-3, several then Enter; Esc declines]")
	press(term, "132")
	press(term, "3")
	assert.Contains(t, out.screen(), "| * 1. vet\n| * 2. lint\n|   3. test", "a digit again unpicks its option")
	press(term, "\r")
	got := committed(t, srv, q.Index())
	assert.Equal(t, []string{"1", "2"}, got.AskQuestion.Questions[0].SelectedOptionIDs)
}

// Escape on an open question declines it, on an open permission denies it
// (agy: "User declined the tool call").
func TestEscapeDeclinesAnOpenPrompt(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	require.NoError(t, srv.TypeTurn("what is here?"))
	perm := openPrompt(t, srv, wire.StepRunCommand)
	term.update()
	press(term, "\x1b")
	assert.NotContains(t, out.screen(), "Do you want to proceed?")
	got := committed(t, srv, perm.Index())
	require.Len(t, got.CompletedInteractions, 1)
	require.NotNil(t, got.CompletedInteractions[0].Response.Permission)
	assert.False(t, got.CompletedInteractions[0].Response.Permission.Allow)

	srv2, term2, out2 := newTestTerminalWith(t, &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
		agytest.Ask(agytest.QuestionSpec{Question: "Which one?", Options: []string{"a", "b"}}),
		agytest.Say("Fine.", 1),
	}}}})
	require.NoError(t, srv2.TypeTurn("pick"))
	q := openPrompt(t, srv2, wire.StepAskQuestion)
	term2.update()
	require.Contains(t, out2.screen(), "| Which one?")
	press(term2, "\x1b")
	assert.NotContains(t, out2.screen(), "Which one?\n|", "Escape closes the dialog")
	require.Eventually(t, func() bool {
		s, ok := stepAt(srv2.Steps(srv2.ConversationID()), q.Index())
		return ok && s.Status != wire.StatusWaiting
	}, wait, time.Millisecond, "the question was declined")
	_, open := srv2.OpenPrompt(srv2.ConversationID())
	assert.False(t, open)
}

// agy keeps a dialog answered over RPC drawn until its keys close it, and
// while it is drawn what is typed goes into it: a turn typed then is lost.
func TestStaleDialogSwallowsTypingUntilItsKeysCloseIt(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	require.NoError(t, srv.TypeTurn("what is here?"))
	perm := openPrompt(t, srv, wire.StepRunCommand)
	term.update()
	require.Contains(t, out.screen(), "Do you want to proceed?")

	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.HandleCascadeUserInteraction(context.Background(), srv.ConversationID(), wire.InteractionResponse{
		TrajectoryID: perm.TrajectoryID(), StepIndex: wire.Int(perm.Index()), Permission: &wire.PermissionAnswer{Allow: true},
	}))
	q := openPrompt(t, srv, wire.StepAskQuestion) // the turn went on to its question
	term.update()
	screen := out.screen()
	assert.Contains(t, screen, permissionDialog+"| (answered elsewhere: 1-4 then Enter, or Esc, closes this)", "agy keeps the answered dialog")
	assert.NotContains(t, screen, "focus on?\n|", "the next prompt waits behind the stale dialog")

	before := countUserInputs(srv)
	press(term, "\x01\x0b"+paste("and now the tests"))
	assert.Contains(t, out.screen(), "| > and now the tests\n", "the typed turn went into the dialog")
	press(term, "\r")
	assert.Equal(t, before, countUserInputs(srv), "and is lost: no turn")
	assert.Contains(t, out.screen(), "answered elsewhere", "the dialog stays")
	press(term, "7")
	assert.Contains(t, out.screen(), "! no option 7")
	press(term, "\r")
	assert.Contains(t, out.screen(), "answered elsewhere", "Enter with no option picked leaves it")
	press(term, "1\r")
	screen = out.screen()
	assert.NotContains(t, screen, "Do you want to proceed?", "its keys close it")
	assert.Contains(t, screen, "|   1. The Go code", "once closed, the open question is drawn")

	require.NoError(t, c.HandleCascadeUserInteraction(context.Background(), srv.ConversationID(), wire.InteractionResponse{
		TrajectoryID: q.TrajectoryID(), StepIndex: wire.Int(q.Index()),
		AskQuestion: &wire.QuestionResponses{Responses: []wire.QuestionResponse{{Question: "Which part should I focus on?", SelectedOptionIDs: []string{"3"}}}},
	}))
	committed(t, srv, q.Index())
	term.update()
	assert.Contains(t, out.screen(), "| (answered elsewhere: 1-3 then Enter, or Esc, closes this)")
	press(term, "\x1b")
	assert.NotContains(t, out.screen(), "agy asks", "Escape closes a stale dialog")
	press(term, "hello\r")
	turns := func() []string {
		var texts []string
		for _, s := range srv.Steps(srv.ConversationID()) {
			if s.Type == wire.StepUserInput {
				texts = append(texts, s.UserInput.UserResponse)
			}
		}
		return texts
	}
	// agy's turn may still be running: the typed one is queued behind it.
	require.Eventually(t, func() bool { return len(turns()) > before }, wait, time.Millisecond, "with no dialog, a typed turn is a turn")
	assert.Equal(t, []string{"what is here?", "hello"}, turns(), "the turn typed into the dialog never became one")
}

func TestRunTakesKeysUntilCtrlC(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	r, w := io.Pipe()
	defer r.Close()
	done := make(chan error, 1)
	go func() { done <- term.run(context.Background(), r) }()

	// A paste cut by the ends of reads still is one paste.
	for _, part := range []string{"\x1b[20", "0~hi th", "ere\x1b[2", "01~", "\r"} {
		_, err := w.Write([]byte(part))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return countUserInputs(srv) == 1 }, wait, time.Millisecond)
	assert.Equal(t, "hi there", srv.Steps(srv.ConversationID())[0].UserInput.UserResponse)
	require.Eventually(t, func() bool {
		return strings.Contains(out.screen(), "Do you want to proceed?")
	}, wait, time.Millisecond, "the ticker redraws when the server changes")
	assert.True(t, strings.HasPrefix(out.all(), bracketedPasteOn), "it asks for bracketed paste")
	_, err := w.Write([]byte("\x1b[A\x03"))
	require.NoError(t, err)
	select {
	case err := <-done:
		assert.ErrorIs(t, err, errQuit)
	case <-time.After(wait):
		t.Fatal("Ctrl-C did not end the terminal")
	}
	assert.True(t, strings.HasSuffix(out.all(), bracketedPasteOff), "and stops asking when it ends")
	require.NoError(t, w.Close())
}

func TestRunEndsWithItsContext(t *testing.T) {
	_, term, out := newTestTerminal(t)
	r, w := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- term.run(ctx, r) }()
	require.Eventually(t, func() bool { return strings.Contains(out.screen(), "-- idle --") }, wait, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("run did not end with its context")
	}
	require.NoError(t, w.Close())
}

func TestParseKeys(t *testing.T) {
	for in, want := range map[string]struct {
		keys []rune
		rest string
	}{
		"ab\r":                {[]rune{'a', 'b', '\r'}, ""},
		"\x1b":                {[]rune{keyEscape}, ""},
		"\x1b\x1b":            {[]rune{keyEscape, keyEscape}, ""},
		"\x1b[A1":             {[]rune{'1'}, ""},
		"\x1b[1;5Cy":          {[]rune{'y'}, ""},
		"\x1bOPn":             {[]rune{'n'}, ""},
		"é\x7f":               {[]rune{'é', keyBackspace}, ""},
		"\x1b[":               {nil, "\x1b["},
		"a\x1bO":              {[]rune{'a'}, "\x1bO"},
		"\x03":                {[]rune{keyCtrlC}, ""},
		"\x1by":               {[]rune{keyEscape, 'y'}, ""},
		"":                    {nil, ""},
		"\x1b[200~x\x1b[201~": {[]rune{keyPasteStart, 'x', keyPasteEnd}, ""},
		"\x1b[12;34R":         {nil, ""},
		"x\x1b[20":            {[]rune{'x'}, "\x1b[20"},
		"x\xc3":               {[]rune{'x'}, "\xc3"},
		"\x01\x0b":            {[]rune{keyCtrlA, keyCtrlK}, ""},
	} {
		keys, rest := parseKeys([]byte(in))
		var got []rune
		for _, k := range keys {
			got = append(got, k.r)
		}
		assert.Equal(t, want.keys, got, "%q", in)
		assert.Equal(t, want.rest, string(rest), "%q", in)
	}
}

func TestRenderTrimsTheConversationToTheScreen(t *testing.T) {
	var steps []wire.Step
	for _, text := range []string{"one", "two", "three"} {
		steps = append(steps, wire.Step{Type: wire.StepUserInput, UserInput: &wire.UserInput{UserResponse: text}})
	}
	got := render(screenView{conv: "c1", steps: steps, status: wire.RunIdle, draft: "x", height: 6})
	assert.Equal(t, "fakeagy (agy stand-in) conversation c1\n\n> three\n\n-- idle --\n> x", got)
	got = render(screenView{status: wire.RunIdle})
	assert.Equal(t, "fakeagy (agy stand-in) no conversation yet: the first turn typed starts one\n\n\n-- idle --\n> ", got)
}

func TestTUINeedsATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	require.NoError(t, err)
	defer f.Close()
	var stderr bytes.Buffer
	err = run([]string{"--tui"}, f, io.Discard, &stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a terminal")
	assert.Error(t, run([]string{"--tui-refresh", "0s"}, nil, io.Discard, &stderr))
}

// agy's terminal shows every prompt that went WAITING: one answered over RPC
// before the screen was drawn again still gets its dialog, stale, and its
// keys close it (pressed into no dialog, "4" and Enter would be a turn).
func TestPromptAnsweredBeforeItWasDrawnStillGetsItsDialog(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	require.NoError(t, srv.TypeTurn("what is here?"))
	perm := openPrompt(t, srv, wire.StepRunCommand)
	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.HandleCascadeUserInteraction(context.Background(), srv.ConversationID(), wire.InteractionResponse{
		TrajectoryID: perm.TrajectoryID(), StepIndex: wire.Int(perm.Index()), Permission: &wire.PermissionAnswer{},
	}))
	committed(t, srv, perm.Index())
	term.update()
	require.Contains(t, out.screen(), permissionDialog+"| (answered elsewhere: 1-4 then Enter, or Esc, closes this)")
	before := countUserInputs(srv)
	press(term, "4\r")
	assert.NotContains(t, out.screen(), "Do you want to proceed?", "its keys close it")
	assert.Equal(t, before, countUserInputs(srv), "and type no turn")
}

// A compound command asked segment by segment on one step: once the first
// segment is answered (over RPC here), agy's dialog is redrawn for the
// next, and the keys pressed then answer that one.
func TestDialogRedrawnWhenTheSameStepAsksAgain(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
		agytest.Run(agytest.CommandAction{Line: "git status && git log", Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Done.", 1),
	}}}}
	srv, term, out := newTestTerminalWith(t, sc)
	require.NoError(t, srv.TypeTurn("look"))
	perm := openPrompt(t, srv, wire.StepRunCommand)
	term.update()
	require.Contains(t, out.screen(), "| command git status\n| Do you want to proceed?")

	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.HandleCascadeUserInteraction(context.Background(), srv.ConversationID(), wire.InteractionResponse{
		TrajectoryID: perm.TrajectoryID(), StepIndex: wire.Int(perm.Index()), Permission: &wire.PermissionAnswer{Allow: true},
	}))
	term.update()
	screen := out.screen()
	assert.Contains(t, screen, "| command git log\n| Do you want to proceed?", "the dialog shows the next ask")
	assert.NotContains(t, screen, "answered elsewhere")
	press(term, "1\r")
	done := committed(t, srv, perm.Index())
	assert.Equal(t, wire.StatusDone, done.Status)
	assert.Len(t, done.CompletedInteractions, 2, "the keys answered the second ask")
}

// agy's dialog for a file outside the workspace has three rows; 3 denies.
func TestFileAccessDialogDeniesWithThree(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
		agytest.Interact(agytest.InteractAction{Kind: "filePermission", Target: "/etc/hosts"}),
		agytest.Say("Done.", 1),
	}}}}
	srv, term, out := newTestTerminalWith(t, sc)
	require.NoError(t, srv.TypeTurn("read it"))
	p := openPrompt(t, srv, wire.StepViewFile)
	term.update()
	screen := out.screen()
	assert.Contains(t, screen, "| Read: /etc/hosts\n| Reason: outside workspace\n| Allow access to this file?")
	assert.Contains(t, screen, "3. No, deny access")
	press(term, "3\r")
	done := committed(t, srv, p.Index())
	require.Len(t, done.CompletedInteractions, 1)
	require.NotNil(t, done.CompletedInteractions[0].Response.FilePermission)
	assert.False(t, done.CompletedInteractions[0].Response.FilePermission.Allow)
}
