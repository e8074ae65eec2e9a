package acp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/agyversion"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/termtext"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/tmuxpane"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/tokenfile"
)

// Exit codes of Main.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

const usage = `usage: agyharness acp [--agy PATH] [--turns rpc|tui] [--attach-port P | --attach-pid N] [flags] [-- AGY_ARGS]

Speaks the Agent Client Protocol on stdin/stdout, so an ACP client (Zed and
others) can drive agy. Each new session launches agy in a tmux session the
harness owns (tmux attach -t NAME to watch it), in the session's cwd: its
first prompt is typed into agy's terminal (a fresh agy has no conversation
before it), later ones go per --turns. With --attach-port or --attach-pid
every session attaches to a running agy instead. Logs go to stderr.

Example (Zed settings.json):

  "agent_servers": {
    "agy": { "type": "custom", "command": "agyharness", "args": ["acp"] }
  }

Example (attach to a running agy, whose language server listens on 43121):

  agyharness acp --attach-port 43121

Flags:
`

// Main runs `agyharness acp` with args (the words after "acp"): it serves
// ACP on stdin/stdout until the client disconnects or ctx ends. It returns
// the exit code: 0 when the client disconnected (or after --help), 1 on a
// runtime failure, 2 on bad flags.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agyharness acp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agy := fs.String("agy", "agy", "agy binary to launch for new sessions")
	port := fs.Int("attach-port", 0, "attach to agy's language server on this HTTPS port instead of launching agy")
	pid := fs.Int("attach-pid", 0, "attach to this agy process (or the terminal pane running it) instead of launching agy")
	prefix := fs.String("tmux-session-prefix", "agyharness-acp", "name prefix of the tmux sessions agy is launched in")
	csrf := fs.String("csrf-token", "", "CSRF token for agy's language server, when it requires one; it shows in the process list: prefer --csrf-token-file or $ANTIGRAVITY_CSRF_TOKEN")
	csrfFile := fs.String("csrf-token-file", "", "file holding the CSRF token (one trailing newline is dropped)")
	attachTimeout := fs.Duration("attach-timeout", 60*time.Second, "how long to look for agy's language server for a session")
	cancelDeadline := fs.Duration("cancel-deadline", 10*time.Second, "how long a cancelled prompt waits for agy to stop")
	contextWindow := fs.Int("context-window", 1<<20, "context window size reported to the client (agy does not report it)")
	turns := fs.String("turns", "rpc", "how prompts after a session's first reach a launched agy: rpc (SendUserCascadeMessage) or tui (typed into agy's terminal)")
	sessionDir := fs.String("session-dir", "", `where the conversations of sessions opened on a fresh agy are kept, for session/load after a restart (default <user config dir>/agyharness/acp-sessions; "-" keeps none)`)
	verbose := fs.Bool("v", false, "log debug detail to stderr")
	trust := fs.Bool("trust-workspace", false, "answer Yes when a launched agy asks whether to trust the session's folder (without it that dialog fails session/new)")
	readyTimeout := fs.Duration("ready-timeout", 20*time.Second, "how long to wait for a launched agy's input to show before typing the first prompt anyway")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *port != 0 && *pid != 0 {
		fmt.Fprintln(stderr, "agyharness acp: --attach-port and --attach-pid are exclusive")
		return exitUsage
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintf(stderr, "agyharness acp: --attach-port %d is not a port\n", *port)
		return exitUsage
	}
	if *pid < 0 {
		fmt.Fprintf(stderr, "agyharness acp: --attach-pid %d is not a process id\n", *pid)
		return exitUsage
	}
	if *agy == "" {
		fmt.Fprintln(stderr, "agyharness acp: --agy is empty")
		return exitUsage
	}
	if err := tmuxpane.CheckName(*prefix); err != nil {
		fmt.Fprintf(stderr, "agyharness acp: --tmux-session-prefix: %v\n", err)
		return exitUsage
	}
	switch {
	case *csrf != "" && *csrfFile != "":
		fmt.Fprintln(stderr, "agyharness acp: give --csrf-token or --csrf-token-file, not both")
		return exitUsage
	case *csrfFile != "":
		t, err := tokenfile.Read(*csrfFile, func(line string) { fmt.Fprintf(stderr, "agyharness acp: warning: %s\n", line) })
		if err != nil {
			fmt.Fprintf(stderr, "agyharness acp: --csrf-token-file: %v\n", err)
			return exitUsage
		}
		*csrf = t
	case *csrf == "":
		*csrf = os.Getenv("ANTIGRAVITY_CSRF_TOKEN")
	}
	switch *sessionDir {
	case "-":
		*sessionDir = ""
	case "":
		dir, err := defaultSessionDir()
		if err != nil {
			fmt.Fprintf(stderr, "agyharness acp: %v; sessions opened on a fresh agy are kept in memory only\n", err)
		}
		*sessionDir = dir
	}
	if w := sessionDirWarning(*sessionDir); w != "" {
		fmt.Fprintf(stderr, "agyharness acp: warning: %s\n", w)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var version string
	if *port == 0 && *pid == 0 {
		version = agyversion.Check(ctx, logger, *agy)
	}
	host := actors.NewHost(actors.Config{Logger: logger})
	agent, err := NewAgent(Options{
		Host:       host,
		AttachPort: *port,
		AttachPID:  *pid,
		CSRFToken:  *csrf,
		Launcher: Tmux{Agy: append([]string{*agy}, fs.Args()...), SessionPrefix: *prefix,
			TrustWorkspace: *trust, Version: version, ReadyTimeout: *readyTimeout, Logger: logger},
		Turns:          actors.TurnMode(*turns),
		SessionDir:     *sessionDir,
		Logger:         logger,
		AttachTimeout:  *attachTimeout,
		CancelDeadline: *cancelDeadline,
		ContextWindow:  *contextWindow,
	})
	if err != nil {
		fmt.Fprintf(stderr, "agyharness acp: %s\n", termtext.Clean(err.Error()))
		_ = host.Shutdown(context.Background())
		return exitUsage
	}
	serveErr := agent.Serve(ctx, stdin, stdout)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := host.Shutdown(sctx); err != nil {
		logger.Warn("host shutdown", "err", err)
	}
	if serveErr != nil && !errors.Is(serveErr, context.Canceled) {
		fmt.Fprintf(stderr, "agyharness acp: %s\n", termtext.Clean(serveErr.Error())) // may quote agy or the client
		return exitFailure
	}
	return exitOK
}
