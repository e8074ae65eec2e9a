package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

// statusListPairs is how many times each count of listed conversations is
// measured, alternated (10, 1000, 10, 1000), unless Options.StatusListPairs.
const statusListPairs = 2

// essayChunks is how many chunks campaignScenario's essay streams.
const essayChunks = 100

// bindingSettle is how long a round waits after its sessions report idle
// before it measures: the actors' default RotationInterval (2 s) and a
// second.
var bindingSettle = 3 * time.Second // a variable for the tests

// attachSpread is how long a round takes to attach its sessions, one at
// each Sessions-th of it: the actors' default PollSlow, so that each idle
// session's reconciliation read falls at its own point of the grid at any
// list length. Attached back to back, the reads bunch as closely as the
// attaches come, and an attach is slower the longer agy's list (discovery
// decodes it whole): the bunching, and so the wake-ups' cost, would differ
// with the count being measured.
var attachSpread = 10 * time.Second // a variable for the tests

// StatusListCPU is one count of listed conversations' CPU per session per
// second, in µs, for each round (in the order run) and their median.
type StatusListCPU struct {
	Idle            []float64 `json:"idle"`
	Streaming       []float64 `json:"streaming"`
	IdleMedian      float64   `json:"idle_median"`
	StreamingMedian float64   `json:"streaming_median"`
}

// runStatusList measures what the length of agy's conversation list costs
// an attached session (Options.StatusList): each round starts a fakeagy
// process of Sessions fresh fakes each listing N conversations (its own
// and N-1 of earlier runs, one in four of those a subagent child); rounds
// alternate the counts, ABBA (10, 1000, 1000, 10, ...). A round attaches
// a session to each fake with the actors' default intervals, evenly over
// attachSpread, waits for the reads of a binding to pass (bindingSettle),
// measures this process's CPU over IdleCPUWindow with every session idle,
// then has each send essay turns one after another (starts spread over
// half an essay, so each session's turn ends once in a window of an
// essay's length) and measures over Duration, then interrupts the turns
// and detaches. The figures: µs of CPU per session per second at each
// count, and the median over the pairs of the largest count's over the
// smallest's (status_list_cpu_ratio_*).
func runStatusList(ctx context.Context, o Options) (*Result, error) {
	res := newResult(o)
	res.ExternalFakes, res.GroundTruthChecked, res.CPUIncludesFakes = true, false, false
	stopProfile, err := startCPUProfile(o.CPUProfile) // of the whole run
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	counts := o.StatusList
	res.StatusListCPUUs = map[string]*StatusListCPU{}
	for _, n := range counts {
		res.StatusListCPUUs[strconv.Itoa(n)] = &StatusListCPU{}
	}
	pairs := cmp.Or(o.StatusListPairs, statusListPairs)
	for p := range pairs {
		order := slices.Clone(counts)
		if p%2 == 1 {
			slices.Reverse(order) // ABBA: a drift over the run falls on both counts
		}
		for _, n := range order {
			idle, streaming, err := statusListRound(ctx, o, n)
			if err != nil {
				return nil, fmt.Errorf("bench: --status-list %d: %w", n, err)
			}
			c := res.StatusListCPUUs[strconv.Itoa(n)]
			c.Idle, c.Streaming = append(c.Idle, idle), append(c.Streaming, streaming)
		}
	}
	lo, hi := res.StatusListCPUUs[strconv.Itoa(counts[0])], res.StatusListCPUUs[strconv.Itoa(counts[len(counts)-1])]
	var idleRatios, streamRatios []float64
	for i := range pairs {
		idleRatios = append(idleRatios, hi.Idle[i]/lo.Idle[i])
		streamRatios = append(streamRatios, hi.Streaming[i]/lo.Streaming[i])
	}
	for _, c := range res.StatusListCPUUs {
		c.IdleMedian, c.StreamingMedian = median(c.Idle), median(c.Streaming)
	}
	ri, rs := median(idleRatios), median(streamRatios)
	res.StatusListCPURatioIdle, res.StatusListCPURatioStreaming = &ri, &rs
	stopProfile() // its writer is a goroutine
	res.GoroutinesAfter = settleGoroutines(res.GoroutinesBefore, 5*time.Second)
	return res, nil
}

// statusListRound is one round on fresh fakes listing n conversations
// each: CPU per session per second, idle and streaming.
func statusListRound(ctx context.Context, o Options, n int) (idle, streaming float64, err error) {
	// Fresh fakes each round: a conversation grown by the rounds before
	// would cost more per frame.
	e, err := startExternalFakes(ctx, o, o.Sessions, "--earlier-runs", strconv.Itoa(n-1), "--earlier-subagents")
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		// After the host's shutdown (deferred below, run first).
		if _, _, _, serr := e.stop(); serr != nil && err == nil {
			err = fmt.Errorf("fakes: %w", serr)
		}
	}()
	host := actors.NewHost(actors.Config{Logger: o.Logger})
	var drains sync.WaitGroup
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if serr := host.Shutdown(sctx); serr != nil && err == nil {
			err = fmt.Errorf("host shutdown: %w", serr)
		}
		drains.Wait()
	}()
	type attached struct {
		s    *actors.Session
		idle chan struct{} // an idle status came (capacity 1)
	}
	var sessions []attached
	start := time.Now()
	for i, f := range e.fakes {
		select { // this session's place in attachSpread (none when overrun)
		case <-time.After(time.Until(start.Add(time.Duration(i) * attachSpread / time.Duration(len(e.fakes))))):
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s, aerr := host.Attach(actx, actors.Spec{Port: f.port, ConversationID: f.conv, ReadMode: o.ReadMode})
		cancel()
		if aerr != nil {
			return 0, 0, fmt.Errorf("attach: %w", aerr)
		}
		a := attached{s: s, idle: make(chan struct{}, 1)}
		sessions = append(sessions, a)
		drains.Go(func() {
			for ev := range s.Events() {
				if ev.Type == messages.EventStatus && ev.State == messages.StateIdle {
					select {
					case a.idle <- struct{}{}:
					default:
					}
				}
			}
		})
	}
	// Sessions bind, read once and go idle: wait for each one's idle.
	for _, a := range sessions {
		select {
		case <-a.idle:
		case <-time.After(time.Minute):
			return 0, 0, errors.New("a session never reported idle")
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	// A binding's own reads (discovery's, the rotation watcher's first and
	// the one when its stream came up, one RotationInterval later) are not
	// a second's: the windows start after them.
	select {
	case <-time.After(bindingSettle):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	window := func(d time.Duration) (float64, error) {
		cpu0, t0 := cpuTime(), time.Now()
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return float64((cpuTime() - cpu0).Microseconds()) / float64(len(sessions)) / time.Since(t0).Seconds(), nil
	}
	// A measurement window, not a wait for a condition: what the sessions
	// cost over it is the figure.
	if idle, err = window(o.IdleCPUWindow); err != nil {
		return 0, 0, err
	}

	essay := essayChunks * o.ChunkDelay
	dctx, stop := context.WithCancel(ctx)
	var drivers sync.WaitGroup
	for i, a := range sessions {
		drivers.Go(func() {
			select { // starts spread over half an essay
			case <-time.After(time.Duration(i) * essay / 2 / time.Duration(len(sessions))):
			case <-dctx.Done():
				return
			}
			for turn := 0; dctx.Err() == nil; turn++ {
				select {
				case <-a.idle: // a stale idle is not this turn's end
				default:
				}
				tctx, cancel := context.WithTimeout(dctx, 30*time.Second)
				serr := a.s.SendTurn(tctx, "essay turn "+strconv.Itoa(turn), "")
				cancel()
				if serr != nil {
					return
				}
				select {
				case <-a.idle:
				case <-dctx.Done():
				}
			}
		})
	}
	select {
	case <-time.After(essay / 2):
	case <-ctx.Done():
	}
	streaming, err = window(o.Duration)
	stop()
	drivers.Wait()
	// Stop the essays under way: the fakes then end cleanly.
	for _, a := range sessions {
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = a.s.Interrupt(ictx) // an idle session has nothing to stop
		cancel()
	}
	return idle, streaming, err
}

// median of xs (not changed); 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
