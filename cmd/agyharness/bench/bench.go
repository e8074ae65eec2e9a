package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agyharness/agyharness/actors"
)

// The fault kinds --faults accepts.
const (
	FaultStreamDrop     = "stream-drop"
	FaultPortChurn      = "port-churn"
	Fault5xx            = "5xx"
	FaultSlow           = "slow"
	FaultPromptTimeout  = "prompt-timeout"
	FaultTruncatedFrame = "truncated-frame"
	FaultSlowConsumer   = "slow-consumer"
)

// AllFaults lists every fault kind, in the order sessions are assigned them.
var AllFaults = []string{FaultStreamDrop, FaultPortChurn, Fault5xx, FaultSlow, FaultPromptTimeout, FaultTruncatedFrame, FaultSlowConsumer}

// Options configure a campaign.
type Options struct {
	// Sessions is how many fakes (one session each) run at once.
	Sessions int
	// Duration is how long the drivers start new turns; the run then waits
	// for the last turns and the settle deadline.
	Duration time.Duration
	// Seed drives every random choice; fake i gets Seed+i.
	Seed int64
	// Faults are the fault kinds to inject (AllFaults names them); session i
	// gets Faults[i%len(Faults)], so every kind runs on its own sessions.
	Faults []string
	// ReadMode is the sessions' read mode ("" is actors' default, both).
	ReadMode actors.ReadMode
	// ChunkDelay is the fakes' pause between streamed changes. 0 means 2ms.
	ChunkDelay time.Duration
	// Settle bounds the wait, after the drivers stop, for the sessions'
	// events to catch up with the ground truth. 0 means 10s.
	Settle time.Duration
	// TurnTimeout bounds one turn, faults included, before it counts as
	// stuck. 0 means 30s.
	TurnTimeout time.Duration
	// IdleSessions, when > 0, measures heap and goroutines per idle session
	// by attaching that many extra sessions to idle fakes.
	IdleSessions int
	// IdleCPUWindow, with IdleSessions, is how long this process's CPU is
	// measured with the idle sessions attached and nothing else running
	// (cpu_us_per_idle_session_s); 0 skips it.
	IdleCPUWindow time.Duration
	// PollSessions of the Sessions read poll-only (the last ones), the
	// others ReadMode: their latency is reported apart (poll_latency_*).
	PollSessions int
	// TurnKinds are the kinds of turn the drivers draw from (turnKinds
	// when empty; "essay" is a long answer of ~7 KB streamed in 100 chunks).
	TurnKinds []string
	// ExternalFakes runs the fakes in a separate fakeagy process (--servers
	// N): this process's CPU and heap are then the harness's alone. Faults
	// and the ground-truth checks need the fakes in this process: with
	// external fakes Faults must be empty and the checks are skipped.
	ExternalFakes bool
	// Fakeagy is the fakeagy binary for ExternalFakes; "" builds it from
	// this module with the go command.
	Fakeagy string
	// FrameCost measures the cost of one frame as the trajectory grows
	// (frame_cost_ns, frame_cost_ratio_1000_vs_10).
	FrameCost bool
	// FrameCostFrames is how many frames each of the 3 rounds per length
	// applies. 0 means 20,000.
	FrameCostFrames int
	// DefaultIntervals runs the campaign's host with the actors' default
	// intervals (reconciling poll every 10s, poll-only every 200ms,
	// rotation check every 2s), as an embedder runs it, instead of the
	// millisecond intervals that let faults recover within a turn.
	DefaultIntervals bool
	// CPUProfile, when set, is a file that receives a pprof CPU profile of
	// this process over the campaign (not the idle or frame-cost parts).
	CPUProfile string
	// HeapProfile, when set, is a file that receives a pprof heap profile
	// taken with the idle sessions attached (IdleSessions > 0).
	HeapProfile string
	// HeapProfileEnd, when set, is a file that receives a pprof heap
	// profile taken when the drivers stop (what the campaign holds).
	HeapProfileEnd string
	// Floor, with ExternalFakes, runs no harness: each fake's stream is read
	// and decoded by the rpc package alone and dropped, and essay turns are
	// sent one after another (floor.go). Its CPU per frame is the floor
	// under a campaign's in the same scenario. Needs no poll-only or idle
	// sessions and no turn kinds other than essay; nothing is checked.
	Floor bool
	// FloorRaw, with Floor, does not decode the frames: each is taken off
	// its stream as bytes (rpc.Stream.NextRaw), and only the run status is
	// looked for in them, so the figure is the transport's alone (TLS,
	// HTTP/2, the envelopes, the system calls and the wake-ups).
	FloorRaw bool
	// Logger receives the host's and the campaign's logs; nil discards.
	Logger *slog.Logger
	// Cluster, when > 0, runs the campaign on that many serve processes
	// joined in a cluster (cluster.go); ClusterLocal drives each session
	// through its own node instead of another; Harness is the agyharness
	// binary to run them (default: this executable). The nodes run
	// remote over mutual TLS with certificates from `agyharness cluster
	// certs`; ClusterNoTLS runs them --insecure-cluster-no-auth instead,
	// to compare.
	Cluster      int
	ClusterLocal bool
	ClusterNoTLS bool
	Harness      string
	// StatusList, when set, runs only the measurement of what the length
	// of agy's conversation list costs (statuslist.go): counts of listed
	// conversations (ascending, at least 2), Sessions fakes at each, in
	// fakeagy processes; IdleCPUWindow and Duration are its windows,
	// ChunkDelay the essays'. StatusListPairs is how many alternated
	// rounds each count gets (0 means 2).
	StatusList      []int
	StatusListPairs int
	// ClusterProfile, when set, is a directory that receives each node's
	// CPU profile (nN.cpu.pprof, serve --cpuprofile) and log (nN.log, at
	// AGYHARNESS_LOG's level, warn by default), and the bench process's
	// own profile (bench.cpu.pprof).
	ClusterProfile string
	// ClusterTrace adds each node's Go execution trace (nN.trace, serve
	// --trace) to ClusterProfile's directory.
	ClusterTrace bool
	// LongSessions, when > 0, runs no campaign: that many sessions on
	// external fakes whose conversations start with HistorySteps finished
	// steps, each sent TurnsPerSession text turns one after another, then
	// reports heap_bytes_per_active_session (longsessions.go). Needs no
	// faults.
	LongSessions    int
	HistorySteps    int
	TurnsPerSession int
}

// Result is a campaign's figures, printed by --json.
type Result struct {
	Seed               int64   `json:"seed"`
	Sessions           int     `json:"sessions"`
	DurationS          float64 `json:"duration_s"`
	ReadMode           string  `json:"read_mode"`
	Turns              int     `json:"turns"`
	TurnsFailedClearly int     `json:"turns_failed_clearly"`
	// TurnsNotTaken: turns agy accepted and then dropped (an interrupt
	// cancelled the run they were queued behind), each reported by an
	// error of code turn_not_taken; TurnsNotTakenWrongly: those reported
	// that agy did take (counted in Failed).
	TurnsNotTaken        int `json:"turns_not_taken"`
	TurnsNotTakenWrongly int `json:"turns_not_taken_wrongly"`
	Interrupts           int `json:"interrupts"`
	// agy's live behaviours the campaign drew from (beyond those every fake
	// has: prompts parked without a frame, cancels that spare WAITING
	// prompts): interrupts while agy waited on a prompt, questions
	// declined, sessions on a fresh agy (first turn typed), sessions whose
	// fake answers at most a few steps per read.
	PromptInterrupts  int `json:"prompt_interrupts"`
	QuestionsDeclined int `json:"questions_declined"`
	ColdStarts        int `json:"cold_starts"`
	// AgyErrors: ERROR_MESSAGE steps agy wrote (quota turns), each to be
	// an error event with a code; Rewinds: RevertToCascadeStep calls agy
	// took, each to be a conversation_rewound.
	AgyErrors         int `json:"agy_errors"`
	Rewinds           int `json:"rewinds"`
	RewindsUnreported int `json:"rewinds_unreported"` // rewinds without a conversation_rewound, or the other way round
	Wakes             int `json:"wakes"`              // runs nobody typed (a background task's wake) the sessions reported
	WindowedSessions  int `json:"windowed_sessions"`
	ItemsExpected     int `json:"items_expected"`
	ItemsEmitted      int `json:"items_emitted"`
	Lost              int `json:"lost"`
	// Thinking: planner steps with thinking in the ground truth;
	// ThinkingLost: those whose reasoning deltas do not add up to it
	// (counted in Failed, apart from Lost's items).
	Thinking             int `json:"thinking"`
	ThinkingLost         int `json:"thinking_lost"`
	Duplicated           int `json:"duplicated"`
	OutOfOrder           int `json:"out_of_order"`
	SeqErrors            int `json:"seq_errors"`
	Prompts              int `json:"prompts"`
	PromptsMisdelivered  int `json:"prompts_misdelivered"`
	PromptsFailedClearly int `json:"prompts_failed_clearly"`
	PromptsUnresolved    int `json:"prompts_unresolved"`
	// PromptsLeftToAgy are prompts only agy's terminal answers (kind
	// other), left unanswered and withdrawn when agy moved on, as they must.
	PromptsLeftToAgy int            `json:"prompts_left_to_agy"`
	StuckTurns       int            `json:"stuck_turns"`
	FaultsInjected   map[string]int `json:"faults_injected"`
	Restarts         map[string]int `json:"restarts"`
	Rebinds          int            `json:"rebinds"`
	GoroutinesBefore int            `json:"goroutines_before"`
	GoroutinesAfter  int            `json:"goroutines_after"`
	Events           int            `json:"events"`
	// ExternalFakes: the fakes ran in a fakeagy process; GroundTruthChecked
	// is false then (lost, out_of_order and prompt checks did not run).
	ExternalFakes bool `json:"external_fakes"`
	// Floor: no harness ran (Options.Floor); Events counts the frames the
	// bare readers took off their streams.
	Floor              bool `json:"floor,omitempty"`
	FloorRaw           bool `json:"floor_raw,omitempty"` // the frames were not decoded (Options.FloorRaw)
	GroundTruthChecked bool `json:"ground_truth_checked"`
	PollSessions       int  `json:"poll_sessions"`
	// Latency from the fake to the consumer, on text deltas (see
	// docs/PERFORMANCE.md): streaming sessions from the frame's write,
	// poll-only sessions from the step's change.
	LatencyP50Ms   float64 `json:"latency_p50_ms"`
	LatencyP99Ms   float64 `json:"latency_p99_ms"`
	LatencyMaxMs   float64 `json:"latency_max_ms"`
	LatencySamples int     `json:"latency_samples"`
	// StreamedLatency is Latency of the streaming sessions' deltas whose
	// text version the fake wrote on the stream (Latency also counts those a
	// read delivered first, from the step's change).
	StreamedLatencyP50Ms   float64 `json:"streamed_latency_p50_ms"`
	StreamedLatencyP99Ms   float64 `json:"streamed_latency_p99_ms"`
	StreamedLatencySamples int     `json:"streamed_latency_samples"`
	PollLatencyP50Ms       float64 `json:"poll_latency_p50_ms"`
	PollLatencyP99Ms       float64 `json:"poll_latency_p99_ms"`
	PollLatencyMaxMs       float64 `json:"poll_latency_max_ms"`
	PollLatencySamples     int     `json:"poll_latency_samples"`
	// InternalLatency is arrival minus the event's Time (when the harness
	// read the frame): the harness's own share, every event, every session.
	InternalLatencyP50Ms float64 `json:"internal_latency_p50_ms"`
	InternalLatencyP99Ms float64 `json:"internal_latency_p99_ms"`
	// Frames are the stream data frames the fakes wrote during the campaign.
	Frames        int64   `json:"frames"`
	FrameBytesAvg float64 `json:"frame_bytes_avg"`
	// FramesPerS is Frames over DriveS.
	FramesPerS float64 `json:"frames_per_s"`
	// HarnessCPUS is this process's CPU over the whole campaign: attaching
	// every session (TLS handshakes, discovery, first reads), driving,
	// settling and shutting down.
	HarnessCPUS float64 `json:"harness_cpu_s"`
	// DriveS and DriveCPUS are the time and this process's CPU from the
	// moment every session was attached to the end of the drivers' last
	// turn: while the fakes stream. The per-frame and per-event figures
	// divide DriveCPUS.
	DriveS    float64 `json:"drive_s"`
	DriveCPUS float64 `json:"drive_cpu_s"`
	// DriveSysCPUS is the kernel's part of DriveCPUS, and DriveMinorFaults
	// the page faults this process took over the same time (fresh memory
	// the kernel had to map): where a frame's CPU goes besides Go code.
	DriveSysCPUS     float64 `json:"drive_sys_cpu_s"`
	DriveMinorFaults int64   `json:"drive_minor_faults"`
	// CPUIncludesFakes: the fakes ran in this process, so the CPU figures
	// include theirs (upper bounds).
	CPUIncludesFakes bool    `json:"cpu_includes_fakes"`
	CPUUsPerFrame    float64 `json:"cpu_us_per_frame"`
	CPUUsPerEvent    float64 `json:"cpu_us_per_event"`
	// CPUUsPerIdleSessionS is this process's CPU over IdleCPUWindow, per
	// idle session and second: what an attached session costs while agy
	// does nothing (its background reads and timers).
	CPUUsPerIdleSessionS *float64           `json:"cpu_us_per_idle_session_s,omitempty"`
	HeapBytesPerIdle     *float64           `json:"heap_bytes_per_idle_session,omitempty"`
	GoroutinesPerIdle    *float64           `json:"goroutines_per_idle_session,omitempty"`
	FrameCostNs          map[string]float64 `json:"frame_cost_ns,omitempty"`
	FrameCostRatio       *float64           `json:"frame_cost_ratio_1000_vs_10,omitempty"`
	Problems             []string           `json:"problems,omitempty"`
	Cluster              *ClusterFigures    `json:"cluster,omitempty"`
	// HeapPeakBytes and HeapEndBytes are this process's heap in use over
	// the campaign: the highest sampled while the drivers run (garbage
	// not yet collected included), and after a GC when they stop (the
	// sessions still attached). HeapLivePeakBytes is the highest that a
	// collection found live while they ran: what a heap profile counts.
	// They include the fakes' when the fakes run in this process
	// (CPUIncludesFakes).
	HeapPeakBytes     uint64 `json:"heap_peak_bytes,omitempty"`
	HeapLivePeakBytes uint64 `json:"heap_live_peak_bytes,omitempty"`
	HeapEndBytes      uint64 `json:"heap_end_bytes,omitempty"`
	// HeapBytesPerActiveSession is a long-sessions run's figure
	// (Options.LongSessions), on conversations of HistorySteps steps
	// before TurnsPerSession turns.
	HeapBytesPerActiveSession *float64 `json:"heap_bytes_per_active_session,omitempty"`
	HistorySteps              int      `json:"history_steps,omitempty"`
	TurnsPerSession           int      `json:"turns_per_session,omitempty"`
	problemsDropped           int
	// The figures of --status-list (statuslist.go): µs of CPU per session
	// per second at each count of listed conversations, idle and
	// streaming, and the median over alternated pairs of the largest
	// count's over the smallest's.
	StatusListCPUUs             map[string]*StatusListCPU `json:"status_list_cpu_us_per_session_s,omitempty"`
	StatusListCPURatioIdle      *float64                  `json:"status_list_cpu_ratio_idle,omitempty"`
	StatusListCPURatioStreaming *float64                  `json:"status_list_cpu_ratio_streaming,omitempty"`
}

// Failed says whether the campaign found a fault in the harness: anything
// lost (thinking too), doubled, out of order or misdelivered, unresolved or stuck, a turn
// reported not taken that agy took, or a
// goroutine leak; in a floor run, any problem (a reader that failed).
func (r *Result) Failed() bool {
	return r.Floor && len(r.Problems) > 0 ||
		r.Lost > 0 || r.ThinkingLost > 0 || r.Duplicated > 0 || r.OutOfOrder > 0 || r.SeqErrors > 0 ||
		r.PromptsMisdelivered > 0 || r.PromptsUnresolved > 0 || r.StuckTurns > 0 || r.RewindsUnreported > 0 ||
		r.TurnsNotTakenWrongly > 0 ||
		r.GoroutinesAfter > r.GoroutinesBefore
}

// driveAll runs every driver's turns for d from now, side by side, and
// records the driving window in r (driven).
func (r *Result) driveAll(ctx context.Context, drivers []*driver, d time.Duration) {
	start, before := time.Now(), usage()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for _, dr := range drivers {
		wg.Go(func() { dr.drive(ctx, deadline) })
	}
	wg.Wait()
	r.driven(start, before)
}

// driven records the driving window that began at start with the
// process's usage before: its time, CPU, kernel CPU and page faults.
func (r *Result) driven(start time.Time, before resources) {
	r.DriveS = time.Since(start).Seconds()
	end := usage()
	r.DriveCPUS = (end.cpu - before.cpu).Seconds()
	r.DriveSysCPUS = (end.sys - before.sys).Seconds()
	r.DriveMinorFaults = end.minflt - before.minflt
}

// perFrame fills the figures derived from Frames, Events and the driving
// window; frameBytes is the frames' payload in all.
func (r *Result) perFrame(frameBytes int64) {
	if r.Frames > 0 {
		r.FrameBytesAvg = float64(frameBytes) / float64(r.Frames)
		r.CPUUsPerFrame = r.DriveCPUS * 1e6 / float64(r.Frames)
		r.FramesPerS = float64(r.Frames) / r.DriveS
	}
	if r.Events > 0 {
		r.CPUUsPerEvent = r.DriveCPUS * 1e6 / float64(r.Events)
	}
}

// maxProblems bounds Problems so a broken run still prints a readable report.
const maxProblems = 50

func (r *Result) problem(format string, args ...any) {
	if len(r.Problems) >= maxProblems {
		r.problemsDropped++
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

func (o Options) normalized() (Options, error) {
	if err := o.longChecked(); err != nil {
		return o, err
	}
	if o.Sessions <= 0 && o.LongSessions == 0 {
		return o, fmt.Errorf("bench: --sessions must be positive, got %d", o.Sessions)
	}
	if o.Duration <= 0 {
		return o, fmt.Errorf("bench: --duration must be positive, got %s", o.Duration)
	}
	for _, f := range o.Faults {
		if !slices.Contains(AllFaults, f) {
			return o, fmt.Errorf("bench: unknown fault %q (known: %s)", f, strings.Join(AllFaults, ", "))
		}
	}
	if _, err := actors.ParseReadMode(string(o.ReadMode)); err != nil && o.ReadMode != "" {
		return o, fmt.Errorf("bench: %w", err)
	}
	if o.PollSessions < 0 || o.PollSessions > o.Sessions {
		return o, fmt.Errorf("bench: --poll-sessions must be between 0 and --sessions (%d), got %d", o.Sessions, o.PollSessions)
	}
	if o.IdleSessions < 0 {
		return o, fmt.Errorf("bench: --idle-sessions must not be negative, got %d", o.IdleSessions)
	}
	if o.IdleCPUWindow < 0 {
		return o, fmt.Errorf("bench: --idle-cpu-window must not be negative, got %s", o.IdleCPUWindow)
	}
	for _, k := range o.TurnKinds {
		if !slices.Contains(allTurnKinds, k) {
			return o, fmt.Errorf("bench: unknown turn kind %q (known: %s)", k, strings.Join(allTurnKinds, ", "))
		}
	}
	if o.ExternalFakes && len(o.Faults) > 0 {
		return o, fmt.Errorf("bench: --external-fakes needs --faults none (faults are injected into in-process fakes)")
	}
	if o.FloorRaw && !o.Floor {
		return o, errors.New("bench: --floor-raw needs --floor")
	}
	if o.Floor {
		if !o.ExternalFakes {
			return o, errors.New("bench: --floor needs --external-fakes (the floor is this process's CPU alone)")
		}
		if o.PollSessions > 0 || o.IdleSessions > 0 {
			return o, errors.New("bench: --floor reads streams only: no --poll-sessions or --idle-sessions")
		}
		if len(o.TurnKinds) > 0 && !slices.Equal(o.TurnKinds, []string{"essay"}) {
			return o, errors.New("bench: --floor sends essay turns only")
		}
	}
	if len(o.StatusList) > 0 {
		ascending := len(o.StatusList) >= 2 && o.StatusList[0] >= 1
		for i := 1; i < len(o.StatusList); i++ {
			ascending = ascending && o.StatusList[i] > o.StatusList[i-1]
		}
		if !ascending {
			return o, fmt.Errorf("bench: --status-list needs two or more ascending counts of at least 1, got %v", o.StatusList)
		}
		if len(o.Faults) > 0 || o.Cluster > 0 || o.Floor || o.IdleCPUWindow <= 0 || o.StatusListPairs < 0 {
			return o, errors.New("bench: --status-list needs --faults none, a positive --idle-cpu-window, no --cluster or --floor, and --status-list-pairs of at least 0")
		}
	}
	if o.ChunkDelay == 0 {
		o.ChunkDelay = 2 * time.Millisecond
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = 30 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// hostConfig runs the host's intervals in milliseconds, so faults are
// noticed and recovered from within a turn.
func hostConfig(log *slog.Logger) actors.Config {
	return actors.Config{
		Logger:              log,
		PollFast:            20 * time.Millisecond,
		PollSlow:            500 * time.Millisecond,
		RotationInterval:    100 * time.Millisecond,
		SubagentPoll:        20 * time.Millisecond,
		DiscoveryBackoffMin: 10 * time.Millisecond,
		DiscoveryBackoffMax: 200 * time.Millisecond,
		LostAfter:           2 * time.Second,
		GiveUpAfter:         30 * time.Second,
		RestartBackoffMin:   10 * time.Millisecond,
		RestartBackoffMax:   200 * time.Millisecond,
		InterruptDeadline:   5 * time.Second,
		PromptRetryWait:     5 * time.Second,
		TurnTakenTimeout:    2 * time.Second,
	}
}

// campaignHostConfig is the campaign host's configuration: the fast
// intervals of hostConfig, or the actors' defaults with DefaultIntervals.
func campaignHostConfig(o Options) actors.Config {
	if o.DefaultIntervals {
		return actors.Config{Logger: o.Logger}
	}
	return hostConfig(o.Logger)
}

// agyLogPath is where fake i writes agy's log, for sessions that must find
// agy again after it moves ("" for the others).
func agyLogPath(dir, fault string, i int) string {
	if fault != FaultPortChurn {
		return ""
	}
	return filepath.Join(dir, fmt.Sprintf("agy-%d.log", i))
}

// settleGoroutines waits, up to limit, for the goroutine count to fall back
// to before (HTTP transports and timers end asynchronously), and returns
// the last count.
func settleGoroutines(before int, limit time.Duration) int {
	deadline := time.Now().Add(limit)
	for {
		n := runtime.NumGoroutine()
		if n <= before || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cpuTime is the whole process's user+system CPU time (the fakes' too
// unless they are external).
func cpuTime() time.Duration { return usage().cpu }

// resources is what getrusage says of this process so far.
type resources struct {
	cpu, sys time.Duration // user+system CPU, and system CPU alone
	minflt   int64         // minor page faults
}

func usage() resources {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return resources{}
	}
	return resources{
		cpu:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		sys:    time.Duration(ru.Stime.Nano()),
		minflt: ru.Minflt,
	}
}

func percentiles(d []time.Duration) (p50, p99, max float64) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return ms(d[len(d)*50/100]), ms(d[len(d)*99/100]), ms(d[len(d)-1])
}

func heapNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// newRand is the campaign's seeded source for one session.
func newRand(seed int64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
}

// Main is `agyharness bench`: it parses args, runs the campaign and prints
// its figures (one JSON object with --json). It returns the exit status: 0
// when nothing was lost, doubled, out of order or misdelivered and no
// goroutine leaked, 1 when the campaign found a fault, 2 on bad usage.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, asJSON, err := parseArgs(args, stdout)
	if err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "agyharness bench:", err)
		return 2
	}
	// The seed is printed first so that a run that hangs or crashes can
	// still be reproduced.
	if o.LongSessions > 0 {
		fmt.Fprintf(stderr, "agyharness bench: seed %d, %d long sessions, %d turns each on %d history steps\n",
			o.Seed, o.LongSessions, o.TurnsPerSession, o.HistorySteps)
	} else {
		fmt.Fprintf(stderr, "agyharness bench: seed %d, %d sessions, %s, faults %s\n",
			o.Seed, o.Sessions, o.Duration, strings.Join(o.Faults, ","))
	}
	res, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "agyharness bench:", err)
		return 2
	}
	if err := report(stdout, res, asJSON); err != nil {
		fmt.Fprintln(stderr, "agyharness bench:", err)
		return 2
	}
	if res.Failed() {
		fmt.Fprintf(stderr, "agyharness bench: FAILED (seed %d): rerun with --seed %d\n", res.Seed, res.Seed)
		return 1
	}
	return 0
}
