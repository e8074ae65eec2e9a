package agyproc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/internal/agyproc"
	"github.com/stretchr/testify/require"
)

func TestPortFromLogFileTakesTheLastAnnouncement(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agy.log")
	log := "I1130 starting\n" +
		"Language server listening on random port at 41001 for HTTPS\n" +
		"Language server listening on random port at 41002 for HTTP\n" +
		strings.Repeat("noise\n", 100) +
		"Language server listening on random port at 42007 for HTTPS\n" +
		"Language server listening on random port at 42008 for HTTP\n"
	require.NoError(t, os.WriteFile(path, []byte(log), 0o600))
	port, ok, err := agyproc.PortFromLogFile(path)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 42007, port, "the latest HTTPS line, not the HTTP one")

	require.NoError(t, os.WriteFile(path, []byte("nothing here\n"), 0o600))
	_, ok, err = agyproc.PortFromLogFile(path)
	require.NoError(t, err)
	require.False(t, ok)

	_, _, err = agyproc.PortFromLogFile(filepath.Join(dir, "missing.log"))
	require.Error(t, err)

	// Only the tail of a huge log is read; the line in it is found.
	big := strings.Repeat("x", 1<<20) + "\nLanguage server listening on random port at 43000 for HTTPS\n"
	require.NoError(t, os.WriteFile(path, []byte(big), 0o600))
	port, ok, err = agyproc.PortFromLogFile(path)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 43000, port)
}
