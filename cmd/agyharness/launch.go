package main

import "context"

func launchCommand() *command {
	c := &command{name: "launch", synopsis: "launch", summary: "start agy in tmux and attach", example: "agyharness launch"}
	c.run = func(ctx context.Context, e *env, args []string) error { return usagef("launch: not yet") }
	return c
}
