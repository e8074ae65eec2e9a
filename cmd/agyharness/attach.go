package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/internal/agyproc"
)

func attachCommand() *command {
	c := &command{
		name:     "attach",
		synopsis: "attach [--pid N | --port P] [--conversation ID] [--wait D] [--csrf-token-file F] [--json] [--record F [--force]] [--read-mode both|stream|poll]",
		summary:  "drive a running agy: events out, turns and answers in",
		example: `agyharness attach --pid $(pgrep -n agy)          # human mode: type a line to send a turn
agyharness attach --port 41237 --json < commands.jsonl > events.jsonl
echo '{"type":"turn","text":"list the files"}' | agyharness attach --port 41237 --json`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		fs := newFlagSet(e, c)
		var spec actors.Spec
		var readMode string
		var record recordFlags
		var jsonOut bool
		var timeout time.Duration
		var csrf csrfFlags
		fs.IntVar(&spec.PID, "pid", 0, "agy's PID, or the PID of the terminal pane that runs it")
		fs.IntVar(&spec.Port, "port", 0, "agy's HTTPS language-server port (skips the PID scan; default: $"+agyproc.EnvAddress+" when set)")
		fs.StringVar(&spec.ConversationID, "conversation", "", "conversation to bind (default: the most recently active)")
		csrf.register(fs)
		fs.DurationVar(&spec.WaitConversation, "wait", 0, "how long to wait for agy's first conversation when it has none yet (0: as long as agy runs)")
		fs.StringVar(&spec.LogFile, "agy-log", "", "agy's log file: the port it last logged is tried first (with --pid)")
		fs.BoolVar(&jsonOut, "json", false, "events as JSON lines on stdout; JSON commands on stdin")
		record.register(fs)
		fs.StringVar(&readMode, "read-mode", "both", "how to read agy: both, stream or poll")
		fs.DurationVar(&timeout, "attach-timeout", 30*time.Second, "how long to look for agy before giving up")
		pos, err := parseFlags(fs, args)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usagef("attach: unexpected argument %q", pos[0])
		}
		if spec.PID == 0 && spec.Port == 0 {
			// Run from inside agy (a tool agy started): its language
			// server's address may be in the environment.
			if v := e.getenv(agyproc.EnvAddress); v != "" {
				host, port, err := agyproc.ParseAddress(v)
				if err != nil {
					return usagef("attach: $%s: %v", agyproc.EnvAddress, err)
				}
				spec.Host, spec.Port = host, port
			}
		}
		if (spec.PID > 0) == (spec.Port > 0) {
			return usagef("attach: give exactly one of --pid and --port (or set $%s)", agyproc.EnvAddress)
		}
		if spec.PID < 0 || spec.Port < 0 || spec.Port > 65535 {
			return usagef("attach: --pid and --port must be positive (port at most 65535)")
		}
		if spec.WaitConversation < 0 {
			return usagef("attach: --wait %s is negative", spec.WaitConversation)
		}
		if spec.LogFile != "" && spec.Port > 0 {
			return usagef("attach: --agy-log goes with --pid (an explicit --port is never re-read)")
		}
		spec.ReadMode, err = parseReadMode(readMode)
		if err != nil {
			return err
		}
		if spec.CSRFToken, err = csrf.resolve(e, "attach"); err != nil {
			return err
		}
		return attachAndDrive(ctx, e, attachOptions{
			spec: spec, record: record, timeout: timeout,
			driver: humanOrJSON(e, jsonOut, driverConfig{detachOnEOF: true}),
		})
	}
	return c
}

// specFor is the spec of a session on an agy found by PID.
func specFor(pid int, conv, csrf string, mode actors.ReadMode) actors.Spec {
	return actors.Spec{PID: pid, ConversationID: conv, CSRFToken: csrf, ReadMode: mode}
}

// osGetpid is the harness's PID (names its default tmux session).
func osGetpid() int { return os.Getpid() }

func parseReadMode(s string) (actors.ReadMode, error) {
	m, err := actors.ParseReadMode(s)
	if err != nil {
		return "", usagef("--read-mode: %v", err)
	}
	return m, nil
}

// humanOrJSON completes a driver config for --json or human mode.
func humanOrJSON(e *env, jsonOut bool, cfg driverConfig) driverConfig {
	cfg.json = jsonOut
	if !jsonOut {
		cfg.interactive = true
		cfg.color = e.stdoutTTY && e.getenv("NO_COLOR") == ""
	}
	return cfg
}

// attachOptions are what attach, sim and launch share.
type attachOptions struct {
	spec    actors.Spec
	record  recordFlags
	timeout time.Duration
	driver  driverConfig
	host    actors.Config
	// whileAttaching, when set, runs while the session looks for agy,
	// until its context ends; an error from it ends the attach with that
	// error (launch: agy exited).
	whileAttaching func(ctx context.Context) error
	// beforeDrive, when set, runs once the session is attached, before the
	// driver starts; an error from it ends the command (launch: agy's
	// input never became ready).
	beforeDrive func(ctx context.Context, sess *actors.Session) error
}

// attachAndDrive attaches a session and drives it until it ends.
func attachAndDrive(ctx context.Context, e *env, o attachOptions) (err error) {
	log := newLogger(e)
	if o.host.Logger == nil {
		o.host.Logger = log
	}
	if o.record.path != "" {
		rec, rerr := createRecorder(o.record.path, o.record.force, func(werr error) {
			log.Error("the capture is incomplete: writing it failed", "file", o.record.path, "err", werr)
		})
		if rerr != nil {
			return rerr
		}
		defer func() {
			if cerr := rec.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		o.spec.Recorder = rec.Record
	}
	host := actors.NewHost(o.host)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if serr := host.Shutdown(sctx); serr != nil {
			log.Warn("host shutdown", "err", serr)
		}
	}()

	sess, err := attachWatched(ctx, o.whileAttaching, func(actx context.Context) (*actors.Session, error) {
		return attachWithSignals(actx, e, host, o.spec, o.timeout)
	})
	if err != nil {
		return err
	}
	log.Info("attached", "session", sess.ID(), "conversation", sess.ConversationID(), "port", sess.Port())
	if o.beforeDrive != nil {
		if err := o.beforeDrive(ctx, sess); err != nil {
			return err
		}
	}
	d := newDriver(o.driver, sess, e.stdout, e.stdin, e.signals, log)
	if err := d.run(ctx); err != nil {
		return fmt.Errorf("session ended: %w", err)
	}
	return nil
}

// attachWatched runs attach, with watch (if not nil) beside it: an error
// from watch cancels the attach and is returned in its place.
func attachWatched(ctx context.Context, watch func(context.Context) error, attach func(context.Context) (*actors.Session, error)) (*actors.Session, error) {
	if watch == nil {
		return attach(ctx)
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if err := watch(wctx); err != nil {
			cancel(err)
		}
	}()
	sess, err := attach(actx)
	stopWatch()
	<-watched
	if cause := context.Cause(actx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return nil, cause
	}
	return sess, err
}

// attachWithSignals attaches, giving up on timeout or on a signal.
func attachWithSignals(ctx context.Context, e *env, host *actors.Host, spec actors.Spec, timeout time.Duration) (*actors.Session, error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-e.signals:
			cancel()
		case <-done:
		}
	}()
	sess, err := host.Attach(actx, spec)
	close(done)
	<-stopped
	if err != nil {
		var hint string
		if errors.Is(err, context.DeadlineExceeded) {
			hint = fmt.Sprintf(" (no agy language server found within %s)", timeout)
		}
		return nil, fmt.Errorf("attach: %w%s", err, hint)
	}
	return sess, nil
}

var _ sessionAPI = (*actors.Session)(nil)
