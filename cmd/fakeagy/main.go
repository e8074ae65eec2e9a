// Command fakeagy runs the fake agy language server (rpc/agytest) as its own
// process, for demos, manual tests and tests that discover agy by PID.
//
// With no flags it hosts one root conversation, as a freshly started agy
// does, running the default scenario. It prints agy's log lines to stderr:
//
//	Language server listening on random port at <N> for HTTPS
//	Language server listening on random port at <M> for HTTP
//
// SIGHUP restarts the server on a new port (agy's port churn) and prints the
// lines again; SIGTERM and SIGINT stop it cleanly (exit status 0).
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agyharness/agyharness/rpc/agytest"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakeagy:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakeagy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "", "scenario JSON file (default: the built-in default scenario)")
	seed := fs.Int64("seed", 0, "seed of all randomness")
	promptTimeout := fs.Duration("prompt-timeout", 0, "how long a WAITING prompt waits before it expires and is retried (0: 5m, negative: never)")
	chunkDelay := fs.Duration("chunk-delay", 0, "pause between streamed chunks (0: 15ms, negative: none)")
	csrf := fs.String("csrf-token", "", "require this x-codeium-csrf-token on every call")
	host := fs.String("host", "127.0.0.1", "loopback address to listen on")
	verbose := fs.Bool("v", false, "log server activity to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opts := agytest.Options{
		Seed:          *seed,
		CSRFToken:     *csrf,
		PromptTimeout: *promptTimeout,
		ChunkDelay:    *chunkDelay,
		Host:          *host,
	}
	if *scenario != "" {
		sc, err := agytest.LoadScenario(*scenario)
		if err != nil {
			return err
		}
		opts.Scenario = sc
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := agytest.NewServer(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	// Signals are caught before the ports are announced: whoever reads the
	// log line may signal at once.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	printPorts(stderr, srv)
	fmt.Fprintf(stderr, "fakeagy: conversation %s\n", srv.ConversationID())
	for sig := range sigs {
		if sig != syscall.SIGHUP {
			break
		}
		if _, err := srv.Restart(); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		printPorts(stderr, srv)
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

func printPorts(w io.Writer, srv *agytest.Server) {
	fmt.Fprintf(w, "Language server listening on random port at %d for HTTPS\n", srv.Port())
	fmt.Fprintf(w, "Language server listening on random port at %d for HTTP\n", srv.HTTPPort())
}
