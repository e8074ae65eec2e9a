package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agyharness/agyharness/internal/agyproc"
	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attached is "agyharness attach --json" running as a process.
type attached struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	er     *eventReader
	stderr *bytes.Buffer
	done   chan error
}

func startAttach(t *testing.T, args ...string) *attached {
	t.Helper()
	return startAttachArgs(t, append([]string{"attach", "--json"}, args...)...)
}

// startAttachArgs runs the harness with args, commands on its stdin and
// events from its stdout.
func startAttachArgs(t *testing.T, args ...string) *attached {
	t.Helper()
	cmd := exec.Command(harness(t), args...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	a := &attached{t: t, cmd: cmd, stdin: stdin, stderr: &bytes.Buffer{}}
	cmd.Stderr = a.stderr
	require.NoError(t, cmd.Start())
	a.er = newEventReader(t, stdout)
	a.done = reap(t, cmd)
	return a
}

func (a *attached) send(v any) {
	a.t.Helper()
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		b, err = json.Marshal(v)
		require.NoError(a.t, err)
	}
	_, err := a.stdin.Write(append(b, '\n'))
	require.NoError(a.t, err)
}

// exit waits for the process to end and returns its exit code.
func (a *attached) exit(timeout time.Duration) int {
	a.t.Helper()
	a.er.rest(timeout)
	select {
	case err := <-a.done:
		a.done <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(a.t, err)
		return 0
	case <-time.After(timeout):
		a.t.Fatalf("attach did not exit; stderr:\n%s", a.stderr.String())
		return -1
	}
}

const wait = 30 * time.Second

func TestAttachJSONByPort(t *testing.T) {
	fake := startFakeAgy(t, "--seed", "7", "--chunk-delay", "3ms")
	a := startAttach(t, "--port", strconv.Itoa(fake.port))

	// A bad command gets an error event and changes nothing.
	a.send(`{"type":"dance"}`)
	ev := a.er.until(wait, "error event", isType(messages.EventError))
	assert.Contains(t, ev.Message, `unknown command type "dance"`)
	assert.Zero(t, ev.Seq)
	assert.NotEmpty(t, ev.SessionID)
	require.NotNil(t, ev.Retryable)
	assert.False(t, *ev.Retryable)
	a.send(`{"type":"turn"}`)
	ev = a.er.until(wait, "error event", isType(messages.EventError))
	assert.Contains(t, ev.Message, `"text" is required`)
	a.send(`{"type":"turn","text":`)
	ev = a.er.until(wait, "error event", isType(messages.EventError))
	assert.Contains(t, ev.Message, "bad command JSON")

	a.send(messages.Command{Type: messages.CommandTurn, Text: "Show me what you can do"})
	ev = a.er.until(wait, "user_message", isType(messages.EventUserMessage))
	assert.Equal(t, messages.OriginHarness, ev.Origin)
	assert.Equal(t, "Show me what you can do", ev.Text)

	perm := a.er.until(wait, "permission prompt", isType(messages.EventElicitationRequest))
	require.Equal(t, messages.KindPermission, perm.Kind)
	require.NotNil(t, perm.Command)
	assert.Equal(t, "ls -la", perm.Command.Line)
	a.send(messages.Command{Type: messages.CommandResolve, ElicitationID: perm.ElicitationID, Action: messages.ActionAccept})
	ev = a.er.until(wait, "permission resolved", isType(messages.EventElicitationResolved))
	assert.Equal(t, perm.ElicitationID, ev.ElicitationID)
	assert.Equal(t, messages.ActionAccept, ev.Action)

	q := a.er.until(wait, "question prompt", isType(messages.EventElicitationRequest))
	require.Equal(t, messages.KindQuestion, q.Kind)
	require.Len(t, q.Questions, 1)
	require.Len(t, q.Questions[0].Options, 3)
	// An answer the prompt cannot take is refused, with an error event.
	a.send(messages.Command{Type: messages.CommandResolve, ElicitationID: q.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{Question: q.Questions[0].Question, SelectedOptionIDs: []string{"9"}}}})
	ev = a.er.until(wait, "error for a bad answer", isType(messages.EventError))
	assert.Contains(t, ev.Message, "resolve")
	a.send(messages.Command{Type: messages.CommandResolve, ElicitationID: q.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{Question: q.Questions[0].Question, SelectedOptionIDs: []string{"2"}}}})
	ev = a.er.until(wait, "question resolved", isType(messages.EventElicitationResolved))
	assert.Equal(t, q.ElicitationID, ev.ElicitationID)
	out := a.er.until(wait, "the question's output", isType(messages.EventFunctionCallOutput))
	assert.Contains(t, out.Output, "The build setup")
	a.er.until(wait, "the final message", func(ev *messages.Event) bool {
		return ev.Type == messages.EventMessage && strings.Contains(ev.Text, "single Go file")
	})
	a.er.until(wait, "idle", isStatus(messages.StateIdle))

	// Interrupt a running turn.
	a.send(messages.Command{Type: messages.CommandTurn, Text: "Show me once more"})
	a.er.until(wait, "the turn running", func(ev *messages.Event) bool {
		return ev.Type == messages.EventReasoningDelta || ev.Type == messages.EventOutputTextDelta
	})
	a.send(`{"type":"interrupt"}`)
	a.er.until(wait, "idle after the interrupt", isStatus(messages.StateIdle))

	a.send(`{"type":"detach"}`)
	assert.Equal(t, 0, a.exit(wait), "stderr:\n%s", a.stderr.String())
	for _, ev := range a.er.events {
		if ev.Type == messages.EventError {
			assert.Zero(t, ev.Seq, "only the CLI's own errors: %s", ev.Message)
		}
	}
	assertSeqIncreasing(t, a.er.events)
}

func TestAttachJSONByPIDDetachesOnEOF(t *testing.T) {
	fake := startFakeAgy(t, "--seed", "8", "--chunk-delay", "2ms")
	a := startAttach(t, "--pid", strconv.Itoa(fake.cmd.Process.Pid), "--read-mode", "poll")

	a.send(messages.Command{Type: messages.CommandTurn, Text: "Please read the README"})
	perm := a.er.until(wait, "permission prompt", isType(messages.EventElicitationRequest))
	require.Equal(t, messages.KindPermission, perm.Kind)
	require.NotNil(t, perm.Resource)
	assert.Equal(t, "/workspace/README.md", perm.Resource.Target)
	a.send(messages.Command{Type: messages.CommandResolve, ElicitationID: perm.ElicitationID, Action: messages.ActionDecline})
	ev := a.er.until(wait, "permission resolved", isType(messages.EventElicitationResolved))
	assert.Equal(t, messages.ActionDecline, ev.Action)

	// stdin ends: the session detaches once the turn is idle.
	require.NoError(t, a.stdin.Close())
	assert.Equal(t, 0, a.exit(wait), "stderr:\n%s", a.stderr.String())
	last := a.er.events[len(a.er.events)-1]
	assert.True(t, isStatus(messages.StateIdle)(last), "the last event is idle: %s", tail(a.er.events, 3))
	assertSeqIncreasing(t, a.er.events)
}

func TestAttachReadsTheCSRFTokenFromAFile(t *testing.T) {
	fake := startFakeAgy(t, "--seed", "9", "--chunk-delay", "1ms", "--csrf-token", "S3CRET-from-file")
	tokenFile := filepath.Join(t.TempDir(), "csrf")
	require.NoError(t, os.WriteFile(tokenFile, []byte("S3CRET-from-file\n"), 0o600))
	a := startAttach(t, "--port", strconv.Itoa(fake.port), "--csrf-token-file", tokenFile)
	a.send(messages.Command{Type: messages.CommandTurn, Text: "Please read the README"})
	ev := a.er.until(wait, "user_message", isType(messages.EventUserMessage))
	assert.Equal(t, messages.OriginHarness, ev.Origin)
	a.send(`{"type":"detach"}`)
	assert.Equal(t, 0, a.exit(wait), "stderr:\n%s", a.stderr.String())
}

func TestAttachFailsWhenNothingListens(t *testing.T) {
	cmd := exec.Command(harness(t), "attach", "--json", "--port", "1", "--attach-timeout", "300ms")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitFailure, ee.ExitCode())
	assert.Empty(t, stdout.String(), "stdout carries only events")
	assert.Contains(t, stderr.String(), "attach")
}

func assertSeqIncreasing(t *testing.T, evs []*messages.Event) {
	t.Helper()
	var last uint64
	for _, ev := range evs {
		if ev.Seq == 0 {
			continue // the CLI's own error events
		}
		assert.Greater(t, ev.Seq, last, fmt.Sprintf("seq of %s", ev.ID))
		last = ev.Seq
	}
}

// TestAttachFollowsAgysLogFile: with --agy-log, the port agy last logged is
// tried first, and a move is followed through the log.
func TestAttachFollowsAgysLogFile(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "agy.log")
	cmd := exec.Command(buildBinary(t, "cmd/fakeagy"), "--conversation", "--log", logPath, "--seed", "3", "--chunk-delay", "1ms",
		"--scenario", filepath.Join("..", "..", "testdata", "scenarios", "text.json"))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	loggedPort := func() int {
		p, ok, _ := agyproc.PortFromLogFile(logPath)
		if !ok {
			return 0
		}
		return p
	}
	require.Eventually(t, func() bool { return loggedPort() > 0 }, wait, 10*time.Millisecond)
	first := loggedPort()

	a := startAttach(t, "--pid", strconv.Itoa(cmd.Process.Pid), "--agy-log", logPath)
	a.send(messages.Command{Type: messages.CommandTurn, Text: "hello"})
	a.er.until(wait, "first reply", isType(messages.EventMessage))

	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP)) // agy's language server moves
	require.Eventually(t, func() bool { p := loggedPort(); return p > 0 && p != first }, wait, 10*time.Millisecond)
	a.send(messages.Command{Type: messages.CommandTurn, Text: "hello again"})
	a.er.until(wait, "the turn on the new port", func(ev *messages.Event) bool {
		return ev.Type == messages.EventUserMessage && ev.Text == "hello again"
	})
	a.er.until(wait, "second reply", isType(messages.EventMessage))
	a.send(messages.Command{Type: messages.CommandDetach})
	assert.Equal(t, 0, a.exit(wait), "stderr:\n%s", a.stderr.String())
}

// A fresh agy (no conversation of earlier runs either) has no
// conversation until a turn is typed into its terminal: attach says so,
// and --wait bounds the wait.
func TestAttachToAFreshAgyWaitsForItsFirstConversation(t *testing.T) {
	fake := startFakeAgy(t, "--conversation=false")
	a := startAttach(t, "--port", strconv.Itoa(fake.port), "--wait", "500ms")
	ev := a.er.until(wait, "no conversation yet", isStatus(messages.StateNoConversation))
	assert.Empty(t, ev.ConversationID)
	ev = a.er.until(wait, "the wait is over", isType(messages.EventError))
	assert.Contains(t, ev.Message, "agy has no conversation after 500ms")
	assert.NotEqual(t, 0, a.exit(wait), "the session ended with an error")
	assert.Contains(t, a.stderr.String(), "no conversation")
}

// Run from inside agy (a tool agy started), attach finds agy's language
// server at the address agy's environment gives, with no flag.
func TestAttachFindsAgyThroughItsEnvironment(t *testing.T) {
	fake := startFakeAgy(t, "--seed", "4", "--chunk-delay", "1ms")
	t.Setenv(agyproc.EnvAddress, "127.0.0.1:"+strconv.Itoa(fake.port)) // inherited by the harness
	a := startAttachArgs(t, "attach", "--json")
	a.send(messages.Command{Type: messages.CommandTurn, Text: "hello"})
	ev := a.er.until(wait, "user_message", isType(messages.EventUserMessage))
	assert.Equal(t, messages.OriginHarness, ev.Origin)
	a.send(`{"type":"detach"}`)
	assert.Equal(t, 0, a.exit(wait), "stderr:\n%s", a.stderr.String())
}
