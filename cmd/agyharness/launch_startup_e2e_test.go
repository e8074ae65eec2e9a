package main

import (
	"strings"
	"testing"

	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// finish ends launch (stdin closed: it detaches) and returns its stderr.
func (l *launched) finish() string {
	l.t.Helper()
	require.NoError(l.t, l.stdin.Close())
	assert.Equal(l.t, exitOK, l.exit(wait))
	return l.stderr.String()
}

// The first turn, sent the moment the session is attached, reaches agy
// although agy refuses turns for its first seconds (its account check,
// fakeagy --startup-delay): the harness sees agy's notice, types the turn
// again, and it lands once.
func TestLaunchFirstTurnTypedWhileAgyVerifiesIsNotLost(t *testing.T) {
	t.Setenv("AGYHARNESS_LOG", "info")
	l := startLaunch(t, nil, []string{"--startup-delay", "6s", "--scenario", launchScenario(t)})
	l.er.until(wait, "no conversation yet", isStatus(messages.StateNoConversation))
	l.send(messages.Command{Type: messages.CommandTurn, Text: "hello"})
	user := l.er.until(wait, "the first turn", isType(messages.EventUserMessage))
	assert.Equal(t, "hello", user.Text)
	assert.Equal(t, messages.OriginHarness, user.Origin)
	l.waitScreen("agy refused the turn once, then ran it", shows("Verifying your account eligibility", "\n> hello\nHello, person."))
	l.er.until(wait, "idle", isStatus(messages.StateIdle))
	users := 0
	for _, ev := range l.er.events {
		if ev.Type == messages.EventUserMessage {
			users++
		}
	}
	assert.Equal(t, 1, users, "the turn is in agy's conversation once")
	assert.Equal(t, 1, strings.Count(l.pane.visible(), "> hello\n"), "typed again only after agy refused it:\n%s", l.pane.visible())
	assert.Contains(t, l.finish(), "refused the turn; typing it again")
}

// agy's feedback survey takes the keyboard (a turn typed into it is lost):
// the harness dismisses it before typing.
func TestLaunchDismissesAgysSurvey(t *testing.T) {
	t.Setenv("AGYHARNESS_LOG", "info")
	l := startLaunch(t, nil, []string{"--startup-delay", "0", "--survey-after", "0", "--scenario", launchScenario(t)})
	l.er.until(wait, "no conversation yet", isStatus(messages.StateNoConversation))
	l.send(messages.Command{Type: messages.CommandTurn, Text: "hello"})
	user := l.er.until(wait, "the first turn", isType(messages.EventUserMessage))
	assert.Equal(t, "hello", user.Text)
	l.waitScreen("the survey gone, the turn run", func(s string) bool {
		return shows("\n> hello\nHello, person.")(s) && showsNone("How's the CLI experience")(s)
	})
	assert.Contains(t, l.finish(), "dismissing agy's feedback survey")
}

// agy's trust dialog stops launch with what to do, unless --trust-workspace
// answers it.
func TestLaunchStopsOnTheTrustDialogUnlessTrustWorkspace(t *testing.T) {
	l := startLaunchUnready(t, nil, []string{"--trust-prompt"})
	ev := l.er.until(wait, "the error", isType(messages.EventError))
	assert.Contains(t, ev.Message, "agy asks whether to trust this folder")
	assert.Contains(t, ev.Message, "--trust-workspace")
	assert.Equal(t, exitFailure, l.exit(wait))
	assert.Contains(t, l.stderr.String(), "--trust-workspace")

	l = startLaunch(t, []string{"--trust-workspace"}, []string{"--trust-prompt", "--startup-delay", "0", "--scenario", launchScenario(t)})
	l.send(messages.Command{Type: messages.CommandTurn, Text: "hello"})
	user := l.er.until(wait, "the first turn", isType(messages.EventUserMessage))
	assert.Equal(t, "hello", user.Text)
	l.waitScreen("the turn run", shows("\n> hello\nHello, person."))
	assert.NotContains(t, l.pane.visible(), "Do you trust")
}

// A signed-out agy stops launch: the person must sign in in agy first.
func TestLaunchStopsWhenAgyIsSignedOut(t *testing.T) {
	l := startLaunchUnready(t, nil, []string{"--signed-out"})
	ev := l.er.until(wait, "the error", isType(messages.EventError))
	assert.Contains(t, ev.Message, "agy is not signed in")
	assert.Contains(t, ev.Message, "sign in")
	assert.Equal(t, exitFailure, l.exit(wait))
}

// launch reads agy's version: it names it, and warns once when agy is
// newer than the harness models.
func TestLaunchReadsAgysVersion(t *testing.T) {
	l := startLaunch(t, nil, nil)
	l.er.until(wait, "no conversation yet", isStatus(messages.StateNoConversation))
	stderr := l.finish()
	assert.Contains(t, stderr, "agy 1.2.7 runs in tmux session main")
	assert.NotContains(t, stderr, "newer than")

	t.Setenv("FAKEAGY_VERSION", "1.3.0")
	l = startLaunch(t, nil, nil)
	l.er.until(wait, "no conversation yet", isStatus(messages.StateNoConversation))
	stderr = l.finish()
	assert.Contains(t, stderr, "agy 1.3.0 runs in tmux session main")
	assert.Equal(t, 1, strings.Count(stderr, "newer than the newest version this harness models"), "stderr:\n%s", stderr)
	assert.Contains(t, stderr, "agy_version=1.3.0")
}
