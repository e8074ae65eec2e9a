package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/agystart"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/tmuxpane"
)

// Launcher starts agy for a new ACP session. The harness then attaches to
// the process it names (discovery scans the PID's descendants).
type Launcher interface {
	// Launch starts agy with cwd as its working directory: on conversation
	// when it is set (an earlier conversation agy keeps, which agy's
	// --conversation ID resumes), else fresh (agy then has no conversation
	// until its first turn is typed into its terminal).
	Launch(ctx context.Context, cwd, conversation string) (*Launched, error)
}

// Launched is an agy started by a Launcher.
type Launched struct {
	// PID is agy's process, or the terminal pane that runs it.
	PID int
	// Name says where it runs, for logs and users ("tmux session X").
	Name string
	// Terminal is agy's own terminal, when the launcher owns it: the
	// session types a fresh agy's first turn there (and every turn with
	// --turns tui), and closes agy's dialogs there. Nil: none.
	Terminal actors.Terminal
	// Stop ends it. It is called once, when the ACP session closes or the
	// adapter exits.
	Stop func(ctx context.Context) error
	// Ready, when set, waits until agy takes turns: nil, or why it never
	// will (an *agystart.Error: a trust dialog, a sign-in screen).
	Ready func(ctx context.Context) error
	// Version is agy's version ("" unknown): the session reports it.
	Version string
}

// Tmux launches agy in a detached tmux session the harness owns, so a person
// can `tmux attach -t NAME` and use agy's own interface at the same time.
// The pane is the session's Terminal.
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
	// TrustWorkspace answers agy's trust dialog Yes (acp
	// --trust-workspace); without it the dialog fails the session.
	TrustWorkspace bool
	// Version is agy's version as `agy --version` printed it ("" unknown).
	Version string
	// ReadyTimeout bounds the wait for agy's input before a first prompt
	// is typed anyway (agystart.Options). Default 20s.
	ReadyTimeout time.Duration
	// Logger gets what the startup watch did. Default: discard.
	Logger *slog.Logger
}

// Launch runs AGY [--conversation ID] ARGS... in a new tmux session NAME
// whose directory is cwd (tmuxpane.Start: no argument reaches a shell or a
// tmux format), and returns the pane's PID and the pane as agy's terminal,
// behind a startup watch (agystart.Gate: turns are typed once agy's input
// is ready; Ready says when it is, or why it will not be).
func (t Tmux) Launch(ctx context.Context, cwd, conversation string) (*Launched, error) {
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
	argv := []string{agy[0]}
	if conversation != "" {
		argv = append(argv, "--conversation", conversation)
	}
	argv = append(argv, agy[1:]...)
	pane, err := tmuxpane.Start(ctx, tmuxpane.Options{Name: prefix + "-" + randomSuffix(), Socket: t.Socket, Tmux: t.Tmux, Dir: cwd}, argv)
	if errors.Is(err, tmuxpane.ErrNoTmux) {
		return nil, fmt.Errorf("launch: %w; install tmux, or run with --attach-port/--attach-pid", err)
	}
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	gate := agystart.Start(pane, agystart.Options{TrustWorkspace: t.TrustWorkspace, Version: t.Version, ReadyTimeout: t.ReadyTimeout,
		Where: fmt.Sprintf("tmux session %s: tmux attach -t %s", pane.Name(), pane.Name()), Logger: t.Logger})
	stop := func(ctx context.Context) error {
		gate.Stop()
		return pane.Kill(ctx)
	}
	return &Launched{PID: pane.PID(), Name: "tmux session " + pane.Name(), Terminal: gate, Stop: stop, Ready: gate.Wait, Version: t.Version}, nil
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
