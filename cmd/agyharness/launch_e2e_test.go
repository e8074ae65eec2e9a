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

func startLaunch(t *testing.T, harnessArgs ...string) *launched {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	fake := buildBinary(t, "cmd/fakeagy")
	pane := &tmuxPane{t: t, socket: fmt.Sprintf("agyharness-launch-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", pane.socket, "kill-server").Run() })
	args := append([]string{"launch", "--json", "--tmux-socket", pane.socket, "--tmux-session", "main", "--agy", fake}, harnessArgs...)
	log := filepath.Join(t.TempDir(), "fakeagy.log")
	args = append(args, "--", "--tui", "--conversation", "--seed", "5", "--chunk-delay", "2ms", "--prompt-timeout", "-1s", "--log", log)
	l := &launched{attached: startAttachArgs(t, args...), pane: pane, log: log}
	l.waitScreen("agy's TUI is up", func(s string) bool { return strings.Contains(s, "-- idle --") })
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
	return l
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

// TestLaunchUnderTmux launches fakeagy --tui in tmux: the harness finds its
// language server by the pane's PID, prompts answered over JSON close in
// agy's TUI by the harness's Escape (else they stay drawn, as agy's do), and
// a turn a person types in the pane comes out as a terminal user_message.
func TestLaunchUnderTmux(t *testing.T) {
	l := startLaunch(t)

	l.send(messages.Command{Type: messages.CommandTurn, Text: "Show me what you can do"})
	perm := l.er.until(wait, "permission prompt", isType(messages.EventElicitationRequest))
	require.Equal(t, messages.KindPermission, perm.Kind)
	l.waitScreen("the permission widget", shows("| Allow command ls -la? [y/n]"))
	l.send(messages.Command{Type: messages.CommandResolve, ElicitationID: perm.ElicitationID, Action: messages.ActionAccept})
	res := l.er.until(wait, "permission resolved", isType(messages.EventElicitationResolved))
	assert.Equal(t, messages.ByHarness, res.By)
	l.waitScreen("no permission widget after the harness's Escape", showsNone("[y/n]", "answered elsewhere"))

	q := l.er.until(wait, "question prompt", isType(messages.EventElicitationRequest))
	require.Equal(t, messages.KindQuestion, q.Kind)
	l.waitScreen("the question widget", shows("| Which part should I focus on?", "|   3) The tests"))
	l.send(messages.Command{Type: messages.CommandResolve, ElicitationID: q.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{SelectedOptionIDs: []string{"3"}}}})
	l.er.until(wait, "question resolved", isType(messages.EventElicitationResolved))
	l.er.until(wait, "idle", isStatus("idle"))
	l.waitScreen("no open widget, the answer in the conversation",
		func(s string) bool {
			return shows("? Which part should I focus on? -> The tests", "-- idle --")(s) && showsNone("agy asks", "answered elsewhere")(s)
		})

	l.pane.keys("hello from the pane", "Enter")
	typed := l.er.until(wait, "the typed turn", isType(messages.EventUserMessage))
	assert.Equal(t, "hello from the pane", typed.Text)
	assert.Equal(t, messages.OriginTerminal, typed.Origin)

	l.send(`{"type":"detach"}`)
	assert.Equal(t, 0, l.exit(wait), "stderr:\n%s", l.stderr.String())
	assert.Contains(t, l.stderr.String(), "tmux session main")
	err := exec.Command("tmux", "-L", l.pane.socket, "has-session", "-t", "=main").Run()
	assert.Error(t, err, "the harness's tmux session is gone after it exits")
}

// TestLaunchWithoutCloseKeyLeavesTheWidget shows why the harness sends
// Escape: without it, a prompt answered over JSON stays drawn in agy's TUI
// until a person closes it.
func TestLaunchWithoutCloseKeyLeavesTheWidget(t *testing.T) {
	l := startLaunch(t, "--close-prompt-key", "")

	l.send(messages.Command{Type: messages.CommandTurn, Text: "Show me what you can do"})
	perm := l.er.until(wait, "permission prompt", isType(messages.EventElicitationRequest))
	l.waitScreen("the permission widget", shows("| Allow command ls -la? [y/n]"))
	l.send(messages.Command{Type: messages.CommandResolve, ElicitationID: perm.ElicitationID, Action: messages.ActionAccept})
	l.er.until(wait, "question prompt", isType(messages.EventElicitationRequest))
	l.waitScreen("the stale permission widget", shows("| Allow command ls -la? [y/n]", "| (prompt answered elsewhere - Esc to close)"))

	l.pane.keys("Escape")
	l.waitScreen("the question once the person closed the stale widget",
		func(s string) bool { return shows("|   1) The Go code")(s) && showsNone("[y/n]")(s) })

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
