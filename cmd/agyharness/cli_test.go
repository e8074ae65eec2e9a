package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runInProcess(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = run(context.Background(), e, args)
	return code, out.String(), errb.String()
}

func TestUsageAndHelp(t *testing.T) {
	code, _, stderr := runInProcess()
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "agyharness sim")

	code, _, stderr = runInProcess("frobnicate")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `unknown command "frobnicate"`)

	for _, c := range commands() {
		if c.name == "acp" {
			continue // package acp owns its flags and help
		}
		t.Run(c.name, func(t *testing.T) {
			code, stdout, _ := runInProcess(c.name, "--help")
			assert.Equal(t, exitOK, code)
			assert.Equal(t, 1, strings.Count(stdout, "Usage: agyharness "+c.name), "the usage is printed once:\n%s", stdout)
			assert.Contains(t, stdout, "Example:")
			assert.Contains(t, stdout, "agyharness "+c.name, "the example uses the command")

			code, _, stderr := runInProcess(c.name, "--no-such-flag")
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, "no-such-flag")
		})
	}
	code, stdout, _ := runInProcess("help", "attach")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "--pid")
	for _, name := range []string{"attach", "launch"} {
		_, stdout, _ = runInProcess(name, "--help")
		assert.Contains(t, stdout, "--csrf-token-file", name)
		assert.Contains(t, stdout, "process list", "%s warns that --csrf-token shows", name)
	}
}

func TestFlagValidation(t *testing.T) {
	dir := t.TempDir()
	emptyToken := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(emptyToken, []byte("\n"), 0o600))
	missingToken := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"attach"}, "exactly one of --pid and --port (or set $ANTIGRAVITY_LS_ADDRESS)"},
		{[]string{"attach", "--pid", "1", "--port", "2"}, "exactly one of --pid and --port"},
		{[]string{"attach", "--port", "70000"}, "at most 65535"},
		{[]string{"attach", "--port", "1", "--read-mode", "carrier-pigeon"}, "want both, stream or poll"},
		{[]string{"attach", "--port", "1", "extra"}, `unexpected argument "extra"`},
		{[]string{"replay"}, "exactly one FILE"},
		{[]string{"serve", "--listen", "0.0.0.0:7420"}, "needs --allow-remote and --token-file"},
		{[]string{"serve", "--listen", "0.0.0.0:7420", "--allow-remote"}, "needs --allow-remote and --token-file"},
		{[]string{"serve", "--listen", "nonsense"}, "--listen"},
		{[]string{"serve", "--listen", "0.0.0.0:7420", "--allow-remote", "--token-file", missingToken}, "--insecure-remote"},
		{[]string{"serve", "--tls-cert", missingToken}, "both --tls-cert and --tls-key"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--tls-cert", missingToken, "--tls-key", missingToken}, "--tls-cert/--tls-key"},
		{[]string{"serve", "--max-connections", "0"}, "at least 1"},
		{[]string{"sim", "--scenario", "/no/such/file.json"}, "no such file"},
		{[]string{"version", "extra"}, "takes no arguments"},
		{[]string{"launch", "--tmux-session", "a:b"}, "use letters, digits"},
		{[]string{"attach", "--port", "1", "--csrf-token", "x", "--csrf-token-file", emptyToken}, "not both"},
		{[]string{"attach", "--port", "1", "--csrf-token-file", emptyToken}, "is empty"},
		{[]string{"attach", "--port", "1", "--csrf-token-file", missingToken}, "no such file"},
		{[]string{"launch", "--csrf-token-file", missingToken}, "no such file"},
		{[]string{"launch", "--csrf-token", "x", "--csrf-token-file", emptyToken}, "not both"},
		{[]string{"launch", "--turns", "telepathy"}, "want rpc or tui"},
		{[]string{"attach", "--port", "1", "--wait", "-1s"}, "--wait -1s is negative"},
	} {
		code, _, stderr := runInProcess(tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

func TestParseFlagsInterspersed(t *testing.T) {
	fs := newFlagSet(&env{}, &command{name: "x"})
	j := fs.Bool("json", false, "")
	pos, err := parseFlags(fs, []string{"FILE", "--json"})
	require.NoError(t, err)
	assert.Equal(t, []string{"FILE"}, pos)
	assert.True(t, *j)

	fs = newFlagSet(&env{}, &command{name: "x"})
	j = fs.Bool("json", false, "")
	pos, err = parseFlags(fs, []string{"--", "--json", "a"})
	require.NoError(t, err)
	assert.Equal(t, []string{"--json", "a"}, pos)
	assert.False(t, *j)
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runInProcess("version")
	assert.Equal(t, exitOK, code)
	assert.Regexp(t, `^agyharness \S+ \(github.com/agyharness/agyharness.*\) go\d`, stdout)
}
