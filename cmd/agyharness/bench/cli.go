package bench

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agyharness/agyharness/actors"
)

var errHelp = errors.New("help requested")

// usageExample is the example --help prints.
const usageExample = "agyharness bench --sessions 220 --poll-sessions 20 --duration 20s --faults none --turn-kinds essay --chunk-delay 200ms --default-intervals --external-fakes --idle-sessions 1000 --json"

// parseArgs reads bench's flags into Options. --help prints the usage on
// stdout; a bad flag is the error returned (Main reports it, once).
func parseArgs(args []string, stdout io.Writer) (Options, bool, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // errors are reported by the caller; --help below
	var o Options
	var faults, mode, kinds string
	var asJSON bool
	fs.IntVar(&o.Sessions, "sessions", 50, "fake language servers, one session each")
	fs.DurationVar(&o.Duration, "duration", 20*time.Second, "how long drivers start new turns")
	fs.Int64Var(&o.Seed, "seed", time.Now().UnixNano()%1_000_000, "seed of every random choice (printed; reuse it to reproduce a run)")
	fs.StringVar(&faults, "faults", strings.Join(AllFaults, ","), "comma list of faults ("+strings.Join(AllFaults, ", ")+"; \"\" or none for none)")
	fs.StringVar(&mode, "read-mode", "both", "how sessions read agy: stream, poll or both")
	fs.DurationVar(&o.ChunkDelay, "chunk-delay", 2*time.Millisecond, "the fakes' pause between streamed changes")
	fs.IntVar(&o.IdleSessions, "idle-sessions", 0, "also attach this many idle sessions to measure heap, goroutines and CPU per idle session")
	fs.DurationVar(&o.IdleCPUWindow, "idle-cpu-window", 10*time.Second, "with --idle-sessions, how long the idle sessions' CPU is measured (0 skips it)")
	fs.IntVar(&o.PollSessions, "poll-sessions", 0, "this many of the sessions (the last ones) read poll-only; their latency is reported as poll_latency_*")
	fs.StringVar(&kinds, "turn-kinds", "", "comma list of turn kinds the drivers send ("+strings.Join(allTurnKinds, ", ")+"; default all but essay)")
	fs.BoolVar(&o.ExternalFakes, "external-fakes", false, "run the fakes in a separate fakeagy process (needs --faults none; skips the ground-truth checks)")
	fs.StringVar(&o.Fakeagy, "fakeagy", "", "fakeagy binary for --external-fakes (default: go build it)")
	fs.StringVar(&o.HeapProfile, "heapprofile", "", "write a pprof heap profile, taken with the idle sessions attached, to this file")
	fs.StringVar(&o.HeapProfileEnd, "heapprofile-end", "", "write a pprof heap profile, taken when the drivers stop, to this file")
	fs.IntVar(&o.FrameCostFrames, "frame-cost-frames", 20_000, "frames per round of the frame-cost measurement")
	fs.BoolVar(&o.DefaultIntervals, "default-intervals", false, "run the host with the actors' default poll and rotation intervals (for performance runs) instead of the campaign's millisecond ones")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a pprof CPU profile of the campaign to this file")
	fs.BoolVar(&o.FrameCost, "frame-cost", true, "measure one frame's cost at 10, 100 and 1,000 prior steps (a few seconds)")
	fs.BoolVar(&o.Floor, "floor", false, "run no harness: read and decode the fakes' streams with the rpc package alone, to measure the floor under the harness's CPU per frame (needs --external-fakes)")
	fs.BoolVar(&o.FloorRaw, "floor-raw", false, "with --floor: take the frames off the streams undecoded, to measure the transport alone")
	fs.IntVar(&o.Cluster, "cluster", 0, "run the sessions on this many serve processes joined in a cluster, each session driven through a node other than its own (needs --faults none)")
	fs.BoolVar(&o.ClusterLocal, "cluster-local", false, "with --cluster, drive each session through its own node (the local figures beside the cross-node ones)")
	fs.BoolVar(&o.ClusterNoTLS, "cluster-no-tls", false, "with --cluster, run the nodes without mutual TLS (--insecure-cluster-no-auth), to compare")
	fs.StringVar(&o.ClusterProfile, "cluster-profile", "", "with --cluster, write each node's CPU profile and log, this process's profile and every delta's latency (latency.csv) into this directory")
	fs.BoolVar(&o.ClusterTrace, "cluster-trace", false, "with --cluster-profile, also write each node's Go execution trace there (nN.trace, for go tool trace)")
	fs.StringVar(&o.Harness, "harness", "", "with --cluster, the agyharness binary to run the nodes (default: this one)")
	fs.IntVar(&o.LongSessions, "long-sessions", 0, "run no campaign: this many sessions on external fakes, each sent --turns-per-session text turns on a conversation of --history-steps steps, and report the heap per active session (needs --faults none)")
	fs.IntVar(&o.HistorySteps, "history-steps", 0, "with --long-sessions, the finished steps each conversation starts with")
	fs.IntVar(&o.TurnsPerSession, "turns-per-session", 1000, "with --long-sessions, the text turns each session is sent")
	var statusList string
	fs.StringVar(&statusList, "status-list", "", "measure only what agy's conversation list costs: comma list of counts of listed conversations (e.g. 10,1000), --sessions fakes each, CPU per session per second idle (--idle-cpu-window) and streaming essays (--duration)")
	fs.IntVar(&o.StatusListPairs, "status-list-pairs", 2, "with --status-list, how many alternated rounds each count gets")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: agyharness bench [flags]\n\nRuns the fault campaign and measures performance (docs/RELIABILITY.md, docs/PERFORMANCE.md).\n\nFlags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			fmt.Fprintf(stdout, "\nExample:\n  %s\n", usageExample)
			return o, false, errHelp
		}
		return o, false, err
	}
	if fs.NArg() > 0 {
		return o, false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if faults != "" && faults != "none" {
		for _, f := range strings.Split(faults, ",") {
			if f = strings.TrimSpace(f); f != "" {
				o.Faults = append(o.Faults, f)
			}
		}
	}
	for _, k := range strings.Split(kinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			o.TurnKinds = append(o.TurnKinds, k)
		}
	}
	for _, c := range strings.Split(statusList, ",") {
		if c = strings.TrimSpace(c); c != "" {
			n, err := strconv.Atoi(c)
			if err != nil {
				return o, false, fmt.Errorf("--status-list: %q is not a count", c)
			}
			o.StatusList = append(o.StatusList, n)
		}
	}
	o.ReadMode = actors.ReadMode(mode)
	_, err := o.normalized()
	return o, asJSON, err
}

// report prints the result: one JSON object, or a few readable lines.
func report(w io.Writer, r *Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d sessions, %d turns (%d accepted and dropped by agy, reported; %d of those wrongly), %d interrupts in %.1fs (read mode %s)\n",
		r.Seed, r.Sessions, r.Turns, r.TurnsNotTaken, r.TurnsNotTakenWrongly, r.Interrupts, r.DurationS, r.ReadMode)
	fmt.Fprintf(&b, "items: %d expected, %d emitted; lost %d, duplicated %d, out of order %d, seq errors %d; thinking of %d steps, %d lost\n",
		r.ItemsExpected, r.ItemsEmitted, r.Lost, r.Duplicated, r.OutOfOrder, r.SeqErrors, r.Thinking, r.ThinkingLost)
	fmt.Fprintf(&b, "prompts: %d; misdelivered %d, failed clearly %d, unresolved %d, left to agy %d; stuck turns %d\n", r.Prompts, r.PromptsMisdelivered, r.PromptsFailedClearly, r.PromptsUnresolved, r.PromptsLeftToAgy, r.StuckTurns)
	fmt.Fprintf(&b, "faults injected: %s; restarts: %s; rebinds %d\n", kv(r.FaultsInjected), kv(r.Restarts), r.Rebinds)
	fmt.Fprintf(&b, "goroutines: %d before, %d after\n", r.GoroutinesBefore, r.GoroutinesAfter)
	fakes := "external fakes: ground truth not checked"
	if !r.ExternalFakes {
		fakes = "fakes in this process: CPU includes theirs"
	}
	fmt.Fprintf(&b, "events %d, frames %d (%.0f B avg, %.0f/s); %s\n", r.Events, r.Frames, r.FrameBytesAvg, r.FramesPerS, fakes)
	fmt.Fprintf(&b, "latency fake->consumer: stream p50 %.3fms p99 %.3fms max %.3fms (%d deltas; those streamed first p50 %.3fms p99 %.3fms, %d); poll-only p50 %.3fms p99 %.3fms (%d deltas)\n",
		r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs, r.LatencySamples, r.StreamedLatencyP50Ms, r.StreamedLatencyP99Ms, r.StreamedLatencySamples,
		r.PollLatencyP50Ms, r.PollLatencyP99Ms, r.PollLatencySamples)
	fmt.Fprintf(&b, "cpu %.2fs (%.2fs while driving, %.2fs of it in the kernel, %d page faults): %.1fµs/frame, %.1fµs/event\n",
		r.HarnessCPUS, r.DriveCPUS, r.DriveSysCPUS, r.DriveMinorFaults, r.CPUUsPerFrame, r.CPUUsPerEvent)
	if r.FrameCostRatio != nil {
		fmt.Fprintf(&b, "frame cost: %.0fns at 10 steps, %.0fns at 100, %.0fns at 1000 (ratio %.2f)\n", r.FrameCostNs["10"], r.FrameCostNs["100"], r.FrameCostNs["1000"], *r.FrameCostRatio)
	}
	if r.HeapBytesPerIdle != nil {
		fmt.Fprintf(&b, "idle session: %.0f heap bytes, %.1f goroutines\n", *r.HeapBytesPerIdle, *r.GoroutinesPerIdle)
	}
	if r.HeapPeakBytes > 0 {
		fmt.Fprintf(&b, "heap: %d bytes peak (%d live), %d at the end\n", r.HeapPeakBytes, r.HeapLivePeakBytes, r.HeapEndBytes)
	}
	if r.HeapBytesPerActiveSession != nil {
		fmt.Fprintf(&b, "active session: %.0f heap bytes after %d turns on %d history steps\n", *r.HeapBytesPerActiveSession, r.TurnsPerSession, r.HistorySteps)
	}
	if r.CPUUsPerIdleSessionS != nil {
		fmt.Fprintf(&b, "idle session: %.1fµs CPU per second\n", *r.CPUUsPerIdleSessionS)
	}
	if r.StatusListCPURatioIdle != nil {
		for _, n := range slices.SortedFunc(maps.Keys(r.StatusListCPUUs), func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y }) {
			c := r.StatusListCPUUs[n]
			fmt.Fprintf(&b, "%s listed conversations: %.1fµs CPU per session per second idle, %.1fµs streaming (medians)\n", n, c.IdleMedian, c.StreamingMedian)
		}
		fmt.Fprintf(&b, "status list CPU ratio, largest count over smallest: idle %.2f, streaming %.2f\n", *r.StatusListCPURatioIdle, *r.StatusListCPURatioStreaming)
	}
	reportCluster(&b, r.Cluster)
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "PROBLEM %s\n", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func kv(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
