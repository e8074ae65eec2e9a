package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// reportCluster adds a cluster campaign's lines to the readable report.
func reportCluster(b *strings.Builder, c *ClusterFigures) {
	if c == nil {
		return
	}
	fmt.Fprintf(b, "cluster: %d nodes (%s), driven %s; event latency is the stream latency above\n", c.Nodes, c.ProviderDescription, c.Route)
	fmt.Fprintf(b, "cluster commands: p50 %.1fms p99 %.1fms (%d); p99 turns %.1fms, answers %.1fms, interrupts %.1fms\n",
		c.CommandLatencyP50Ms, c.CommandLatencyP99Ms, c.CommandSamples, c.TurnLatencyP99Ms, c.ResolveLatencyP99Ms, c.InterruptLatencyP99Ms)
	fmt.Fprintf(b, "cluster nodes: %.2fs CPU driving, %.1fµs/event; largest RSS %.0f MiB; create p99 %.1fms; list %.1fms (%d sessions); %d errors in logs\n",
		c.NodesDriveCPUS, c.NodesCPUUsPerEvent, c.NodeMaxRSSMiB, c.CreateLatencyP99Ms, c.ListLatencyMs, c.ListedSessions, c.NodeProblemsInLogs)
}

// commandKind names a driver command by its path: turn, resolve or
// interrupt.
func commandKind(path string) string {
	switch {
	case strings.HasSuffix(path, "/turns"):
		return "turn"
	case strings.HasSuffix(path, "/resolve"):
		return "resolve"
	case strings.HasSuffix(path, "/interrupt"):
		return "interrupt"
	}
	return "other"
}

// profileArgs are serve's flags for node name's CPU profile in dir, and
// with trace its execution trace (none without a dir).
func profileArgs(dir, name string, trace bool) []string {
	if dir == "" {
		return nil
	}
	args := []string{"--cpuprofile", filepath.Join(dir, name+".cpu.pprof")}
	if trace {
		args = append(args, "--trace", filepath.Join(dir, name+".trace"))
	}
	return args
}

// nodeLogLevel is the nodes' AGYHARNESS_LOG: warn, or with a profile
// directory this process's own AGYHARNESS_LOG when set.
func nodeLogLevel(profileDir string) string {
	if l := os.Getenv("AGYHARNESS_LOG"); profileDir != "" && l != "" {
		return l
	}
	return "warn"
}

// nodeLog is what the campaign reads of a node's log: its stderr, copied
// to dir/NAME.log when dir is set.
func nodeLog(dir, name string, stderr io.Reader) (io.Reader, error) {
	if dir == "" {
		return stderr, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("bench: --cluster-profile: %w", err)
	}
	return &teeFile{r: stderr, f: f}, nil
}

// teeFile copies what is read from r to f, and closes f at r's end.
type teeFile struct {
	r io.Reader
	f *os.File
}

func (t *teeFile) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		_, _ = t.f.Write(p[:n])
	}
	if err != nil {
		_ = t.f.Close()
	}
	return n, err
}

// writeLatencies writes every text delta's fake-to-client latency, with
// its session and arrival (ms since start), to dir/latency.csv.
func writeLatencies(dir string, drivers []*driver, start time.Time) error {
	var b strings.Builder
	b.WriteString("session,at_ms,latency_ms\n")
	for _, d := range drivers {
		times := d.srv.TextTimes()
		d.mu.Lock()
		for _, da := range d.deltas.xs {
			vt, ok := times[da.v]
			if !ok || vt.Written.IsZero() || da.at.Before(vt.Written) {
				continue
			}
			fmt.Fprintf(&b, "%d,%.1f,%.3f\n", d.i, float64(da.at.Sub(start).Microseconds())/1000, float64(da.at.Sub(vt.Written).Microseconds())/1000)
		}
		d.mu.Unlock()
	}
	return os.WriteFile(filepath.Join(dir, "latency.csv"), []byte(b.String()), 0o600)
}
