package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tmuxPane runs a command in a detached tmux session on a private server,
// so a test sees exactly what a person's terminal would.
type tmuxPane struct {
	t      *testing.T
	socket string
}

func newTmuxPane(t *testing.T, command string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	p := &tmuxPane{t: t, socket: fmt.Sprintf("agyharness-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	// The shell keeps the pane open after the command ends, with its exit
	// status on screen; it ignores Ctrl-C (the command, a Go program that
	// asks for SIGINT, still gets it).
	p.tmux("new-session", "-d", "-s", "main", "-x", "160", "-y", "50",
		"sh", "-c", `trap "" INT; `+command+`; echo "[exit status $?]"; exec sleep 3600`)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.socket, "kill-server").Run() })
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).CombinedOutput()
	require.NoError(p.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// screen is the pane's text, scrollback included; escapes keeps colours.
func (p *tmuxPane) screen(escapes bool) string {
	args := []string{"capture-pane", "-p", "-J", "-t", "main", "-S", "-1000"}
	if escapes {
		args = append(args, "-e")
	}
	return p.tmux(args...)
}

// waitFor waits until the screen shows want n times.
func (p *tmuxPane) waitFor(want string, n int) {
	p.t.Helper()
	ok := assert.Eventually(p.t, func() bool { return strings.Count(p.screen(false), want) >= n }, wait, 20*time.Millisecond)
	if !ok {
		p.t.Fatalf("the screen never showed %q (%d times):\n%s", want, n, p.screen(false))
	}
}

func (p *tmuxPane) keys(keys ...string) {
	p.tmux(append([]string{"send-keys", "-t", "main"}, keys...)...)
}

func TestHumanSimUnderTmux(t *testing.T) {
	p := newTmuxPane(t, harness(t)+" sim --chunk-delay 1ms")

	p.waitFor("allow? [y/n]", 1)
	p.keys("y", "Enter")
	p.waitFor("answer with a number 1-3", 1)
	p.keys("7", "Enter") // not an option: asked again
	p.waitFor(`"7" is not an option number`, 1)
	p.keys("2", "Enter")
	p.waitFor("allow? [y/n]", 2)
	p.keys("n", "Enter")
	p.waitFor("[exit status 0]", 1)

	screen := p.screen(false)
	for _, want := range []string{
		`scenario "default" on a fake agy`,
		"> Show me what you can do",
		"thinking: The user wants to know what is in the workspace.",
		"Let me look at the workspace first.",
		"$ ls -la",
		"? agy wants to run: $ ls -la",
		"✓ allowed: $ ls -la",
		"  total 8",
		"? Which part should I focus on?",
		"  1) The Go code",
		"  2) The build setup",
		"✓ answered: Which part should I focus on?",
		"Which part should I focus on?: The build setup",
		"→ Search for \"func main\" in /workspace",
		"  /workspace/main.go:3: func main() {}",
		"→ Edit /workspace/main.go",
		"  +import \"fmt\"",
		"── waiting",
		"── idle",
		"> Now read the README",
		"→ Gemini 3.1 Pro (High)",
		"? agy wants to read /workspace/README.md",
		"✓ denied: read /workspace/README.md",
	} {
		assert.Contains(t, screen, want)
	}
	// Colour on a terminal (tmux re-encodes the styles it shows).
	assert.Regexp(t, `\x1b\[[0-9;]*2m`, p.screen(true), "dim text")
	assert.Regexp(t, `\x1b\[[0-9;]*36m`, p.screen(true), "cyan tool calls")
}

func TestHumanSimNoColor(t *testing.T) {
	p := newTmuxPane(t, "NO_COLOR=1 "+harness(t)+" sim --yes --chunk-delay 1ms")
	p.waitFor("[exit status 0]", 1)
	screen := p.screen(true)
	assert.Contains(t, screen, "thinking:")
	assert.NotContains(t, screen, "\x1b[", "NO_COLOR: no styles")
}

func TestHumanAttachTypedTurnsAndCtrlC(t *testing.T) {
	fake := startFakeAgy(t, "--seed", "9", "--chunk-delay", "20ms")
	p := newTmuxPane(t, harness(t)+" attach --port "+strconv.Itoa(fake.port))

	p.waitFor("── idle", 1)
	p.keys("Show me what you can do", "Enter")
	p.waitFor("allow? [y/n]", 1)
	p.keys("y", "Enter")
	p.waitFor("answer with a number 1-3", 1)
	p.keys("3", "Enter")
	p.waitFor("Which part should I focus on?: The tests", 1)
	p.waitFor("── idle", 2)

	// Ctrl-C while a turn runs interrupts it; a second Ctrl-C while idle
	// detaches.
	thought := strings.Count(p.screen(false), "thinking: ") // the first turn's
	p.keys("Tell me more", "Enter")
	p.waitFor("thinking: ", thought+1)
	p.keys("C-c")
	p.waitFor("(interrupting; Ctrl-C again to leave)", 1)
	p.waitFor("── idle", 3)
	p.keys("C-c")
	p.waitFor("[exit status 0]", 1)
	assert.Contains(t, p.screen(false), "$ ls -la")
}
