package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Signals are delivered to the commands on a channel, so they can tell a
	// first Ctrl-C (interrupt the turn) from a second one (detach).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	env := &env{
		stdin:     os.Stdin,
		stdout:    os.Stdout,
		stderr:    os.Stderr,
		getenv:    os.Getenv,
		signals:   sigs,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
	}
	os.Exit(run(context.Background(), env, os.Args[1:]))
}
