// Package agyversion reads the version of an agy binary (`agy --version`)
// and says which of agy's behaviours that differ by version a given version
// has: one table (Table), keyed by the version, that the rest of the
// harness asks instead of comparing versions itself.
//
// Behaviours are shape-detected wherever the harness can see the shape (a
// step type, a field); the table holds only those that cannot be told from
// what agy sends, with the version a public source dates them to
// (docs/DECISIONS.md, "agy's version").
package agyversion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// Modeled is the newest agy version whose behaviour the harness and its
// fake model: the newest version any source read names (agy 1.2.7, in
// google-antigravity/antigravity-cli issue 1054, 2026-09-19, and a
// third-party compatibility note that reviewed "latest AGY release ...
// 1.2.7"). A newer agy gets one warning (Newer).
const Modeled = "1.2.7"

// Version is a parsed agy version: major.minor.patch.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare is -1, 0 or 1 as v is older than, the same as or newer than w.
func (v Version) Compare(w Version) int {
	for _, d := range [3]int{v.Major - w.Major, v.Minor - w.Minor, v.Patch - w.Patch} {
		switch {
		case d < 0:
			return -1
		case d > 0:
			return 1
		}
	}
	return 0
}

var versionRE = regexp.MustCompile(`\b(\d{1,6})\.(\d{1,6})\.(\d{1,6})\b`)

// Parse reads the first major.minor.patch in s (agy prints a bare
// "1.2.7"; a build suffix such as "1.1.23-6260551186251776" is ignored).
func Parse(s string) (Version, bool) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, false
	}
	var n [3]int
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return Version{n[0], n[1], n[2]}, true
}

func mustParse(s string) Version {
	v, ok := Parse(s)
	if !ok {
		panic("agyversion: bad version " + s)
	}
	return v
}

// Newer reports whether version is newer than Modeled. An empty or
// unparsable version is not newer (it is unknown).
func Newer(version string) bool {
	v, ok := Parse(version)
	return ok && v.Compare(mustParse(Modeled)) > 0
}

// Behaviour is one of agy's behaviours that differs by version.
type Behaviour string

// The behaviours of Table.
const (
	// EligibilityCheck: for some seconds after it starts, agy answers a
	// typed turn with a notice "verifying your account eligibility"
	// instead of running it (the turn leaves the draft and is lost).
	EligibilityCheck Behaviour = "eligibility_check"
	// InputFooter: agy's composer shows "? for shortcuts" when idle and
	// "esc to cancel" while a turn runs, which tells when its input is
	// ready.
	InputFooter Behaviour = "input_footer"
)

// Row is one behaviour and the first version known to have it.
type Row struct {
	Behaviour Behaviour
	Since     string // the oldest version a source shows it on
	Source    string // where that is recorded
}

// Table is every behaviour the harness keys by agy's version.
var Table = []Row{
	{EligibilityCheck, "1.1.8", "omnigent-ai/omnigent omnigent/antigravity_native_bridge.py (measured on 1.1.8)"},
	{InputFooter, "1.1.8", "omnigent-ai/omnigent omnigent/antigravity_native_bridge.py (_AGY_IDLE_MARKER, _AGY_ACTIVE_MARKER)"},
}

// Has reports whether an agy of version has behaviour b. An unknown
// version ("" or unparsable) is taken to be the newest: it has every
// behaviour of the table. A behaviour not in the table is had by all.
func Has(version string, b Behaviour) bool {
	v, ok := Parse(version)
	if !ok {
		return true
	}
	for _, r := range Table {
		if r.Behaviour == b {
			return v.Compare(mustParse(r.Since)) >= 0
		}
	}
	return true
}

// maxOutput bounds what is read of `agy --version`'s output.
const maxOutput = 4 << 10

// DefaultTimeout bounds Read when ctx has no earlier deadline.
const DefaultTimeout = 5 * time.Second

// Read runs `bin --version` (no shell: bin is executed with that one
// argument), within DefaultTimeout or ctx's deadline, reads at most 4 KiB
// of its standard output, and returns the version it prints ("1.2.7").
// An agy that prints no version, exits non-zero or outlives the timeout is
// an error.
func Read(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	out := &limited{max: maxOutput}
	cmd.Stdout = out
	cmd.Stderr = io.Discard
	cmd.WaitDelay = time.Second // a child holding the pipe open does not hold Read
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s --version did not finish within %s", bin, DefaultTimeout)
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	v, ok := Parse(out.buf.String())
	if !ok {
		return "", fmt.Errorf("%s --version printed no version (major.minor.patch)", bin)
	}
	return v.String(), nil
}

// Check reads bin's version (Read) and logs it: at info, or one warning
// when agy is newer than Modeled or its version cannot be read. It returns
// the version, "" when unknown.
func Check(ctx context.Context, log *slog.Logger, bin string) string {
	v, err := Read(ctx, bin)
	switch {
	case err != nil:
		log.Warn("agy's version is unknown: its behaviour is taken to be that of the newest version modelled", "err", err, "modelled", Modeled)
	case Newer(v):
		log.Warn("agy is newer than the newest version this harness models: behaviour it changed may be missed", "agy_version", v, "modelled", Modeled)
	default:
		log.Info("agy version", "agy_version", v)
	}
	return v
}

// limited keeps the first max bytes written to it and drops the rest.
type limited struct {
	buf bytes.Buffer
	max int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
