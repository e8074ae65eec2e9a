package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/agyharness/agyharness/cmd/agyharness/acp"
	"github.com/agyharness/agyharness/cmd/agyharness/bench"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/termtext"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/tokenfile"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure: agy gone past the retry limit, a fatal error
	exitUsage   = 2 // bad flags or arguments
)

// env is what a command may touch of the process, so tests can run commands
// in-process with pipes instead of the real terminal.
type env struct {
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	getenv    func(string) string
	signals   <-chan os.Signal // SIGINT and SIGTERM; nil: none arrive
	stdinTTY  bool
	stdoutTTY bool
}

// command is one subcommand.
type command struct {
	name     string
	synopsis string // the usage line after "agyharness"
	summary  string // one line for the command list
	example  string // shown by --help
	run      func(ctx context.Context, e *env, args []string) error
}

// usageError is a bad invocation: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errHelp is returned when --help was asked for and printed: exit 0.
var errHelp = errors.New("help shown")

func commands() []*command {
	return []*command{
		simCommand(),
		attachCommand(),
		launchCommand(),
		serveCommand(),
		clusterCommand(),
		replayCommand(),
		acpCommand(),
		benchCommand(),
		versionCommand(),
	}
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// run dispatches args to a subcommand and returns the process exit code.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		printUsage(e.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			c := findCommand(rest[0])
			if c == nil {
				fmt.Fprintf(e.stderr, "agyharness: unknown command %q\n", rest[0])
				return exitUsage
			}
			return exitCode(e, inCommand(c.name, c.run(ctx, e, []string{"--help"})))
		}
		printUsage(e.stdout)
		return exitOK
	}
	c := findCommand(name)
	if c == nil {
		fmt.Fprintf(e.stderr, "agyharness: unknown command %q\n\n", name)
		printUsage(e.stderr)
		return exitUsage
	}
	return exitCode(e, inCommand(c.name, c.run(ctx, e, rest)))
}

// inCommand names the command in its error, once: "serve: …".
func inCommand(name string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// cliMessage is how an error is shown on stderr: "agyharness serve: …"
// for a command's error, "agyharness: …" otherwise.
func cliMessage(err error) string {
	msg := termtext.Clean(err.Error())
	if name, _, ok := strings.Cut(msg, ": "); ok && findCommand(name) != nil {
		return "agyharness " + msg
	}
	return "agyharness: " + msg
}

// exitStatus is an exit code a command chose (and already explained).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func exitCode(e *env, err error) int {
	var ue *usageError
	var es exitStatus
	switch {
	case errors.As(err, &es):
		return int(es)
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "%s\n(see agyharness help)\n", cliMessage(err))
		return exitUsage
	default:
		// The error can quote agy (an answer it refused with, launch's
		// "its last output"): shown visibly, as agy's events are.
		fmt.Fprintf(e.stderr, "%s\n", cliMessage(err))
		return exitFailure
	}
}

// untilSignal runs main with a context that the first signal cancels, and
// turns its exit code into the command's result.
func untilSignal(ctx context.Context, e *env, main func(context.Context) int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-e.signals:
			cancel()
		case <-stop:
		}
	}()
	if code := main(ctx); code != 0 {
		return exitStatus(code)
	}
	return nil
}

// benchCommand runs the fault campaign (package bench), which owns its
// flags and help.
func benchCommand() *command {
	c := &command{
		name:     "bench",
		synopsis: "bench [--sessions N] [--duration D] [--seed S] [--faults LIST] [--poll-sessions K] [--external-fakes] [--json] [flags]",
		summary:  "fault campaign: N fake agys, one session each, events checked against ground truth",
		example:  "agyharness bench --sessions 50 --duration 20s --faults stream-drop,port-churn,5xx --json",
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		return untilSignal(ctx, e, func(ctx context.Context) int { return bench.Main(ctx, args, e.stdout, e.stderr) })
	}
	return c
}

// acpCommand runs the Agent Client Protocol adapter (package acp), which
// owns its flags and help.
func acpCommand() *command {
	c := &command{
		name:     "acp",
		synopsis: "acp [--agy PATH] [--attach-port P | --attach-pid N] [flags]",
		summary:  "speak the Agent Client Protocol on stdin/stdout (editors such as Zed)",
		example:  "agyharness acp --help",
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		// The adapter stops when its context ends: the first signal ends it.
		return untilSignal(ctx, e, func(ctx context.Context) int { return acp.Main(ctx, args, e.stdin, e.stdout, e.stderr) })
	}
	return c
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "agyharness drives Google Antigravity's CLI (agy) through its language server.")
	fmt.Fprintln(w, "\nUsage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  agyharness %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  agyharness %-8s %s\n", "help CMD", "flags and an example for CMD")
	fmt.Fprintln(w, "\nEvents go to stdout, logs to stderr (AGYHARNESS_LOG=debug|info|warn|error, default warn).")
	fmt.Fprintln(w, "Exit codes: 0 success, 1 runtime failure, 2 usage error.")
}

// newFlagSet returns a flag set whose --help prints the command's usage,
// flags and example to stdout.
func newFlagSet(e *env, c *command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := e.stdout
		fmt.Fprintf(w, "Usage: agyharness %s\n\n%s\n\nFlags:\n", c.synopsis, c.summary)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		fmt.Fprintf(w, "\nExample:\n%s\n", indent(c.example, "  "))
	}
	return fs
}

// parseFlags parses args, letting flags and positional arguments mix
// ("replay FILE --json"); everything after "--" is positional. It returns
// the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp // fs.Parse printed the usage
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at "--" (consumed) or at the first non-flag argument.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// newLogger logs to stderr only, at AGYHARNESS_LOG's level (default warn,
// so a human rendering on the same terminal stays readable).
func newLogger(e *env) *slog.Logger {
	level := slog.LevelWarn
	switch strings.ToLower(e.getenv("AGYHARNESS_LOG")) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "error":
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// isTerminal reports whether f is a terminal: a character device other
// than /dev/null (which is one too, and is what stdin often is in scripts).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}

// csrfFlags are --csrf-token and --csrf-token-file, on every command that
// sends agy's CSRF token.
type csrfFlags struct{ token, file string }

func (c *csrfFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.token, "csrf-token", "", "CSRF token, when agy requires one; it shows in the process list: prefer --csrf-token-file or $ANTIGRAVITY_CSRF_TOKEN")
	fs.StringVar(&c.file, "csrf-token-file", "", "file holding the CSRF token (one trailing newline is dropped)")
}

// resolve returns the token: --csrf-token, else the file's, else
// $ANTIGRAVITY_CSRF_TOKEN. Both flags, or a file that cannot be read or is
// empty, are usage errors.
func (c *csrfFlags) resolve(e *env, cmd string) (string, error) {
	switch {
	case c.token != "" && c.file != "":
		return "", usagef("%s: give --csrf-token or --csrf-token-file, not both", cmd)
	case c.token != "":
		return c.token, nil
	case c.file != "":
		t, err := tokenfile.Read(c.file, func(line string) { fmt.Fprintf(e.stderr, "agyharness %s: warning: %s\n", cmd, line) })
		if err != nil {
			return "", usagef("%s: --csrf-token-file: %v", cmd, err)
		}
		return t, nil
	}
	return e.getenv("ANTIGRAVITY_CSRF_TOKEN"), nil
}
