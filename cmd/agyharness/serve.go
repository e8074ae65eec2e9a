package main

import "context"

func serveCommand() *command {
	c := &command{name: "serve", synopsis: "serve", summary: "multi-session host", example: "agyharness serve"}
	c.run = func(ctx context.Context, e *env, args []string) error { return usagef("serve: not yet") }
	return c
}
