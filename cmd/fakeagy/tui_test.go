package main

import (
	"bytes"
	"context"
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
	t.Helper()
	srv := agytest.Start(t, agytest.Options{Conversation: true, Seed: 7, ChunkDelay: -1, PromptTimeout: -1})
	out := &screenBuffer{}
	return srv, newTerminal(srv, out, time.Millisecond), out
}

// openPrompt waits until the active conversation has a WAITING step of typ.
func openPrompt(t *testing.T, srv *agytest.Server, typ rpc.StepType) rpc.Step {
	t.Helper()
	var step rpc.Step
	require.Eventually(t, func() bool {
		s, ok := srv.OpenPrompt(srv.ConversationID())
		step = s
		return ok && s.Type == typ
	}, wait, time.Millisecond, "a WAITING %s step", typ)
	return step
}

// committed waits for the ground truth of step index idx.
func committed(t *testing.T, srv *agytest.Server, idx int) rpc.Step {
	t.Helper()
	var step rpc.Step
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
	for _, k := range parseKeys([]byte(keys)) {
		term.handle(k)
	}
	term.update()
}

func TestTypedTextAndEnterSendATerminalTurn(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	term.update()
	assert.Contains(t, out.screen(), "-- idle --")
	press(term, "helo\x7flo")
	assert.True(t, strings.HasSuffix(out.screen(), "> hello"), "the line being typed, backspace applied:\n%s", out.screen())

	press(term, "\r")
	steps := srv.Steps(srv.ConversationID())
	require.NotEmpty(t, steps, "Enter sends the turn at once")
	first := steps[0]
	assert.Equal(t, rpc.StepUserInput, first.Type)
	assert.Equal(t, "hello", first.UserInput.UserResponse)
	assert.Equal(t, rpc.SourceUserExplicit, first.Metadata.Source, "typed in agy's terminal")
	assert.True(t, strings.HasSuffix(out.screen(), "\n> "), "the input line is empty again")
	assert.True(t, strings.HasPrefix(out.screen(), "> hello\n"), "the turn is in the conversation:\n%s", out.screen())

	press(term, "   \r")
	assert.Equal(t, 1, countUserInputs(srv), "a blank line sends nothing")
}

func countUserInputs(srv *agytest.Server) int {
	n := 0
	for _, s := range srv.Steps(srv.ConversationID()) {
		if s.Type == rpc.StepUserInput {
			n++
		}
	}
	return n
}

func TestPromptsAnsweredFromTheTerminal(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	require.NoError(t, srv.TypeTurn("what is here?"))
	perm := openPrompt(t, srv, rpc.StepRunCommand)
	term.update()
	screen := out.screen()
	assert.Contains(t, screen, "| Allow command ls -la? [y/n]")
	assert.Contains(t, screen, "$ ls -la")
	assert.Contains(t, screen, "-- running --")

	press(term, "x") // not a key of the widget, and not typed either
	assert.True(t, strings.HasSuffix(out.screen(), "\n> "))
	press(term, "y")
	assert.NotContains(t, out.screen(), "[y/n]", "answering in the widget closes it")
	got := committed(t, srv, perm.Index())
	require.Len(t, got.CompletedInteractions, 1)
	require.NotNil(t, got.CompletedInteractions[0].Response.Permission)
	assert.True(t, got.CompletedInteractions[0].Response.Permission.Allow)
	assert.Zero(t, srv.Calls("HandleCascadeUserInteraction"), "answered from the terminal, not over RPC")

	q := openPrompt(t, srv, rpc.StepAskQuestion)
	term.update()
	screen = out.screen()
	assert.Contains(t, screen, "| Which part should I focus on?\n|   1) The Go code\n|   2) The build setup\n|   3) The tests\n| [1-3, Esc to close]")
	press(term, "4")
	assert.Contains(t, out.screen(), "! no option 4")
	press(term, "2")
	assert.NotContains(t, out.screen(), "[1-3")
	got = committed(t, srv, q.Index())
	assert.Equal(t, []string{"2"}, got.AskQuestion.Questions[0].SelectedOptionIDs)
	require.NoError(t, srv.WaitIdle(context.Background(), srv.ConversationID()))
	term.update()
	assert.Contains(t, out.screen(), "? Which part should I focus on? -> The build setup")
	assert.Contains(t, out.screen(), "-- idle --")
}

func TestWidgetAnsweredElsewhereStaysUntilEscape(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	require.NoError(t, srv.TypeTurn("what is here?"))
	perm := openPrompt(t, srv, rpc.StepRunCommand)
	term.update()
	require.Contains(t, out.screen(), "[y/n]")

	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.HandleCascadeUserInteraction(context.Background(), srv.ConversationID(), rpc.InteractionResponse{
		TrajectoryID: perm.TrajectoryID(), StepIndex: rpc.Int(perm.Index()), Permission: &rpc.PermissionAnswer{Allow: true},
	}))
	openPrompt(t, srv, rpc.StepAskQuestion) // the turn went on to its question
	term.update()
	screen := out.screen()
	assert.Contains(t, screen, "| Allow command ls -la? [y/n]\n| (prompt answered elsewhere - Esc to close)", "agy keeps the answered widget")
	assert.NotContains(t, screen, "focus on?\n|", "the next prompt waits behind the stale widget")

	press(term, "n")
	assert.Contains(t, out.screen(), "answered elsewhere", "a stale widget takes no answer")
	press(term, "\x1b")
	screen = out.screen()
	assert.NotContains(t, screen, "[y/n]")
	assert.NotContains(t, screen, "answered elsewhere")
	assert.Contains(t, screen, "|   1) The Go code", "once closed, the open question is drawn")

	press(term, "\x1b")
	assert.NotContains(t, out.screen(), "1) The Go code", "Escape closes an open widget without answering")
	term.update()
	assert.NotContains(t, out.screen(), "1) The Go code", "and it stays closed")
	_, open := srv.OpenPrompt(srv.ConversationID())
	assert.True(t, open, "the prompt is still open over RPC")
}

func TestRunTakesKeysUntilCtrlC(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	r, w := io.Pipe()
	defer r.Close()
	done := make(chan error, 1)
	go func() { done <- term.run(context.Background(), r) }()

	_, err := w.Write([]byte("hi there\r"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countUserInputs(srv) == 1 }, wait, time.Millisecond)
	require.Eventually(t, func() bool {
		return strings.Contains(out.screen(), "| Allow command ls -la? [y/n]")
	}, wait, time.Millisecond, "the ticker redraws when the server changes")
	_, err = w.Write([]byte("\x1b[A\x03"))
	require.NoError(t, err)
	select {
	case err := <-done:
		assert.ErrorIs(t, err, errQuit)
	case <-time.After(wait):
		t.Fatal("Ctrl-C did not end the terminal")
	}
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
	for in, want := range map[string][]rune{
		"ab\r":        {'a', 'b', '\r'},
		"\x1b":        {keyEscape},
		"\x1b\x1b":    {keyEscape, keyEscape},
		"\x1b[A1":     {'1'},
		"\x1b[1;5Cy":  {'y'},
		"\x1bOPn":     {'n'},
		"é\x7f":       {'é', keyBackspace},
		"\x1b[":       nil,
		"\x03":        {keyCtrlC},
		"\x1by":       {keyEscape, 'y'},
		"":            nil,
		"\x1b[200~x":  {'x'},
		"\x1b[12;34R": nil,
	} {
		var got []rune
		for _, k := range parseKeys([]byte(in)) {
			got = append(got, k.r)
		}
		assert.Equal(t, want, got, "%q", in)
	}
}

func TestRenderTrimsTheConversationToTheScreen(t *testing.T) {
	var steps []rpc.Step
	for _, text := range []string{"one", "two", "three"} {
		steps = append(steps, rpc.Step{Type: rpc.StepUserInput, UserInput: &rpc.UserInput{UserResponse: text}})
	}
	got := render(screenView{header: "head", steps: steps, status: rpc.RunIdle, input: "x", height: 6})
	assert.Equal(t, "head\n\n> three\n\n-- idle --\n> x", got)
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
