package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agyharness/agyharness/internal/agyproc"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// discovery is the actor that finds agy's language server for a session.
// Its one job: from a PID (or an explicit port) to a verified port — a
// server that answers Heartbeat and hosts the session's conversation (or,
// without one, the most recently active root conversation, or none yet: a
// fresh agy, whose first conversation the session waits for).
//
// It probes in a goroutine it owns and sends *messages.PortFound to its
// parent when a port checks out. Each round that finds nothing sends
// *messages.DiscoveryStalled and schedules the next round after a capped
// exponential backoff; past Config.GiveUpAfter the stalled report carries
// GiveUp and the actor stops trying. A probe that times out found something
// listening (agy, slow on a loaded machine): the next round waits twice as
// long for it, and it has longer to answer before it is called gone. It does not fail: a missing agy is a
// normal state to wait out, not a crash.
type discovery struct {
	child // conv: the conversation to find ("": the most recent, or none)
	spec  Spec
	pin   []byte // the certificate of spec.Port bound before (nil: none yet)
	start time.Time
	tries int
	// probeTimeout grows while agy answers, but too slowly (a loaded
	// machine): 0 is rpc's default.
	probeTimeout time.Duration
	// probed is the client that probed the port found, closed again when
	// discovery stops: a client closes only the connections idle when it is
	// closed, and the probe's last call may not have let go of its
	// connection yet when the probe closed it. The session talks to agy over
	// a client of its own.
	probed *rpc.Client
}

// listenersOf lists a process tree's loopback listeners, and
// loopbackListeners the machine's (variables for tests: a restricted /proc
// cannot be made as root, and a test must not probe other processes).
var (
	listenersOf       = agyproc.CandidatePorts
	loopbackListeners = agyproc.LoopbackListeners
)

// maxProbeTimeout caps how long one probe may wait for a slow agy.
const maxProbeTimeout = 30 * time.Second

// probeRound is sent by discovery to itself after each round: the port
// found, and the client that probed it (closed already, and closed again
// when discovery stops).
type probeRound struct {
	found *messages.PortFound
	probe *rpc.Client
	err   error
}

// probeAgain is sent by discovery to itself when the backoff has elapsed.
type probeAgain struct{}

func newDiscovery(c child, spec Spec, pin []byte) actor.Actor {
	return &discovery{child: c, spec: spec, pin: pin}
}

// Receive runs rounds of probing until a port is found.
func (d *discovery) Receive(ctx actor.Context) {
	d.lifecycle(ctx)
	switch m := ctx.Message().(type) {
	case *actor.Started:
		d.start = d.cfg.Clock.Now()
		d.round(ctx)
	case *actor.Stopping, *actor.Restarting:
		if d.probed != nil {
			d.probed.Close()
		}
	case *probeAgain:
		d.round(ctx)
	case *probeRound:
		if m.found != nil {
			d.probed = m.probe
			m.found.Gen = d.gen
			ctx.Send(ctx.Parent(), m.found)
			return
		}
		d.tries++
		since := d.cfg.Clock.Now().Sub(d.start)
		// A probe that timed out reached something that listens: agy,
		// slow. Wait longer for it next round, and give it more time
		// before calling it gone.
		slow := errors.Is(m.err, context.DeadlineExceeded)
		if slow {
			d.probeTimeout = min(max(2*d.probeTimeout, 2*rpc.DefaultProbeTimeout), maxProbeTimeout)
		}
		giveUp := since >= d.cfg.GiveUpAfter && !(slow && since < 4*(d.cfg.GiveUpAfter+maxProbeTimeout))
		ctx.Send(ctx.Parent(), &messages.DiscoveryStalled{
			Gen: d.gen, Attempts: d.tries, Err: m.err, Since: since.Round(time.Millisecond).String(), GiveUp: giveUp,
		})
		if !giveUp {
			d.t.after(backoff(d.tries, d.cfg.DiscoveryBackoffMin, d.cfg.DiscoveryBackoffMax), ctx.Self(), &probeAgain{})
		}
	}
}

func (d *discovery) round(ctx actor.Context) {
	self, spec, conv, pin, timeout := ctx.Self(), d.spec, d.conv, d.pin, d.probeTimeout
	d.t.run(func(c context.Context) {
		found, probe, err := discoverOnce(c, spec, conv, pin, timeout)
		if probe != nil {
			probe.Close()
		}
		d.t.send(self, &probeRound{found: found, probe: probe, err: err})
	})
}

// probeParallel bounds the candidate ports probed at once: agy has two, but
// a PID whose tree holds many listeners should not be probed one by one.
const probeParallel = 8

// discoverOnce probes every candidate port once, several at a time, and
// returns the first that hosts conv (or, conv empty, the port's most
// recently active root conversation, or none yet). Its probe goroutines
// end before it returns.
//
// What is trusted, before any request carries the CSRF token or a turn:
//   - spec.Port: the port the user named. Once bound, only the certificate
//     the session first bound there (pin) is: another process that takes
//     the port after agy left fails the TLS handshake.
//   - spec.PID: a port whose listening socket belongs to agy's process tree
//     (the kernel's socket table), the port agy logged (spec.LogFile) and
//     the one in agy's environment (ANTIGRAVITY_LS_ADDRESS) included.
//   - spec.LogFile alone: the port agy last logged (the log is the user's).
//   - a PID whose listeners cannot be read (a restricted /proc): the
//     loopback listeners that answer as a language server hosting the
//     session's conversation (one must be named), probed without the token.
func discoverOnce(ctx context.Context, spec Spec, conv string, pin []byte, probeTimeout time.Duration) (*messages.PortFound, *rpc.Client, error) {
	if spec.Host != "" && !rpc.IsLoopbackHost(spec.Host) {
		return nil, nil, fmt.Errorf("%w: host %q is not loopback", errBadConfig, spec.Host)
	}
	token := spec.CSRFToken
	if token == "" && spec.PID > 0 {
		token = agyproc.CSRFTokenFromCmdline(spec.PID) // agy's own --csrf_token
	}
	// Probe clients live for a few calls: no health check, whose timer
	// would keep each of them, closed, alive for its 30 s.
	cfg := rpc.Config{Host: spec.Host, CSRFToken: token, ProbeTimeout: probeTimeout, ReadIdleTimeout: -1}
	newOnly := spec.NewConversation
	if spec.Port > 0 {
		c := cfg
		c.Pin = pin
		return probeAll(ctx, c, []int{spec.Port}, conv, newOnly)
	}
	var owned []int // agy's process tree's loopback listeners
	hidden := false // they cannot be read: a restricted /proc
	if spec.PID > 0 {
		var err error
		owned, err = candidatePorts(spec)
		switch {
		case errors.Is(err, agyproc.ErrListenersHidden):
			hidden = true
		case err != nil:
			return nil, nil, err
		}
	}
	var errs []error
	// The port agy last logged, and the one in its environment, are tried
	// alone first: cheap, and right unless stale.
	var hints []int
	if spec.LogFile != "" {
		p, ok, err := agyproc.PortFromLogFile(spec.LogFile)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("log file: %w", err))
		case ok:
			hints = append(hints, p)
		}
	}
	if spec.PID > 0 {
		if _, p, ok := agyproc.AddressFromProcess(spec.PID); ok && !slices.Contains(hints, p) {
			hints = append(hints, p)
		}
	}
	for _, p := range hints {
		if hidden {
			break // tried with the fallback below
		}
		if spec.PID > 0 && !slices.Contains(owned, p) {
			errs = append(errs, fmt.Errorf("port %d (agy's log or environment) is not a listener of process %d or its descendants: not probed", p, spec.PID))
			continue
		}
		found, probe, err := probeAll(ctx, cfg, []int{p}, conv, newOnly)
		if err == nil {
			return found, probe, nil
		}
		errs = append(errs, err)
	}
	if spec.PID <= 0 {
		return nil, nil, errors.Join(append(errs, errors.New("no port in agy's log file works"))...)
	}
	if hidden {
		found, probe, err := probeUnowned(ctx, cfg, hints, spec.PID, conv)
		if err != nil {
			return nil, nil, errors.Join(append(errs, err)...)
		}
		return found, probe, nil
	}
	ports := slices.DeleteFunc(owned, func(p int) bool { return slices.Contains(hints, p) })
	if len(ports) == 0 {
		return nil, nil, errors.Join(append(errs, fmt.Errorf("no loopback listener found for pid %d", spec.PID))...)
	}
	found, probe, err := probeAll(ctx, cfg, ports, conv, newOnly)
	if err != nil {
		return nil, nil, errors.Join(append(errs, err)...)
	}
	return found, probe, nil
}

// maxUnownedProbes bounds the loopback listeners probed when agy's own
// cannot be read.
const maxUnownedProbes = 32

// probeUnowned is discovery's last resort for a process whose listeners
// cannot be read (a restricted /proc in a container): the machine's loopback
// listeners (the address agy's environment names first), agy's only if it
// answers as a language server hosting conv, which must be named (any
// language server of the machine would do otherwise). The CSRF token is
// never sent to a port not known to be agy's: with a token the fallback is
// refused.
func probeUnowned(ctx context.Context, cfg rpc.Config, hints []int, pid int, conv string) (*messages.PortFound, *rpc.Client, error) {
	if conv == "" {
		return nil, nil, fmt.Errorf("the listeners of process %d cannot be read (a restricted /proc?): name agy's conversation, or its port", pid)
	}
	if cfg.CSRFToken != "" {
		return nil, nil, fmt.Errorf("the listeners of process %d cannot be read (a restricted /proc?), and its CSRF token goes only to a port known to be agy's: attach with --port", pid)
	}
	others := slices.DeleteFunc(loopbackListeners(maxUnownedProbes), func(p int) bool { return slices.Contains(hints, p) })
	ports := append(slices.Clone(hints), others...)
	found, probe, err := probeAll(ctx, cfg, ports, conv, false)
	if err != nil {
		return nil, nil, fmt.Errorf("the listeners of process %d cannot be read, and no loopback listener hosts conversation %s: %w", pid, conv, err)
	}
	return found, probe, nil
}

// probeAll probes ports, probeParallel at a time, and returns the first that
// checks out, with the client that probed it (the caller closes it). The
// session builds a client of its own for the port found, pinned to the
// certificate the probe saw.
func probeAll(ctx context.Context, cfg rpc.Config, ports []int, conv string, newOnly bool) (*messages.PortFound, *rpc.Client, error) {
	type probed struct {
		port   int
		bound  string
		client *rpc.Client
		err    error
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan probed, len(ports))
	sem := make(chan struct{}, probeParallel)
	var wg sync.WaitGroup
	for _, port := range ports {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-pctx.Done():
				results <- probed{port: port, err: pctx.Err()}
				return
			}
			c := cfg
			c.Port = port
			client, err := rpc.NewClient(c)
			if err != nil {
				results <- probed{port: port, err: err}
				return
			}
			bound, err := probePort(pctx, client, conv, newOnly)
			if err != nil {
				client.Close()
				results <- probed{port: port, err: err}
				return
			}
			results <- probed{port: port, bound: bound, client: client}
		})
	}
	var found *probed
	var errs []error
	for range ports {
		r := <-results
		if r.err == nil && found == nil {
			found = &r
			cancel() // the others need not finish their probes
			continue
		}
		if r.client != nil {
			r.client.Close() // a second port that checks out too
		}
		if r.err != nil && found == nil {
			errs = append(errs, fmt.Errorf("port %d: %w", r.port, r.err))
		}
	}
	wg.Wait()
	if found == nil {
		return nil, nil, errors.Join(errs...)
	}
	pf := &messages.PortFound{Port: found.port, Pin: found.client.Pinned(), CSRFToken: cfg.CSRFToken, ConversationID: found.bound}
	return pf, found.client, nil
}

func candidatePorts(spec Spec) ([]int, error) {
	if spec.Port > 0 {
		return []int{spec.Port}, nil
	}
	ports, err := listenersOf(spec.PID)
	if err != nil {
		return nil, fmt.Errorf("scan pid %d: %w", spec.PID, err)
	}
	return ports, nil
}

// probePort checks one port: Heartbeat, then the conversation. Without one
// asked for, it returns the most recently active root conversation, or ""
// when agy has none yet (a fresh agy) or only new ones are wanted (newOnly):
// the session then waits for agy's first.
func probePort(ctx context.Context, c *rpc.Client, conv string, newOnly bool) (string, error) {
	if err := c.Heartbeat(ctx); err != nil {
		return "", err
	}
	if conv != "" {
		ok, err := c.ConversationMatches(ctx, conv)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("does not host conversation %s", conv)
		}
		return conv, nil
	}
	if newOnly {
		return "", nil
	}
	all, err := c.GetAllCascadeTrajectories(ctx)
	if err != nil {
		return "", err
	}
	id, _ := mostRecentRoot(all.TrajectorySummaries)
	return id, nil
}

// isRoot tells a root conversation from a subagent child.
func isRoot(id string, s rpc.TrajectorySummary) bool {
	md := s.TrajectoryMetadata
	return md.ParentConversationID == "" && (md.RootConversationID == "" || md.RootConversationID == id)
}

// activity is when a conversation was last active (zero when never).
func activity(s rpc.TrajectorySummary) time.Time {
	var t time.Time
	for _, v := range []string{s.LastUserInputTime, s.LastModifiedTime} {
		if p, err := time.Parse(time.RFC3339Nano, v); err == nil && p.After(t) {
			t = p
		}
	}
	return t
}

// mostRecentRoot picks the most recently active root conversation; ties
// (a fresh agy whose conversation has no times yet) go to the smallest id,
// so the choice is stable.
func mostRecentRoot(all map[string]rpc.TrajectorySummary) (string, bool) {
	ids := make([]string, 0, len(all))
	for id, s := range all {
		if isRoot(id, s) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", false
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := activity(all[b]).Compare(activity(all[a])); c != 0 {
			return c // the most recent first
		}
		return strings.Compare(a, b)
	})
	return ids[0], true
}
