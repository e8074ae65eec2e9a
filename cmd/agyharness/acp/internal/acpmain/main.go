// Command acpmain runs acp.Main as its own binary, for the end-to-end test
// while `agyharness acp` is not registered in the CLI: `acpmain ARGS` is
// `agyharness acp ARGS`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agyharness/agyharness/cmd/agyharness/acp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := acp.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
