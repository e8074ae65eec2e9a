package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShortClusterCampaign runs the campaign on three serve processes, each
// session driven through a node other than its own: nothing lost, doubled,
// out of order or misdelivered across nodes.
func TestShortClusterCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("campaign skipped in -short")
	}
	harness := filepath.Join(t.TempDir(), "agyharness")
	out, err := exec.Command("go", "build", "-o", harness, "github.com/agyharness/agyharness/cmd/agyharness").CombinedOutput()
	require.NoError(t, err, "%s", out)
	profiles := t.TempDir()
	res, err := Run(context.Background(), Options{Sessions: 9, Duration: 3 * time.Second, TurnTimeout: 30 * time.Second,
		Seed: campaignSeed(t), Cluster: 3, Harness: harness, ClusterProfile: profiles, ClusterTrace: true})
	require.NoError(t, err)
	assert.False(t, res.Failed(), "problems: %v", res.Problems)
	assert.Empty(t, res.Problems)
	require.NotNil(t, res.Cluster)
	assert.Equal(t, "cross", res.Cluster.Route)
	assert.Equal(t, "automanaged, loopback, mutual TLS", res.Cluster.ProviderDescription, "the nodes run mutual TLS")
	assert.Equal(t, 9, res.Cluster.ListedSessions)
	assert.Positive(t, res.Turns)
	assert.Positive(t, res.Cluster.CommandSamples)
	assert.Positive(t, res.LatencySamples)
	assert.Positive(t, res.StreamedLatencySamples)
	assert.LessOrEqual(t, res.StreamedLatencySamples, res.LatencySamples)
	assert.Equal(t, res.ItemsExpected, res.ItemsEmitted)
	assert.Positive(t, res.Cluster.TurnLatencyP99Ms, "turns are timed apart")
	var text bytes.Buffer
	require.NoError(t, report(&text, res, false))
	assert.Contains(t, text.String(), "cluster commands: p50 ")
	// --cluster-profile: every node's CPU profile and log, this process's
	// profile, and the latencies.
	for _, f := range []string{"n1.cpu.pprof", "n2.cpu.pprof", "n3.cpu.pprof", "n1.trace", "bench.cpu.pprof", "latency.csv"} {
		st, err := os.Stat(filepath.Join(profiles, f))
		if assert.NoError(t, err, f) {
			assert.Positive(t, st.Size(), f)
		}
	}
	for _, f := range []string{"n1.log", "n2.log", "n3.log"} {
		_, err := os.Stat(filepath.Join(profiles, f))
		assert.NoError(t, err, f)
	}

	_, err = Run(context.Background(), Options{Sessions: 3, Duration: time.Second, Cluster: 3, Harness: harness, Faults: []string{FaultSlow}})
	assert.ErrorContains(t, err, "--faults none")
	_, err = Run(context.Background(), Options{Sessions: 3, Duration: time.Second, Cluster: 3, Harness: harness, ClusterTrace: true})
	assert.ErrorContains(t, err, "--cluster-profile")
}

// TestANodeThatExitsWhileStartingIsReportedWithItsLog: a node that dies
// before it joins (a port taken, a bad flag) fails the campaign with the
// end of its log, which says why, not with its exit status alone.
func TestANodeThatExitsWhileStartingIsReportedWithItsLog(t *testing.T) {
	dir := t.TempDir()
	harness := filepath.Join(dir, "harness")
	script := "#!/bin/sh\n" +
		"echo 'level=INFO msg=starting' >&2\n" +
		"echo 'level=ERROR msg=\"automanaged provider: listen tcp 127.0.0.1:1: bind: address already in use\"' >&2\n" +
		"exit 3\n"
	require.NoError(t, os.WriteFile(harness, []byte(script), 0o700))

	nodes, err := startClusterNodes(context.Background(), harness, 2, "token", dir, false, "", false)
	require.Error(t, err)
	assert.Nil(t, nodes)
	assert.ErrorContains(t, err, "node n1 exited: exit status 3")
	assert.ErrorContains(t, err, `"level=INFO msg=starting"; "level=ERROR msg=\"automanaged provider: listen tcp 127.0.0.1:1: bind: address already in use\""`)
}
