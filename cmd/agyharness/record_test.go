package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenCaptureRefusesLinksAndKeepsWhatItReplaces(t *testing.T) {
	dir := t.TempDir()
	var ue *usageError

	// A dangling link: following it would create the file elsewhere.
	target := filepath.Join(dir, "elsewhere")
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(target, dangling))
	_, err := openCapture(dangling, true)
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "symbolic link")
	assert.NoFileExists(t, target)

	// --force replaces a file by a new one: a hard link to the old one
	// keeps the old content and mode.
	old := filepath.Join(dir, "old.jsonl")
	require.NoError(t, os.WriteFile(old, []byte("old\n"), 0o644))
	other := filepath.Join(dir, "other-name")
	require.NoError(t, os.Link(old, other))
	f, err := openCapture(old, true)
	require.NoError(t, err)
	_, err = f.WriteString("new\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := os.ReadFile(other)
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(got))
	fi, err := os.Stat(old)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	_, err = openCapture(dir, true)
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "is a directory")
}

func TestRecorderReportsAWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	reported := make(chan error, 1)
	rec, err := createRecorder("/dev/full", false, func(err error) { reported <- err })
	require.NoError(t, err, "a device is written as it is, without --force")
	err = rec.Close()
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
	select {
	case werr := <-reported:
		assert.True(t, errors.Is(werr, syscall.ENOSPC), "%v", werr)
	default:
		t.Fatal("the first write error was not reported as it happened")
	}
}
