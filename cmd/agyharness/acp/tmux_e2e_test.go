package acp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
)

// A new thread launches a fresh agy (fakeagy --tui, no conversation, two
// conversations of earlier runs) in tmux: its first prompt is typed into
// agy's pane, and the session follows the conversation agy minted for it,
// never an earlier one; the next prompt goes over RPC. The thread's cwd
// has spaces, "#", a tmux format, a command substitution and a ";" in its
// name: agy runs there, and nothing in the name runs.
func TestNewThreadOnAFreshAgyInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fakeagy")
	out, err := exec.Command("go", "build", "-race", "-o", fake, "github.com/agyharness/agyharness/cmd/fakeagy").CombinedOutput()
	require.NoError(t, err, "go build fakeagy:\n%s", out)
	sc := filepath.Join(dir, "scenario.json")
	require.NoError(t, os.WriteFile(sc, []byte(`{"name": "acp-tmux", "turns": [
  {"match": "hello", "actions": [{"say": "Hello, person.", "chunks": 2}]},
  {"actions": [{"say": "Again.", "chunks": 1}]}
]}`), 0o600))
	log := filepath.Join(dir, "fakeagy.log")
	pwned := filepath.Join(dir, "PWNED")
	t.Setenv("ACP_PWNED", pwned) // the tmux server this test starts inherits it
	cwd := filepath.Join(dir, "my project #1 #(touch $ACP_PWNED) #{pane_pid}; $(touch $ACP_PWNED)")
	require.NoError(t, os.Mkdir(cwd, 0o700))
	socket := fmt.Sprintf("agyharness-acp-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	tm := Tmux{Agy: []string{fake, "--tui", "--earlier-runs", "2", "--seed", "3", "--chunk-delay", "2ms", "--scenario", sc, "--log", log},
		SessionPrefix: "acp-e2e", Socket: socket}
	var logs syncBuffer
	r := startRigOn(t, agytest.Options{}, func(_ *agytest.Server, o *Options) {
		o.AttachPort, o.Launcher, o.SessionDir = 0, tm, filepath.Join(dir, "sessions")
		// A first turn typed while agy checks the account is typed again
		// (the gate's probe and retry delay: 5 s): as startupRig, room for that.
		o.AttachTimeout, o.RequestTimeout = 30*time.Second, 30*time.Second
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})

	r.init(t, sdk.ClientCapabilities{})
	sess, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	require.NoError(t, err, "log:\n%s", logs.String())
	a := r.agent
	a.mu.Lock()
	s := a.sessions[string(sess.SessionId)]
	a.mu.Unlock()
	require.NotNil(t, s)
	target := "=" + strings.TrimPrefix(s.launched.Name, "tmux session ") + ":"
	pane := func() string {
		out, _ := exec.Command("tmux", "-L", socket, "capture-pane", "-p", "-t", target).CombinedOutput()
		return string(out)
	}

	agyCwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", s.launched.PID))
	require.NoError(t, err)
	assert.Equal(t, cwd, agyCwd, "agy runs in the thread's cwd")

	res, err := r.prompt(t, sess.SessionId, "hello")
	require.NoError(t, err, "pane:\n%s\nupdates:%s\nlog:\n%s", pane(), dump(r.client.snapshot()), logs.String())
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	message, _ := texts(r.client.snapshot())
	assert.Contains(t, message, "Hello, person.")

	conv, ok := a.store.conversation(string(sess.SessionId))
	require.True(t, ok, "the session follows agy's conversation")
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(b), "fakeagy: earlier run conversation "))
	assert.NotContains(t, string(b), conv, "never a conversation of an earlier run")
	saved, err := os.ReadFile(filepath.Join(dir, "sessions", string(sess.SessionId)))
	require.NoError(t, err)
	assert.Equal(t, conv+"\n", string(saved), "kept for session/load after a restart")
	require.Eventually(t, func() bool {
		p := pane()
		return strings.Contains(p, "conversation "+conv) && strings.Contains(p, "> hello\nHello, person.")
	}, 10*time.Second, 20*time.Millisecond, "agy's pane shows the typed prompt:\n%s", pane())

	res, err = r.prompt(t, sess.SessionId, "once more")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	message, _ = texts(r.client.snapshot())
	assert.Contains(t, message, "Again.")
	require.Eventually(t, func() bool { return strings.Contains(pane(), "> once more\nAgain.") }, 10*time.Second, 20*time.Millisecond,
		"the prompt sent over RPC shows in agy's conversation:\n%s", pane())

	// tmux runs a #(...) of a format in the background: one run after it
	// is done once this one is.
	sentinel := filepath.Join(dir, "sentinel")
	out, err = exec.Command("tmux", "-L", socket, "run-shell", "touch '"+sentinel+"'").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.FileExists(t, sentinel)
	assert.NoFileExists(t, pwned, "nothing in the directory's name ran")

	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = r.conn.CloseSession(cctx, sdk.CloseSessionRequest{SessionId: sess.SessionId})
	require.NoError(t, err)
	assert.Error(t, exec.Command("tmux", "-L", socket, "has-session", "-t", strings.TrimSuffix(target, ":")).Run(), "agy's tmux session is gone")
}
