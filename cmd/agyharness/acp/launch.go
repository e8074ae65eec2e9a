package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Launcher starts agy for a new ACP session. The harness then attaches to
// the process it names (discovery scans the PID's descendants).
type Launcher interface {
	// Launch starts agy with cwd as its working directory.
	Launch(ctx context.Context, cwd string) (*Launched, error)
}

// Launched is an agy started by a Launcher.
type Launched struct {
	// PID is agy's process, or the terminal pane that runs it.
	PID int
	// Name says where it runs, for logs and users ("tmux session X").
	Name string
	// Stop ends it. It is called once, when the ACP session closes or the
	// adapter exits.
	Stop func(ctx context.Context) error
}

// Tmux launches agy in a detached tmux session the harness owns, so a person
// can `tmux attach -t NAME` and use agy's own interface at the same time.
type Tmux struct {
	// Agy is agy's command line: the binary, then its arguments.
	// Default: ["agy"].
	Agy []string
	// SessionPrefix starts every tmux session name. Default "agyharness-acp".
	SessionPrefix string
	// Tmux is the tmux binary. Default "tmux".
	Tmux string
	// Socket, when set, runs the sessions on their own tmux server
	// (tmux -L Socket), as tests do.
	Socket string
}

// Launch runs `tmux new-session -d -s NAME -c CWD -- AGY...` and returns the
// pane's PID.
func (t Tmux) Launch(ctx context.Context, cwd string) (*Launched, error) {
	tmux := t.Tmux
	if tmux == "" {
		tmux = "tmux"
	}
	agy := t.Agy
	if len(agy) == 0 || agy[0] == "" {
		agy = []string{"agy"}
	}
	prefix := t.SessionPrefix
	if prefix == "" {
		prefix = "agyharness-acp"
	}
	if cwd == "" {
		return nil, errors.New("launch: cwd is required")
	}
	if _, err := exec.LookPath(tmux); err != nil {
		return nil, fmt.Errorf("launch: tmux not found (%w); install tmux, or run with --attach-port/--attach-pid", err)
	}
	name := prefix + "-" + randomSuffix()
	var global []string
	if t.Socket != "" {
		global = []string{"-L", t.Socket}
	}
	run := func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, tmux, append(append([]string{}, global...), args...)...)
	}
	args := append([]string{"new-session", "-d", "-s", name, "-x", "200", "-y", "50", "-c", cwd, "--"}, agy...)
	if out, err := run(ctx, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("launch: tmux new-session: %w: %s", err, strings.TrimSpace(string(out)))
	}
	stop := func(ctx context.Context) error {
		out, err := run(ctx, "kill-session", "-t", "="+name).CombinedOutput()
		if err != nil {
			return fmt.Errorf("tmux kill-session %s: %w: %s", name, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	out, err := run(ctx, "list-panes", "-t", "="+name, "-F", "#{pane_pid}").Output()
	if err != nil {
		_ = stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("launch: tmux list-panes %s: %w", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		_ = stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("launch: tmux gave no pane pid for %s (%q)", name, out)
	}
	return &Launched{PID: pid, Name: "tmux session " + name, Stop: stop}, nil
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
