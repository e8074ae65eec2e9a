package main

import (
	"fmt"
	"strings"

	"github.com/agyharness/agyharness/cmd/agyharness/internal/termtext"
	"github.com/agyharness/agyharness/messages"
)

// How much of a tool's detail goes on screen; the rest is counted.
const (
	maxDiffLines = 40 // per change of an edit
	maxHitLines  = 10 // of a search
)

// callView is what the renderer remembers of a tool call until its output.
type callView struct {
	path      string // the file its title names (diff headers for other files)
	diffShown bool   // an edit's diff is on screen already
	live      string // its output as streamed so far
	pending   string // the streamed output's last, unfinished line (not shown yet)
	shown     int    // lines of output on screen
	rewritten bool   // agy rewrote the output: the live view stopped
}

func (r *renderer) call(id string) *callView {
	c := r.calls[id]
	if c == nil {
		c = &callView{}
		r.calls[id] = c
	}
	return c
}

// functionCall draws a tool call: "$ command" for a command, else
// "→ title", and an edit's diff under it.
func (r *renderer) functionCall(ev *messages.Event) {
	p := r.p
	r.line("%s%s%s%s", r.prefix(ev), p.cyan, callLine(ev), p.reset)
	c := r.call(ev.CallID)
	if len(ev.Locations) > 0 {
		c.path = ev.Locations[0].Path
	}
	if len(ev.Diffs) > 0 {
		r.diffs(c, ev.Diffs)
		c.diffShown = true
	}
}

// diffs draws an edit's changes as a unified diff, coloured: removed lines
// red, added ones green, hunk headers cyan.
func (r *renderer) diffs(c *callView, diffs []messages.FileDiff) {
	p := r.p
	r.endLine()
	path := c.path
	for _, d := range diffs {
		if d.Path != path {
			fmt.Fprintf(r.w, "  %s%s%s\n", p.bold, termtext.Clean(d.Path), p.reset)
			path = d.Path
		}
		lines := diffLines(d)
		if d.Line > 0 || d.OldText == nil {
			old, nw := 0, 0
			for _, l := range lines {
				switch firstByte(l) {
				case '-':
					old++
				case '+':
					nw++
				default:
					old++
					nw++
				}
			}
			start := max(d.Line, 1)
			oldStart := start
			if d.OldText == nil {
				oldStart = 0
			}
			fmt.Fprintf(r.w, "  %s@@ -%d,%d +%d,%d @@%s\n", p.cyan, oldStart, old, start, nw, p.reset)
		}
		for i, l := range lines {
			if i == maxDiffLines {
				fmt.Fprintf(r.w, "  %s… %d more lines%s\n", p.dim, len(lines)-i, p.reset)
				break
			}
			style := p.dim
			switch firstByte(l) {
			case '-':
				style = p.red
			case '+':
				style = p.green
			}
			fmt.Fprintf(r.w, "  %s%s%s\n", style, cleanLine(l), p.reset)
		}
	}
}

// firstByte is l's first byte, 0 for an empty line (agy's diff may hold
// one).
func firstByte(l string) byte {
	if l == "" {
		return 0
	}
	return l[0]
}

// diffLines are a change's lines, each prefixed " ", "-" or "+": agy's own
// unified lines when it sent them, else a line diff of the old and new text.
func diffLines(d messages.FileDiff) []string {
	if d.Unified != "" {
		return strings.Split(strings.TrimSuffix(d.Unified, "\n"), "\n")
	}
	var old []string
	if d.OldText != nil && *d.OldText != "" {
		old = strings.Split(strings.TrimSuffix(*d.OldText, "\n"), "\n")
	}
	var nw []string
	if d.NewText != "" {
		nw = strings.Split(strings.TrimSuffix(d.NewText, "\n"), "\n")
	}
	return lineDiff(old, nw)
}

// lineDiff is a shortest edit of a into b, line by line (a longest common
// subsequence); past 4,096 lines on either side, all of a removed then all
// of b added.
func lineDiff(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	if len(a) > 4096 || len(b) > 4096 {
		for _, l := range a {
			out = append(out, "-"+l)
		}
		for _, l := range b {
			out = append(out, "+"+l)
		}
		return out
	}
	// lcs[i][j]: length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, " "+a[i])
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "-"+a[i]) // removals before additions, as diff(1) writes them
			i++
		default:
			out = append(out, "+"+b[j])
			j++
		}
	}
	return out
}

// outputDelta shows a tool's output as it grows, whole lines only, up to
// maxOutputLines.
func (r *renderer) outputDelta(ev *messages.Event) {
	c := r.call(ev.CallID)
	if c.rewritten {
		return
	}
	if ev.Snapshot != "" {
		// agy rewrote the output: the whole of it comes with the output.
		c.rewritten = true
		return
	}
	c.live += ev.Delta
	c.pending += ev.Delta
	for {
		line, rest, ok := strings.Cut(c.pending, "\n")
		if !ok {
			return
		}
		c.pending = rest
		r.outputLine(c, line)
	}
}

func (r *renderer) outputLine(c *callView, line string) {
	if c.shown < maxOutputLines {
		r.line("%s  %s%s", r.p.dim, cleanLine(line), r.p.reset)
	}
	c.shown++
}

// toolOutput draws a tool's result: a search's hits, a web read's URL and
// size, an edit's diff (when its call had none), else its output (what the
// live view has not shown yet), then a non-zero exit code.
func (r *renderer) toolOutput(ev *messages.Event) {
	p := r.p
	c := r.call(ev.CallID)
	delete(r.calls, ev.CallID)
	r.endLine()
	switch {
	case len(ev.Hits) > 0 || (ev.HitCount != nil && ev.Kind == messages.ToolSearch):
		r.hits(ev)
	case ev.Kind == messages.ToolFetch && ev.URL != "":
		fmt.Fprintf(r.w, "%s  %s (%s)%s\n", p.dim, termtext.Clean(ev.URL), size(len(ev.Output)), p.reset)
	case len(ev.Diffs) > 0:
		if !c.diffShown {
			r.diffs(c, ev.Diffs)
		}
		fmt.Fprintf(r.w, "%s  %s%s\n", p.dim, termtext.Clean(ev.Output), p.reset)
	case c.live != "" && !c.rewritten && strings.HasPrefix(ev.Output, c.live):
		// The live view showed the output's whole lines so far: the rest.
		rest := c.pending + ev.Output[len(c.live):]
		for _, l := range strings.Split(strings.TrimSuffix(rest, "\n"), "\n") {
			if rest != "" {
				r.outputLine(c, l)
			}
		}
		if c.shown > maxOutputLines {
			fmt.Fprintf(r.w, "%s  … %d more lines%s\n", p.dim, c.shown-maxOutputLines, p.reset)
		}
	default:
		r.output(ev)
		return
	}
	if ev.ExitCode != nil && *ev.ExitCode != 0 {
		fmt.Fprintf(r.w, "%s  exit %d%s\n", p.red, *ev.ExitCode, p.reset)
	}
}

// hits draws a search's first hits, then how many there were in all.
func (r *renderer) hits(ev *messages.Event) {
	p := r.p
	for i, h := range ev.Hits {
		if i == maxHitLines {
			break
		}
		where := termtext.Clean(h.Path)
		if h.Line > 0 {
			where += fmt.Sprintf(":%d", h.Line)
		}
		if h.Text != "" {
			fmt.Fprintf(r.w, "  %s%s:%s %s\n", p.cyan, where, p.reset, termtext.Clean(h.Text))
		} else {
			fmt.Fprintf(r.w, "  %s%s%s\n", p.cyan, where, p.reset)
		}
	}
	total := len(ev.Hits)
	if ev.HitCount != nil {
		total = max(total, *ev.HitCount)
	}
	shown := min(len(ev.Hits), maxHitLines)
	switch {
	case total == 0:
		fmt.Fprintf(r.w, "%s  no results%s\n", p.dim, p.reset)
	case total > shown:
		fmt.Fprintf(r.w, "%s  … %d more (%d in all)%s\n", p.dim, total-shown, total, p.reset)
	default:
		fmt.Fprintf(r.w, "%s  %s%s\n", p.dim, plural(total, "result", "results"), p.reset)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// size is a byte count as people read it.
func size(n int) string {
	switch {
	case n < 1024:
		return plural(n, "byte", "bytes")
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
}
