package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// bench is one run of Run: what every part of it shares. Each part (frame
// cost, idle sessions, campaign, floor) is one method that stops what it
// started, with defer, before it returns.
type bench struct {
	o   Options // normalized
	res *Result
	ext *externalFakes // the fakeagy process of ExternalFakes; nil: fakes in this process
}

// Run measures what o asks for, in this order: the frame cost (FrameCost),
// the idle sessions (IdleSessions), then the campaign, or the floor
// (Floor); with Cluster, the campaign on a cluster alone (cluster.go). An error means the run could not go on (bad options, a fake or
// an attach failed, a profile could not be written), and nothing it
// started is left running; what the campaign found is in the Result (see
// Failed).
func Run(ctx context.Context, o Options) (*Result, error) {
	o, err := o.normalized()
	if err != nil {
		return nil, err
	}
	if o.Cluster > 0 {
		return runCluster(ctx, o)
	}
	if len(o.StatusList) > 0 {
		return runStatusList(ctx, o)
	}
	b := &bench{o: o, res: newResult(o)}
	if o.HeapProfile != "" || o.HeapProfileEnd != "" && o.LongSessions > 0 {
		// Sample finely enough to attribute a few KiB per session.
		runtime.MemProfileRate = 4096
	}
	if o.FrameCost {
		if err := b.frameCost(); err != nil {
			return nil, err
		}
	}
	if o.LongSessions > 0 {
		if b.ext, err = startExternalFakes(ctx, o, o.LongSessions); err != nil {
			return nil, err
		}
		defer b.ext.kill()
		if err := b.longSessions(ctx); err != nil {
			return nil, err
		}
		if _, _, _, err := b.ext.stop(); err != nil {
			return nil, err
		}
		b.res.GoroutinesAfter = settleGoroutines(b.res.GoroutinesBefore, 5*time.Second)
		return b.res, nil
	}
	if o.ExternalFakes {
		if b.ext, err = startExternalFakes(ctx, o, o.Sessions+o.IdleSessions); err != nil {
			return nil, err
		}
		defer b.ext.kill() // when a part failed before stopping it
	}
	if o.IdleSessions > 0 {
		if err := b.idle(ctx); err != nil {
			return nil, err
		}
	}
	last := b.campaign
	if o.Floor {
		last = b.floor
	}
	if err := last(ctx); err != nil {
		return nil, err
	}
	b.res.GoroutinesAfter = settleGoroutines(b.res.GoroutinesBefore, 5*time.Second)
	return b.res, nil
}

// newResult is the result of a run of o before it measures anything.
func newResult(o Options) *Result {
	res := &Result{Seed: o.Seed, Sessions: o.Sessions, ReadMode: string(o.ReadMode),
		FaultsInjected: map[string]int{}, Restarts: map[string]int{},
		ExternalFakes: o.ExternalFakes, GroundTruthChecked: !o.ExternalFakes, Floor: o.Floor, FloorRaw: o.FloorRaw,
		CPUIncludesFakes: !o.ExternalFakes, PollSessions: o.PollSessions}
	if res.ReadMode == "" {
		res.ReadMode = string(actors.ReadBoth)
	}
	res.GoroutinesBefore = runtime.NumGoroutine()
	return res
}

// frameCost fills frame_cost_ns and frame_cost_ratio_1000_vs_10.
func (b *bench) frameCost() error {
	frames := b.o.FrameCostFrames
	if frames <= 0 {
		frames = 20_000
	}
	costs, err := frameCost(frames, 3)
	if err != nil {
		return err
	}
	b.res.FrameCostNs = map[string]float64{}
	for n, ns := range costs {
		b.res.FrameCostNs[strconv.Itoa(n)] = ns
	}
	ratio := costs[1000] / costs[10]
	b.res.FrameCostRatio = &ratio
	return nil
}

// idle attaches o.IdleSessions sessions to as many idle fakes and reports
// the heap and goroutines they add per session, and (IdleCPUWindow) the CPU
// they take. In-process fakes are started (and measured) first, so the
// difference is the harness's own plus the fakes' per-connection share
// (the server side of each session's connection); external fakes (the
// last IdleSessions of b.ext) leave only the harness's.
func (b *bench) idle(ctx context.Context) error {
	o, res, n := b.o, b.res, b.o.IdleSessions
	// The actors' default intervals, as an embedder runs them: the
	// campaign's millisecond intervals would make 1,000 idle sessions poll
	// thousands of times a second.
	host := actors.NewHost(actors.Config{Logger: o.Logger})
	var fakes []fake
	// Every session's Events channel must be read: the host's Shutdown
	// waits for each session's queued events to be received.
	var drains sync.WaitGroup
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := host.Shutdown(sctx); err != nil {
			res.problem("idle host shutdown: %v", err)
		}
		drains.Wait()
		for _, f := range fakes {
			f.close()
		}
	}()
	if b.ext != nil {
		fakes = b.ext.fakes[o.Sessions:]
	} else {
		for i := range n {
			srv, err := agytest.NewServer(agytest.Options{Conversation: true, Seed: o.Seed + int64(o.Sessions+i)})
			if err != nil {
				return fmt.Errorf("bench: idle fake %d: %w", i, err)
			}
			fakes = append(fakes, fake{srv: srv, port: srv.Port(), conv: srv.ConversationID()})
		}
	}
	heap0, g0 := heapNow(), runtime.NumGoroutine()
	for _, f := range fakes {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s, err := host.Attach(actx, actors.Spec{Port: f.port, ReadMode: o.ReadMode})
		cancel()
		if err != nil {
			return fmt.Errorf("bench: attach idle session: %w", err)
		}
		drains.Go(func() {
			for range s.Events() {
			}
		})
	}
	// Sessions bind asynchronously, then read once and go idle: wait for
	// every session's first idle status (an idle agy reports idle).
	deadline := time.Now().Add(time.Minute)
	for _, s := range host.Sessions() {
		for s.Stats().Events == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	heap1, g1 := heapNow(), runtime.NumGoroutine()
	if o.HeapProfile != "" {
		if err := writeHeapProfile(o.HeapProfile); err != nil {
			return err
		}
	}
	// The consumers' goroutines (one per session, above) are the
	// embedder's, not the harness's.
	h := float64(int64(heap1)-int64(heap0)) / float64(n)
	g := float64(g1-g0-n) / float64(n)
	res.HeapBytesPerIdle, res.GoroutinesPerIdle = &h, &g
	if w := o.IdleCPUWindow; w > 0 {
		// A measurement window, not a wait for a condition: the sessions
		// are idle and stay so; their background work is what is counted.
		cpu0, t0 := cpuTime(), time.Now()
		select {
		case <-time.After(w):
		case <-ctx.Done():
			return ctx.Err()
		}
		per := float64((cpuTime() - cpu0).Microseconds()) / float64(n) / time.Since(t0).Seconds()
		res.CPUUsPerIdleSessionS = &per
	}
	return nil
}

// campaign drives o.Sessions sessions, each on a fake of its own, for
// o.Duration, checks what they emitted against the fakes' ground truth,
// and fills the campaign's figures.
func (b *bench) campaign(ctx context.Context) error {
	stopProfile, err := startCPUProfile(b.o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	cpuBefore, start := cpuTime(), time.Now()
	drivers, err := b.drive(ctx)
	if err != nil {
		return err
	}
	b.res.DurationS = time.Since(start).Seconds()
	b.res.HarnessCPUS = (cpuTime() - cpuBefore).Seconds()
	stopProfile()
	return b.campaignFigures(drivers)
}

// drive starts the campaign's fakes (in this process, unless external),
// attaches a session to each, drives them, and judges them. The host, the
// drivers and the in-process fakes are stopped when it returns; the
// drivers it returns keep what they measured.
func (b *bench) drive(ctx context.Context) ([]*driver, error) {
	o, res := b.o, b.res
	logDir, err := os.MkdirTemp("", "agyharness-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(logDir)
	host := actors.NewHost(campaignHostConfig(o))
	var drivers []*driver
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := host.Shutdown(sctx); err != nil {
			res.problem("host shutdown: %v", err)
		}
		for _, d := range drivers {
			d.close()
		}
	}()

	sc := campaignScenario()
	for i := range o.Sessions {
		d, err := b.newCampaignDriver(ctx, host, sc, logDir, i)
		if err != nil {
			return nil, err
		}
		drivers = append(drivers, d)
	}

	// Turns run for Duration after every session is attached.
	sampler := startHeapSampler(time.Second)
	res.driveAll(ctx, drivers, o.Duration)
	peaks := sampler.peaks()
	res.HeapPeakBytes, res.HeapLivePeakBytes, res.HeapEndBytes = peaks.objects, peaks.live, heapNow()
	if o.HeapProfileEnd != "" {
		runtime.GC()
		if err := writeHeapProfile(o.HeapProfileEnd); err != nil {
			return nil, err
		}
	}
	b.judge(drivers)
	return drivers, nil
}

// judge lets every session catch up with its fake, then checks it against
// the fake's ground truth and adds its counters to the result.
func (b *bench) judge(drivers []*driver) {
	res := b.res
	settle := time.Now().Add(b.o.Settle)
	for _, d := range drivers {
		d.waitSettled(settle)
	}
	for _, d := range drivers {
		d.check(res)
		st := d.s.Stats()
		for k, n := range st.Restarts {
			res.Restarts[k] += n
		}
		res.Rebinds += st.Rebinds
		if d.srv != nil {
			for k, n := range d.srv.FaultsInjected() {
				res.FaultsInjected[k] += n
			}
		}
	}
	if res.problemsDropped > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("... and %d more", res.problemsDropped))
	}
}

// newCampaignDriver attaches session i of the campaign to its fake: with
// fault i%len(Faults), poll-only if it is one of the last PollSessions.
func (b *bench) newCampaignDriver(ctx context.Context, host *actors.Host, sc *agytest.Scenario, logDir string, i int) (*driver, error) {
	o := b.o
	fault := ""
	if len(o.Faults) > 0 {
		fault = o.Faults[i%len(o.Faults)]
	}
	mode := o.ReadMode
	if i >= o.Sessions-o.PollSessions {
		mode = actors.ReadPoll
	}
	if b.ext != nil {
		return newDriver(ctx, host, o, b.ext.fakes[i], i, fault, mode)
	}
	f, err := startFake(o, sc, i, agyLogPath(logDir, fault, i), liveMixFor(o, i, fault))
	if err != nil {
		return nil, err
	}
	return newDriver(ctx, host, o, f, i, fault, mode)
}

// campaignFigures fills the frame, CPU and latency figures once the
// campaign has stopped: the external fakes are stopped here, and report
// what they wrote.
func (b *bench) campaignFigures(drivers []*driver) error {
	res := b.res
	var frameBytes int64
	var times map[agytest.TextVersion]agytest.VersionTimes
	if b.ext != nil {
		var err error
		if res.Frames, frameBytes, times, err = b.ext.stop(); err != nil {
			return err
		}
	}
	var lat, streamLat, streamedLat, pollLat []time.Duration
	for _, d := range drivers {
		lat = append(lat, d.latencies.xs...)
		dt := times
		if d.srv != nil {
			fr, n := d.srv.FramesWritten()
			res.Frames += fr
			frameBytes += n
			dt = d.srv.TextTimes()
		}
		all, streamed := fakeLatencies(d, dt)
		if d.mode == actors.ReadPoll {
			pollLat = append(pollLat, all...)
		} else {
			streamLat = append(streamLat, all...)
			streamedLat = append(streamedLat, streamed...)
		}
	}
	res.perFrame(frameBytes)
	res.InternalLatencyP50Ms, res.InternalLatencyP99Ms, _ = percentiles(lat)
	res.LatencyP50Ms, res.LatencyP99Ms, res.LatencyMaxMs = percentiles(streamLat)
	res.LatencySamples = len(streamLat)
	res.StreamedLatencyP50Ms, res.StreamedLatencyP99Ms, _ = percentiles(streamedLat)
	res.StreamedLatencySamples = len(streamedLat)
	res.PollLatencyP50Ms, res.PollLatencyP99Ms, res.PollLatencyMaxMs = percentiles(pollLat)
	res.PollLatencySamples = len(pollLat)
	return nil
}

// startCPUProfile profiles this process into path until stop (which may be
// called more than once); with no path it does nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	return f.Close()
}
