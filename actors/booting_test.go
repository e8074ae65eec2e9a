package actors_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// A fresh agy the harness started (NewConversation) has no listener while
// it boots, and hosts no conversation to tell it by: discovery waits for a
// listener of its own, and never binds another language server meanwhile
// (an ACP thread bound the test's own fake 35 ms after launching agy).
func TestBootingAgyIsNeverMistakenForAnotherLanguageServer(t *testing.T) {
	other := agytest.Start(t, agytest.Options{ChunkDelay: time.Millisecond}) // another agy, fresh too
	agy := exec.Command("sleep", "60")                                       // a booting agy: alive, no listener yet
	require.NoError(t, agy.Start())
	t.Cleanup(func() { _ = agy.Process.Kill(); _ = agy.Wait() })

	host := actors.NewHost(testConfig())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, host.Shutdown(ctx))
	})
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s, err := host.Attach(short, actors.Spec{PID: agy.Process.Pid, NewConversation: true})
	if err == nil {
		t.Fatalf("bound port %d (the other language server is on %d)", s.Port(), other.Port())
	}
	assert.ErrorIs(t, err, context.DeadlineExceeded, "still looking for agy's own listener")
}
