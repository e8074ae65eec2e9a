package bench

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// deltaArrival is a text delta as the consumer keeps it: the text version
// it brought, and when it arrived.
type deltaArrival struct {
	v  agytest.TextVersion
	at time.Time
}

// answer is one prompt the driver answered.
type answer struct {
	elicitationID string
	kind          string
	accept        bool
	option        string // the question's selected option id
	err           error  // Resolve refused the answer
	// leftToAgy: a prompt of kind other, which only agy's terminal answers:
	// not answered; agy must withdraw it.
	leftToAgy bool
}

// driver is one fake, one session, and the simulated person driving it.
type driver struct {
	i        int
	turnWait time.Duration
	fault    string
	mode     actors.ReadMode
	kinds    []string // turn kinds to draw from (turnKinds when empty)
	rng      *rand.Rand
	srv      *agytest.Server // nil with external fakes
	fake     fake            // what close releases
	s        drivenSession
	reqs     chan *messages.Event // elicitation requests, for the driver
	consum   sync.WaitGroup

	// What the consumer keeps of the events, for the checks and the
	// latencies. Text deltas, most of the events, are not kept: only
	// when each arrived and the text version it brought: keeping every
	// event would grow this process's heap as fast as events come, and
	// the page faults of that growth would be charged to the harness's CPU
	// per frame. A lean driver (its fake's ground truth is in another
	// process, so the checks that read the events do not run) keeps no
	// event, a sample of the latencies, and a hash of each item's id: a
	// long run's heap is then the harness's, give or take some 20 bytes
	// an item. Its problems name no events.
	mu          sync.Mutex
	lean        bool
	evs         []*messages.Event // every event but text deltas (none if lean)
	thinking    map[string]string // the reasoning deltas' text by item id (none if lean)
	items       map[uint64]bool   // items and coded errors seen, by the hash of their id (itemSeed)
	doubled     map[string]int    // ids seen more than once: how many times
	rewound     int               // conversation_rewound events
	lastRewound uint64            // the seq of the last
	wakes       int               // replies of a background task's wake (backgroundReply)
	lastWake    uint64            // the seq of the last
	deltas      sample[deltaArrival]
	received    int      // events received
	last        uint64   // seq of the last event
	seqErrors   []string // events whose seq was not above the one before
	lastIdle    uint64   // seq of the last idle status
	notTaken    []string // the texts of the turns the session reported agy did not take
	wake        chan struct{}
	latencies   sample[time.Duration] // arrival minus the event's Time (the harness's own share)

	cold                                  bool // no conversation until the first turn: none to be idle before it
	turns, turnsFailed, interrupts, stuck int
	promptInterrupts, questionsDeclined   int
	rewinds                               int      // RevertToCascadeStep calls agy took
	rewindOwed                            bool     // a rewind drawn and not done yet (rewind_settle.go)
	lastKind                              string   // the kind of the last turn sent
	lastText                              string   // the text of the last turn sent (for a stuck turn's report)
	lastTurnSeq                           uint64   // the last seq before it
	stuckAfter                            []uint64 // the last seq before each stuck turn
	stuckState                            []string // the fake's state when each turn was given up
	ended                                 bool     // the session ended during the run
	answers                               []answer
}

// fake is the language server a driver's session attaches to: an
// in-process agytest.Server, or one served by an external fakeagy process
// (srv nil: no faults, no ground truth).
type fake struct {
	srv     *agytest.Server
	port    int
	conv    string   // "" for a fresh agy: its first turn is typed
	logPath string   // agy's log file, when the fake writes one
	log     *os.File // open for the fake's writes
	live    liveMix
}

// liveMix is which of agy's live behaviours a fake shows beyond those every
// fake has (prompts that may be parked without a frame, cancels that spare
// a WAITING prompt, IDLE before the last step).
type liveMix struct {
	coldStart bool // no conversation until the first turn is typed into its terminal
	window    int  // at most this many steps per GetCascadeTrajectorySteps answer (0: agy's cap)
	movingMod bool // lastModifiedTime moves at rest
}

// String names the behaviours shown, for a problem report.
func (m liveMix) String() string {
	var b strings.Builder
	if m.coldStart {
		b.WriteString(", cold start")
	}
	if m.window > 0 {
		fmt.Fprintf(&b, ", %d steps a read", m.window)
	}
	if m.movingMod {
		b.WriteString(", moving lastModifiedTime")
	}
	return b.String()
}

// liveMixFor draws fake i's mix from the seed. A session that follows its
// fake through port churn (by conversation, in the log) starts warm.
func liveMixFor(o Options, i int, fault string) liveMix {
	r := newRand(o.Seed, 1_000_000+i)
	m := liveMix{coldStart: r.IntN(4) == 0 && fault != FaultPortChurn, movingMod: r.IntN(5) == 0}
	if r.IntN(3) == 0 {
		m.window = 4 + r.IntN(8)
	}
	return m
}

// startFake starts fake i of the campaign in this process. With logPath it
// writes agy's port lines there, as agy logs them, on start and on every
// restart.
func startFake(o Options, sc *agytest.Scenario, i int, logPath string, live liveMix) (fake, error) {
	f := fake{logPath: logPath, live: live}
	opts := agytest.Options{
		Conversation:       !live.coldStart,
		MaxStepsPerRead:    live.window,
		MovingModifiedTime: live.movingMod,
		Seed:               o.Seed + int64(i),
		Scenario:           sc,
		ChunkDelay:         o.ChunkDelay,
		PromptTimeout:      time.Minute, // only FaultPromptTimeout expires prompts
		RecordTimes:        true,
	}
	if logPath != "" {
		lf, err := os.Create(logPath)
		if err != nil {
			return fake{}, fmt.Errorf("bench: fake %d: %w", i, err)
		}
		f.log, opts.AgyLog = lf, lf
	}
	srv, err := agytest.NewServer(opts)
	if err != nil {
		f.close()
		return fake{}, fmt.Errorf("bench: fake %d: %w", i, err)
	}
	f.srv, f.port, f.conv = srv, srv.Port(), srv.ConversationID()
	return f, nil
}

func (f fake) close() {
	if f.srv != nil {
		_ = f.srv.Close()
	}
	if f.log != nil {
		_ = f.log.Close()
	}
}

func newDriver(ctx context.Context, host *actors.Host, o Options, f fake, i int, fault string, mode actors.ReadMode) (*driver, error) {
	spec := actors.Spec{Port: f.port, ReadMode: mode}
	if f.live.coldStart {
		// A fresh agy the harness started: its first turn is typed, and
		// the conversation it mints is bound.
		spec.NewConversation, spec.Terminal = true, f.srv.Terminal()
	}
	if fault == FaultPortChurn {
		// By port a session cannot follow agy to a new one. Churned
		// sessions find it again as they would agy, through the port agy
		// logs in its log file. (Not by PID: this process holds 2N
		// listeners, where agy has two, and probing them all under load
		// takes longer than a turn.)
		spec = actors.Spec{LogFile: f.logPath, ConversationID: f.conv, ReadMode: mode}
	}
	actx, cancel := context.WithTimeout(ctx, o.TurnTimeout)
	defer cancel()
	s, err := host.Attach(actx, spec)
	if err != nil {
		f.close()
		return nil, fmt.Errorf("bench: attach session %d: %w", i, err)
	}
	d := &driver{i: i, turnWait: o.TurnTimeout, fault: fault, mode: mode, kinds: o.TurnKinds, rng: newRand(o.Seed, i), srv: f.srv, fake: f, s: s, cold: f.live.coldStart,
		reqs: make(chan *messages.Event, 64), wake: make(chan struct{}, 1)}
	if f.srv == nil {
		d.leanen(newRand(o.Seed, 2_000_000+i))
	}
	slowBy := time.Duration(0)
	if fault == FaultSlowConsumer {
		slowBy = time.Duration(1+d.rng.IntN(3)) * time.Millisecond
	}
	d.consum.Add(1)
	go d.consume(s.Events(), slowBy)
	return d, nil
}

// leanen makes d lean (before its consumer starts): rng draws its
// samples.
func (d *driver) leanen(rng *rand.Rand) {
	d.lean = true
	d.deltas, d.latencies = newSample[deltaArrival](leanSample, rng), newSample[time.Duration](leanSample, rng)
}

// consume reads the session's events until the channel closes (at host
// shutdown). A slow consumer pauses after every event.
func (d *driver) consume(ch <-chan *messages.Event, slowBy time.Duration) {
	defer d.consum.Done()
	for ev := range ch {
		d.receive(ev, time.Now())
		if slowBy > 0 {
			time.Sleep(slowBy)
		}
	}
}

// receive keeps what the checks need of ev, which arrived at now, and
// hands a prompt to the driver.
func (d *driver) receive(ev *messages.Event, now time.Time) {
	d.mu.Lock()
	d.received++
	if ev.Seq <= d.last {
		d.seqErrors = append(d.seqErrors, fmt.Sprintf("seq %d after %d", ev.Seq, d.last))
	}
	d.last = ev.Seq
	if isDelta(ev) {
		if v, ok := textVersion(ev); ok {
			d.deltas.add(deltaArrival{v: v, at: now})
		}
		if ev.Type == messages.EventReasoningDelta && !d.lean {
			if d.thinking == nil {
				d.thinking = make(map[string]string)
			}
			if ev.Snapshot != "" {
				d.thinking[ev.ItemID] = ev.Snapshot
			} else {
				d.thinking[ev.ItemID] += ev.Delta
			}
		}
	} else {
		d.countItem(ev)
		switch {
		case ev.Type == messages.EventConversationRewound:
			d.rewound++
			d.lastRewound = ev.Seq
		case ev.Type == messages.EventMessage && ev.Text == backgroundReply:
			d.wakes++
			d.lastWake = ev.Seq
		case ev.Type == messages.EventError && ev.Code == messages.ErrorTurnNotTaken:
			d.notTaken = append(d.notTaken, ev.Text)
		}
		if !d.lean {
			d.evs = append(d.evs, ev)
		}
	}
	d.latencies.add(now.Sub(ev.Time))
	if ev.Type == messages.EventStatus && ev.State == messages.StateIdle && ev.ConversationID == d.s.ConversationID() {
		d.lastIdle = ev.Seq
	}
	d.mu.Unlock()
	if ev.Type == messages.EventElicitationRequest {
		select {
		case d.reqs <- ev:
		default: // the driver is behind; the prompt stays unanswered, found by the check
		}
	}
	// What the driver waits for (an idle status, a prompt, an item done)
	// never comes in a delta: waking it for each delta would charge the
	// harness with a goroutine wake-up per frame that is the bench's own.
	if !isDelta(ev) {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

func isDelta(ev *messages.Event) bool { return ev.Type.Delta() }

func (d *driver) lastSeq() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

func (d *driver) idleAfter(seq uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastIdle > seq
}

// reportedNotTaken says whether the session reported that agy did not take
// the turn with text (its texts are the driver's own, each sent once).
func (d *driver) reportedNotTaken(text string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Contains(d.notTaken, text)
}

// drive sends turns until deadline, each waited to its end.
func (d *driver) drive(ctx context.Context, deadline time.Time) {
	// The first read of a quiet agy ends in idle; start from there. A
	// fresh agy has no conversation to be idle in.
	if !d.cold {
		d.waitIdle(ctx, 0, false)
	}
	kinds := d.kinds
	if len(kinds) == 0 {
		kinds = turnKinds
	}
	// Every eighth session owes a rewind from its start (paid by its
	// turns, or before it ends: payRewind), so that a campaign whose
	// sessions take a turn or two each on a loaded machine still rewinds.
	d.rewindOwed = d.i%8 == 0 && slices.Contains(kinds, "rewind")
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-d.s.Done():
			d.ended = true
			return
		default:
		}
		kind := kinds[d.rng.IntN(len(kinds))]
		if d.fault == FaultPromptTimeout && (d.turns == 0 || d.rng.IntN(2) == 0) {
			kind = promptKinds[d.rng.IntN(len(promptKinds))]
		}
		d.turn(ctx, kind)
	}
	d.payRewind(ctx)
	if d.lastKind == "background" && d.srv != nil {
		d.waitWake(ctx)
	}
}

// backgroundReply is what agy answers when the "background" turn's task
// wakes it (campaignScenario).
const backgroundReply = "The background tests passed."

// waitWake waits for the reply of the run the last turn's background task
// starts after it (a run nobody typed), so the ground truth the check reads
// has no step the session could not have seen yet.
func (d *driver) waitWake(ctx context.Context) {
	tctx, cancel := context.WithTimeout(ctx, d.turnWait)
	defer cancel()
	for {
		d.mu.Lock()
		woke := d.lastWake > d.lastTurnSeq
		d.mu.Unlock()
		if woke {
			return
		}
		select {
		case <-d.wake:
		case <-tctx.Done():
			d.stuck++
			d.stuckAfter = append(d.stuckAfter, d.lastTurnSeq)
			d.stuckState = append(d.stuckState, "a background task's wake never seen: "+d.fakeState())
			return
		}
	}
}

func (d *driver) turn(ctx context.Context, kind string) {
	switch {
	case kind == "rewind":
		d.rewindOwed = true
		d.rewind(ctx, rewindSettle)
		kind = "text"
	case d.rewindOwed:
		d.rewind(ctx, rewindSettle)
	}
	// The last turn agy took (a refused one leaves the one before it
	// last, of a kind not known here: never rewound).
	d.lastKind = ""
	d.arm(kind)
	seq := d.lastSeq()
	d.lastTurnSeq = seq
	tctx, cancel := context.WithTimeout(ctx, d.turnWait)
	defer cancel()
	d.lastText = kind + " turn " + strconv.Itoa(d.turns)
	if err := d.s.SendTurn(tctx, d.lastText, ""); err != nil {
		// Refused with an error (a 5xx on the send): the driver was told,
		// and tries again a moment later, as a person would.
		d.turnsFailed++
		select {
		case <-d.s.Done():
		case <-time.After(time.Duration(20+d.rng.IntN(30)) * time.Millisecond):
		}
		return
	}
	d.turns++
	d.lastKind = kind
	var churn <-chan time.Time
	if d.fault == FaultPortChurn && (d.turns == 1 || d.rng.IntN(2) == 0) {
		churn = time.After(time.Duration(d.rng.IntN(30)) * time.Millisecond)
	}
	var interrupt <-chan time.Time
	switch {
	case (kind == "long" || kind == "text") && d.rng.IntN(5) == 0:
		interrupt = time.After(time.Duration(d.rng.IntN(40)) * time.Millisecond)
	case slices.Contains(promptKinds, kind):
		// Armed, never fires by itself: a prompt of this turn may be
		// interrupted instead of answered (waitTurn).
		interrupt = make(chan time.Time)
	}
	d.waitTurn(tctx, seq, churn, interrupt)
}

// arm injects the session's fault before a turn, every other turn, and
// always before the first: on a loaded machine a short campaign's session
// may take one turn only, and every fault kind must still fire.
func (d *driver) arm(kind string) {
	if d.turns > 0 && d.rng.IntN(2) == 0 {
		return
	}
	switch d.fault {
	case FaultStreamDrop:
		d.srv.InjectFault(agytest.Fault{Kind: agytest.FaultDropStreamAfter, N: d.rng.IntN(6)})
	case Fault5xx:
		d.srv.InjectFault(agytest.Fault{Kind: agytest.FaultBurst5xx, Count: 1 + d.rng.IntN(3)})
	case FaultSlow:
		d.srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlow, Count: 3, Duration: time.Duration(10+d.rng.IntN(50)) * time.Millisecond})
	case FaultPromptTimeout:
		if slices.Contains(promptKinds, kind) {
			d.srv.InjectFault(agytest.Fault{Kind: agytest.FaultPromptTimeout})
		}
	case FaultTruncatedFrame:
		d.srv.InjectFault(agytest.Fault{Kind: agytest.FaultTruncatedFrame})
	}
}

// waitTurn answers the turn's prompts and waits for idle after seq. It
// sleeps until something it waits for arrives (receive wakes it for every
// event that is not a delta, after recording it), never on a timer: a
// driver waking every few milliseconds to look would charge the harness
// with wake-ups that are the bench's own.
func (d *driver) waitTurn(ctx context.Context, seq uint64, churn, interrupt <-chan time.Time) {
	for {
		if d.idleAfter(seq) && len(d.reqs) == 0 {
			return
		}
		if d.reportedNotTaken(d.lastText) {
			// agy dropped it (an interrupt cancelled the run it was queued
			// behind), and the session said so: no idle of its own comes.
			return
		}
		select {
		case req := <-d.reqs:
			if interrupt != nil && d.rng.IntN(6) == 0 {
				// Interrupted while agy waits on the prompt: the interrupt
				// declines it first (agy's cancel would change nothing).
				interrupt = nil
				if err := d.s.Interrupt(ctx); err == nil {
					d.interrupts++
					d.promptInterrupts++
				}
				continue
			}
			d.answer(ctx, req)
		case <-churn:
			churn = nil
			if _, err := d.srv.Restart(); err != nil {
				d.stuck++ // a fake that cannot restart is a campaign failure too
			}
		case <-interrupt:
			interrupt = nil
			if err := d.s.Interrupt(ctx); err == nil {
				d.interrupts++
			}
		case <-d.wake:
		case <-ctx.Done():
			d.stuck++
			d.stuckAfter = append(d.stuckAfter, seq)
			d.stuckState = append(d.stuckState, fmt.Sprintf("turn %q; %s", d.lastText, d.fakeState()))
			return
		}
	}
}

// waitIdle waits for idle after seq (used once, at start).
func (d *driver) waitIdle(ctx context.Context, seq uint64, _ bool) {
	tctx, cancel := context.WithTimeout(ctx, d.turnWait)
	defer cancel()
	for !d.idleAfter(seq) {
		select {
		case <-d.wake:
		case <-tctx.Done():
			d.stuck++
			return
		}
	}
}

// answer answers a prompt after a person's short delay: permissions
// accepted or declined, questions with a random option or declined.
func (d *driver) answer(ctx context.Context, req *messages.Event) {
	a := answer{elicitationID: req.ElicitationID, kind: req.Kind}
	if req.Kind == messages.KindOther {
		a.leftToAgy = true // nothing to answer it with
		d.answers = append(d.answers, a)
		return
	}
	time.Sleep(time.Duration(d.rng.IntN(20)) * time.Millisecond) // a person reading the prompt
	r := messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}
	switch {
	case req.Kind == messages.KindQuestion && d.rng.IntN(4) == 0:
		r.Action = messages.ActionDecline
		d.questionsDeclined++
	case req.Kind == messages.KindQuestion && len(req.Questions) > 0 && len(req.Questions[0].Options) > 0:
		q := req.Questions[0]
		a.accept = true
		a.option = q.Options[d.rng.IntN(len(q.Options))].ID
		r.Answers = []messages.Answer{{Question: q.Question, SelectedOptionIDs: []string{a.option}}}
	default:
		a.accept = d.rng.IntN(3) != 0
		if !a.accept {
			r.Action = messages.ActionDecline
		}
	}
	a.err = d.s.Resolve(ctx, r)
	d.answers = append(d.answers, a)
}

// waitSettled waits, until deadline, for the events to match the ground
// truth's item counts (trailing copies may come after idle).
func (d *driver) waitSettled(deadline time.Time) {
	if d.srv == nil {
		return // external fakes: no ground truth to wait for
	}
	for time.Now().Before(deadline) {
		if d.itemsMatch() {
			return
		}
		select {
		case <-d.wake:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// countItem counts ev's id if it is an item's or a coded error's (the
// duplicates the check reports). Ids are counted by a 64-bit hash: two ids
// of one session's run would share one with odds below 1e-7 even at a
// million items, and would then be reported as one item doubled, never
// hide one.
func (d *driver) countItem(ev *messages.Event) {
	if !isItem(ev.Type) && !ev.ShownByAgy() {
		return
	}
	if d.items == nil {
		d.items = make(map[uint64]bool)
	}
	if h := maphash.String(itemSeed, ev.ID); !d.items[h] {
		d.items[h] = true
		return
	}
	if d.doubled == nil {
		d.doubled = make(map[string]int)
	}
	d.doubled[ev.ID] = max(d.doubled[ev.ID], 1) + 1
}

var itemSeed = maphash.MakeSeed()

// leanSample is how many latencies, and deltas, a lean driver keeps: a
// uniform sample of its session's (so in a run's percentiles each
// session's sample weighs the same, whatever its count of events).
const leanSample = 4096

// sample keeps every value added, or, with limit > 0, a uniform sample
// of limit of them (reservoir sampling).
type sample[T any] struct {
	limit int
	n     int // values added
	xs    []T
	rng   *rand.Rand
}

func newSample[T any](limit int, rng *rand.Rand) sample[T] {
	return sample[T]{limit: limit, rng: rng}
}

func (s *sample[T]) add(x T) {
	s.n++
	switch {
	case s.limit <= 0 || len(s.xs) < s.limit:
		s.xs = append(s.xs, x)
	default:
		if j := s.rng.IntN(s.n); j < s.limit {
			s.xs[j] = x
		}
	}
}

func (d *driver) events() []*messages.Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.evs)
}

// close waits for the consumer (the host's shutdown closed its channel)
// and closes the fake.
func (d *driver) close() {
	d.consum.Wait()
	d.fake.close()
}

// fakeState describes the fake's side of the session's conversation when a
// turn is given up: its run status, an open prompt, and its last steps.
func (d *driver) fakeState() string {
	if d.srv == nil {
		return "external fake"
	}
	conv := d.s.ConversationID()
	var b strings.Builder
	fmt.Fprintf(&b, "fake: conversation %s %s", conv, d.srv.RunStatus(conv))
	if p, ok := d.srv.OpenPrompt(conv); ok {
		fmt.Fprintf(&b, ", prompt open at step %d", p.Index())
	}
	steps := d.srv.Steps(conv)
	for _, st := range steps[max(0, len(steps)-8):] {
		fmt.Fprintf(&b, "; %d %s %s", st.Index(), st.Type, st.Status)
		if st.Type == wire.StepUserInput && st.UserInput != nil {
			fmt.Fprintf(&b, " %q", st.UserInput.UserResponse)
		}
	}
	return b.String()
}

// rewind is agy's /rewind of the last turn, over RPC (RevertToCascadeStep
// to its USER_INPUT), when that turn opened no prompt (an answer the check
// compares with agy's steps stays there); the session must then report
// conversation_rewound. Without an in-process fake, or a conversation, or
// when the session has not caught up with agy at rest (caughtUp), nothing
// is done, and the rewind stays owed (rewindOwed): the next turns try it
// again. settle bounds the wait for caughtUp.
func (d *driver) rewind(ctx context.Context, settle time.Duration) {
	conv := d.s.ConversationID()
	if d.srv == nil || conv == "" || !rewindable(d.lastKind) {
		return
	}
	if !d.caughtUp(ctx, settle) {
		return // not at rest: no rewind this time
	}
	steps := d.srv.Steps(conv)
	at := agytest.LastUserInput(steps)
	if at < 0 {
		return
	}
	c, err := rpc.NewClient(rpc.Config{Port: d.srv.Port()})
	if err != nil {
		return
	}
	seq := d.lastSeq()
	tctx, cancel := context.WithTimeout(ctx, d.turnWait)
	defer cancel()
	if err := c.RevertToCascadeStep(tctx, conv, at); err != nil {
		return // a fault refused it: agy did not rewind
	}
	d.rewinds++
	d.rewindOwed = false
	for !d.sawRewind(seq) {
		select {
		case <-d.wake:
		case <-tctx.Done():
			d.stuck++
			d.stuckAfter = append(d.stuckAfter, seq)
			d.stuckState = append(d.stuckState, "rewound, never reported: "+d.fakeState())
			return
		}
	}
}

// sawRewind says whether a conversation_rewound came after seq.
func (d *driver) sawRewind(seq uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastRewound > seq
}
