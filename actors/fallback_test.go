package actors

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/internal/agyproc"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// Where a live agy's listeners cannot be read (a restricted /proc: made
// here by hand, since root reads every process's), discovery falls back to
// the loopback listeners that answer as a language server hosting the
// conversation, the address agy's environment names first, and never sends
// them the CSRF token. Without a conversation it does not guess.
func TestDiscoveryFallsBackWhenAgysListenersCannotBeRead(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true})
	agy := exec.Command("sleep", "60")
	agy.Env = append(os.Environ(), "ANTIGRAVITY_LS_ADDRESS=127.0.0.1:"+strconv.Itoa(srv.Port()))
	require.NoError(t, agy.Start())
	t.Cleanup(func() { _ = agy.Process.Kill(); _ = agy.Wait() })
	listenersOf = func(pid int) ([]int, error) {
		return nil, fmt.Errorf("%w: process %d: permission denied", agyproc.ErrListenersHidden, pid)
	}
	t.Cleanup(func() { listenersOf = agyproc.CandidatePorts })
	// The machine's listeners, as far as this test may probe: its own.
	stranger := agytest.Start(t, agytest.Options{Conversation: true, Seed: 99})
	loopbackListeners = func(int) []int { return []int{stranger.Port(), srv.Port()} }
	t.Cleanup(func() { loopbackListeners = agyproc.LoopbackListeners })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec := Spec{PID: agy.Process.Pid}

	found, probe, err := discoverOnce(ctx, spec, srv.ConversationID(), nil, 0)
	require.NoError(t, err)
	probe.Close()
	assert.Equal(t, srv.Port(), found.Port)
	assert.Equal(t, srv.ConversationID(), found.ConversationID)

	_, _, err = discoverOnce(ctx, spec, "", nil, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "name agy's conversation", "any language server would do: no guess")

	spec.CSRFToken = "S3CRET"
	_, _, err = discoverOnce(ctx, spec, srv.ConversationID(), nil, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "known to be agy's", "no token to a port not known to be agy's")
}
