// Package tmuxpane runs agy in a tmux session the harness owns, and is
// agy's terminal there for the session (actors.Terminal): a turn is typed
// as a person pastes one, keys are pressed as a person presses them. A
// person can `tmux attach -t NAME` and use agy's own interface meanwhile.
//
// `launch` and the ACP launcher share it.
package tmuxpane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Options say where and how agy's tmux session runs.
type Options struct {
	// Name is the tmux session's name (required).
	Name string
	// Socket, when set, runs the session on its own tmux server
	// (tmux -L Socket), as tests do.
	Socket string
	// Tmux is the tmux binary. Default "tmux".
	Tmux string
	// Dir is the pane's working directory. Default: the harness's.
	Dir string
	// DraftTimeout bounds how long Type waits for the pasted text to show
	// in agy's draft before it presses Enter. Default 5s.
	DraftTimeout time.Duration
	// PollInterval is how often Type reads the pane while it waits.
	// Default 50ms.
	PollInterval time.Duration
	// KeepDeadPane runs the command under a shell that prints its exit
	// status when it exits, and keeps the pane (tmux remain-on-exit) until
	// KeepDeadPane(ctx, false): WatchExit can then say how and with what
	// last words the command ended (an agy that fails to start).
	KeepDeadPane bool
}

// Session is a tmux session running agy. Its methods may be called from
// any goroutine; Type and Press are meant to be called one at a time (the
// session's terminal writer does).
type Session struct {
	opts Options
	pid  int
}

// ErrNoTmux: tmux is not installed.
var ErrNoTmux = errors.New("tmux not found")

// Start runs argv in a new detached tmux session (200x50) and returns it
// once tmux reports the pane's PID: agy itself, or the shell that runs it
// (a PID scan covers descendants).
//
// Nothing given to Start reaches a shell's parser or a tmux format:
//   - argv[0] is looked up in the harness's PATH and made absolute, and
//     argv is handed to tmux as separate arguments behind a fixed script
//     (`sh -c 'exec "$@"' sh ARGV...`, or paneWrapper with
//     Options.KeepDeadPane): the shell sees them only as "$@". tmux runs
//     a lone command argument through `sh -c`, so argv never goes alone;
//   - the pane's directory is the working directory of the tmux client
//     that creates the session (exec.Cmd.Dir), never `new-session -c`,
//     whose value tmux expands as a format (#(cmd) runs cmd);
//   - every argument that ends in ";" is escaped (tmux's command line
//     splits commands there).
//
// Options.Dir must be an absolute path to a directory; Options.Name takes
// letters, digits, - and _ only.
func Start(ctx context.Context, opts Options, argv []string) (*Session, error) {
	if opts.Tmux == "" {
		opts.Tmux = "tmux"
	}
	if opts.DraftTimeout <= 0 {
		opts.DraftTimeout = 5 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	if opts.Name == "" {
		return nil, errors.New("tmux: a session name is required")
	}
	if err := CheckName(opts.Name); err != nil {
		return nil, fmt.Errorf("tmux: %w", err)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("tmux: no command to run")
	}
	if opts.Dir != "" {
		if err := CheckDir(opts.Dir); err != nil {
			return nil, fmt.Errorf("tmux: %w", err)
		}
	}
	if _, err := exec.LookPath(opts.Tmux); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoTmux, err)
	}
	bin, err := exec.LookPath(argv[0])
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		return nil, fmt.Errorf("tmux: the command to run: %w", err)
	}
	argv = append([]string{bin}, argv[1:]...)
	s := &Session{opts: opts}
	newSession := []string{"new-session", "-d", "-s", opts.Name, "-x", "200", "-y", "50", "--"}
	commands := [][]string{append(append(newSession, "sh", "-c", `exec "$@"`, "sh"), argv...)}
	if opts.KeepDeadPane {
		// Set in the same tmux invocation: before argv can exit.
		commands = [][]string{
			append(append(newSession, "sh", "-c", paneWrapper, "sh"), argv...),
			{"set-option", "-w", "-t", s.target(), "remain-on-exit", "on"},
		}
	}
	if _, err := s.runIn(ctx, opts.Dir, nil, commands...); err != nil {
		return nil, err
	}
	out, err := s.run(ctx, nil, "list-panes", "-t", "="+opts.Name, "-F", "#{pane_pid}")
	if err == nil {
		s.pid, err = strconv.Atoi(strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]))
		if err == nil && s.pid <= 0 {
			err = fmt.Errorf("pane PID %d", s.pid)
		}
	}
	if err != nil {
		_ = s.Kill(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("tmux: no pane PID for session %s: %w", opts.Name, err)
	}
	return s, nil
}

// validName is what a tmux session name may hold here: tmux expands
// new-session -s as a format, and gives ":" and "." meanings in targets.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// CheckName says why name cannot be a tmux session's name here.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("session name %q: use letters, digits, - and _", name)
	}
	return nil
}

// CheckDir says why dir cannot be a pane's working directory: it is not
// an absolute path, does not exist, or is not a directory.
func CheckDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("directory %q is not an absolute path", dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("directory %q does not exist", dir)
		}
		return fmt.Errorf("directory %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%q is not a directory", dir)
	}
	return nil
}

// PID is the pane's process: agy, or the process that runs it.
func (s *Session) PID() int { return s.pid }

// Name is the tmux session's name.
func (s *Session) Name() string { return s.opts.Name }

// target is the session's active pane.
func (s *Session) target() string { return "=" + s.opts.Name + ":" }

// Press presses keys, tmux key names ("1", "Enter", "Escape", "C-a"), in
// one send-keys, so that a digit and its Enter are never split. A key that
// starts with "-" is a key, not a send-keys flag.
func (s *Session) Press(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.run(ctx, nil, append([]string{"send-keys", "-t", s.target(), "--"}, keys...)...)
	return err
}

// Type types text as a turn, as agy's terminal takes one: it clears the
// draft (C-a, C-k), pastes text as a bracketed paste from a named buffer
// fed on stdin (line breaks kept, other control characters dropped: an
// ESC would end the paste early), waits until the pane shows the draft
// (Options.DraftTimeout), then presses Enter. When the draft never shows,
// Enter is not pressed (it could act on whatever agy shows instead) and
// Type fails.
func (s *Session) Type(ctx context.Context, text string) error {
	text = pasteable(text)
	if strings.TrimSpace(text) == "" {
		return errors.New("tmux: nothing to type")
	}
	if err := s.Press(ctx, "C-a", "C-k"); err != nil {
		return err
	}
	needle := draftNeedle(text)
	before, err := s.Capture(ctx)
	if err != nil {
		return err
	}
	buffer := "agyharness-" + randomHex()
	if _, err := s.run(ctx, strings.NewReader(text), "load-buffer", "-b", buffer, "-"); err != nil {
		return err
	}
	if _, err := s.run(ctx, nil, "paste-buffer", "-p", "-d", "-b", buffer, "-t", s.target()); err != nil {
		_, _ = s.run(context.WithoutCancel(ctx), nil, "delete-buffer", "-b", buffer)
		return err
	}
	if err := s.waitDraft(ctx, needle, before); err != nil {
		return err
	}
	return s.Press(ctx, "Enter")
}

// collapsedPaste is how agy shows a paste of many lines in its draft:
// "[Pasted text #1 +17 lines]".
const collapsedPaste = "[Pasted text"

// waitDraft waits until the pane shows needle (or a collapsed paste) more
// often than it did before the paste.
func (s *Session) waitDraft(ctx context.Context, needle, before string) error {
	seen := func(screen string) bool {
		return strings.Count(screen, needle) > strings.Count(before, needle) ||
			strings.Count(screen, collapsedPaste) > strings.Count(before, collapsedPaste)
	}
	deadline := time.NewTimer(s.opts.DraftTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	for {
		screen, err := s.Capture(ctx)
		if err != nil {
			return err
		}
		if seen(screen) {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("tmux: the pasted turn did not show in agy's draft within %s (Enter not pressed)", s.opts.DraftTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Capture returns the pane's visible text, wrapped lines joined.
func (s *Session) Capture(ctx context.Context) (string, error) {
	return s.run(ctx, nil, "capture-pane", "-p", "-J", "-t", s.target())
}

// Kill ends the tmux session (tmux hangs up on agy, which exits).
func (s *Session) Kill(ctx context.Context) error {
	_, err := s.run(ctx, nil, "kill-session", "-t", "="+s.opts.Name)
	return err
}

// KeepDeadPane sets remain-on-exit on the session's window: on, the pane
// stays (dead) when its command exits.
func (s *Session) KeepDeadPane(ctx context.Context, on bool) error {
	v := map[bool]string{true: "on", false: "off"}[on]
	_, err := s.run(ctx, nil, "set-option", "-w", "-t", s.target(), "remain-on-exit", v)
	return err
}

// WatchExit checks the pane every interval until ctx ends (nil), and
// returns an error that says so when the command in it has exited (with
// its status and the last lines it printed: Options.KeepDeadPane keeps
// them) or the session is gone.
func (s *Session) WatchExit(ctx context.Context, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		out, err := s.run(ctx, nil, "list-panes", "-t", "="+s.opts.Name, "-F", "#{pane_dead} #{pane_dead_status}")
		dead, status, _ := strings.Cut(strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]), " ")
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("agy's tmux session %s is gone", s.opts.Name)
		case dead == "1":
			last, wrapped := s.lastOutput(ctx, 15)
			if wrapped != "" {
				status = wrapped // tmux does not always collect it
			}
			msg := "agy exited before its language server was found"
			if status != "" {
				msg = fmt.Sprintf("agy exited (status %s) before its language server was found", status)
			}
			if last != "" {
				msg += "; its last output:\n  " + strings.ReplaceAll(last, "\n", "\n  ")
			}
			return errors.New(msg)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// lastOutput is the last n non-empty lines of the pane (scrollback
// included), without the exit line of paneWrapper, whose status it
// returns, or tmux's own "Pane is dead".
func (s *Session) lastOutput(ctx context.Context, n int) (last, status string) {
	out, err := s.run(ctx, nil, "capture-pane", "-p", "-J", "-S", "-200", "-t", s.target())
	if err != nil {
		return "", ""
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, " ")
		if m := exitLine.FindStringSubmatch(l); m != nil {
			status = m[1]
			continue
		}
		if l == "" || strings.HasPrefix(l, "Pane is dead") {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n"), status
}

// paneWrapper runs agy's argv ("$@") in the pane. When agy exits it prints
// agy's status and stays a moment, so that tmux reads agy's last output:
// a pty's last bytes can reach tmux after the exit, and tmux drops them.
const paneWrapper = `"$@"; s=$?; printf '\n[agy exited with status %d]\n' "$s"; sleep 0.2 2>/dev/null || sleep 1; exit "$s"`

var exitLine = regexp.MustCompile(`^\[agy exited with status (\d+)\]$`)

func (s *Session) run(ctx context.Context, stdin *strings.Reader, args ...string) (string, error) {
	return s.runIn(ctx, "", stdin, args)
}

// runIn runs tmux commands, one invocation, in dir ("": the harness's
// directory). Each argument reaches its tmux command as given (tmuxArg).
func (s *Session) runIn(ctx context.Context, dir string, stdin *strings.Reader, commands ...[]string) (string, error) {
	var argv []string
	if s.opts.Socket != "" {
		argv = append(argv, "-L", s.opts.Socket)
	}
	for i, c := range commands {
		if i > 0 {
			argv = append(argv, ";")
		}
		for _, a := range c {
			argv = append(argv, tmuxArg(a))
		}
	}
	cmd := exec.CommandContext(ctx, s.opts.Tmux, argv...)
	if dir != "" {
		// tmux takes the client's directory for a session it creates; PWD
		// keeps the path as given when it goes through a symbolic link.
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PWD="+dir)
	}
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tmux %s: %w: %s", commands[0][0], err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// tmuxArg is a as tmux's command line takes it literally: there, an
// argument ending in ";" ends the command, and a trailing "\;" stands for
// ";".
func tmuxArg(a string) string {
	if strings.HasSuffix(a, ";") {
		return a[:len(a)-1] + `\;`
	}
	return a
}

// pasteable keeps what a paste can carry: printable text, line breaks
// (CR LF and CR become LF; tmux pastes LF as CR) and tabs.
func pasteable(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, text)
}

// draftNeedle is what Type looks for in agy's draft: the start of the
// text's first non-blank run of characters without a line break or a tab
// (a pane shows a tab as spaces), 24 characters at most (so that it fits
// on one line of a narrow pane).
func draftNeedle(text string) string {
	for _, part := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\t' }) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if r := []rune(part); len(r) > 24 {
			part = strings.TrimSpace(string(r[:24]))
		}
		return part
	}
	return ""
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
