package acp

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTmuxLaunchAndStop(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	socket := "agyharness-acp-test-" + randomSuffix()
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	// agy's stand-in writes its arguments down, then waits.
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	script := filepath.Join(dir, "agy")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" > "+args+"\nexec sleep 60\n"), 0o700))
	tm := Tmux{Agy: []string{script, "--model", "m"}, SessionPrefix: "acp-test", Socket: socket}
	ctx := context.Background()
	l, err := tm.Launch(ctx, t.TempDir(), "")
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = l.Stop(ctx)
		}
	})
	assert.Positive(t, l.PID)
	assert.Contains(t, l.Name, "acp-test-")
	assert.NotNil(t, l.Terminal, "the pane is agy's terminal")
	name := strings.TrimPrefix(l.Name, "tmux session ")
	require.NoError(t, exec.Command("tmux", "-L", socket, "has-session", "-t", "="+name).Run(), "the session runs")
	require.Eventually(t, func() bool { b, _ := os.ReadFile(args); return string(b) == "--model m\n" }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, l.Stop(ctx))
	stopped = true
	assert.Error(t, exec.Command("tmux", "-L", socket, "has-session", "-t", "="+name).Run(), "the session is gone")

	l, err = tm.Launch(ctx, t.TempDir(), "conv-1")
	require.NoError(t, err)
	defer func() { _ = l.Stop(ctx) }()
	require.Eventually(t, func() bool { b, _ := os.ReadFile(args); return string(b) == "--conversation conv-1 --model m\n" },
		10*time.Second, 10*time.Millisecond, "agy resumes the conversation")

	_, err = Tmux{Tmux: "no-such-tmux-binary"}.Launch(ctx, t.TempDir(), "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tmux not found")
	_, err = tm.Launch(ctx, "", "")
	require.Error(t, err)
}

func TestSessionStoreKeepsConversationsAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s := newSessionStore(dir)
	id := newSessionID()
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)
	_, ok := s.conversation(id)
	assert.False(t, ok)
	require.NoError(t, s.put(id, "conv-1"))
	c, ok := s.conversation(id)
	assert.True(t, ok)
	assert.Equal(t, "conv-1", c)

	again := newSessionStore(dir)
	c, ok = again.conversation(id)
	assert.True(t, ok, "a store on the same directory finds it")
	assert.Equal(t, "conv-1", c)
	info, err := os.Stat(filepath.Join(dir, id))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	assert.Error(t, s.put("../escape", "conv-2"), "an id that is not a plain name names no file")
	_, ok = again.conversation("../escape")
	assert.False(t, ok)

	mem := newSessionStore("")
	require.NoError(t, mem.put(id, "conv-3"))
	c, _ = mem.conversation(id)
	assert.Equal(t, "conv-3", c)
}

// The session's file is written through a file only put creates: a
// symbolic link planted at a temporary name, or at the session's own
// name, is not followed, and a session's file that is a link is not read.
func TestSessionStoreNeverWritesOrReadsThroughALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep\n"), 0o600))
	id := newSessionID()
	for _, name := range []string{"." + id + ".tmp", id} {
		require.NoError(t, os.Symlink(victim, filepath.Join(dir, name)))
	}
	s := newSessionStore(dir)
	require.NoError(t, s.put(id, "conv-1"))
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep\n", string(b), "the link's target is untouched")
	info, err := os.Lstat(filepath.Join(dir, id))
	require.NoError(t, err)
	assert.True(t, info.Mode().IsRegular(), "the session's file replaced the link")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	c, ok := newSessionStore(dir).conversation(id)
	assert.True(t, ok)
	assert.Equal(t, "conv-1", c)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"." + id + ".tmp", id}, names, "no temporary file is left")

	other := newSessionID()
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, other)))
	_, ok = newSessionStore(dir).conversation(other)
	assert.False(t, ok, "a session's file that is a link is not read")
	big := newSessionID()
	require.NoError(t, os.WriteFile(filepath.Join(dir, big), bytes.Repeat([]byte("a"), maxSessionFile+1), 0o600))
	_, ok = newSessionStore(dir).conversation(big)
	assert.False(t, ok, "a session's file over the bound is not read")
}

func TestMainWarnsOfASessionDirOthersCanWrite(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	stderr := &lockedBuffer{} // the SDK's reader may log after Main returns
	code := Main(context.Background(), []string{"--attach-port", "1", "--session-dir", dir}, bytes.NewReader(nil), io.Discard, stderr)
	assert.Equal(t, exitOK, code, "a warning, not a refusal; stderr:\n%s", stderr.String())
	assert.Contains(t, stderr.String(), "warning: session directory "+dir+" is writable by group or others (mode 0777)")

	require.NoError(t, os.Chmod(dir, 0o700))
	stderr = &lockedBuffer{}
	assert.Equal(t, exitOK, Main(context.Background(), []string{"--attach-port", "1", "--session-dir", dir}, bytes.NewReader(nil), io.Discard, stderr))
	assert.NotContains(t, stderr.String(), "warning")
}

// A cwd and agy's path and arguments that a shell or tmux would act on
// reach agy as they are: agy runs in that directory with those arguments,
// and nothing injected runs.
func TestTmuxLaunchTakesCwdAndAgyLiterally(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	socket := "agyharness-acp-test-" + randomSuffix()
	tmp := t.TempDir()
	pwned := filepath.Join(tmp, "PWNED")
	t.Setenv("ACP_PWNED", pwned) // the tmux server this test starts inherits it
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	bin := filepath.Join(tmp, "bin #(touch $ACP_PWNED);")
	require.NoError(t, os.Mkdir(bin, 0o700))
	report := filepath.Join(tmp, "report")
	script := filepath.Join(bin, "agy;touch $ACP_PWNED")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n{ pwd; for a in \"$@\"; do printf '%s\\n' \"$a\"; done; } > '"+report+".tmp' && mv '"+report+".tmp' '"+report+"'\nexec sleep 60\n"), 0o700))
	cwd := filepath.Join(tmp, "my project #(touch $ACP_PWNED) #{pane_pid}; x")
	require.NoError(t, os.Mkdir(cwd, 0o700))
	args := []string{"#(touch $ACP_PWNED)", "#{pane_pid}", "a;", ";", "-x", "sp ace", "$(touch $ACP_PWNED)"}
	for _, agy := range [][]string{{script}, append([]string{script}, args...)} {
		tm := Tmux{Agy: agy, SessionPrefix: "acp-test", Socket: socket}
		l, err := tm.Launch(context.Background(), cwd, "")
		require.NoError(t, err)
		var got string
		require.Eventually(t, func() bool { b, _ := os.ReadFile(report); got = string(b); return got != "" }, 10*time.Second, 10*time.Millisecond)
		want := cwd + "\n"
		for _, a := range agy[1:] {
			want += a + "\n"
		}
		assert.Equal(t, want, got, "agy's directory, then its arguments")
		// tmux runs a #(...) of a format in the background: one run after
		// it is done once this one is.
		sentinel := filepath.Join(tmp, "sentinel")
		out, err := exec.Command("tmux", "-L", socket, "run-shell", "touch '"+sentinel+"'").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.FileExists(t, sentinel)
		assert.NoFileExists(t, pwned, "nothing injected ran")
		require.NoError(t, l.Stop(context.Background()))
		require.NoError(t, os.Remove(report))
	}
}
