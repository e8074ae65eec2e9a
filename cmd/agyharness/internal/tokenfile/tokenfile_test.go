package tokenfile_test

import (
	"os"
	"path/filepath"
	"testing"

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
		got, err := tokenfile.Read(p)
		require.NoError(t, err, name)
		assert.Equal(t, "S3CRET", got, name)
	}
}

func TestReadRefusesEmptyAndUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err := tokenfile.Read(empty)
	assert.ErrorContains(t, err, "is empty")

	_, err = tokenfile.Read(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "no such file")

	_, err = tokenfile.Read(dir)
	assert.Error(t, err, "a directory is not a token file")

	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, make([]byte, 64<<10), 0o600))
	_, err = tokenfile.Read(big)
	assert.ErrorContains(t, err, "larger than")
}
