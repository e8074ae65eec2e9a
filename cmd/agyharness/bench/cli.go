package bench

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agyharness/agyharness/actors"
)

var errHelp = errors.New("help requested")

// parseArgs reads bench's flags into Options.
func parseArgs(args []string, stderr io.Writer) (Options, bool, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	var faults, mode string
	var asJSON bool
	fs.IntVar(&o.Sessions, "sessions", 50, "fake language servers, one session each")
	fs.DurationVar(&o.Duration, "duration", 20*time.Second, "how long drivers start new turns")
	fs.Int64Var(&o.Seed, "seed", time.Now().UnixNano()%1_000_000, "seed of every random choice (printed; reuse it to reproduce a run)")
	fs.StringVar(&faults, "faults", strings.Join(AllFaults, ","), "comma list of faults ("+strings.Join(AllFaults, ", ")+"; \"\" or none for none)")
	fs.StringVar(&mode, "read-mode", "both", "how sessions read agy: stream, poll or both")
	fs.DurationVar(&o.ChunkDelay, "chunk-delay", 2*time.Millisecond, "the fakes' pause between streamed changes")
	fs.IntVar(&o.IdleSessions, "idle-sessions", 0, "also attach this many idle sessions to measure heap and goroutines per idle session")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
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
	fmt.Fprintf(&b, "seed %d: %d sessions, %d turns, %d interrupts in %.1fs (read mode %s)\n", r.Seed, r.Sessions, r.Turns, r.Interrupts, r.DurationS, r.ReadMode)
	fmt.Fprintf(&b, "items: %d expected, %d emitted; lost %d, duplicated %d, out of order %d, seq errors %d\n", r.ItemsExpected, r.ItemsEmitted, r.Lost, r.Duplicated, r.OutOfOrder, r.SeqErrors)
	fmt.Fprintf(&b, "prompts: %d; misdelivered %d, failed clearly %d, unresolved %d; stuck turns %d\n", r.Prompts, r.PromptsMisdelivered, r.PromptsFailedClearly, r.PromptsUnresolved, r.StuckTurns)
	fmt.Fprintf(&b, "faults injected: %s; restarts: %s; rebinds %d\n", kv(r.FaultsInjected), kv(r.Restarts), r.Rebinds)
	fmt.Fprintf(&b, "goroutines: %d before, %d after\n", r.GoroutinesBefore, r.GoroutinesAfter)
	fmt.Fprintf(&b, "events %d; latency p50 %.3fms p99 %.3fms max %.3fms; process cpu %.2fs (%.1fµs/event, fakes included)\n", r.Events, r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs, r.HarnessCPUS, r.CPUUsPerEvent)
	if r.HeapBytesPerIdle != nil {
		fmt.Fprintf(&b, "idle session: %.0f heap bytes, %.1f goroutines\n", *r.HeapBytesPerIdle, *r.GoroutinesPerIdle)
	}
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
