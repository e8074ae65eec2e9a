package actors_test

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/internal/agyproc"
	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/require"
)

// fakeAgyProcess builds cmd/fakeagy and runs it as a child process, as agy
// runs beside the harness; ports reports each HTTPS port it announces.
func fakeAgyProcess(t *testing.T, args ...string) (*exec.Cmd, <-chan int) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeagy")
	build := exec.Command("go", "build", "-o", bin, "../cmd/fakeagy")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.Command(bin, append([]string{"--conversation"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ports := make(chan int, 8)
	go func() {
		defer close(ports)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if p, ok := agyproc.PortFromLogLine(sc.Text()); ok {
				ports <- p
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		for range ports {
		}
	})
	return cmd, ports
}

func nextPort(t *testing.T, ports <-chan int) int {
	t.Helper()
	select {
	case p := <-ports:
		return p
	case <-time.After(waitLong):
		t.Fatal("fakeagy announced no port")
		return 0
	}
}

func TestDiscoveryByPIDFollowsAgyToANewPort(t *testing.T) {
	cmd, ports := fakeAgyProcess(t, "--scenario", "../testdata/scenarios/text.json", "--chunk-delay", "1ms")
	first := nextPort(t, ports)

	s := attach(t, newHost(t, testConfig()), actors.Spec{PID: cmd.Process.Pid})
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.Equal(t, first, s.Port(), "the PID scan found the HTTPS port, not the plain one")
	ev := collect(s.Events())

	require.NoError(t, s.SendTurn(ctx, "hello", ""))
	msg := ev.waitFor(t, messages.EventMessage, nil)
	ev.waitIdleAfter(t, msg.Seq-1)

	// agy restarts its language server on a new port (SIGHUP makes the fake do it).
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	second := nextPort(t, ports)
	require.NotEqual(t, first, second)
	require.Eventually(t, func() bool { return s.Port() == second }, waitLong, 10*time.Millisecond)
	seq := ev.lastSeq()
	require.NoError(t, s.SendTurn(ctx, "hello again", ""))
	ev.waitFor(t, messages.EventMessage, func(e *messages.Event) bool { return e.Seq > seq })
	require.GreaterOrEqual(t, s.Stats().Rebinds, 1)

	// Each turn's items arrived once, across the move.
	ids := map[string]bool{}
	for _, e := range ev.all() {
		if e.Type == messages.EventMessage || e.Type == messages.EventUserMessage {
			require.False(t, ids[e.ID], "duplicate %s", e.ID)
			ids[e.ID] = true
		}
	}
	require.Len(t, ofType(ev.all(), messages.EventUserMessage), 2)
}
