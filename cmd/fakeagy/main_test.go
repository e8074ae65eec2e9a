package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agyharness/agyharness/internal/agyproc"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// process is a running fakeagy whose stderr lines arrive on lines.
type process struct {
	cmd   *exec.Cmd
	lines chan string
}

func startFakeagy(t *testing.T, args ...string) *process {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeagy")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	cmd := exec.Command(bin, append([]string{"--conversation"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return p
}

// port waits for agy's log line and returns its port.
func (p *process) port(t *testing.T) int {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			require.True(t, ok, "fakeagy exited before logging its port")
			if port, ok := agyproc.PortFromLogLine(line); ok {
				return port
			}
		case <-deadline:
			t.Fatal("no 'Language server listening' line")
		}
	}
}

func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "exits 0 on SIGTERM")
	case <-time.After(20 * time.Second):
		t.Fatal("fakeagy did not exit on SIGTERM")
	}
	for range p.lines { // drain until the reader goroutine ends
	}
}

func TestProcessServesTheRPCClient(t *testing.T) {
	p := startFakeagy(t, "--chunk-delay", "1ms", "--seed", "3")
	port := p.port(t)

	ports, err := agyproc.CandidatePorts(p.cmd.Process.Pid)
	if err == nil {
		assert.Contains(t, ports, port, "discovery by PID finds the listening port")
	}

	c, err := rpc.NewClient(rpc.Config{Port: port})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, c.Heartbeat(ctx))
	all, err := c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	require.Len(t, all.TrajectorySummaries, 1, "one root conversation, as a fresh agy")
	var conv string
	for id := range all.TrajectorySummaries {
		conv = id
	}
	ok, err := c.ConversationMatches(ctx, conv)
	require.NoError(t, err)
	assert.True(t, ok)

	// The default scenario: text, then a command approval.
	require.NoError(t, c.SendUserCascadeMessage(ctx, conv, "what is here?", "MODEL_PLACEHOLDER_M20"))
	var waiting wire.Step
	require.Eventually(t, func() bool {
		steps, err := c.GetCascadeTrajectorySteps(ctx, conv)
		if err != nil {
			return false
		}
		for _, s := range steps {
			if s.Status == wire.StatusWaiting {
				waiting = s
				return true
			}
		}
		return false
	}, 20*time.Second, 5*time.Millisecond)
	assert.Equal(t, wire.StepRunCommand, waiting.Type)
	require.NoError(t, c.HandleCascadeUserInteraction(ctx, conv, wire.InteractionResponse{
		TrajectoryID: waiting.TrajectoryID(), StepIndex: wire.Int(waiting.Index()), Permission: &wire.PermissionAnswer{Allow: true},
	}))
	require.NoError(t, c.CancelCascadeSteps(ctx, conv))
	p.stop(t)
}

func TestProcessRestartsOnSIGHUP(t *testing.T) {
	p := startFakeagy(t)
	first := p.port(t)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	second := p.port(t)
	assert.NotEqual(t, first, second, "port churn")
	c, err := rpc.NewClient(rpc.Config{Port: second})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Heartbeat(ctx))
	p.stop(t)
}

func TestRunRejectsBadFlags(t *testing.T) {
	var stderr bytes.Buffer
	assert.Error(t, run([]string{"--no-such-flag"}, nil, io.Discard, &stderr))
	assert.Error(t, run([]string{"extra"}, nil, io.Discard, &stderr))
	assert.Error(t, run([]string{"--scenario", filepath.Join(t.TempDir(), "missing.json")}, nil, io.Discard, &stderr))
	assert.Error(t, run([]string{"--host", "192.0.2.1"}, nil, io.Discard, &stderr))
}

// lines reads stderr lines until one starts with stop, and returns those
// that start with prefix.
func (p *process) linesUntil(t *testing.T, prefix, stop string) []string {
	t.Helper()
	var got []string
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			require.True(t, ok, "fakeagy exited before logging %q", stop)
			if strings.HasPrefix(line, prefix) {
				got = append(got, strings.TrimPrefix(line, prefix))
			}
			if strings.HasPrefix(line, stop) {
				return got
			}
		case <-deadline:
			t.Fatalf("no %q line", stop)
		}
	}
}

// agy's --conversation ID starts agy on a conversation it keeps: fakeagy
// logs the conversations of earlier runs, and resumes one by its id.
func TestConversationIDResumesAnEarlierRun(t *testing.T) {
	p := startFakeagy(t, "--conversation=false", "--earlier-runs", "2", "--seed", "4")
	earlier := p.linesUntil(t, "fakeagy: earlier run conversation ", "fakeagy: no conversation yet")
	require.Len(t, earlier, 2)
	p.stop(t)

	p = startFakeagy(t, "--earlier-runs", "2", "--seed", "4", "--conversation", earlier[1], "--chunk-delay", "1ms")
	others := p.linesUntil(t, "fakeagy: earlier run conversation ", "fakeagy: conversation "+earlier[1])
	assert.Equal(t, earlier[:1], others, "the same earlier runs, one of them resumed")
	p.stop(t)

	var stderr bytes.Buffer
	err := run([]string{"--conversation", "no-such-conversation"}, nil, io.Discard, &stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no root conversation no-such-conversation")
}

func TestJoinConversationID(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--conversation"}, []string{"--conversation"}},
		{[]string{"--conversation", "--tui"}, []string{"--conversation", "--tui"}},
		{[]string{"--tui", "--conversation", "abc", "--seed", "5"}, []string{"--tui", "--conversation=abc", "--seed", "5"}},
		{[]string{"-conversation", "abc"}, []string{"-conversation=abc"}},
		{[]string{"--", "--conversation", "abc"}, []string{"--", "--conversation", "abc"}},
	} {
		assert.Equal(t, tc.want, joinConversationID(tc.in), "%q", tc.in)
	}
}
