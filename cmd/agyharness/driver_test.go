package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedSession is a sessionAPI whose events the test pushes and whose
// commands it records.
type scriptedSession struct {
	events chan *messages.Event
	mu     sync.Mutex
	cmds   []messages.Command
	refuse map[messages.CommandType]error
	once   sync.Once
	seq    uint64
	stuck  error // Detach's error: the session does not stop
}

func newScriptedSession() *scriptedSession {
	return &scriptedSession{events: make(chan *messages.Event, 64), refuse: map[messages.CommandType]error{}}
}

func (s *scriptedSession) ID() string                     { return "s1" }
func (s *scriptedSession) ConversationID() string         { return "c1" }
func (s *scriptedSession) Events() <-chan *messages.Event { return s.events }
func (s *scriptedSession) Err() error                     { return nil }

func (s *scriptedSession) Do(ctx context.Context, c messages.Command) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmds = append(s.cmds, c)
	return s.refuse[c.Type]
}

func (s *scriptedSession) Detach(ctx context.Context) error {
	if s.stuck != nil {
		return s.stuck
	}
	s.once.Do(func() { close(s.events) })
	return nil
}

func (s *scriptedSession) commands() []messages.Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]messages.Command(nil), s.cmds...)
}

// push publishes an event (the test's goroutine is the session's).
func (s *scriptedSession) push(ev messages.Event) {
	s.seq++
	ev.Seq, ev.SessionID, ev.ConversationID = s.seq, "s1", "c1"
	s.events <- &ev
}

// syncBuffer is a bytes.Buffer safe to read while the driver writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// The driver tests run in a synctest bubble: synctest.Wait returns once the
// driver has done all it can with what it was given.
func TestDriverJSONCommands(t *testing.T) { synctest.Test(t, testDriverJSONCommands) }

func testDriverJSONCommands(t *testing.T) {
	sess := newScriptedSession()
	sess.refuse[messages.CommandResolve] = errors.New("no open elicitation")
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	d := newDriver(driverConfig{json: true, detachOnEOF: true}, sess, out, inR, nil, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- d.run(context.Background()) }()

	write := func(s string) {
		_, err := inW.Write([]byte(s + "\n"))
		require.NoError(t, err)
	}
	write(`{"type":"nope"}`)
	write(`{"type":"resolve","elicitation_id":"e","action":"accept"}`)
	write(`{"type":"turn","text":"hi"}`)
	synctest.Wait()
	assert.Equal(t, 2, strings.Count(out.String(), `"type":"error"`))
	assert.Equal(t, []messages.Command{
		{Type: messages.CommandResolve, ElicitationID: "e", Action: "accept"},
		{Type: messages.CommandTurn, Text: "hi"},
	}, sess.commands(), "the bad command reached nothing")
	assert.Contains(t, out.String(), `unknown command type \"nope\"`)
	assert.Contains(t, out.String(), `resolve failed: no open elicitation`)

	// EOF while the turn runs: the driver waits for the turn to go idle.
	require.NoError(t, inW.Close())
	synctest.Wait() // the driver has seen the end of stdin
	sess.push(messages.Event{Type: messages.EventUserMessage, Text: "hi", Origin: messages.OriginHarness})
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateRunning})
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateIdle}) // agy's early IDLE: nothing done yet
	synctest.Wait()
	select {
	case <-done:
		t.Fatal("detached before the turn was done")
	default:
	}
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateRunning})
	sess.push(messages.Event{Type: messages.EventMessage, Text: "hello", Role: "assistant", ItemID: "i"})
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the driver did not detach after EOF and idle")
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev messages.Event
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
	}
}

// A session that does not stop when detached (its events never end) does
// not leave the CLI hanging: run returns an error that says so.
func TestDriverGivesUpOnASessionThatDoesNotStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sess := newScriptedSession()
		sess.stuck = context.DeadlineExceeded
		inR, inW := io.Pipe()
		d := newDriver(driverConfig{json: true}, sess, &syncBuffer{}, inR, nil, slog.New(slog.DiscardHandler))
		done := make(chan error, 1)
		go func() { done <- d.run(context.Background()) }()
		_, err := inW.Write([]byte(`{"type":"detach"}` + "\n"))
		require.NoError(t, err)
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), "did not stop")
		case <-time.After(time.Minute):
			t.Fatal("the driver waits on a session that will not stop")
		}
		require.NoError(t, inW.Close())
		close(sess.events)
	})
}

func TestDriverAutoAnswersAndRunsTheScript(t *testing.T) {
	synctest.Test(t, testDriverAutoAnswersAndRunsTheScript)
}

func testDriverAutoAnswersAndRunsTheScript(t *testing.T) {
	sess := newScriptedSession()
	out := &syncBuffer{}
	turns := []messages.Command{{Type: messages.CommandTurn, Text: "one"}, {Type: messages.CommandTurn, Text: "two"}}
	d := newDriver(driverConfig{auto: true, turns: turns, exitAfterTurns: true, echoTurns: true, noTypedTurns: true},
		sess, out, nil, nil, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- d.run(context.Background()) }()

	waitCmds := func(n int) {
		t.Helper()
		synctest.Wait()
		require.Len(t, sess.commands(), n)
	}
	waitCmds(1)
	sess.push(messages.Event{Type: messages.EventUserMessage, Text: "one", Origin: messages.OriginHarness})
	sess.push(messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "q", Kind: messages.KindQuestion,
		Questions: []messages.Question{{Question: "Which?", Options: []messages.Option{{ID: "1", Text: "a"}, {ID: "2", Text: "b"}}}}})
	waitCmds(2)
	sess.push(messages.Event{Type: messages.EventElicitationResolved, ElicitationID: "q", Action: "accept", By: "harness"})
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	waitCmds(3)
	lastTurnEnds(t, sess, done)
	assert.Equal(t, []messages.Command{
		turns[0],
		{Type: messages.CommandResolve, ElicitationID: "q", Action: "accept", Answers: []messages.Answer{{Question: "Which?", SelectedOptionIDs: []string{"1"}}}},
		turns[1],
	}, sess.commands())
	assert.Contains(t, out.String(), "> one")
	assert.Contains(t, out.String(), "✓ answered: Which?")
	assert.Contains(t, out.String(), "done")
}

// lastTurnEnds plays the script's last turn, "two", to its idle, and checks
// that the driver then detaches (run's result on done).
func lastTurnEnds(t *testing.T, sess *scriptedSession, done <-chan error) {
	t.Helper()
	sess.push(messages.Event{Type: messages.EventUserMessage, Text: "two", Origin: messages.OriginHarness})
	sess.push(messages.Event{Type: messages.EventMessage, Text: "done", ItemID: "m"})
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the driver did not detach after the last turn")
	}
}

func TestDriverReportsAnOverlongCommandLineAndReadsOn(t *testing.T) {
	synctest.Test(t, testDriverReportsAnOverlongCommandLineAndReadsOn)
}

func testDriverReportsAnOverlongCommandLineAndReadsOn(t *testing.T) {
	sess := newScriptedSession()
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	d := newDriver(driverConfig{json: true, detachOnEOF: true}, sess, out, inR, nil, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- d.run(context.Background()) }()

	// A turn whose text makes the line one byte too long, sent in pieces
	// as a pipe delivers it; then a line of exactly the limit; then a
	// short one.
	long := `{"type":"turn","text":"` + strings.Repeat("x", maxCommandLine) + `"}`
	atLimit := `{"type":"turn","text":"` + strings.Repeat("y", maxCommandLine-len(`{"type":"turn","text":""}`)) + `"}`
	require.Len(t, atLimit, maxCommandLine)
	written := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < len(long) && err == nil; i += 4096 {
			_, err = inW.Write([]byte(long[i:min(i+4096, len(long))]))
		}
		if err == nil {
			_, err = inW.Write([]byte("\n" + atLimit + "\r\n" + `{"type":"turn","text":"after"}` + "\n"))
		}
		written <- err
	}()
	select {
	case err := <-written:
		require.NoError(t, err, "the driver reads on past the long line")
	case <-time.After(10 * time.Second):
		t.Fatal("the writer blocked: the driver stopped reading stdin")
	}
	synctest.Wait()
	require.Len(t, sess.commands(), 2)
	assert.Equal(t, strings.Repeat("y", maxCommandLine-len(`{"type":"turn","text":""}`)), sess.commands()[0].Text, "a line of exactly the limit is taken")
	assert.Equal(t, "after", sess.commands()[1].Text)
	assert.Equal(t, 1, strings.Count(out.String(), `"type":"error"`))
	assert.Contains(t, out.String(), "longer than 1048576 bytes")

	require.NoError(t, inW.Close())
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	sess.push(messages.Event{Type: messages.EventUserMessage, Text: "after", Origin: messages.OriginHarness})
	sess.push(messages.Event{Type: messages.EventMessage, Text: "ok", Role: "assistant", ItemID: "i"})
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the driver did not detach after EOF")
	}
}

func TestReadLineKeepsAtMostItsLimit(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("abc\nabcdef\r\nab\r\nxyz"), 16)
	var got []string
	for {
		line, tooLong, err := readLine(br, 4)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		if tooLong {
			assert.Nil(t, line, "nothing of a long line is kept")
			got = append(got, "<too long>")
			continue
		}
		got = append(got, string(line))
	}
	assert.Equal(t, []string{"abc", "<too long>", "ab", "xyz"}, got)
}

// catalogSession is a scripted session that knows agy's model catalog, as
// *actors.Session does (ModelDisplayName).
type catalogSession struct {
	*scriptedSession
	names map[string]string
}

func (s catalogSession) ModelDisplayName(model string) string { return s.names[model] }

// The status line names the model by its display name from agy's catalog
// even when no model_changed event named it (agy's first turn, typed into
// its terminal, reports only the model's enum), and by its enum when the
// catalog does not know it.
func TestDriverStatusLineNamesTheModelFromTheCatalog(t *testing.T) {
	sess := catalogSession{newScriptedSession(), map[string]string{"MODEL_PLACEHOLDER_M20": "Gemini 3.1 Pro (Medium)"}}
	out := &syncBuffer{}
	d := newDriver(driverConfig{typesTurns: true}, sess, out, nil, nil, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- d.run(context.Background()) }()
	sess.push(messages.Event{Type: messages.EventUserMessage, Text: "hi", Origin: messages.OriginHarness})
	sess.push(messages.Event{Type: messages.EventUsage, Model: "MODEL_PLACEHOLDER_M20", InputTokens: messages.Ptr[int64](3)})
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	sess.push(messages.Event{Type: messages.EventUsage, Model: "MODEL_PLACEHOLDER_M99"})
	sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateRunning})
	require.NoError(t, sess.Detach(context.Background()))
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), "── idle · Gemini 3.1 Pro (Medium) · tokens 3 in")
	assert.NotContains(t, out.String(), "MODEL_PLACEHOLDER_M20")
	assert.Contains(t, out.String(), "── running · MODEL_PLACEHOLDER_M99", "an enum the catalog does not name")
}

// A scripted turn agy accepted and dropped (the session's turn_not_taken
// error names it) ends like one that went idle: the error is shown, and the
// script moves on instead of waiting for an idle that never comes.
func TestDriverMovesOnFromATurnAgyDidNotTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sess := newScriptedSession()
		out := &syncBuffer{}
		turns := []messages.Command{{Type: messages.CommandTurn, Text: "one"}, {Type: messages.CommandTurn, Text: "two"}}
		d := newDriver(driverConfig{auto: true, turns: turns, exitAfterTurns: true, noTypedTurns: true},
			sess, out, nil, nil, slog.New(slog.DiscardHandler))
		done := make(chan error, 1)
		go func() { done <- d.run(context.Background()) }()
		synctest.Wait()
		require.Len(t, sess.commands(), 1)
		// An error for another text is not this turn's.
		sess.push(messages.Event{Type: messages.EventError, Code: messages.ErrorTurnNotTaken, Text: "zero", Message: "agy accepted the turn but did not take it: \"zero\""})
		synctest.Wait()
		require.Len(t, sess.commands(), 1)
		sess.push(messages.Event{Type: messages.EventError, Code: messages.ErrorTurnNotTaken, Text: "one", Message: "agy accepted the turn but did not take it: \"one\""})
		synctest.Wait()
		require.Len(t, sess.commands(), 2, "the script moved on")
		lastTurnEnds(t, sess, done)
		assert.Contains(t, out.String(), `did not take it: "one"`)
	})
}
