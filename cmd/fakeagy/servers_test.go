package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
)

// TestServersModeHostsManyAndWritesTimes runs --servers 3 in-process: three
// live servers with their own conversations, and at the end of stdin the
// times file with the frames they streamed.
func TestServersModeHostsManyAndWritesTimes(t *testing.T) {
	times := filepath.Join(t.TempDir(), "times.jsonl")
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	defer inR.Close()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"--conversation", "--servers", "3", "--exit-on-eof", "--times", times, "--chunk-delay", "1ms"}, inR, outW, io.Discard)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	var lines []serverLine
	for sc.Scan() && sc.Text() != "ready" {
		var l serverLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		lines = append(lines, l)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	require.Len(t, lines, 3)
	convs := map[string]bool{}
	for i, l := range lines {
		assert.Equal(t, i, l.Index)
		convs[l.Conversation] = true
	}
	assert.Len(t, convs, 3, "every server hosts its own conversation")

	// Stream a turn from the first server.
	c, err := rpc.NewClient(rpc.Config{Port: lines[0].Port})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.StreamAgentStateUpdates(ctx, lines[0].Conversation, "")
	require.NoError(t, err)
	_, err = st.Next() // the snapshot
	require.NoError(t, err)
	require.NoError(t, c.SendUserCascadeMessage(ctx, lines[0].Conversation, "hello", "MODEL_PLACEHOLDER_M20"))
	// Read until a frame carries live text (a version the times record).
	for live := false; !live; {
		f, err := st.Next()
		require.NoError(t, err)
		for _, s := range f.Update.MainTrajectoryUpdate.StepsUpdate.Steps {
			live = live || (s.PlannerResponse != nil && s.PlannerResponse.ModifiedResponse != "" && !s.Status.Terminal())
		}
	}
	st.Close()

	require.NoError(t, inW.Close())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("--servers did not exit at the end of stdin")
	}
	f, err := os.Open(times)
	require.NoError(t, err)
	defer f.Close()
	ts := bufio.NewScanner(f)
	require.True(t, ts.Scan())
	var h timesHeader
	require.NoError(t, json.Unmarshal(ts.Bytes(), &h))
	assert.GreaterOrEqual(t, h.Frames, int64(4))
	assert.Positive(t, h.FrameBytes)
	var versions int
	for ts.Scan() {
		var l timesLine
		require.NoError(t, json.Unmarshal(ts.Bytes(), &l))
		assert.Equal(t, lines[0].Conversation, l.Conversation)
		assert.Positive(t, l.Changed)
		versions++
	}
	assert.Positive(t, versions, "the streamed turn's text versions")
}

func TestServersAndTUIDoNotMix(t *testing.T) {
	err := run([]string{"--servers", "2", "--tui"}, os.Stdin, io.Discard, io.Discard)
	require.ErrorContains(t, err, "--servers and --tui")
}
