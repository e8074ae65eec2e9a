package main

import (
	"context"
	"errors"
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
		if _, err := exec.LookPath(*agy); err != nil {
			return fmt.Errorf("launch: agy not found (%w): install agy, or give its path with --agy", err)
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
			// agy failing to start (a bad flag, no login) would otherwise
			// look like a language server that never came up.
			whileAttaching: func(actx context.Context) error {
				defer func() {
					octx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					if err := t.keepDeadPane(octx, false); err != nil {
						log.Warn("tmux: remain-on-exit off", "err", err)
					}
				}()
				return t.watchExit(actx, 250*time.Millisecond)
			},
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

// start runs argv in a new detached session, under paneWrapper, and
// returns the pane's PID (the wrapper's shell: the PID scan covers its
// descendants).
func (t tmuxSession) start(ctx context.Context, argv []string) (int, error) {
	if _, err := exec.LookPath("tmux"); err != nil {
		return 0, fmt.Errorf("launch: tmux not found (%w): install tmux, or start agy yourself and use attach --pid", err)
	}
	// The pane stays when argv exits, until the harness has attached, so
	// that an agy that fails to start leaves its status and last words
	// (watchExit). Set in the same tmux command: before argv can exit.
	args := append([]string{"new-session", "-d", "-s", t.name, "-x", "200", "-y", "50", "--", "sh", "-c", paneWrapper, "sh"}, argv...)
	args = append(args, ";", "set-option", "-w", "-t", "="+t.name+":", "remain-on-exit", "on")
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

// keepDeadPane sets remain-on-exit on the session's window.
func (t tmuxSession) keepDeadPane(ctx context.Context, on bool) error {
	v := map[bool]string{true: "on", false: "off"}[on]
	if out, err := t.cmd(ctx, "set-option", "-w", "-t", "="+t.name+":", "remain-on-exit", v).CombinedOutput(); err != nil {
		return fmt.Errorf("tmux set-option remain-on-exit: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// watchExit checks the pane every interval until ctx ends, and returns an
// error that says so when the program in it has exited (with its status
// and the last lines it printed) or the session is gone.
func (t tmuxSession) watchExit(ctx context.Context, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		out, err := t.cmd(ctx, "list-panes", "-t", "="+t.name, "-F", "#{pane_dead} #{pane_dead_status}").Output()
		dead, status, _ := strings.Cut(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]), " ")
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("launch: agy's tmux session %s is gone", t.name)
		case dead == "1":
			last, wrapped := t.lastOutput(ctx, 15)
			if wrapped != "" {
				status = wrapped // tmux does not always collect it
			}
			msg := "launch: agy exited before its language server was found"
			if status != "" {
				msg = fmt.Sprintf("launch: agy exited (status %s) before its language server was found", status)
			}
			if last != "" {
				msg += "; its last output:\n" + indent(last, "  ")
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
func (t tmuxSession) lastOutput(ctx context.Context, n int) (last, status string) {
	out, err := t.cmd(ctx, "capture-pane", "-p", "-J", "-S", "-200", "-t", "="+t.name+":").Output()
	if err != nil {
		return "", ""
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
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
