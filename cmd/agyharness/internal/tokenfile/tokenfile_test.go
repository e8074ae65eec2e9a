package tokenfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/cmd/agyharness/internal/tokenfile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadTrimsOneTrailingNewline(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"plain": "S3CRET", "lf": "S3CRET\n", "crlf": "S3CRET\r\n",
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		got, err := tokenfile.Read(p, nil)
		require.NoError(t, err, name)
		assert.Equal(t, "S3CRET", got, name)
	}
}

func TestReadRefusesEmptyAndUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err := tokenfile.Read(empty, nil)
	assert.ErrorContains(t, err, "is empty")

	_, err = tokenfile.Read(filepath.Join(dir, "missing"), nil)
	assert.ErrorContains(t, err, "no such file")

	_, err = tokenfile.Read(dir, nil)
	assert.Error(t, err, "a directory is not a token file")

	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, make([]byte, 64<<10), 0o600))
	_, err = tokenfile.Read(big, nil)
	assert.ErrorContains(t, err, "larger than")
}

func TestReadStopsAtItsBoundOnAnEndlessFile(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := tokenfile.Read("/dev/zero", func(string) {})
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "larger than 16384 bytes")
	case <-time.After(10 * time.Second):
		t.Fatal("/dev/zero was read on and on")
	}
}

func TestReadWarnsAboutAFileOpenToOthers(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{{0o600, false}, {0o400, false}, {0o640, true}, {0o604, true}, {0o620, true}, {0o644, true}} {
		p := filepath.Join(dir, tc.mode.String())
		require.NoError(t, os.WriteFile(p, []byte("S3CRET\n"), 0o600))
		require.NoError(t, os.Chmod(p, tc.mode))
		var lines []string
		got, err := tokenfile.Read(p, func(line string) { lines = append(lines, line) })
		require.NoError(t, err, "a warning does not refuse the file")
		assert.Equal(t, "S3CRET", got)
		if !tc.warn {
			assert.Empty(t, lines, "mode %04o", tc.mode)
			continue
		}
		require.Len(t, lines, 1, "mode %04o", tc.mode)
		assert.NotContains(t, lines[0], "\n", "a single line")
		assert.Contains(t, lines[0], p)
		assert.Contains(t, lines[0], fmt.Sprintf("mode %04o", tc.mode))
		assert.Contains(t, lines[0], "chmod 600")
	}
	// A device is no token file left open: no warning for it.
	var lines []string
	_, _ = tokenfile.Read("/dev/null", func(line string) { lines = append(lines, line) })
	assert.Empty(t, lines)
}

func TestCheckBearerRefusesWeakTokensWithTheReason(t *testing.T) {
	for token, reason := range map[string]string{
		"short-token":                "at least 16",
		strings.Repeat("a", 64):      "one character repeated",
		strings.Repeat("ab", 16):     "2 different characters",
		strings.Repeat("abc", 8):     "3 different characters",
		"0123456789abcdef\x1b[2Jxyz": "control character",
		"0123456789abcdef\x00":       "control character",
	} {
		err := tokenfile.CheckBearer(token)
		if assert.Error(t, err, "%q", token) {
			assert.Contains(t, err.Error(), reason, "%q", token)
			assert.Contains(t, err.Error(), "openssl rand", "%q: says how to make one", token)
		}
	}
	for _, ok := range []string{"0123456789abcdef", strings.Repeat("abcd", 4), "host-test-token-0123456789", "a b c d e f g h i"} {
		assert.NoError(t, tokenfile.CheckBearer(ok), "%q", ok)
	}
}
