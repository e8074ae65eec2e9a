package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
			assert.True(t, strings.HasPrefix(stderr, "agyharness "+c.name+": "), "the error names its command once:\n%s", stderr)
			assert.NotContains(t, stderr, c.name+": "+c.name+": ")
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

func TestServeChecksItsTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	for _, tc := range []struct {
		file, want string
	}{
		{"/dev/zero", "larger than 16384 bytes"},
		{write("short", "0123456789\n", 0o600), "at least 16"},
		{write("repeated", strings.Repeat("x", 40)+"\n", 0o600), "one character repeated"},
		{write("two", strings.Repeat("xy", 20)+"\n", 0o600), "2 different characters"},
		{write("binary", "0123456789abcdef\x00\x01\n", 0o600), "control character"},
	} {
		// A serve that took the token would run until the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var errb strings.Builder
		code := run(ctx, &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &errb, getenv: func(string) string { return "" }},
			[]string{"serve", "--listen", "127.0.0.1:0", "--token-file", tc.file})
		cancel()
		assert.Equal(t, exitUsage, code, "%s: %s", tc.file, errb.String())
		assert.Contains(t, errb.String(), tc.want, tc.file)
		assert.True(t, strings.HasPrefix(errb.String(), "agyharness serve: "), errb.String())
	}

	// A token file others can read: a warning, and the token is taken.
	open := write("open", "  "+hostTestToken+"\n", 0o644)
	var warn strings.Builder
	token, generated, err := loadToken(open, &warn)
	require.NoError(t, err)
	assert.False(t, generated)
	assert.Equal(t, hostTestToken, token, "surrounding white space dropped")
	assert.Equal(t, 1, strings.Count(warn.String(), "\n"), "a single line: %q", warn.String())
	assert.Contains(t, warn.String(), "agyharness serve: warning: ")
	assert.Contains(t, warn.String(), open)
	assert.Contains(t, warn.String(), "mode 0644")
	assert.Contains(t, warn.String(), "chmod 600")
	assert.NotContains(t, warn.String(), hostTestToken, "the token is never shown")

	warn.Reset()
	_, _, err = loadToken(write("closed", hostTestToken+"\n", 0o600), &warn)
	require.NoError(t, err)
	assert.Empty(t, warn.String(), "no warning for a file of mode 0600")
}

func TestCSRFTokenFileOpenToOthersIsWarnedAbout(t *testing.T) {
	p := filepath.Join(t.TempDir(), "csrf")
	require.NoError(t, os.WriteFile(p, []byte("S3CRET\n"), 0o600))
	require.NoError(t, os.Chmod(p, 0o640))
	var stderr strings.Builder
	e := &env{stderr: &stderr, getenv: func(string) string { return "" }}
	for _, cmd := range []string{"attach", "launch"} {
		stderr.Reset()
		c := csrfFlags{file: p}
		token, err := c.resolve(e, cmd)
		require.NoError(t, err)
		assert.Equal(t, "S3CRET", token, "agy's token is agy's: taken as it is")
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
		assert.Contains(t, stderr.String(), "agyharness "+cmd+": warning: ")
		assert.Contains(t, stderr.String(), "mode 0640")
		assert.Contains(t, stderr.String(), "chmod 600")
	}
}
