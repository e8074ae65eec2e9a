package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLaunchUnderTmux launches a stand-in for agy in tmux: a script that
// runs cmd/fakeagy in the background and records the keys its terminal
// receives, so the test sees both the PID discovery under the pane and the
// key that closes an answered prompt in agy's TUI.
func TestLaunchUnderTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	fake := buildBinary(t, "cmd/fakeagy")
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	script := filepath.Join(dir, "agy.sh")
	require.NoError(t, os.WriteFile(script, []byte(fmt.Sprintf(`#!/bin/sh
%q --seed 5 --chunk-delay 2ms "$@" 2>%q &
stty -icanon -echo min 1
exec cat -v > %q
`, fake, filepath.Join(dir, "fake.log"), keys)), 0o700))
	socket := fmt.Sprintf("agyharness-launch-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })

	a := startAttachArgs(t, "launch", "--json", "--tmux-socket", socket, "--tmux-session", "launched", "--agy", script)
	a.send(messages.Command{Type: messages.CommandTurn, Text: "Show me what you can do"})
	perm := a.er.until(wait, "permission prompt", isType(messages.EventElicitationRequest))
	require.Equal(t, messages.KindPermission, perm.Kind)
	a.send(messages.Command{Type: messages.CommandResolve, ElicitationID: perm.ElicitationID, Action: messages.ActionAccept})
	a.er.until(wait, "permission resolved", isType(messages.EventElicitationResolved))
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(keys)
		return strings.Contains(string(b), "^[")
	}, wait, 10*time.Millisecond, "Escape reached agy's terminal")

	a.send(`{"type":"detach"}`)
	assert.Equal(t, 0, a.exit(wait), "stderr:\n%s", a.stderr.String())
	assert.Contains(t, a.stderr.String(), "tmux session launched")
	err := exec.Command("tmux", "-L", socket, "has-session", "-t", "=launched").Run()
	assert.Error(t, err, "the harness's tmux session is gone after it exits")
}
