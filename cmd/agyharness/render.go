package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agyharness/agyharness/cmd/agyharness/internal/termtext"
	"github.com/agyharness/agyharness/messages"
)

// ANSI styles; empty when colour is off.
type palette struct{ dim, bold, cyan, red, yellow, green, reset string }

func newPalette(color bool) palette {
	if !color {
		return palette{}
	}
	return palette{dim: "\x1b[2m", bold: "\x1b[1m", cyan: "\x1b[36m", red: "\x1b[31m", yellow: "\x1b[33m", green: "\x1b[32m", reset: "\x1b[0m"}
}

// maxOutputLines bounds a tool's output on screen; the rest is counted.
const maxOutputLines = 20

// renderer draws events for a person: streamed text as it arrives,
// reasoning dimmed, tool calls as "$ command" with their output, prompts
// with numbered options, and a status line on every status edge. It is
// used by one goroutine (the driver's loop).
//
// Every text of an event passes termtext.Clean (streamed text a
// termtext.Stream) before it is written, and before the renderer's own
// styles are put around it: agy's control characters and escape sequences
// are shown, never acted on by the terminal.
type renderer struct {
	w io.Writer
	p palette

	openItem string          // the item whose text is mid-line ("" when at a line start)
	live     termtext.Stream // cleans the open item's streamed text
	style    string          // the open item's style
	streamed map[string]bool // items whose text was streamed: their message is not printed again
	model    string
	in, out  int64                // the conversation's token totals
	names    map[string]string    // model enum -> display name
	asked    map[string]string    // elicitation id -> what it asked, for its resolution line
	perms    map[string]bool      // elicitation ids that are permissions
	calls    map[string]*callView // tool calls without their output yet
	idleHint string               // shown on the idle status line
	// noConversationHint says how agy gets its first conversation.
	noConversationHint string
	// catalogName, when set, looks a model enum up in agy's model catalog
	// (the session's): a display name, or "".
	catalogName func(model string) string
}

func newRenderer(w io.Writer, color bool) *renderer {
	return &renderer{
		w: w, p: newPalette(color),
		streamed: make(map[string]bool),
		names:    make(map[string]string),
		asked:    make(map[string]string),
		perms:    make(map[string]bool),
		calls:    make(map[string]*callView),
		idleHint: "type a message, Ctrl-C twice to leave",

		noConversationHint: "waiting for the first turn typed in agy's terminal",
	}
}

// endLine finishes a streamed line, if one is open.
func (r *renderer) endLine() {
	if r.openItem != "" {
		if rest := r.live.Flush(); rest != "" {
			fmt.Fprint(r.w, r.style+rest)
		}
		fmt.Fprint(r.w, r.p.reset+"\n")
		r.openItem = ""
	}
}

// line prints one full line (ending any open streamed line first).
func (r *renderer) line(format string, args ...any) {
	r.endLine()
	fmt.Fprintf(r.w, format+"\n", args...)
}

func (r *renderer) prefix(ev *messages.Event) string {
	if ev.ParentConversationID == "" {
		return ""
	}
	return r.p.dim + "[subagent " + termtext.Clean(short(ev.ConversationID)) + "] " + r.p.reset
}

// short is the start of an id, at most 8 bytes, cut between characters.
func short(id string) string {
	return cut(id, 8)
}

// cut is s shortened to at most n bytes, between characters.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// stream appends delta text of an item, starting a new line when another
// item was open.
func (r *renderer) stream(ev *messages.Event, style, label, text string) {
	key := string(ev.Type) + "/" + ev.ItemID
	if r.openItem != key {
		r.endLine()
		fmt.Fprint(r.w, r.prefix(ev)+style+label)
		r.openItem, r.style = key, style
	} else {
		fmt.Fprint(r.w, style)
	}
	fmt.Fprint(r.w, r.live.Write(text)+r.p.reset)
	r.streamed[key] = true
}

// event draws one event.
func (r *renderer) event(ev *messages.Event) {
	p := r.p
	switch ev.Type {
	case messages.EventReasoningDelta:
		text := ev.Delta
		if ev.Snapshot != "" {
			r.endLine()
			text = ev.Snapshot
		}
		r.stream(ev, p.dim, "thinking: ", text)
	case messages.EventOutputTextDelta:
		if ev.Snapshot != "" {
			// agy rewrote the text: start over on a fresh line.
			r.endLine()
			r.stream(ev, "", "", ev.Snapshot)
			return
		}
		r.stream(ev, "", "", ev.Delta)
	case messages.EventMessage:
		if r.streamed[string(messages.EventOutputTextDelta)+"/"+ev.ItemID] {
			if r.openItem == string(messages.EventOutputTextDelta)+"/"+ev.ItemID {
				r.endLine()
			}
			return
		}
		r.line("%s%s", r.prefix(ev), termtext.Clean(ev.Text))
	case messages.EventUserMessage:
		if ev.Origin == messages.OriginTerminal {
			r.line("%s%s> %s%s %s(typed in agy)%s", r.prefix(ev), p.bold, termtext.Clean(ev.Text), p.reset, p.dim, p.reset)
		}
	case messages.EventFunctionCall:
		r.functionCall(ev)
	case messages.EventFunctionCallOutputDelta:
		r.outputDelta(ev)
	case messages.EventFunctionCallOutput:
		r.toolOutput(ev)
	case messages.EventElicitationRequest:
		r.prompt(ev)
	case messages.EventElicitationResolved:
		r.resolved(ev)
	case messages.EventUsage:
		if ev.Model != "" {
			r.model = ev.Model
		}
		if ev.TotalInputTokens != nil || ev.TotalOutputTokens != nil {
			r.in, r.out = deref(ev.TotalInputTokens), deref(ev.TotalOutputTokens)
		} else {
			r.in, r.out = r.in+deref(ev.InputTokens), r.out+deref(ev.OutputTokens)
		}
	case messages.EventModelChanged:
		if ev.DisplayName != "" {
			r.names[ev.To] = ev.DisplayName
		}
		r.model = ev.To
		from := r.modelName(ev.From)
		if from == "" {
			from = "-"
		}
		r.line("%smodel: %s → %s%s", p.dim, from, r.modelName(ev.To), p.reset)
	case messages.EventConversationRotated:
		r.line("%sconversation %s → %s (agy started a new conversation)%s", p.yellow, termtext.Clean(short(ev.From)), termtext.Clean(short(ev.To)), p.reset)
	case messages.EventUnknownStep:
		r.line("%s(agy step type %s is not mapped by this version)%s", p.dim, termtext.Clean(ev.StepType), p.reset)
	case messages.EventError:
		switch {
		case !ev.ShownByAgy():
			r.line("%s%serror: %s%s", r.prefix(ev), p.red, termtext.Clean(ev.Message), p.reset)
		case ev.Final != nil && !*ev.Final:
			r.line("%s%sagy retries (%s): %s%s", r.prefix(ev), p.dim, termtext.Clean(ev.Code), termtext.Clean(ev.Message), p.reset)
		default:
			r.line("%s%sagy: %s (%s)%s", r.prefix(ev), p.red, termtext.Clean(ev.Message), termtext.Clean(ev.Code), p.reset)
		}
	case messages.EventConversationRewound:
		if ev.ToStep != nil {
			r.line("%sconversation rewound to step %d (agy's /rewind)%s", p.yellow, *ev.ToStep, p.reset)
		}
	case messages.EventStatus:
		if ev.ParentConversationID != "" {
			return
		}
		r.status(ev.State)
	}
}

// status draws the status line.
func (r *renderer) status(state string) {
	p := r.p
	if state == messages.StateNoConversation {
		r.line("%s── agy has no conversation yet: %s ──%s", p.dim, r.noConversationHint, p.reset)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "── %s", termtext.Clean(state))
	if r.model != "" {
		fmt.Fprintf(&b, " · %s", r.modelName(r.model))
	}
	if r.in > 0 || r.out > 0 {
		fmt.Fprintf(&b, " · tokens %d in / %d out", r.in, r.out)
	}
	switch state {
	case messages.StateIdle:
		if r.idleHint != "" {
			b.WriteString(" · " + r.idleHint)
		}
	case messages.StateRunning:
		b.WriteString(" · Ctrl-C interrupts")
	}
	r.line("%s%s ──%s", p.dim, b.String(), p.reset)
}

// modelName is a model's display name (or its enum), shown visibly.
func (r *renderer) modelName(enum string) string {
	if n, ok := r.names[enum]; ok {
		return termtext.Clean(n)
	}
	if r.catalogName != nil {
		if n := r.catalogName(enum); n != "" {
			return termtext.Clean(n)
		}
	}
	return termtext.Clean(enum)
}

// resolved draws the end of a prompt: what was asked (as prompt shows it),
// and how it ended.
func (r *renderer) resolved(ev *messages.Event) {
	p := r.p
	what, perm := r.asked[ev.ElicitationID], r.perms[ev.ElicitationID]
	delete(r.asked, ev.ElicitationID)
	delete(r.perms, ev.ElicitationID)
	verbs := map[string]string{messages.ActionAccept: "answered", messages.ActionDecline: "declined", messages.ActionCancel: "cancelled"}
	if perm {
		verbs[messages.ActionAccept], verbs[messages.ActionDecline] = "allowed", "denied"
	}
	verb := verbs[ev.Action]
	if verb == "" {
		verb = termtext.Clean(ev.Action)
	}
	switch ev.Choice {
	case messages.ChoiceAllowAlwaysConversation:
		verb = "allowed always in this conversation"
	case messages.ChoiceAllowAlwaysSettings:
		verb = "allowed always (agy's settings.json)"
	}
	switch ev.By {
	case messages.ByTerminal:
		verb += " in agy's terminal"
	case messages.ByExpired:
		verb = "expired"
	}
	style := p.green
	if ev.Action != messages.ActionAccept {
		style = p.yellow
	}
	if what != "" {
		what = ": " + what
	}
	r.line("%s%s✓ %s%s%s", r.prefix(ev), style, verb, what, p.reset)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// maxArgs bounds a tool call's arguments on screen.
const maxArgs = 100

// callLine is "$ command" for run_command, else "→ title" (the mapper's),
// else "→ name args", shown visibly. A question's arguments are left out:
// the prompt shows them.
func callLine(ev *messages.Event) string {
	return termtext.Clean(callText(ev))
}

func callText(ev *messages.Event) string {
	var args map[string]any
	_ = json.Unmarshal([]byte(ev.Arguments), &args)
	if cmd, ok := args["command"].(string); ok && cmd != "" {
		return "$ " + cmd
	}
	if ev.Name == "ask_question" {
		return "→ " + ev.Name
	}
	if ev.Title != "" && ev.Title != ev.Name {
		return "→ " + ev.Title
	}
	if ev.Arguments == "" || ev.Arguments == "{}" {
		return "→ " + ev.Name
	}
	a := ev.Arguments
	if len(a) > maxArgs {
		a = cut(a, maxArgs) + "…"
	}
	return "→ " + ev.Name + " " + a
}

func (r *renderer) output(ev *messages.Event) {
	p := r.p
	r.endLine()
	out := strings.TrimRight(ev.Output, "\n")
	if out != "" {
		lines := strings.Split(out, "\n")
		more := 0
		if len(lines) > maxOutputLines {
			more = len(lines) - maxOutputLines
			lines = lines[:maxOutputLines]
		}
		for _, l := range lines {
			fmt.Fprintf(r.w, "%s  %s%s\n", p.dim, cleanLine(l), p.reset)
		}
		if more > 0 {
			fmt.Fprintf(r.w, "%s  … %d more lines%s\n", p.dim, more, p.reset)
		}
	}
	if ev.ExitCode != nil && *ev.ExitCode != 0 {
		fmt.Fprintf(r.w, "%s  exit %d%s\n", p.red, *ev.ExitCode, p.reset)
	}
}

// prompt draws an elicitation: the questions with numbered options, or the
// permission asked.
func (r *renderer) prompt(ev *messages.Event) {
	p := r.p
	pre := r.prefix(ev)
	switch ev.Kind {
	case messages.KindPermission:
		what := "agy asks for permission"
		switch {
		case ev.Command != nil:
			what = "agy wants to run: $ " + termtext.Clean(ev.Command.Line)
			if ev.Command.Cwd != "" {
				what += "   (in " + termtext.Clean(ev.Command.Cwd) + ")"
			}
		case ev.Resource != nil:
			what = fmt.Sprintf("agy wants to %s %s", termtext.Clean(actionWord(ev.Resource.Action)), termtext.Clean(ev.Resource.Target))
		}
		r.line("%s%s%s? %s%s", pre, p.yellow, p.bold, what, p.reset)
		if len(ev.Choices) > 2 {
			// agy's "always" rows are offered (the session owns its pane).
			for i, c := range ev.Choices {
				r.line("  %d) %s", i+1, termtext.Clean(c.Text))
			}
		}
		if len(ev.Diffs) > 0 {
			if c := r.call(ev.CallID); !c.diffShown {
				// What the edit would change, when its call did not show it.
				r.diffs(c, ev.Diffs)
				c.diffShown = true
			}
		}
		r.perms[ev.ElicitationID] = true
		r.asked[ev.ElicitationID] = strings.TrimPrefix(strings.TrimPrefix(what, "agy wants to run: "), "agy wants to ")
		if ev.Command != nil && ev.Resource != nil && ev.Resource.Target != "" && ev.Resource.Target != ev.Command.Line {
			// One segment of a compound command, asked on its own.
			seg := "$ " + termtext.Clean(ev.Resource.Target)
			r.line("%s  this asks for: %s", pre, seg)
			r.asked[ev.ElicitationID] = seg
		}
		if ev.Interaction != "" && ev.Text != "" {
			r.line("%s  (%s)", pre, termtext.Clean(ev.Text))
		}
	case messages.KindElicitation:
		what := "an MCP server asks"
		if el := ev.Elicitation; el != nil && el.Server != "" {
			what = termtext.Clean(el.Server) + " (MCP) asks"
		}
		r.line("%s%s%s? %s: %s%s", pre, p.yellow, p.bold, what, termtext.Clean(ev.Text), p.reset)
		if el := ev.Elicitation; el != nil && el.URL != "" {
			r.line("%s  %s", pre, termtext.Clean(el.URL))
		}
		r.asked[ev.ElicitationID] = what
	case messages.KindOther:
		r.line("%s%s%s? agy asks %s: %s%s", pre, p.yellow, p.bold, termtext.Clean(ev.Interaction), termtext.Clean(ev.Text), p.reset)
		r.line("%s  %s", pre, termtext.Clean(ev.Message))
		r.asked[ev.ElicitationID] = termtext.Clean(ev.Interaction)
	default:
		if len(ev.Questions) > 0 {
			r.asked[ev.ElicitationID] = termtext.Clean(ev.Questions[0].Question)
		}
		for _, q := range ev.Questions {
			r.line("%s%s%s? %s%s", pre, p.yellow, p.bold, termtext.Clean(q.Question), p.reset)
			for i, o := range q.Options {
				r.line("  %d) %s", i+1, termtext.Clean(o.Text))
			}
		}
	}
}

// actionWord is a permission's action as a verb: agy's grants name reads and
// edits read_file and write_file.
func actionWord(action string) string {
	switch action {
	case "read_file":
		return "read"
	case "write_file":
		return "write"
	}
	return action
}

// ask draws the input hint for the question being answered (which can
// repeat agy's question).
func (r *renderer) ask(hint string) {
	r.line("%s  %s%s", r.p.yellow, termtext.Clean(hint), r.p.reset)
}

// cleanLine is one line of agy's text (a line of output or of a diff),
// shown visibly; a CR that ended it (a CRLF line end) is dropped.
func cleanLine(l string) string {
	return termtext.Clean(strings.TrimSuffix(l, "\r"))
}
