package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// launched is "agyharness launch --json" running fakeagy --tui, agy's
// stand-in with a terminal UI, in the tmux session "main" on a private
// tmux server.
type launched struct {
	*attached
	pane *tmuxPane
	log  string // fakeagy's log lines
}

// startLaunch runs the harness's launch with harnessArgs on fakeagy --tui
// with fakeArgs (a fresh agy, with no conversation, unless they say
// --conversation).
func startLaunch(t *testing.T, harnessArgs, fakeArgs []string) *launched {
	t.Helper()
	l := startLaunchUnready(t, harnessArgs, fakeArgs)
	l.waitScreen("agy's TUI is up", func(s string) bool { return strings.Contains(s, "-- idle --") })
	l.reapPane()
	return l
}

// startLaunchUnready is startLaunch without waiting for agy's input: for an
// agy that shows a startup screen instead.
func startLaunchUnready(t *testing.T, harnessArgs, fakeArgs []string) *launched {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	fake := buildBinary(t, "cmd/fakeagy")
	pane := &tmuxPane{t: t, socket: fmt.Sprintf("agyharness-launch-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", pane.socket, "kill-server").Run() })
	args := append([]string{"launch", "--json", "--tmux-socket", pane.socket, "--tmux-session", "main", "--agy", fake}, harnessArgs...)
	log := filepath.Join(t.TempDir(), "fakeagy.log")
	args = append(args, "--", "--tui", "--seed", "5", "--chunk-delay", "2ms", "--prompt-timeout", "-1s", "--log", log)
	return &launched{attached: startAttachArgs(t, append(args, fakeArgs...)...), pane: pane, log: log}
}

// reapPane makes sure agy goes when its tmux session does.
func (l *launched) reapPane() {
	t, pane := l.t, l.pane
	t.Helper()
	// Registered after the tmux server's cleanup, so it runs first: agy
	// must go when its tmux session does (tmux hangs up on it), whether
	// the harness killed the session or the test kills the server.
	out, err := exec.Command("tmux", "-L", pane.socket, "list-panes", "-t", "=main", "-F", "#{pane_pid}").Output()
	require.NoError(t, err, "tmux list-panes")
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err, "pane PID %q", out)
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-L", pane.socket, "kill-server").Run()
		if !assert.Eventually(t, func() bool { return !running(pid) }, wait, 20*time.Millisecond,
			"agy (fakeagy --tui, PID %d) outlived its tmux session", pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// earlierRuns are the conversations of earlier runs fakeagy logged.
func (l *launched) earlierRuns() []string {
	l.t.Helper()
	b, err := os.ReadFile(l.log)
	require.NoError(l.t, err)
	var ids []string
	for _, line := range strings.Split(string(b), "\n") {
		if id, ok := strings.CutPrefix(line, "fakeagy: earlier run conversation "); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// launchScenario is what fakeagy does in the launch tests: "thanks" and a
// person's "hello" get a short answer; any other turn asks to run a
// command, then asks a question.
func launchScenario(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"name": "launch", "turns": [
  {"match": "thanks", "actions": [{"say": "You are welcome.", "chunks": 2}]},
  {"match": "hello", "actions": [{"say": "Hello, person.", "chunks": 2}]},
  {"actions": [
    {"say": "Let me look first.", "chunks": 2},
    {"run_command": {"line": "ls -la", "cwd": "/workspace", "output": "main.go\n", "needs_approval": true}},
    {"ask": {"questions": [{"question": "Which part should I focus on?", "options": ["The Go code", "The build setup", "The tests"]}]}},
    {"say": "Done looking.", "chunks": 2}
  ]}
]}`), 0o600))
	return path
}

// running reports whether the process pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// visible is the pane's screen as a person sees it now (no scrollback: a
// redraw may push the old screen there), or the error of tmux (e.g. before
// the harness has started the tmux server).
func (p *tmuxPane) visible() string {
	out, err := exec.Command("tmux", "-L", p.socket, "capture-pane", "-p", "-t", "main").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(tmux capture-pane: %v: %s)", err, out)
	}
	return string(out)
}

func (l *launched) waitScreen(what string, ok func(screen string) bool) {
	l.t.Helper()
	if !assert.Eventually(l.t, func() bool { return ok(l.pane.visible()) }, wait, 20*time.Millisecond) {
		b, _ := os.ReadFile(l.log)
		l.t.Fatalf("the pane never showed %s:\n%s\nfakeagy's log:\n%s", what, l.pane.visible(), b)
	}
}

func shows(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

func showsNone(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

// TestLaunchFromColdStart drives launch end to end on a fresh agy (no
// conversation; earlier runs on disk): the first turn is typed into agy's
// pane and binds the conversation agy mints for it, never an earlier one;
// an approval answered over JSON is closed in agy's terminal with agy's
// keys (1 Enter); an interrupt while a question is open declines it and
// closes its dialog (Escape); a second turn goes over RPC; a person's turn
// typed in the pane afterwards is a turn (no stale dialog swallows it);
// the pane shows what agy's would.
func TestLaunchFromColdStart(t *testing.T) {
	l := startLaunch(t, nil, []string{"--earlier-runs", "2", "--scenario", launchScenario(t)})
	cold := l.er.until(wait, "no conversation yet", isStatus(messages.StateNoConversation))
	assert.Empty(t, cold.ConversationID)
	l.waitScreen("a fresh agy", shows("no conversation yet"))
	earlier := l.earlierRuns()
	require.Len(t, earlier, 2)

	l.send(messages.Command{Type: messages.CommandTurn, Text: "Show me what you can do"})
	user := l.er.until(wait, "the first turn", isType(messages.EventUserMessage))
	assert.Equal(t, "Show me what you can do", user.Text)
	assert.Equal(t, messages.OriginHarness, user.Origin, "typed by the harness")
	require.NotEmpty(t, user.ConversationID)
	assert.NotContains(t, earlier, user.ConversationID, "never a conversation of an earlier run")
	l.waitScreen("the typed turn in the conversation agy minted", shows("conversation "+user.ConversationID, "\n> Show me what you can do\n"))

	perm := l.er.until(wait, "permission prompt", isType(messages.EventElicitationRequest))
	require.Equal(t, messages.KindPermission, perm.Kind)
	l.waitScreen("agy's permission dialog", shows("| command ls -la\n| Do you want to proceed?", "|   4. No"))
	l.send(messages.Command{Type: messages.CommandResolve, ElicitationID: perm.ElicitationID, Action: messages.ActionAccept})
	res := l.er.until(wait, "permission resolved", isType(messages.EventElicitationResolved))
	assert.Equal(t, messages.ByHarness, res.By)
	assert.Equal(t, messages.ActionAccept, res.Action)

	q := l.er.until(wait, "question prompt", isType(messages.EventElicitationRequest))
	require.Equal(t, messages.KindQuestion, q.Kind)
	l.waitScreen("the permission dialog closed by its keys, the question's open",
		func(s string) bool {
			return shows("| Which part should I focus on?", "|   3. The tests")(s) && showsNone("Do you want to proceed?", "answered elsewhere")(s)
		})

	l.send(messages.Command{Type: messages.CommandInterrupt})
	declined := l.er.until(wait, "the question declined", isType(messages.EventElicitationResolved))
	assert.Equal(t, q.ElicitationID, declined.ElicitationID)
	assert.Equal(t, messages.ActionCancel, declined.Action)
	l.er.until(wait, "idle after the interrupt", isStatus(messages.StateIdle))
	l.waitScreen("no dialog after the interrupt (Escape closed it)", func(s string) bool {
		return shows("-- idle --")(s) && showsNone("agy asks")(s)
	})

	l.send(messages.Command{Type: messages.CommandTurn, Text: "thanks"})
	second := l.er.until(wait, "the second turn", isType(messages.EventUserMessage))
	assert.Equal(t, "thanks", second.Text)
	assert.Equal(t, messages.OriginHarness, second.Origin)
	assert.Equal(t, user.ConversationID, second.ConversationID)
	answer := l.er.until(wait, "the answer", isType(messages.EventMessage))
	assert.Equal(t, "You are welcome.", answer.Text)
	l.er.until(wait, "idle", isStatus(messages.StateIdle))

	l.pane.keys("hello from the pane", "Enter")
	typed := l.er.until(wait, "the person's turn", isType(messages.EventUserMessage))
	assert.Equal(t, "hello from the pane", typed.Text)
	assert.Equal(t, messages.OriginTerminal, typed.Origin)
	l.er.until(wait, "idle", isStatus(messages.StateIdle))
	l.waitScreen("the whole conversation, as agy's terminal shows it", func(s string) bool {
		return shows("> Show me what you can do\nLet me look first.\n$ ls -la\n  main.go\n", "\n> thanks\nYou are welcome.\n",
			"\n> hello from the pane\nHello, person.\n", "-- idle --")(s) && showsNone("agy asks")(s)
	})

	for _, ev := range l.er.events {
		if ev.Type == messages.EventError {
			t.Errorf("unexpected error event: %s", ev.Message)
		}
	}
	l.send(`{"type":"detach"}`)
	assert.Equal(t, 0, l.exit(wait), "stderr:\n%s", l.stderr.String())
	assert.Contains(t, l.stderr.String(), "tmux session main")
	err := exec.Command("tmux", "-L", l.pane.socket, "has-session", "-t", "=main").Run()
	assert.Error(t, err, "the harness's tmux session is gone after it exits")
}

// With --turns tui every turn is typed into agy's pane; a question
// answered over JSON is closed with its option's digit and Enter, so the
// turn typed next is a turn, not swallowed by a stale dialog.
func TestLaunchTypesEveryTurnWithTurnsTUI(t *testing.T) {
	l := startLaunch(t, []string{"--turns", "tui"}, []string{"--scenario", launchScenario(t)})
	l.er.until(wait, "no conversation yet", isStatus(messages.StateNoConversation))

	l.send(messages.Command{Type: messages.CommandTurn, Text: "Show me what you can do"})
	perm := l.er.until(wait, "permission prompt", isType(messages.EventElicitationRequest))
	l.send(messages.Command{Type: messages.CommandResolve, ElicitationID: perm.ElicitationID, Action: messages.ActionDecline})
	res := l.er.until(wait, "permission resolved", isType(messages.EventElicitationResolved))
	assert.Equal(t, messages.ActionDecline, res.Action)
	q := l.er.until(wait, "question prompt", isType(messages.EventElicitationRequest))
	l.waitScreen("the question's dialog, the permission's closed", func(s string) bool {
		return shows("|   3. The tests")(s) && showsNone("Do you want to proceed?")(s)
	})
	l.send(messages.Command{Type: messages.CommandResolve, ElicitationID: q.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{SelectedOptionIDs: []string{"3"}}}})
	l.er.until(wait, "question resolved", isType(messages.EventElicitationResolved))
	l.er.until(wait, "idle", isStatus(messages.StateIdle))
	l.waitScreen("no dialog", func(s string) bool {
		return shows("? Which part should I focus on? -> The tests")(s) && showsNone("agy asks")(s)
	})

	l.send(messages.Command{Type: messages.CommandTurn, Text: "thanks"})
	second := l.er.until(wait, "the second turn", func(ev *messages.Event) bool {
		return ev.Type == messages.EventUserMessage && ev.Text == "thanks"
	})
	assert.Equal(t, messages.OriginHarness, second.Origin, "typed by the harness, and taken by agy")
	l.er.until(wait, "idle", isStatus(messages.StateIdle))
	l.waitScreen("the typed turn and its answer", shows("\n> thanks\nYou are welcome.\n"))
	l.send(`{"type":"detach"}`)
	assert.Equal(t, 0, l.exit(wait), "stderr:\n%s", l.stderr.String())
}

// A turn the harness types into agy's pane comes back with origin harness,
// also when agy takes it otherwise than it was sent (a paste's line breaks
// and control characters, the blanks agy trims), each once: a person then
// typing the same text in the pane is origin terminal.
func TestLaunchTypedTurnsComeBackFromTheHarness(t *testing.T) {
	l := startLaunch(t, []string{"--turns", "tui"}, []string{"--scenario", launchScenario(t)})
	l.er.until(wait, "no conversation yet", isStatus(messages.StateNoConversation))
	for _, text := range []string{"  thanks\r\n", "thanks \x07\t\n", "thanks"} {
		l.send(messages.Command{Type: messages.CommandTurn, Text: text})
		user := l.er.until(wait, fmt.Sprintf("the turn %q", text), isType(messages.EventUserMessage))
		assert.Equal(t, "thanks", user.Text, "as agy took it")
		assert.Equal(t, messages.OriginHarness, user.Origin, "the turn %q, typed by the harness", text)
		l.er.until(wait, "idle", isStatus(messages.StateIdle))
	}
	l.pane.keys("thanks", "Enter")
	typed := l.er.until(wait, "the person's turn", isType(messages.EventUserMessage))
	assert.Equal(t, "thanks", typed.Text)
	assert.Equal(t, messages.OriginTerminal, typed.Origin, "typed by a person: each typed turn is matched once")
	l.er.until(wait, "idle", isStatus(messages.StateIdle))
	for _, ev := range l.er.events {
		if ev.Type == messages.EventError {
			t.Errorf("unexpected error event: %s", ev.Message)
		}
	}
	l.send(`{"type":"detach"}`)
	assert.Equal(t, 0, l.exit(wait), "stderr:\n%s", l.stderr.String())
}

// TestLaunchWithoutCloseKeysLeavesTheDialog shows why the harness presses
// agy's keys: with none (--close-prompt-key ""), a prompt answered over
// JSON stays drawn in agy's terminal until a person closes it.
func TestLaunchWithoutCloseKeysLeavesTheDialog(t *testing.T) {
	l := startLaunch(t, []string{"--close-prompt-key", ""}, []string{"--conversation", "--scenario", launchScenario(t)})

	l.send(messages.Command{Type: messages.CommandTurn, Text: "Show me what you can do"})
	perm := l.er.until(wait, "permission prompt", isType(messages.EventElicitationRequest))
	l.waitScreen("the permission dialog", shows("Do you want to proceed?"))
	l.send(messages.Command{Type: messages.CommandResolve, ElicitationID: perm.ElicitationID, Action: messages.ActionAccept})
	l.er.until(wait, "question prompt", isType(messages.EventElicitationRequest))
	l.waitScreen("the stale permission dialog", shows("Do you want to proceed?", "| (answered elsewhere: 1-4 then Enter, or Esc, closes this)"))

	l.pane.keys("Escape")
	l.waitScreen("the question once the person closed the stale dialog",
		func(s string) bool { return shows("|   1. The Go code")(s) && showsNone("Do you want to proceed?")(s) })

	l.send(`{"type":"detach"}`)
	assert.Equal(t, 0, l.exit(wait), "stderr:\n%s", l.stderr.String())
}

// launch --conversation ID resumes ID in agy (agy --conversation ID) and
// binds it at once.
func TestLaunchResumesAConversation(t *testing.T) {
	// fakeagy's earlier runs depend on its seed alone: the launched one
	// (seed 5) keeps the same.
	srv, err := agytest.NewServer(agytest.Options{EarlierRuns: 2, Seed: 5})
	require.NoError(t, err)
	earlier := srv.Conversations()
	require.NoError(t, srv.Close())
	require.Len(t, earlier, 2)

	l := startLaunch(t, []string{"--conversation", earlier[0]}, []string{"--earlier-runs", "2"})
	idle := l.er.until(wait, "bound", isStatus(messages.StateIdle))
	assert.Equal(t, earlier[0], idle.ConversationID)
	for _, ev := range l.er.events {
		assert.NotEqual(t, messages.StateNoConversation, ev.State, "bound at once")
	}
	l.waitScreen("agy on the resumed conversation", shows("conversation "+earlier[0], "> Earlier run 1: tidy the workspace"))
	l.send(`{"type":"detach"}`)
	assert.Equal(t, 0, l.exit(wait), "stderr:\n%s", l.stderr.String())
}

// runLaunch runs "launch --json" on a private tmux server until it exits,
// and returns its exit code, its stderr and the server's socket name.
func runLaunch(t *testing.T, args ...string) (code int, stderr, socket string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	socket = fmt.Sprintf("agyharness-launch-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	a := startAttachArgs(t, append([]string{"launch", "--json", "--tmux-socket", socket, "--tmux-session", "main"}, args...)...)
	require.NoError(t, a.stdin.Close())
	return a.exit(wait), a.stderr.String(), socket
}

func TestLaunchSaysWhenAgyIsNotFound(t *testing.T) {
	code, stderr, socket := runLaunch(t, "--agy", "/nonexistent/agy")
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stderr, "agy not found")
	assert.Contains(t, stderr, "/nonexistent/agy")
	assert.Error(t, exec.Command("tmux", "-L", socket, "has-session", "-t", "=main").Run(), "no tmux session was started")

	code, stderr, _ = runLaunch(t, "--agy", "no-such-agy-on-the-path")
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stderr, "agy not found")
	assert.Contains(t, stderr, "PATH")
}

func TestLaunchSaysWhenAgyExitsAtOnce(t *testing.T) {
	dir := t.TempDir()
	for name, script := range map[string]string{
		"at once": "#!/bin/sh\necho 'agy: unknown flag --frob' >&2\nexit 3\n",
		"soon":    "#!/bin/sh\necho 'agy: starting'\nsleep 0.5\necho 'agy: unknown flag --frob' >&2\nexit 3\n",
	} {
		t.Run(name, func(t *testing.T) {
			agy := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".sh")
			require.NoError(t, os.WriteFile(agy, []byte(script), 0o755))
			start := time.Now()
			code, stderr, socket := runLaunch(t, "--agy", agy, "--attach-timeout", "40s")
			assert.Equal(t, exitFailure, code, stderr)
			assert.Less(t, time.Since(start), 20*time.Second, "the harness does not wait out --attach-timeout")
			assert.Contains(t, stderr, "agy exited (status 3)")
			assert.Contains(t, stderr, "agy: unknown flag --frob", "agy's last output is shown")
			assert.NotContains(t, stderr, "Pane is dead")
			assert.NotContains(t, stderr, "[agy exited", "the wrapper's exit line is not part of agy's output")
			assert.Error(t, exec.Command("tmux", "-L", socket, "has-session", "-t", "=main").Run(), "the tmux session is gone")
		})
	}
}
