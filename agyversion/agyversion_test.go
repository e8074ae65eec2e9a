package agyversion

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTakesTheFirstVersion(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.7\n":                     "1.2.7",
		"agy 1.1.23-6260551186251776": "1.1.23",
		"Antigravity CLI 1.10.0 (x)":  "1.10.0",
	} {
		v, ok := Parse(in)
		require.True(t, ok, in)
		assert.Equal(t, want, v.String(), in)
	}
	for _, in := range []string{"", "v1.2", "dev build"} {
		_, ok := Parse(in)
		assert.False(t, ok, in)
	}
}

func TestNewerThanModeled(t *testing.T) {
	assert.False(t, Newer(Modeled))
	assert.False(t, Newer("1.1.8"))
	assert.True(t, Newer("1.2.8"))
	assert.True(t, Newer("1.10.0"), "compared as numbers, not text")
	assert.True(t, Newer("2.0.0"))
	assert.False(t, Newer(""), "unknown is not newer")
}

func TestHasIsKeyedByVersion(t *testing.T) {
	assert.False(t, Has("1.1.7", EligibilityCheck))
	assert.True(t, Has("1.1.8", EligibilityCheck))
	assert.True(t, Has("1.2.7", EligibilityCheck))
	assert.True(t, Has("", EligibilityCheck), "an unknown version is taken as the newest")
	assert.True(t, Has("0.1.0", Behaviour("not in the table")))
	for _, r := range Table {
		_, ok := Parse(r.Since)
		assert.True(t, ok, "row %s: since %q", r.Behaviour, r.Since)
		assert.NotEmpty(t, r.Source, "row %s cites its source", r.Behaviour)
	}
}

// script writes an executable that stands in for agy.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agy")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o700))
	return path
}

func TestReadRunsVersionAndParsesIt(t *testing.T) {
	v, err := Read(context.Background(), script(t, `[ "$1" = --version ] && [ $# -eq 1 ] && echo 1.2.7 && exit 0; exit 9`))
	require.NoError(t, err)
	assert.Equal(t, "1.2.7", v)
}

func TestReadBoundsOutputAndTime(t *testing.T) {
	// A flood of output: only the first 4 KiB are kept, so a version after
	// them is never seen, and the read still ends.
	_, err := Read(context.Background(), script(t, `head -c 100000 /dev/zero | tr '\0' x; echo; echo 1.2.7`))
	assert.ErrorContains(t, err, "printed no version")

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Read(ctx, script(t, `sleep 30`))
	assert.ErrorContains(t, err, "did not finish")
	assert.Less(t, time.Since(start), 5*time.Second)

	_, err = Read(context.Background(), script(t, `echo 1.2.7; exit 3`))
	assert.Error(t, err, "a failing agy")
	_, err = Read(context.Background(), filepath.Join(t.TempDir(), "missing"))
	assert.Error(t, err)
}
