package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/httphost"
	"github.com/agyharness/agyharness/rpc/agytest"
)

type simWebOptions struct {
	listen     string
	seed       int64
	scenario   *agytest.Scenario
	chunkDelay time.Duration
	mode       actors.ReadMode
	log        *slog.Logger
}

// simWeb serves the web console on the embedded fake: one session on a
// fresh fake agy, attached by the host, driven from the page. It prints
// the console's URL with a one-time sign-in code in the fragment (never
// the token: a fragment reaches no server's log).
func simWeb(ctx context.Context, e *env, o simWebOptions) error {
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return usagef("sim: --listen %q: %v", o.listen, err)
	}
	if !isLoopbackListen(host) {
		return usagef("sim: --listen %s is not loopback: the fake's console stays on this machine", o.listen)
	}
	srv, err := agytest.NewServer(agytest.Options{
		Seed: o.seed, Scenario: o.scenario, Models: agytest.DefaultModels(), ChunkDelay: o.chunkDelay,
		Logger: o.log.With("component", "fakeagy"),
	})
	if err != nil {
		return fmt.Errorf("sim: start the fake language server: %w", err)
	}
	defer srv.Close()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("sim: token: %w", err)
	}
	token := hex.EncodeToString(b)
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	h := actors.NewHost(actors.Config{Logger: o.log})
	s := httphost.New(httphost.Config{Host: h, Token: token, Log: o.log, MaxConns: 64})
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = s.Attach(actx, actors.Spec{Port: srv.Port(), NewConversation: true, Terminal: srv.Terminal(), ReadMode: o.mode, SessionID: "sim"})
	cancel()
	if err != nil {
		_ = ln.Close()
		_ = h.Shutdown(context.Background())
		return fmt.Errorf("sim: attach the fake: %w", err)
	}
	code, err := s.SignInCode()
	if err != nil {
		_ = ln.Close()
		_ = h.Shutdown(context.Background())
		return fmt.Errorf("sim: sign-in code: %w", err)
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(e.stdout, "agyharness sim: the console on a fake agy (scenario %q) at %s\n", scenarioName(o.scenario), url)
	fmt.Fprintf(e.stdout, "agyharness sim: sign in once with %s#code=%s (good for 10 minutes)\n", url, code)
	fmt.Fprintf(e.stdout, "agyharness sim: or with the token: %s\n", token)
	fmt.Fprintf(e.stdout, "agyharness sim: try the turn \"Show me what you can do\"; Ctrl-C stops\n")
	return s.Serve(ctx, ln, e.signals, h.Shutdown)
}
