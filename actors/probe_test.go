package actors

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probe stands in for a session: it spawns one child and forwards every
// message it receives into a channel, so a child actor is tested through
// the messages it sends.
type probe struct {
	child *actor.Props
	pid   *actor.PID
	ch    chan any
	ready chan *actor.PID
}

func (p *probe) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		p.pid = ctx.Spawn(p.child)
		p.ready <- p.pid
	case *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		p.ch <- ctx.Message()
	}
}

type probeRig struct {
	t      *testing.T
	system *actor.ActorSystem
	wg     *sync.WaitGroup
	parent *actor.PID
	child  *actor.PID
	ch     chan any
}

// startProbe spawns the actor built by newChild under a probe.
func startProbe(t *testing.T, newChild func(wg *sync.WaitGroup) actor.Actor) *probeRig {
	t.Helper()
	system := actor.NewActorSystem(actor.WithDeadLetterThrottleInterval(10*time.Millisecond),
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	wg := &sync.WaitGroup{}
	p := &probe{
		child: actor.PropsFromProducer(func() actor.Actor { return newChild(wg) }),
		ch:    make(chan any, 1024),
		ready: make(chan *actor.PID, 1),
	}
	parent := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
	r := &probeRig{t: t, system: system, wg: wg, parent: parent, child: <-p.ready, ch: p.ch}
	t.Cleanup(func() {
		_ = system.Root.PoisonFuture(parent).Wait()
		wg.Wait()
		system.Shutdown()
	})
	return r
}

// startAgy starts a fake agy and a client of it, closed when the test ends.
func startAgy(t *testing.T, opts agytest.Options) (*agytest.Server, *rpc.Client) {
	t.Helper()
	srv := agytest.Start(t, opts)
	client, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return srv, client
}

// expect waits for the first message of type T that satisfies pred.
func expect[T any](r *probeRig, pred func(T) bool) T {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-r.ch:
			if v, ok := m.(T); ok && (pred == nil || pred(v)) {
				return v
			}
		case <-deadline:
			var zero T
			r.t.Fatalf("no %T arrived", zero)
			return zero
		}
	}
}

// Discovery names the port, the certificate its probe saw and the token
// the port takes; a client built from them talks to agy, and accepts no
// other certificate on that port.
func TestDiscoveryFindsThePortAndTheConversation(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, CSRFToken: "S3CRET"})
	cfg := testCfg()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newDiscovery(child{conv: "", cfg: cfg, gen: 7, wg: wg}, Spec{Port: srv.Port(), CSRFToken: "S3CRET"}, nil)
	})
	found := expect[*messages.PortFound](r, nil)
	require.Equal(t, messages.Gen(7), found.Gen)
	require.Equal(t, srv.Port(), found.Port)
	require.Equal(t, srv.ConversationID(), found.ConversationID, "without a conversation id, the most recent root is bound")
	require.Equal(t, "S3CRET", found.CSRFToken)
	require.NotEmpty(t, found.Pin)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bound, err := rpc.NewClient(rpc.Config{Port: found.Port, Pin: found.Pin, CSRFToken: found.CSRFToken})
	require.NoError(t, err)
	defer bound.Close()
	ok, err := bound.ConversationMatches(ctx, found.ConversationID)
	require.NoError(t, err)
	require.True(t, ok)
	other, err := rpc.NewClient(rpc.Config{Port: found.Port, Pin: []byte("another certificate"), CSRFToken: found.CSRFToken})
	require.NoError(t, err)
	defer other.Close()
	require.ErrorIs(t, other.Heartbeat(ctx), rpc.ErrCertificateChanged)
}

func TestDiscoveryRefusesAPortThatDoesNotHostTheConversation(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true})
	cfg := testCfg()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newDiscovery(child{conv: "not-a-conversation-here", cfg: cfg, gen: 1, wg: wg}, Spec{Port: srv.Port()}, nil)
	})
	stalled := expect[*messages.DiscoveryStalled](r, nil)
	require.ErrorContains(t, stalled.Err, "does not host conversation not-a-conversation-here")
	require.Equal(t, 1, stalled.Attempts)
}

// Discovery gives up GiveUpAfter into its rounds on the host's clock, and
// not before: here an hour passes at once.
func TestDiscoveryGivesUpOnADeadPort(t *testing.T) {
	cfg := testCfg()
	clock := NewTestClock()
	cfg.Clock, cfg.GiveUpAfter = clock, time.Hour
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newDiscovery(child{conv: "", cfg: cfg, gen: 1, wg: wg}, Spec{Port: 1}, nil)
	})
	first := expect[*messages.DiscoveryStalled](r, nil)
	require.ErrorIs(t, first.Err, rpc.ErrPortGone)
	require.False(t, first.GiveUp)
	again := expect[*messages.DiscoveryStalled](r, nil)
	require.False(t, again.GiveUp, "an hour has not passed")
	clock.Advance(time.Hour)
	last := expect[*messages.DiscoveryStalled](r, func(m *messages.DiscoveryStalled) bool { return m.GiveUp })
	require.Greater(t, last.Attempts, again.Attempts, "it retried with backoff before giving up")
}

func TestTurnSenderResolvesTheModelAndSerialisesTurns(t *testing.T) {
	srv, client := startAgy(t, agytest.Options{Conversation: true, ChunkDelay: time.Millisecond, Scenario: &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("ok", 1)}}}}})
	conv := srv.ConversationID()
	cfg := testCfg()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newTurnSender(child{client: client, conv: conv, cfg: cfg, gen: 3, wg: wg})
	})
	loaded := expect[*messages.ModelsLoaded](r, nil)
	require.NotEmpty(t, loaded.Models)
	want := recommended(loaded.Models)

	// The probe asks; the reply comes back to it.
	r.system.Root.RequestWithCustomSender(r.child, &messages.RunTurn{Text: "first"}, r.parent)
	res := expect[*messages.TurnResult](r, nil)
	require.NoError(t, res.Err)
	require.Equal(t, want, res.Model, "no model given, none seen: the recommended one")

	r.system.Root.RequestWithCustomSender(r.child, &messages.RunTurn{Text: "second", LastModel: "MODEL_LAST"}, r.parent)
	res = expect[*messages.TurnResult](r, nil)
	require.Equal(t, "MODEL_LAST", res.Model, "the model agy used last wins over the catalog")

	r.system.Root.RequestWithCustomSender(r.child, &messages.RunTurn{Text: "third", Model: "MODEL_EXPLICIT", LastModel: "MODEL_LAST"}, r.parent)
	res = expect[*messages.TurnResult](r, nil)
	require.Equal(t, "MODEL_EXPLICIT", res.Model)
	require.Equal(t, 3, srv.Calls(rpc.MethodSendUserCascadeMessage))
	require.Zero(t, srv.Calls(rpc.MethodSendAgentMessage), "turns never go through SendAgentMessage")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.WaitIdle(ctx, conv))
	r.system.Root.RequestWithCustomSender(r.child, &messages.StopRun{}, r.parent)
	res = expect[*messages.TurnResult](r, nil)
	require.NoError(t, res.Err, "nothing to cancel counts as idle")
}

// An interrupt finds a prompt however far past its starting index agy has
// gone, though agy answers a few steps a read: it reads window by window
// to the trajectory's end.
func TestTurnSenderInterruptFindsAPromptPastOneWindow(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{
		{Actions: []agytest.Action{agytest.Say("one", 1), agytest.Say("two", 1), agytest.Say("three", 1)}},
		{Actions: []agytest.Action{agytest.Run(agytest.CommandAction{Line: "make deploy", Output: "deployed\n", NeedsApproval: true})}},
	}}
	srv, client := startAgy(t, agytest.Options{Conversation: true, ChunkDelay: -1, MaxStepsPerRead: 2, Scenario: sc})
	conv := srv.ConversationID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, client.SendUserCascadeMessage(ctx, conv, "talk", "MODEL_PLACEHOLDER_M20"))
	require.NoError(t, srv.WaitIdle(ctx, conv))
	require.NoError(t, client.SendUserCascadeMessage(ctx, conv, "deploy", "MODEL_PLACEHOLDER_M20"))
	var waiting int
	require.Eventually(t, func() bool {
		p, ok := srv.OpenPrompt(conv)
		waiting = p.Index()
		return ok
	}, 10*time.Second, 5*time.Millisecond)
	require.Greater(t, waiting, 4, "the prompt is past the first two windows")

	cfg := testCfg()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newTurnSender(child{client: client, conv: conv, cfg: cfg, gen: 3, wg: wg})
	})
	r.system.Root.RequestWithCustomSender(r.child, &messages.StopRun{Conversations: []messages.ConversationFrom{{ConversationID: conv, From: 0}}}, r.parent)
	res := expect[*messages.TurnResult](r, nil)
	require.NoError(t, res.Err)
	assert.Equal(t, wire.StatusDone, srv.Steps(conv)[waiting].Status, "declined: the step left WAITING")
	assert.Equal(t, wire.RunIdle, srv.RunStatus(conv))
}

func testCfg() Config {
	return Config{
		PollFast: 20 * time.Millisecond, DiscoveryBackoffMin: 5 * time.Millisecond, DiscoveryBackoffMax: 20 * time.Millisecond,
		InterruptDeadline: 3 * time.Second,
	}.withDefaults()
}

func TestDiscoveryTriesThePortAgyLoggedFirst(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true})
	log := filepath.Join(t.TempDir(), "agy.log")
	line := func(port int) string {
		return fmt.Sprintf("Language server listening on random port at %d for HTTPS\n", port)
	}
	require.NoError(t, os.WriteFile(log, []byte(line(1)+line(srv.Port())), 0o600))
	cfg := testCfg()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newDiscovery(child{conv: srv.ConversationID(), cfg: cfg, gen: 1, wg: wg}, Spec{LogFile: log}, nil)
	})
	found := expect[*messages.PortFound](r, nil)
	require.Equal(t, srv.Port(), found.Port, "the last line agy logged")

	// A stale log falls back to the PID scan.
	require.NoError(t, os.WriteFile(log, []byte(line(1)), 0o600))
	r2 := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newDiscovery(child{conv: srv.ConversationID(), cfg: cfg, gen: 2, wg: wg}, Spec{LogFile: log, PID: os.Getpid()}, nil)
	})
	found2 := expect[*messages.PortFound](r2, nil)
	require.Equal(t, srv.Port(), found2.Port)

	// Only a log, and it is stale: a clear error each round.
	r3 := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newDiscovery(child{conv: srv.ConversationID(), cfg: cfg, gen: 3, wg: wg}, Spec{LogFile: log}, nil)
	})
	for range 2 {
		stalled := expect[*messages.DiscoveryStalled](r3, nil)
		require.ErrorContains(t, stalled.Err, "no port in agy's log file works")
	}
}

// openPrompt starts a fake whose turn waits on a permission prompt and
// returns it with the prompt as the mapper sees it.
func openPrompt(t *testing.T, line string) (*agytest.Server, *rpc.Client, mapper.Prompt) {
	t.Helper()
	srv, client := startAgy(t, agytest.Options{Conversation: true, ChunkDelay: time.Millisecond, Scenario: &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
		agytest.Run(agytest.CommandAction{Line: line, Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Done.", 1),
	}}}}})
	require.NoError(t, srv.TypeTurn("go"))
	var step wire.Step
	require.Eventually(t, func() bool {
		var ok bool
		step, ok = srv.OpenPrompt(srv.ConversationID())
		return ok
	}, 10*time.Second, 2*time.Millisecond)
	p, ok := mapper.PendingInteraction(&step, step.Index())
	require.True(t, ok)
	p.ElicitationID = "e1"
	return srv, client, *p
}

func TestInteractionDeliversToTheWaitingStep(t *testing.T) {
	srv, client, prompt := openPrompt(t, "make")
	cfg := testCfg()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newInteraction(child{client: client, conv: srv.ConversationID(), cfg: cfg, gen: 4, wg: wg}, prompt)
	})
	r.system.Root.Send(r.child, &messages.DeliverAnswer{Gen: 4, Resolve: messages.Resolve{ElicitationID: "e1", Action: messages.ActionAccept}})
	done := expect[*messages.AnswerDelivered](r, nil)
	require.Equal(t, "e1", done.ElicitationID)
	require.Equal(t, prompt.StepIndex, done.StepIndex)
	require.Equal(t, messages.ActionAccept, done.Action)
	require.Equal(t, 1, srv.Calls(rpc.MethodHandleCascadeUserInteraction))
}

func TestInteractionFollowsATimedOutPromptToItsRetry(t *testing.T) {
	srv, client := startAgy(t, agytest.Options{Conversation: true, ChunkDelay: time.Millisecond, Scenario: &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
		agytest.Run(agytest.CommandAction{Line: "deploy", Output: "ok\n", NeedsApproval: true}),
	}}}}})
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultPromptTimeout}) // the first ask expires at once
	require.NoError(t, srv.TypeTurn("go"))
	conv := srv.ConversationID()
	var expired, retry wire.Step
	require.Eventually(t, func() bool {
		for _, st := range srv.Steps(conv) {
			if st.Type == wire.StepRunCommand && st.Status == wire.StatusError {
				expired = st
			}
		}
		var ok bool
		retry, ok = srv.OpenPrompt(conv)
		return expired.Type != "" && ok
	}, 10*time.Second, 2*time.Millisecond)
	// The prompt as the driver saw it: at the step that expired.
	p, ok := mapper.PendingInteraction(&retry, expired.Index())
	require.True(t, ok)
	p.ElicitationID, p.Created = "e1", expired.Metadata.CreatedAt
	prompt := *p
	cfg := testCfg()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newInteraction(child{client: client, conv: conv, cfg: cfg, gen: 1, wg: wg}, prompt)
	})
	r.system.Root.Send(r.child, &messages.DeliverAnswer{Gen: 1, Resolve: messages.Resolve{ElicitationID: "e1", Action: messages.ActionDecline}})
	done := expect[*messages.AnswerDelivered](r, nil)
	require.Equal(t, retry.Index(), done.StepIndex, "delivered to the freshest WAITING step, not the expired one")
	require.Greater(t, done.StepIndex, expired.Index())
}

func TestPollerReadsAgainWithTheStatusAfterReadNow(t *testing.T) {
	srv, client := startAgy(t, agytest.Options{Conversation: true})
	// The first read is slow, so the ReadNow arrives while it runs (the
	// fake's slowness is on the machine's clock).
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlow, Method: rpc.MethodGetCascadeTrajectorySteps, Count: 1, Duration: 300 * time.Millisecond})
	cfg := testCfg()
	cfg.PollSlow = time.Hour // no reconciliation reads during the test
	conv := srv.ConversationID()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newPoller(child{client: client, conv: conv, cfg: cfg, gen: 2, wg: wg}, ReadBoth, 0, nil)
	})
	r.system.Root.Send(r.child, &messages.StreamState{Gen: 2, Up: true})
	require.Eventually(t, func() bool { return srv.Calls(rpc.MethodGetCascadeTrajectorySteps) == 1 }, 10*time.Second, time.Millisecond)
	r.system.Root.Send(r.child, &messages.ReadNow{Gen: 2})

	first := expect[*messages.SnapshotRead](r, nil)
	second := expect[*messages.SnapshotRead](r, nil)
	require.Equal(t, messages.Gen(2), second.Gen)
	require.Equal(t, wire.RunIdle, second.RunStatus, "the owed read carries the status")
	require.Equal(t, conv, first.ConversationID)
	require.Equal(t, 2, srv.Calls(rpc.MethodGetCascadeTrajectorySteps), "a read already running did not pay for the ReadNow")
	require.Equal(t, 4, srv.Calls(rpc.MethodGetAllCascadeTrajectories), "two reads with the status, each between two status reads")
}

// In stream mode a poller at rest reads only when asked; a turn that starts
// then is read every PollActive all the same (agy may park a prompt without
// a frame), not only when a read happened to be running as it started.
func TestPollerInStreamModeReadsWhileATurnRuns(t *testing.T) {
	srv, client := startAgy(t, agytest.Options{Conversation: true})
	clock := NewTestClock()
	cfg := testCfg()
	// Every tick comes when the test moves the clock.
	cfg.Clock, cfg.PollFast, cfg.PollActive, cfg.PollSlow = clock, time.Hour, time.Hour, 2*time.Hour
	conv := srv.ConversationID()
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		p := newPoller(child{client: client, conv: conv, cfg: cfg, gen: 2, wg: wg}, ReadStream, 0, nil).(*poller)
		p.streamUp = true // as if told before it started: its one read is the one owed at start
		return p
	})
	expect[*messages.SnapshotRead](r, nil)
	require.Zero(t, clock.Pending(), "at rest: no tick")

	r.system.Root.Send(r.child, &messages.TurnActive{Gen: 2, Active: true})
	require.Eventually(t, func() bool { return clock.Pending() == 1 }, 10*time.Second, time.Millisecond, "a turn runs: a tick")
	calls := srv.Calls(rpc.MethodGetCascadeTrajectorySteps)
	clock.Advance(cfg.PollActive + maxTickSlack)
	expect[*messages.SnapshotRead](r, nil)
	require.Equal(t, calls+1, srv.Calls(rpc.MethodGetCascadeTrajectorySteps))
}

// startRotationWatcher starts a rotation watcher (generation 9) on a fresh
// fake's conversation.
func startRotationWatcher(t *testing.T, cfg Config) (*agytest.Server, *probeRig) {
	t.Helper()
	srv, client := startAgy(t, agytest.Options{Conversation: true})
	from := srv.ConversationID()
	return srv, startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newRotationWatcher(child{client: client, conv: from, cfg: cfg, gen: 9, wg: wg}, time.Time{})
	})
}

func TestRotationWatcherReportsClearOnce(t *testing.T) {
	cfg := testCfg()
	cfg.RotationInterval = 5 * time.Millisecond
	srv, r := startRotationWatcher(t, cfg)
	from := srv.ConversationID()
	require.Eventually(t, func() bool { return srv.Calls(rpc.MethodGetAllCascadeTrajectories) >= 2 }, 10*time.Second, time.Millisecond)
	to := srv.Clear()
	rot := expect[*messages.ConversationRotated](r, nil)
	require.Equal(t, messages.Gen(9), rot.Gen)
	require.Equal(t, from, rot.From)
	require.Equal(t, to, rot.To)
	calls := srv.Calls(rpc.MethodGetAllCascadeTrajectories)
	require.Never(t, func() bool { return srv.Calls(rpc.MethodGetAllCascadeTrajectories) > calls }, 50*time.Millisecond, 5*time.Millisecond,
		"it reported and stopped reading: the session spawns a new watcher for the new conversation")
}

func TestDiscoveryWaitsLongerForASlowAgy(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true})
	// agy answers, but slower than a probe waits: not gone, slow. (The
	// first probe waits 100 ms instead of rpc's 2 s, so that the test does
	// not wait seconds: a probe's timeout bounds an RPC, on the machine's
	// clock.)
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlow, Method: rpc.MethodHeartbeat, Count: 2, Duration: 300 * time.Millisecond})
	cfg := testCfg()
	cfg.GiveUpAfter = 100 * time.Millisecond
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		d := newDiscovery(child{conv: srv.ConversationID(), cfg: cfg, gen: 1, wg: wg}, Spec{Port: srv.Port()}, nil).(*discovery)
		d.probeTimeout = 100 * time.Millisecond
		return d
	})
	stalled := expect[*messages.DiscoveryStalled](r, nil)
	require.ErrorIs(t, stalled.Err, context.DeadlineExceeded)
	require.False(t, stalled.GiveUp, "a port that answers slowly is not gone")
	found := expect[*messages.PortFound](r, nil) // the next probe waits long enough
	require.Equal(t, srv.Port(), found.Port)
}

func TestSubagentIsNotDoneBeforeItHasWorked(t *testing.T) {
	srv, client := startAgy(t, agytest.Options{Conversation: true, ChunkDelay: time.Millisecond, Scenario: &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Child done.", 2)}}}}})
	kid := srv.Clear() // a conversation just minted: IDLE, no steps yet
	cfg := testCfg()
	cfg.SubagentPoll = 5 * time.Millisecond
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newSubagent(child{client: client, conv: kid, cfg: cfg, gen: 3, wg: wg})
	})
	// Three reads of the idle, empty child: none says it is done.
	for reads := 0; reads < 3; {
		select {
		case m := <-r.ch:
			switch m := m.(type) {
			case *messages.SubagentDone:
				t.Fatal("a child that has not worked yet is not done")
			case *messages.SnapshotRead:
				require.Equal(t, kid, m.ConversationID)
				require.Empty(t, m.Steps)
				reads++
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no reads")
		}
	}
	// Once the child has worked and rests, it is done.
	require.NoError(t, srv.TypeTurn("work"))
	done := expect[*messages.SubagentDone](r, nil)
	require.Equal(t, kid, done.ConversationID)
	require.NotEmpty(t, srv.GroundTruth(kid))
}

// A read made under one generation, finished after the session moved to the
// next (a re-discovery), is dropped by the session; the done that rests on
// it must carry the same old generation, or the session stops the child with
// its only complete read ignored (the long soak lost whole children so).
func TestSubagentDoneCarriesTheGenerationOfItsRead(t *testing.T) {
	srv, client := startAgy(t, agytest.Options{Conversation: true, ChunkDelay: time.Millisecond, Scenario: &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Child done.", 2)}}}}})
	kid := srv.Clear()
	require.NoError(t, srv.TypeTurn("work"))
	require.NoError(t, srv.WaitIdle(context.Background(), kid))
	// The first read is slow: the generation moves on while it runs (the
	// fake's slowness is on the machine's clock).
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlow, Count: 1, Duration: 300 * time.Millisecond})
	cfg := testCfg()
	cfg.SubagentPoll = 5 * time.Millisecond
	r := startProbe(t, func(wg *sync.WaitGroup) actor.Actor {
		return newSubagent(child{client: client, conv: kid, cfg: cfg, gen: 3, wg: wg})
	})
	r.system.Root.Send(r.child, &clientChanged{gen: 4, client: client})

	read := expect[*messages.SnapshotRead](r, nil)
	require.Equal(t, messages.Gen(3), read.Gen, "the slow read was made under generation 3")
	done := expect[*messages.SubagentDone](r, nil)
	require.Equal(t, messages.Gen(3), done.Gen, "its done rests on that read: same generation")
	later := expect[*messages.SubagentDone](r, func(d *messages.SubagentDone) bool { return d.Gen == 4 })
	require.Equal(t, kid, later.ConversationID, "the next read, under generation 4, says done again")
}

// TestRotationWatcherReadsOnlyNowAndThenWithTheStreamUp: with the stream
// up, the list of agy's conversations is read on a ReadNow and as a safety
// read that backs off (rotationSafetyFirst intervals, doubling), not every
// interval; with the stream down, every interval again; a safety read still
// finds a /clear no frame named.
func TestRotationWatcherReadsOnlyNowAndThenWithTheStreamUp(t *testing.T) {
	clock := NewTestClock()
	cfg := testCfg()
	cfg.Clock, cfg.RotationInterval = clock, time.Hour // a tick comes when the test moves the clock
	srv, r := startRotationWatcher(t, cfg)
	iv := cfg.RotationInterval
	reads := func() int { return srv.Calls(rpc.MethodGetAllCascadeTrajectories) }
	// settled waits for the n-th read and the tick armed after it (pending
	// timers, stale ones included).
	settled := func(n, pending int, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return reads() == n && clock.Pending() == pending }, 10*time.Second, time.Millisecond, what)
	}
	// quiet moves the clock by d, short of any tick: nothing may read.
	quiet := func(d time.Duration, what string) {
		t.Helper()
		n := reads()
		clock.Advance(d)
		require.Never(t, func() bool { return reads() != n }, 50*time.Millisecond, 5*time.Millisecond, what)
	}
	settled(1, 1, "one read at start")
	r.system.Root.Send(r.child, &messages.StreamState{Gen: 9, Up: true})
	clock.Advance(iv + maxTickSlack)
	settled(2, 1, "the tick pending when the stream came up reads")

	quiet(rotationSafetyFirst*iv-iv, "no read on the intervals while the stream is up")
	clock.Advance(iv + maxTickSlack)
	settled(3, 1, "a safety read after rotationSafetyFirst intervals")
	quiet(2*rotationSafetyFirst*iv-iv, "the next safety read waits twice as long")
	clock.Advance(iv + maxTickSlack)
	settled(4, 1, "the second safety read")

	r.system.Root.Send(r.child, &messages.ReadNow{Gen: 9})
	settled(5, 2, "a ReadNow reads at once (the safety tick it replaced is stale)")
	quiet(rotationSafetyFirst*iv-iv, "a ReadNow starts the safety reads over")
	clock.Advance(iv + maxTickSlack)
	settled(6, 2, "the first safety read again (the tick the ReadNow replaced still pending, stale)")

	r.system.Root.Send(r.child, &messages.StreamState{Gen: 9, Up: false})
	settled(6, 3, "the stream down: the tick is armed anew (the safety tick stale)")
	for n := 7; n <= 8; n++ {
		clock.Advance(iv + maxTickSlack)
		settled(n, 3, "the stream down: a read every interval")
	}

	// Sent before the clock moves: the watcher takes it before the tick.
	r.system.Root.Send(r.child, &messages.StreamState{Gen: 9, Up: true})
	clock.Advance(iv + maxTickSlack)
	settled(9, 3, "the pending tick reads, and the safety tick is armed")
	to := srv.Clear() // a /clear whose frame never came
	quiet(rotationSafetyFirst*iv-iv, "nothing reads before the safety read")
	clock.Advance(iv + maxTickSlack)
	rot := expect[*messages.ConversationRotated](r, nil)
	require.Equal(t, to, rot.To, "the safety read finds it")
}
