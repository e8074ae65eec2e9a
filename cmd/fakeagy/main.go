// Command fakeagy runs the fake language server (rpc/agytest) as its own
// process, for demos, manual tests and tests that discover agy by PID.
//
// With no flags it starts as a fresh agy does, with no conversation until the
// first turn is typed into its terminal (--tui) and then runs the default
// scenario; --conversation starts it with one root conversation instead, and
// --earlier-runs N lists N idle conversations of earlier runs, as agy lists
// those it keeps on disk (their ids are logged; --conversation ID starts on
// one of them, as agy's --conversation ID resumes a conversation);
// --earlier-subagents makes one in four of them a subagent child.
// --history-steps N gives the conversation N finished steps, made from
// their index when sent (a million cost the fake 8 MB). It prints
// agy's log lines to stderr:
//
//	Language server listening on random port at <N> for HTTPS
//	Language server listening on random port at <M> for HTTP
//
// SIGHUP restarts the server on a new port (agy's port churn) and prints the
// lines again, except with --tui, where it is the terminal hanging up and
// exits as SIGTERM does; SIGTERM and SIGINT stop it cleanly (exit status 0). --log FILE
// writes those lines to FILE instead.
//
// With --tui it also plays agy's terminal, as far as the harness needs,
// drawn as plain text (clear and redraw on every change, read from the
// server every --tui-refresh) on stdout, with stdin put in cbreak mode by
// stty (so --tui needs a terminal, e.g. a tmux pane):
//
//	fakeagy (agy stand-in) conversation <id>
//
//	> what is here?                      a person's or the harness's turn
//	Let me look at the workspace first.  the assistant's text
//	$ ls -la                             a command, then its output
//	? Which part should I focus on? -> The tests
//	* Reading /workspace/main.go         another tool
//
//	-- running --                        the cascade's run status
//	+-- agy asks --------------------------------
//	| command ls -la                     agy's permission dialog; a question
//	| Do you want to proceed?            lists its options 1. 2. ... instead
//	| > 1. Yes
//	|   2. Yes, and always allow in this conversation for commands that start with 'ls'
//	|   3. Yes, and always allow for commands that start with 'ls' (Persist to settings.json)
//	|   4. No
//	| [1-4 then Enter; Esc declines]
//	+--------------------------------------------
//	> _                                  the draft
//
// Keys, as agy takes them: typed text and Enter send a turn as a person in
// agy's terminal (agytest.Server.TypeTurn; the first one mints a fresh
// agy's conversation). It asks for bracketed paste: a paste (ESC[200~ ...
// ESC[201~, what tmux paste-buffer -p sends) goes into the draft, line
// breaks included; C-a goes to the start of the draft's line, C-e to its
// end, C-k kills to its end. While a dialog is drawn it takes the keyboard
// (tui_dialog.go): a digit or Up/Down moves the cursor to a row (a digit or
// Space toggles one, in a multi-select question), Enter takes it
// (agytest.Server.AnswerFromTerminal: a permission's "No" row denies, the
// others allow, rows 2 and 3 also allow later matching prompts without a
// dialog; a dialog of several questions shows them one at a time, Left goes
// back, the last Enter answers them all), y and n allow once and deny a
// permission, Escape declines the prompt (a question with no responses, a
// permission denied). --sandbox gives a command's dialog agy's three rows
// of a terminal sandbox; a file read or write outside the working directory
// gets agy's three-row file-access dialog. Ctrl-C,
// SIGINT, SIGTERM and SIGHUP (the terminal gone, e.g. its tmux session
// killed) exit and restore the terminal.
//
// Starting, as agy 1.1.8 and later do (startup.go): under the draft a
// footer, "? for shortcuts" when idle and "esc to cancel" while a turn
// runs; for --startup-delay (default 1s, 0: none) after start a typed turn
// is refused with the notice "Verifying your account eligibility. ..." and
// lost; on flags, the trust dialog first (--trust-prompt, Enter answers
// Yes), the feedback survey (--survey-after N turns, Escape dismisses it),
// a sign-in screen (--signed-out) or agy's eligibility failure
// (--ineligible). --version prints --version-string (default
// $FAKEAGY_VERSION, else 1.2.7) and exits, as agy --version does.
//
// The quirks the harness relies on, as agy's terminal does them: a prompt
// answered over RPC leaves its dialog drawn, marked "(answered elsewhere:
// ...)", until exactly its keys close it (an option's digit(s) then Enter,
// or Escape); while a dialog is drawn, what is typed or pasted goes into
// it and Enter drops it there, so a turn typed then is lost; a prompt that
// opens meanwhile is drawn once the stale dialog is closed. The words of
// permission options 2 and 3 are a guess (agy's were not recorded).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agyharness/agyharness/rpc/agytest"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakeagy:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin *os.File, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakeagy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "", "scenario JSON file (default: the built-in default scenario)")
	seed := fs.Int64("seed", 0, "seed of all randomness")
	promptTimeout := fs.Duration("prompt-timeout", 0, "how long a WAITING prompt waits before it expires and is retried (0: 5m, negative: never)")
	chunkDelay := fs.Duration("chunk-delay", 0, "pause between streamed chunks (0: 15ms, negative: none)")
	csrf := fs.String("csrf-token", "", "require this x-codeium-csrf-token on every call")
	host := fs.String("host", "127.0.0.1", "loopback address to listen on")
	verbose := fs.Bool("v", false, "log server activity to stderr")
	tuiMode := fs.Bool("tui", false, "draw agy's terminal UI on stdout and take keys on stdin (needs a terminal)")
	refresh := fs.Duration("tui-refresh", 50*time.Millisecond, "how often --tui reads the server for changes")
	sandbox := fs.Bool("sandbox", false, "--tui: agy's terminal sandbox is on (a command's dialog has three rows: Yes, run without sandbox restrictions, No)")
	logFile := fs.String("log", "", "write the log lines to this file instead of stderr")
	conversation := &conversationFlag{}
	fs.Var(conversation, "conversation", "start with one root conversation (default: none until the first turn is typed, as a fresh agy); --conversation ID resumes conversation ID of an earlier run, as agy's --conversation ID does")
	earlier := fs.Int("earlier-runs", 0, "list this many idle conversations of earlier runs, as agy lists those it keeps on disk")
	earlierSubagents := fs.Bool("earlier-subagents", false, "make one in four of the --earlier-runs conversations a subagent child of the one before it")
	maxSteps := fs.Int("max-steps-per-read", 0, "cap on the steps of one GetCascadeTrajectorySteps answer (0: 600, negative: none)")
	unstreamed := fs.Float64("unstreamed-prompts", 0, "probability that a WAITING prompt is never streamed (0: 0.5, negative: never)")
	cancelStops := fs.Bool("cancel-stops-prompts", false, "let the cancel methods stop a turn parked on a prompt (agy's do not)")
	movingMod := fs.Bool("moving-modified-time", false, "report the read's time as every conversation's lastModifiedTime (no agy is known to)")
	legacySubagents := fs.Bool("legacy-subagents", false, "send subagents as agy did before 1.1.9 (children typed SUBAGENT, INVOKE_SUBAGENT RUNNING until they are idle)")
	noWakes := fs.Bool("no-background-wakes", false, "a finished background task does not wake agy (no SYSTEM_MESSAGE, no run nobody typed)")
	rewindCleared := fs.Bool("rewind-marks-cleared", false, "a rewind keeps the rewound steps as CLEARED instead of cutting the trajectory back")
	noReask := fs.Bool("no-reask", false, "ask a compound command (a && b) once for the whole line, as agy did before 1.1.7, not segment by segment on the same step")
	history := fs.Int("history-steps", 0, "start the conversation with this many finished steps (a user turn and a reply each two; needs --conversation), made when sent, never stored")
	historyBytes := fs.Int("history-step-bytes", 0, "pad each reply of --history-steps to about this many bytes")
	multi := addMultiFlags(fs)
	start := addStartupFlags(fs)
	showVersion := fs.Bool("version", false, "print the version (--version-string) and exit, as agy --version does")
	if err := fs.Parse(joinConversationID(args)); err != nil {
		return err
	}
	if *showVersion {
		printVersion(stdout, start)
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *refresh <= 0 {
		return fmt.Errorf("--tui-refresh %v: must be positive", *refresh)
	}
	logw := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		logw = f
	}
	opts := agytest.Options{
		Conversation:       conversation.fresh,
		EarlierRuns:        *earlier,
		EarlierSubagents:   *earlierSubagents,
		MaxStepsPerRead:    *maxSteps,
		UnstreamedPrompts:  *unstreamed,
		CancelStopsPrompts: *cancelStops,
		MovingModifiedTime: *movingMod,
		LegacySubagents:    *legacySubagents,
		NoBackgroundWakes:  *noWakes,
		RewindMarksCleared: *rewindCleared,
		NoReask:            *noReask,
		HistorySteps:       *history,
		HistoryStepBytes:   *historyBytes,
		Seed:               *seed,
		CSRFToken:          *csrf,
		PromptTimeout:      *promptTimeout,
		ChunkDelay:         *chunkDelay,
		Host:               *host,
	}
	if *scenario != "" {
		sc, err := agytest.LoadScenario(*scenario)
		if err != nil {
			return err
		}
		opts.Scenario = sc
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if multi.servers > 0 {
		if *tuiMode {
			return fmt.Errorf("--servers and --tui do not go together")
		}
		return runServers(multi, opts, stdin, stdout)
	}
	var tty *cbreak
	if *tuiMode {
		var err error
		if tty, err = enterCbreak(stdin); err != nil {
			return fmt.Errorf("--tui: %w", err)
		}
		defer tty.restore()
	}
	srv, err := agytest.NewServer(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if conversation.id != "" {
		if err := srv.Resume(conversation.id); err != nil {
			return fmt.Errorf("--conversation %s: %w", conversation.id, err)
		}
	}
	// Signals are caught before the ports are announced: whoever reads the
	// log line may signal at once.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	printPorts(logw, srv)
	for _, id := range srv.Conversations() {
		if id != srv.ConversationID() {
			fmt.Fprintf(logw, "fakeagy: earlier run conversation %s\n", id)
		}
	}
	if id := srv.ConversationID(); id != "" {
		fmt.Fprintf(logw, "fakeagy: conversation %s\n", id)
	} else {
		fmt.Fprintln(logw, "fakeagy: no conversation yet (the first turn typed mints it)")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tuiDone chan error
	if tty != nil {
		term := newTerminal(srv, stdout, *refresh)
		term.height = tty.rows
		term.dialogs.sandbox = *sandbox
		dir, _ := os.Getwd()
		term.dialogs.workspace = dir
		term.start = newStartup(*start, dir)
		tuiDone = make(chan error, 1)
		go func() { tuiDone <- term.run(ctx, stdin) }()
	}
wait:
	for {
		select {
		case sig := <-sigs:
			// With --tui, SIGHUP is the terminal hanging up (tmux sends
			// it when the pane's session is killed): agy exits then, as
			// any terminal program does.
			if sig != syscall.SIGHUP || tty != nil {
				break wait
			}
			if _, err := srv.Restart(); err != nil {
				return fmt.Errorf("restart: %w", err)
			}
			printPorts(logw, srv)
		case err := <-tuiDone:
			tuiDone = nil
			if err != nil && !errors.Is(err, errQuit) {
				return err
			}
			break wait
		}
	}
	cancel()
	if tuiDone != nil {
		<-tuiDone
	}
	if tty != nil {
		fmt.Fprintln(stdout)
	}
	done := make(chan struct{})
	go func() {
		_ = srv.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("shutdown timed out")
	}
	return nil
}

// conversationFlag is --conversation: a flag with no value (start with a
// root conversation), or agy's --conversation ID (resume conversation ID).
type conversationFlag struct {
	fresh bool
	id    string
}

func (c *conversationFlag) String() string {
	if c == nil || c.id == "" {
		return ""
	}
	return c.id
}

func (c *conversationFlag) Set(v string) error {
	switch v {
	case "true":
		c.fresh, c.id = true, ""
	case "false", "":
		c.fresh, c.id = false, ""
	default:
		c.fresh, c.id = false, v
	}
	return nil
}

// IsBoolFlag lets --conversation stand alone.
func (c *conversationFlag) IsBoolFlag() bool { return true }

// joinConversationID rewrites agy's "--conversation ID" as
// "--conversation=ID" (the flag package takes a flag that may stand alone
// only in that form). fakeagy takes no arguments, so a word after
// --conversation that is not a flag is its ID.
func joinConversationID(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--conversation" || a == "-conversation") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func printPorts(w io.Writer, srv *agytest.Server) {
	fmt.Fprintf(w, "Language server listening on random port at %d for HTTPS\n", srv.Port())
	fmt.Fprintf(w, "Language server listening on random port at %d for HTTP\n", srv.HTTPPort())
}
