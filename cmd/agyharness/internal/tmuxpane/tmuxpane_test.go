package tmuxpane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const wait = 10 * time.Second

// The test binary doubles as the program in the pane (TestMain runs it when
// TMUXPANE_RECORD is set): a terminal program that asks for bracketed
// paste, records every byte it reads to the file TMUXPANE_RECORD names,
// and draws its draft as "draft: ..." (unless TMUXPANE_HIDE_DRAFT is set,
// as a program whose draft is not on screen) and each line sent with
// Enter as "sent: ...".
func TestMain(m *testing.M) {
	if path := os.Getenv("TMUXPANE_RECORD"); path != "" {
		os.Exit(recorder(path, os.Getenv("TMUXPANE_HIDE_DRAFT") != ""))
	}
	if path := os.Getenv("TMUXPANE_ARGS"); path != "" {
		os.Exit(argsWriter(path))
	}
	os.Exit(m.Run())
}

func recorder(path string, hideDraft bool) int {
	stty := exec.Command("stty", "raw", "-echo")
	stty.Stdin = os.Stdin
	if err := stty.Run(); err != nil {
		fmt.Println("stty:", err)
		return 1
	}
	// Bracketed paste first: the file's existence says the recorder is up.
	fmt.Print("\x1b[?2004h")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer f.Close()
	var draft, pending []byte
	var sent []string
	pasting := false
	draw := func() {
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J")
		for _, s := range sent {
			b.WriteString("sent: " + strings.ReplaceAll(s, "\r", " / ") + "\r\n")
		}
		if !hideDraft {
			b.WriteString("draft: " + strings.ReplaceAll(string(draft), "\r", " / "))
		}
		fmt.Print(b.String())
	}
	draw()
	buf := make([]byte, 1024)
	for {
		n, err := os.Stdin.Read(buf)
		if n > 0 {
			_, _ = f.Write(buf[:n])
			pending = append(pending, buf[:n]...)
			for len(pending) > 0 {
				switch {
				case bytes.HasPrefix(pending, []byte("\x1b[200~")):
					pasting, pending = true, pending[6:]
				case bytes.HasPrefix(pending, []byte("\x1b[201~")):
					pasting, pending = false, pending[6:]
				case pending[0] == 0x0b: // C-k
					draft, pending = draft[:0], pending[1:]
				case pending[0] == '\r' && !pasting:
					sent, draft, pending = append(sent, string(draft)), draft[:0], pending[1:]
				case pending[0] < ' ' && pending[0] != '\r':
					pending = pending[1:]
				default:
					draft, pending = append(draft, pending[0]), pending[1:]
				}
			}
			draw()
		}
		if err != nil {
			return 0
		}
	}
}

// argsWriter writes its directory and arguments as JSON to the file path
// names (through a temporary file: the file's existence says it is
// complete), then waits for its terminal to close.
func argsWriter(path string) int {
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	b, _ := json.Marshal(started{Dir: cwd, PWD: os.Getenv("PWD"), Args: os.Args[1:]})
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil || os.Rename(path+".tmp", path) != nil {
		fmt.Println("writing", path, err)
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// started is what argsWriter writes.
type started struct {
	Dir, PWD string
	Args     []string
}

type pane struct {
	*Session
	record string
}

func startRecorder(t *testing.T, hideDraft bool, opts Options) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	opts.Socket = fmt.Sprintf("tmuxpane-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	opts.Name = "agy"
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", opts.Socket, "kill-server").Run() })
	record := filepath.Join(t.TempDir(), "keys")
	argv := []string{"env", "TMUXPANE_RECORD=" + record}
	if hideDraft {
		argv = append(argv, "TMUXPANE_HIDE_DRAFT=1")
	}
	argv = append(argv, os.Args[0])
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := Start(ctx, opts, argv)
	require.NoError(t, err)
	assert.Positive(t, s.PID())
	assert.Equal(t, "agy", s.Name())
	p := &pane{Session: s, record: record}
	require.Eventually(t, func() bool { _, err := os.Stat(record); return err == nil }, wait, 10*time.Millisecond, "the recorder is up")
	return p
}

func (p *pane) read(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.record)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

func (p *pane) waitScreen(t *testing.T, what string, ok func(string) bool) {
	t.Helper()
	var last string
	if !assert.Eventually(t, func() bool {
		s, err := p.Capture(context.Background())
		last = s
		return err == nil && ok(s)
	}, wait, 20*time.Millisecond) {
		t.Fatalf("the pane never showed %s:\n%s", what, last)
	}
}

func TestTypeClearsTheDraftPastesAndPressesEnter(t *testing.T) {
	p := startRecorder(t, false, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, p.Press(ctx, "o", "l", "d"))
	p.waitScreen(t, "the old draft", func(s string) bool { return strings.Contains(s, "draft: old") })

	require.NoError(t, p.Type(ctx, "fix the build\r\nthen\ttest \x1b[201~it"))
	p.waitScreen(t, "the turn sent", func(s string) bool { return strings.Contains(s, "sent: fix the build / then") })
	got := p.read(t)
	assert.Equal(t, "old\x01\x0b\x1b[200~fix the build\rthen\ttest [201~it\x1b[201~\r", got,
		"C-a C-k, then one bracketed paste (line breaks as CR, the ESC dropped), then Enter")

	out, err := exec.Command("tmux", "-L", p.opts.Socket, "list-buffers").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "the paste buffer is deleted")
}

func TestPressSendsAllKeysAtOnce(t *testing.T) {
	p := startRecorder(t, false, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, p.Press(ctx, "1", "3", "Enter"))
	require.NoError(t, p.Press(ctx, "Escape"))
	require.NoError(t, p.Press(ctx))
	require.Eventually(t, func() bool { return p.read(t) == "13\r\x1b" }, wait, 10*time.Millisecond, "recorded %q", p.read(t))
}

// A draft that never shows (agy not ready, or the paste lost) is not sent:
// Enter could act on whatever agy shows instead.
func TestTypeWithoutADraftOnScreenFailsWithoutEnter(t *testing.T) {
	p := startRecorder(t, true, Options{DraftTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := p.Type(ctx, "hello")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not show in agy's draft")
	require.Eventually(t, func() bool { return strings.HasSuffix(p.read(t), "\x1b[201~") }, wait, 10*time.Millisecond)
	assert.NotContains(t, p.read(t), "\r", "Enter not pressed")
}

func TestTypeRefusesAnEmptyTurn(t *testing.T) {
	s := &Session{opts: Options{Tmux: "tmux", Name: "x"}}
	err := s.Type(context.Background(), " \x1b\x07\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing to type")
}

func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Start(ctx, Options{Name: "x", Tmux: "no-such-tmux-binary"}, []string{"sleep", "1"})
	assert.ErrorIs(t, err, ErrNoTmux)
	_, err = Start(ctx, Options{}, []string{"sleep", "1"})
	assert.ErrorContains(t, err, "name")
	_, err = Start(ctx, Options{Name: "x"}, nil)
	assert.ErrorContains(t, err, "no command")
}

func TestKillEndsTheSession(t *testing.T) {
	p := startRecorder(t, false, Options{Dir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, p.Kill(ctx))
	err := exec.Command("tmux", "-L", p.opts.Socket, "has-session", "-t", "=agy").Run()
	assert.Error(t, err, "the session is gone")
	assert.Error(t, p.Kill(ctx), "killing it again is an error")
}

func TestDraftNeedle(t *testing.T) {
	for in, want := range map[string]string{
		"hello":                            "hello",
		"\n\n  first line  \nsecond":       "first line",
		"\tindented":                       "indented",
		"a very long first line that goes": "a very long first line t",
		"":                                 "",
	} {
		assert.Equal(t, want, draftNeedle(in), "%q", in)
	}
}

// hostile are arguments that a shell or tmux would act on if they reached
// either's parser: command substitution, formats, command separators, a
// leading "-", quotes, spaces.
var hostile = []string{"#(touch $TMUXPANE_PWNED)", "#{pane_pid}", "a;", ";", `b\;`, `c\`, "-x", "--", "sp ace",
	"$(touch $TMUXPANE_PWNED)", "`touch $TMUXPANE_PWNED`", `'"`, "{", "}", "~"}

// startArgs runs argv with Start on a private tmux server, with
// TMUXPANE_PWNED naming a file that a command injected through tmux or a
// shell would create, and returns what the program in the pane reported
// (TMUXPANE_ARGS) and that file.
func startArgs(t *testing.T, opts Options, argv []string) (started, string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	tmp := t.TempDir()
	pwned, report := filepath.Join(tmp, "PWNED"), filepath.Join(tmp, "args.json")
	// The tmux server this test starts inherits them; so does the pane.
	t.Setenv("TMUXPANE_PWNED", pwned)
	t.Setenv("TMUXPANE_ARGS", report)
	opts.Socket = fmt.Sprintf("tmuxpane-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	opts.Name = "agy"
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", opts.Socket, "kill-server").Run() })
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := Start(ctx, opts, argv)
	require.NoError(t, err)
	var got started
	if !assert.Eventually(t, func() bool {
		b, err := os.ReadFile(report)
		return err == nil && json.Unmarshal(b, &got) == nil
	}, wait, 10*time.Millisecond) {
		out, _ := exec.Command("tmux", "-L", opts.Socket, "capture-pane", "-p", "-t", "=agy:").CombinedOutput()
		t.Fatalf("the program in the pane never reported; the pane:\n%s", out)
	}
	// tmux runs a #(...) in a format as a job in the background: one run
	// after it is done once this one is.
	sentinel := filepath.Join(tmp, "sentinel")
	out, err := exec.Command("tmux", "-L", opts.Socket, "run-shell", "touch "+sentinel).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.FileExists(t, sentinel)
	return got, pwned
}

// A directory whose name holds tmux formats, a command substitution and a
// ";", and arguments tmux or a shell would act on, reach the program in
// the pane as they are, and run nothing, with and without KeepDeadPane.
func TestStartTakesTheDirectoryAndArgumentsLiterally(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepDeadPane=%v", keep), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p #(touch $TMUXPANE_PWNED) #{pane_pid} x;")
			require.NoError(t, os.Mkdir(dir, 0o700))
			got, pwned := startArgs(t, Options{Dir: dir, KeepDeadPane: keep}, append([]string{os.Args[0]}, hostile...))
			assert.Equal(t, dir, got.Dir, "the pane's directory")
			assert.Equal(t, dir, got.PWD)
			assert.Equal(t, hostile, got.Args)
			assert.NoFileExists(t, pwned, "nothing ran the injected command")
		})
	}
}

// A command given alone (agy with no arguments) is not run through a
// shell, as tmux runs a lone command argument; its name may start with
// "-" and hold ";", spaces and formats. It is looked up in PATH.
func TestStartRunsALoneCommandWithoutAShell(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepDeadPane=%v", keep), func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "bin #{pane_pid}")
			require.NoError(t, os.Mkdir(bin, 0o700))
			name := "-agy;touch $TMUXPANE_PWNED;#(touch $TMUXPANE_PWNED) x"
			require.NoError(t, os.Symlink(os.Args[0], filepath.Join(bin, name)))
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			got, pwned := startArgs(t, Options{KeepDeadPane: keep}, []string{name})
			assert.Empty(t, got.Args)
			assert.NoFileExists(t, pwned, "nothing ran the injected command")
		})
	}
}

func TestStartRefusesABadDirectoryOrName(t *testing.T) {
	ctx := context.Background()
	// Its own tmux server, should a session start after all.
	socket := fmt.Sprintf("tmuxpane-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for dir, want := range map[string]string{
		"relative/dir":                    `directory "relative/dir" is not an absolute path`,
		filepath.Join(file, "..", "nope"): "does not exist",
		file:                              "is not a directory",
	} {
		_, err := Start(ctx, Options{Name: "x", Dir: dir, Socket: socket}, []string{"sleep", "1"})
		assert.ErrorContains(t, err, want, "%q", dir)
	}
	for _, name := range []string{"a#{pane_pid}", "a:b", "a.b", "a b", "#(touch x)"} {
		_, err := Start(ctx, Options{Name: name, Socket: socket}, []string{"sleep", "1"})
		assert.ErrorContains(t, err, "use letters, digits, - and _", "%q", name)
	}
}

// Keys that start with "-" or end with ";" are keys, not send-keys flags
// or the end of the tmux command; a typed turn is text, whatever it holds.
func TestPressAndTypeTakeKeysAndTextLiterally(t *testing.T) {
	p := startRecorder(t, false, Options{})
	pwned := filepath.Join(t.TempDir(), "PWNED")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, p.Press(ctx, "-l", "x;"))
	require.Eventually(t, func() bool { return p.read(t) == "-lx;" }, wait, 10*time.Millisecond, "recorded %q", p.read(t))
	text := "-t x; kill-server; run-shell 'touch " + pwned + "' #(touch " + pwned + ") \\;"
	require.NoError(t, p.Type(ctx, text))
	p.waitScreen(t, "the turn sent", func(s string) bool { return strings.Contains(s, "sent: "+text) })
	assert.NoFileExists(t, pwned)
}
