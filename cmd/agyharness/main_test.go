package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// binDir holds the binaries built for this test run (once per run).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agyharness-test-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := 0
	func() {
		defer os.RemoveAll(dir)
		// goleak runs after the tests; VerifyTestMain would exit before
		// the cleanup, so check by hand.
		code = m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				os.Stderr.WriteString("goleak: " + err.Error() + "\n")
				code = 1
			}
		}
	}()
	os.Exit(code)
}

var (
	buildOnce sync.Map // package -> *buildResult
)

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// buildBinary builds a command of this module once per test run.
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	v, _ := buildOnce.LoadOrStore(pkg, &buildResult{})
	b := v.(*buildResult)
	b.once.Do(func() {
		b.path = filepath.Join(binDir, filepath.Base(pkg))
		out, err := exec.Command("go", "build", "-race", "-o", b.path, "github.com/agyharness/agyharness/"+pkg).CombinedOutput()
		if err != nil {
			b.err = &buildError{out: string(out), err: err}
		}
	})
	require.NoError(t, b.err)
	return b.path
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

func harness(t *testing.T) string { return buildBinary(t, "cmd/agyharness") }

// reap collects cmd's exit in the background: the channel (capacity 1)
// receives Wait's error, for a reader to put back once it has it. The
// test's end kills cmd if it still runs, and waits for it.
func reap(t *testing.T, cmd *exec.Cmd) chan error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-done:
			done <- err
		default:
			_ = cmd.Process.Kill()
			done <- <-done
		}
	})
	return done
}

// lines reads r line by line onto a channel, closed at EOF. The goroutine
// ends with r (the process's pipe closes when it exits).
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// eventReader decodes a process's stdout as JSON events and fails the test
// on anything that is not one.
type eventReader struct {
	t      *testing.T
	ch     <-chan string
	events []*messages.Event
}

func newEventReader(t *testing.T, r io.Reader) *eventReader {
	return &eventReader{t: t, ch: lines(r)}
}

// next returns the next event, or nil at EOF; it fails after the deadline.
func (er *eventReader) next(deadline time.Time) *messages.Event {
	er.t.Helper()
	select {
	case line, ok := <-er.ch:
		if !ok {
			return nil
		}
		ev := decodeEvent(er.t, line)
		er.events = append(er.events, ev)
		return ev
	case <-time.After(time.Until(deadline)):
		er.t.Fatalf("no event before the deadline; last events: %s", tail(er.events, 80))
		return nil
	}
}

// until reads events until match returns true, and returns that event.
func (er *eventReader) until(timeout time.Duration, what string, match func(*messages.Event) bool) *messages.Event {
	er.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ev := er.next(deadline)
		if ev == nil {
			er.t.Fatalf("stdout ended waiting for %s; last events: %s", what, tail(er.events, 5))
		}
		if match(ev) {
			return ev
		}
	}
}

// rest reads events until EOF.
func (er *eventReader) rest(timeout time.Duration) {
	er.t.Helper()
	deadline := time.Now().Add(timeout)
	for er.next(deadline) != nil {
	}
}

func decodeEvent(t *testing.T, line string) *messages.Event {
	t.Helper()
	var ev messages.Event
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&ev), "stdout line is not an event: %q", line)
	require.NotEmpty(t, ev.Type, "event without a type: %q", line)
	return &ev
}

func tail(evs []*messages.Event, n int) string {
	if len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	b, _ := json.Marshal(evs)
	return string(b)
}

func isType(t messages.EventType) func(*messages.Event) bool {
	return func(ev *messages.Event) bool { return ev.Type == t }
}

func isStatus(state string) func(*messages.Event) bool {
	return func(ev *messages.Event) bool {
		return ev.Type == messages.EventStatus && ev.State == state && ev.ParentConversationID == ""
	}
}

// fakeAgy is cmd/fakeagy running as a process.
type fakeAgy struct {
	cmd  *exec.Cmd
	port int
}

var listenLine = regexp.MustCompile(`Language server listening on random port at (\d+) for HTTPS`)

// startFakeAgy runs cmd/fakeagy and waits for its HTTPS port line.
func startFakeAgy(t *testing.T, args ...string) *fakeAgy {
	t.Helper()
	bin := buildBinary(t, "cmd/fakeagy")
	cmd := exec.Command(bin, append([]string{"--conversation"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	f := &fakeAgy{cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	ch := lines(stderr)
	deadline := time.After(30 * time.Second)
	for f.port == 0 {
		select {
		case l, ok := <-ch:
			require.True(t, ok, "fakeagy exited before listening")
			if m := listenLine.FindStringSubmatch(l); m != nil {
				f.port, _ = strconv.Atoi(m[1])
			}
		case <-deadline:
			t.Fatal("fakeagy did not print its port")
		}
	}
	go func() {
		for range ch {
		}
	}()
	return f
}
