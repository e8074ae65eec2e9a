package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
)

// withStartup gives the terminal startup screens, on a clock the test
// moves.
func withStartup(term *terminal, o startupOptions) (*startup, *time.Time) {
	now := time.Unix(1000, 0)
	s := newStartup(o, "/work/space")
	s.now, s.ready = func() time.Time { return now }, now.Add(o.delay)
	term.start = s
	return s, &now
}

// While agy checks the account, a typed turn leaves the draft and is lost:
// agy answers it with its notice. Once the check is done, turns run. The
// input's footer shows throughout (agy's composer is up before the check
// is done).
func TestTurnTypedDuringTheStartupDelayIsLostWithTheNotice(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	_, now := withStartup(term, startupOptions{delay: time.Second, surveyAfter: -1})
	term.update()
	assert.True(t, strings.HasSuffix(out.screen(), "\n> \n"+idleFooter), "agy's input, ready to type:\n%s", out.screen())
	press(term, "hello\r")
	assert.Zero(t, countUserInputs(srv), "the turn was refused")
	assert.Contains(t, out.screen(), "! "+eligibilityNotice+"\n\n-- idle --")
	assert.True(t, strings.HasSuffix(out.screen(), "\n> \n"+idleFooter), "the draft is gone:\n%s", out.screen())
	press(term, "again\r")
	assert.Equal(t, 2, strings.Count(out.screen(), eligibilityNotice), "each refused turn gets its notice")

	*now = now.Add(time.Second)
	press(term, "hello\r")
	assert.Equal(t, 1, countUserInputs(srv), "the check is done: the turn runs")
}

// The trust dialog takes the keyboard (a turn typed into it is lost) until
// Enter answers its preselected Yes; a pasted line break does not.
func TestTrustDialogTakesTheKeysUntilEnter(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	withStartup(term, startupOptions{trust: true, surveyAfter: -1})
	term.update()
	assert.Contains(t, out.screen(), "Accessing workspace: /work/space\n\nDo you trust the contents of this project?")
	assert.Contains(t, out.screen(), "> Yes, I trust this folder\n  No, exit")
	assert.NotContains(t, out.screen(), idleFooter, "the dialog shows no input footer")
	press(term, paste("hello\n"))
	assert.Contains(t, out.screen(), "Do you trust the contents of this project?")
	press(term, "\r")
	assert.NotContains(t, out.screen(), "Do you trust")
	assert.Contains(t, out.screen(), idleFooter)
	assert.Zero(t, countUserInputs(srv), "nothing typed into the dialog became a turn")
	press(term, "hello\r")
	assert.Equal(t, 1, countUserInputs(srv))
}

// The survey opens once the conversation has the turns it waits for; a turn
// typed while it is up is lost; Escape dismisses it.
func TestSurveyOpensAfterTurnsAndEscapeDismissesIt(t *testing.T) {
	srv, term, out := newTestTerminalWith(t, &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Hi.", 1)}}}})
	withStartup(term, startupOptions{surveyAfter: 1})
	press(term, "hello\r")
	require.Eventually(t, func() bool { term.update(); return strings.Contains(out.screen(), surveyQuestion) }, wait, time.Millisecond,
		"the survey after the first turn:\n%s", out.screen())
	assert.True(t, strings.HasSuffix(out.screen(), runningFooter+" ---"), "its footer is the running one:\n%s", out.screen())
	press(term, "thanks\r")
	assert.Equal(t, 1, countUserInputs(srv), "a turn typed into the survey is lost")
	press(term, "\x1b")
	assert.NotContains(t, out.screen(), surveyQuestion)
	press(term, "thanks\r")
	assert.Equal(t, 2, countUserInputs(srv))
	term.update()
	assert.NotContains(t, out.screen(), surveyQuestion, "shown once")
}

// A signed-out agy shows its sign-in screen for good; an ineligible account
// agy's failure.
func TestSignedOutAndIneligibleScreensTakeEveryKey(t *testing.T) {
	srv, term, out := newTestTerminal(t)
	withStartup(term, startupOptions{signedOut: true, surveyAfter: -1})
	press(term, "hello\r\x1b")
	assert.Contains(t, out.screen(), "You are not logged into Antigravity.")
	assert.NotContains(t, out.screen(), idleFooter)
	assert.Zero(t, countUserInputs(srv))

	_, term, out = newTestTerminal(t)
	withStartup(term, startupOptions{ineligible: true, surveyAfter: -1})
	term.update()
	assert.Contains(t, out.screen(), "Eligibility check failed: Your current account is not eligible for Antigravity.")
}

func TestVersionPrintsTheConfiguredString(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"--version"}, nil, &out, io.Discard))
	assert.Equal(t, defaultVersion+"\n", out.String())
	out.Reset()
	require.NoError(t, run([]string{"--version", "--version-string", "1.3.0"}, nil, &out, io.Discard))
	assert.Equal(t, "1.3.0\n", out.String())
	t.Setenv("FAKEAGY_VERSION", "9.8.7")
	out.Reset()
	require.NoError(t, run([]string{"--version"}, nil, &out, io.Discard))
	assert.Equal(t, "9.8.7\n", out.String())
}
