package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/agyversion"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/agystart"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/tmuxpane"
)

func launchCommand() *command {
	c := &command{
		name:     "launch",
		synopsis: "launch [--tmux-session NAME] [--agy PATH] [--turns rpc|tui] [--trust-workspace] [--json] [--record F [--force]] [--keep] [-- AGY_ARGS]",
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
		closeKeys := &keyList{}
		fs.Var(closeKeys, "close-prompt-key", `keys (tmux key names, space-separated) pressed in agy's terminal after a prompt was answered over RPC, instead of agy's own ("" presses none)`)
		turns := fs.String("turns", "rpc", "how turns after the first reach agy: rpc (SendUserCascadeMessage) or tui (typed into agy's terminal)")
		jsonOut := fs.Bool("json", false, "events as JSON lines on stdout; JSON commands on stdin")
		var record recordFlags
		record.register(fs)
		conv := fs.String("conversation", "", "resume this conversation (agy --conversation ID) and bind it (default: the one agy starts for the first turn)")
		var csrf csrfFlags
		csrf.register(fs)
		readMode := fs.String("read-mode", "both", "how to read agy: both, stream or poll")
		timeout := fs.Duration("attach-timeout", 60*time.Second, "how long to wait for agy's language server")
		trust := fs.Bool("trust-workspace", false, "answer Yes when agy asks whether to trust the folder it runs in (without it that dialog stops launch)")
		readyTimeout := fs.Duration("ready-timeout", 20*time.Second, "how long to wait for agy's input to show before typing the first turn anyway")
		agyArgs, err := parseFlags(fs, args)
		if err != nil {
			return err
		}
		mode, err := parseReadMode(*readMode)
		if err != nil {
			return err
		}
		turnMode, err := parseTurns(*turns)
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
		log := newLogger(e)
		version := agyversion.Check(ctx, log, *agy)
		argv := []string{*agy}
		if *conv != "" {
			argv = append(argv, "--conversation", *conv)
		}
		// The pane stays when agy exits, until the harness has attached, so
		// that an agy that fails to start leaves its status and last words.
		t, err := tmuxpane.Start(ctx, tmuxpane.Options{Name: *name, Socket: *socket, KeepDeadPane: true}, append(argv, agyArgs...))
		if errors.Is(err, tmuxpane.ErrNoTmux) {
			return fmt.Errorf("launch: %w: install tmux, or start agy yourself and use attach --pid", err)
		}
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		agyName := "agy"
		if version != "" {
			agyName = "agy " + version
		}
		if *keep {
			fmt.Fprintf(e.stderr, "agyharness launch: %s runs in tmux session %s (tmux attach -t %s); it stays after the harness exits\n", agyName, t.Name(), t.Name())
		} else {
			fmt.Fprintf(e.stderr, "agyharness launch: %s runs in tmux session %s (tmux attach -t %s)\n", agyName, t.Name(), t.Name())
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := t.Kill(sctx); err != nil {
					log.Warn("stopping agy's tmux session", "err", err)
				}
			}()
		}
		where := fmt.Sprintf("tmux session %s: tmux attach -t %s", t.Name(), t.Name())
		gate := agystart.Start(t, agystart.Options{TrustWorkspace: *trust, Version: version, Where: where, ReadyTimeout: *readyTimeout, Logger: log})
		defer gate.Stop()
		spec := specFor(t.PID(), *conv, csrfToken, mode)
		spec.NewConversation = *conv == ""
		spec.Terminal = gate // types into t once agy's input is ready
		spec.AgyVersion = version
		spec.Turns = turnMode
		spec.CloseKeys = closeKeys.keys()
		var sessionID string
		err = attachAndDrive(ctx, e, attachOptions{
			spec:    spec,
			record:  record,
			timeout: *timeout,
			driver:  humanOrJSON(e, *jsonOut, driverConfig{detachOnEOF: true, typesTurns: true}),
			// agy failing to start (a bad flag, no login) would otherwise
			// look like a language server that never came up.
			whileAttaching: func(actx context.Context) error {
				defer func() {
					octx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					if err := t.KeepDeadPane(octx, false); err != nil {
						log.Warn("tmux: remain-on-exit off", "err", err)
					}
				}()
				return watchStart(actx, t, gate)
			},
			beforeDrive: func(ctx context.Context, sess *actors.Session) error {
				sessionID = sess.ID()
				if err := waitReady(ctx, e, gate); err != nil {
					return fmt.Errorf("launch: %w", err)
				}
				return nil
			},
		})
		var se *agystart.Error
		if errors.As(err, &se) && *jsonOut {
			// The consumer reads events: the start's failure is one.
			ev := cliErrorEvent(sessionID, "", 1, fmt.Errorf("launch: %w", se))
			if jerr := json.NewEncoder(e.stdout).Encode(ev); jerr != nil {
				log.Warn("writing an event failed", "err", jerr)
			}
		}
		return err
	}
	return c
}

// watchStart runs while the session looks for agy: it fails the attach
// when agy exits, or when agy's startup stopped (a screen the harness does
// not answer: agy may not serve its language server before it is
// answered).
func watchStart(ctx context.Context, t *tmuxpane.Session, gate *agystart.Gate) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan error, 1)
	go func() { exited <- t.WatchExit(ctx, 250*time.Millisecond) }()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		return nil
	case <-gate.Done():
		if err := gate.Err(); err != nil {
			cancel()
			<-exited
			return fmt.Errorf("launch: %w", err)
		}
	}
	if err := <-exited; err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	return nil
}

// waitReady waits until agy's input is ready (the gate is done), giving up
// on a signal.
func waitReady(ctx context.Context, e *env, gate *agystart.Gate) error {
	select {
	case <-gate.Done():
		return gate.Err()
	case <-ctx.Done():
		return ctx.Err()
	case <-e.signals:
		return errors.New("interrupted while waiting for agy's input")
	}
}

var tmuxName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// parseTurns reads --turns.
func parseTurns(s string) (actors.TurnMode, error) {
	switch m := actors.TurnMode(s); m {
	case actors.TurnsRPC, actors.TurnsTUI:
		return m, nil
	}
	return "", usagef("--turns %q: want rpc or tui", s)
}

// keyList is --close-prompt-key: nil until the flag is given (agy's own
// keys), then the keys it names (none for "").
type keyList struct {
	set  bool
	list []string
}

func (k *keyList) String() string { return strings.Join(k.list, " ") }

func (k *keyList) Set(v string) error {
	k.set, k.list = true, strings.Fields(v)
	return nil
}

// keys is the Spec.CloseKeys the flag asks for.
func (k *keyList) keys() []string {
	if !k.set {
		return nil
	}
	return append([]string{}, k.list...)
}
