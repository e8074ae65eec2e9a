package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agyharness/agyharness/messages"
)

func launchCommand() *command {
	c := &command{
		name:     "launch",
		synopsis: "launch [--tmux-session NAME] [--agy PATH] [--json] [--record F [--force]] [--keep] [-- AGY_ARGS]",
		summary:  "start agy in a tmux session the harness owns, and attach (a person can tmux attach too)",
		example: `agyharness launch                          # agy in tmux session agyharness-<pid>; human mode here
agyharness launch --tmux-session work --keep -- --model gemini
tmux attach -t work                          # agy's own TUI, at the same time`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		fs := newFlagSet(e, c)
		name := fs.String("tmux-session", "", "tmux session name (default agyharness-<pid>)")
		agy := fs.String("agy", "agy", "agy binary")
		socket := fs.String("tmux-socket", "", "run on this tmux server (tmux -L SOCKET) instead of the default one")
		keep := fs.Bool("keep", false, "leave the tmux session (and agy) running when the harness exits")
		closeKey := fs.String("close-prompt-key", "Escape", `key sent to agy's TUI after a prompt was answered over RPC, to close it there ("" sends none)`)
		jsonOut := fs.Bool("json", false, "events as JSON lines on stdout; JSON commands on stdin")
		var record recordFlags
		record.register(fs)
		conv := fs.String("conversation", "", "conversation to bind (default: the most recently active)")
		var csrf csrfFlags
		csrf.register(fs)
		readMode := fs.String("read-mode", "both", "how to read agy: both, stream or poll")
		timeout := fs.Duration("attach-timeout", 60*time.Second, "how long to wait for agy's language server")
		agyArgs, err := parseFlags(fs, args)
		if err != nil {
			return err
		}
		mode, err := parseReadMode(*readMode)
		if err != nil {
			return err
		}
		if *name == "" {
			*name = fmt.Sprintf("agyharness-%d", osGetpid())
		}
		if !tmuxName.MatchString(*name) {
			return usagef("launch: --tmux-session %q: use letters, digits, - and _", *name)
		}
		csrfToken, err := csrf.resolve(e, "launch")
		if err != nil {
			return err
		}
		t := tmuxSession{name: *name, socket: *socket}
		pid, err := t.start(ctx, append([]string{*agy}, agyArgs...))
		if err != nil {
			return err
		}
		log := newLogger(e)
		if *keep {
			fmt.Fprintf(e.stderr, "agyharness launch: agy runs in tmux session %s (tmux attach -t %s); it stays after the harness exits\n", t.name, t.name)
		} else {
			fmt.Fprintf(e.stderr, "agyharness launch: agy runs in tmux session %s (tmux attach -t %s)\n", t.name, t.name)
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := t.kill(sctx); err != nil {
					log.Warn("stopping agy's tmux session", "err", err)
				}
			}()
		}
		cfg := humanOrJSON(e, *jsonOut, driverConfig{detachOnEOF: true})
		if *closeKey != "" {
			// agy's TUI keeps showing a prompt answered over RPC; Escape
			// dismisses agy's prompt dialogs without answering them again.
			cfg.onResolved = func(ev *messages.Event) {
				kctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				if err := t.sendKeys(kctx, *closeKey); err != nil {
					log.Warn("closing the prompt in agy's terminal", "err", err)
				}
			}
		}
		return attachAndDrive(ctx, e, attachOptions{
			spec:    specFor(pid, *conv, csrfToken, mode),
			record:  record,
			timeout: *timeout,
			driver:  cfg,
		})
	}
	return c
}

var tmuxName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// tmuxSession is one tmux session the harness created.
type tmuxSession struct {
	name   string
	socket string // tmux -L; "" is the default server
}

func (t tmuxSession) cmd(ctx context.Context, args ...string) *exec.Cmd {
	if t.socket != "" {
		args = append([]string{"-L", t.socket}, args...)
	}
	return exec.CommandContext(ctx, "tmux", args...)
}

// start runs argv in a new detached session and returns the pane's PID
// (argv runs directly, without a shell, so it is usually agy itself; the
// PID scan covers its descendants either way).
func (t tmuxSession) start(ctx context.Context, argv []string) (int, error) {
	if _, err := exec.LookPath("tmux"); err != nil {
		return 0, fmt.Errorf("launch: tmux not found (%w): install tmux, or start agy yourself and use attach --pid", err)
	}
	args := append([]string{"new-session", "-d", "-s", t.name, "-x", "200", "-y", "50", "--"}, argv...)
	if out, err := t.cmd(ctx, args...).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("launch: tmux new-session %s: %w: %s", t.name, err, strings.TrimSpace(string(out)))
	}
	out, err := t.cmd(ctx, "list-panes", "-t", "="+t.name, "-F", "#{pane_pid}").Output()
	if err != nil {
		_ = t.kill(context.WithoutCancel(ctx))
		return 0, fmt.Errorf("launch: tmux list-panes %s: %w", t.name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		_ = t.kill(context.WithoutCancel(ctx))
		return 0, fmt.Errorf("launch: no pane PID for tmux session %s (%q)", t.name, out)
	}
	return pid, nil
}

func (t tmuxSession) sendKeys(ctx context.Context, keys ...string) error {
	args := append([]string{"send-keys", "-t", "=" + t.name + ":"}, keys...)
	if out, err := t.cmd(ctx, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tmux send-keys: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (t tmuxSession) kill(ctx context.Context) error {
	if out, err := t.cmd(ctx, "kill-session", "-t", "="+t.name).CombinedOutput(); err != nil {
		return fmt.Errorf("tmux kill-session %s: %w: %s", t.name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
