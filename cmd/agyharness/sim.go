package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

func simCommand() *command {
	c := &command{
		name:     "sim",
		synopsis: "sim [--scenario F] [--json] [--yes] [--seed S] [--record F [--force]] | sim --web [--listen 127.0.0.1:0]",
		summary:  "drive one session on the embedded fake agy language server (no agy needed)",
		example: `agyharness sim                      # watch a scenario, answer its prompts yourself
agyharness sim --yes --json | jq -c '{seq, type}'
agyharness sim --web                # the web console on the fake: open the link it prints
agyharness sim --scenario testdata/scenarios/default.json --record sim.capture.jsonl --yes`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		fs := newFlagSet(e, c)
		scenarioPath := fs.String("scenario", "", "scenario JSON file (default: the built-in scenario)")
		jsonOut := fs.Bool("json", false, "events as JSON lines on stdout")
		yes := fs.Bool("yes", false, "answer prompts automatically: first option, allow (implied when stdin is not a terminal)")
		seed := fs.Int64("seed", 1, "seed of the fake server (ids, usage numbers, timing quirks)")
		var record recordFlags
		record.register(fs)
		chunkDelay := fs.Duration("chunk-delay", 0, "pause between streamed chunks (default: the fake's 15ms; negative: none)")
		readMode := fs.String("read-mode", "both", "how to read the fake: both, stream or poll")
		web := fs.Bool("web", false, "serve the web console on the fake instead: prints its URL with a one-time sign-in link, runs until interrupted")
		listen := fs.String("listen", "127.0.0.1:0", "with --web, the loopback address to serve on")
		pos, err := parseFlags(fs, args)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usagef("sim: unexpected argument %q", pos[0])
		}
		mode, err := parseReadMode(*readMode)
		if err != nil {
			return err
		}
		sc, isDefault := agytest.DefaultScenario(), true
		if *scenarioPath != "" {
			if sc, err = agytest.LoadScenario(*scenarioPath); err != nil {
				return usagef("sim: %v", err)
			}
			isDefault = false
		}
		log := newLogger(e)
		models := agytest.DefaultModels()
		if *web {
			return simWeb(ctx, e, simWebOptions{listen: *listen, seed: *seed, scenario: sc, chunkDelay: *chunkDelay, mode: mode, log: log})
		}
		// A fresh agy, as launch starts one: no conversation until the
		// first turn is typed into its terminal.
		srv, err := agytest.NewServer(agytest.Options{
			Seed: *seed, Scenario: sc, Models: models, ChunkDelay: *chunkDelay,
			Logger: log.With("component", "fakeagy"),
		})
		if err != nil {
			return fmt.Errorf("sim: start the fake language server: %w", err)
		}
		defer srv.Close()
		log.Info("fake agy language server", "port", srv.Port())

		auto := *yes || !e.stdinTTY
		cfg := humanOrJSON(e, *jsonOut, driverConfig{
			auto:           auto,
			turns:          simTurns(sc, isDefault, models),
			exitAfterTurns: true,
			echoTurns:      !*jsonOut,
			noTypedTurns:   true,
			typesTurns:     true,
		})
		if auto {
			cfg.interactive = false
		}
		if !*jsonOut {
			fmt.Fprintf(e.stdout, "agyharness sim: scenario %q on a fake agy (port %d); prompts answered %s\n",
				scenarioName(sc), srv.Port(), map[bool]string{true: "automatically", false: "by you"}[auto])
		}
		return attachAndDrive(ctx, e, attachOptions{
			spec:    actors.Spec{Port: srv.Port(), NewConversation: true, Terminal: srv.Terminal(), ReadMode: mode},
			record:  record,
			timeout: 10 * time.Second,
			driver:  cfg,
		})
	}
	return c
}

func scenarioName(sc *agytest.Scenario) string {
	if sc.Name != "" {
		return sc.Name
	}
	return "unnamed"
}

// simTurns are the turns sim sends. The scenario picks a script by a
// substring of the turn's text, so the built-in scenario gets a showcase
// turn (reasoning, streamed text, a command approval, a question, a file
// view) and then a file-read turn on another model (a model change and a
// permission on a non-command tool). A scenario file gets one turn per
// script: its match text, or a plain opening line.
func simTurns(sc *agytest.Scenario, isDefault bool, models []wire.ModelInfo) []messages.Command {
	model := func(i int) string {
		if len(models) == 0 {
			return ""
		}
		return models[i%len(models)].Model
	}
	if isDefault {
		return []messages.Command{
			{Type: messages.CommandTurn, Text: "Show me what you can do", Model: model(0)},
			{Type: messages.CommandTurn, Text: "Now read the README", Model: model(1)},
		}
	}
	var out []messages.Command
	for i, t := range sc.Turns {
		text := fmt.Sprintf("Show me what you can do (turn %d)", i+1)
		if t.Match != "" {
			text = "Please " + t.Match
		}
		out = append(out, messages.Command{Type: messages.CommandTurn, Text: text, Model: model(i)})
	}
	return out
}
