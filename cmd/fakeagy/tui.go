package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agyharness/agyharness/rpc"
)

// agyServer is what the terminal needs of the fake language server
// (*agytest.Server satisfies it).
type agyServer interface {
	ConversationID() string
	Steps(conversationID string) []rpc.Step
	RunStatus(conversationID string) rpc.RunStatus
	TypeTurn(text string) error
	AnswerFromTerminal(conversationID string, answer rpc.InteractionResponse) error
}

// errQuit is returned by terminal.run when the person pressed Ctrl-C.
var errQuit = errors.New("quit")

const (
	keyCtrlC     = 0x03
	keyBackspace = 0x7f
	keyCtrlH     = 0x08
	keyEscape    = 0x1b
)

// clearScreen homes the cursor and clears the screen: every draw is a whole
// screen, which is all a minimal TUI needs.
const clearScreen = "\x1b[H\x1b[2J"

// terminal is the minimal TUI of agy that fakeagy --tui draws: the active
// conversation, a status line, the open prompt's widget and the line being
// typed. All its state is owned by run's goroutine.
type terminal struct {
	srv     agyServer
	out     io.Writer
	refresh time.Duration // how often the server is read for changes
	height  int           // screen rows; 0: never trim the conversation
	header  string        // first line of the screen

	input     []rune
	widget    *widget
	dismissed map[promptKey]bool // prompts closed with Escape while still WAITING
	notice    string             // the last error, shown until the next key
	drawn     string             // the screen last written
}

// promptKey names one WAITING step.
type promptKey struct {
	conv  string
	index int
}

// widget is the prompt dialog on screen. Like agy's, it stays drawn after
// its prompt was answered elsewhere (stale) until a key closes it.
type widget struct {
	key   promptKey
	ask   rpc.Interaction
	stale bool
}

func newTerminal(srv agyServer, out io.Writer, refresh time.Duration) *terminal {
	if refresh <= 0 {
		refresh = 50 * time.Millisecond
	}
	return &terminal{srv: srv, out: out, refresh: refresh, dismissed: map[promptKey]bool{}}
}

// run draws the screen, then redraws on every change it sees (read every
// refresh interval) and handles the keys read from in, until ctx ends (nil)
// or Ctrl-C arrives (errQuit). The goroutine reading in ends when in
// returns an error or EOF, or at once after run returned if it is blocked
// delivering a chunk; a read blocked on a terminal outlives run until the
// process exits.
func (t *terminal) run(ctx context.Context, in io.Reader) error {
	chunks := make(chan []byte)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(chunks)
		buf := make([]byte, 256)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				select {
				case chunks <- append([]byte(nil), buf[:n]...):
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(t.refresh)
	defer tick.Stop()
	t.update()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			t.update()
		case b, ok := <-chunks:
			if !ok {
				chunks = nil // input ended: keep drawing until ctx ends
				continue
			}
			for _, k := range parseKeys(b) {
				if k.r == keyCtrlC {
					return errQuit
				}
				t.handle(k)
			}
			t.update()
		}
	}
}

// key is one key press: a rune, or Escape (r == keyEscape). Other escape
// sequences (arrows, function keys) are dropped.
type key struct{ r rune }

// parseKeys splits one read into keys. A lone ESC (or ESC before anything
// but '[' or 'O') is Escape; ESC [ ... and ESC O x are sequences agy's
// widgets do not use here.
func parseKeys(b []byte) []key {
	var keys []key
	for len(b) > 0 {
		if b[0] == keyEscape {
			if len(b) > 1 && b[1] == '[' {
				i := 2
				for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
					i++
				}
				b = b[min(i+1, len(b)):]
				continue
			}
			if len(b) > 2 && b[1] == 'O' {
				b = b[3:]
				continue
			}
			keys = append(keys, key{keyEscape})
			b = b[1:]
			continue
		}
		r, n := utf8.DecodeRune(b)
		keys = append(keys, key{r})
		b = b[n:]
	}
	return keys
}

// handle applies one key: to the widget when one is drawn (as agy's dialogs
// take the keyboard), else to the line being typed.
func (t *terminal) handle(k key) {
	t.notice = ""
	if w := t.widget; w != nil {
		switch {
		case k.r == keyEscape:
			if !w.stale {
				t.dismissed[w.key] = true
			}
			t.widget = nil
		case w.stale:
		case w.ask.Permission != nil && (k.r == 'y' || k.r == 'Y' || k.r == 'n' || k.r == 'N'):
			t.answer(rpc.InteractionResponse{Permission: &rpc.PermissionAnswer{Allow: k.r == 'y' || k.r == 'Y'}})
		case w.ask.AskQuestion != nil && len(w.ask.AskQuestion.Questions) == 1 && k.r >= '1' && k.r <= '9':
			q := w.ask.AskQuestion.Questions[0]
			n := int(k.r - '0')
			if n > len(q.Options) {
				t.notice = fmt.Sprintf("no option %d", n)
				return
			}
			t.answer(rpc.InteractionResponse{AskQuestion: &rpc.QuestionResponses{Responses: []rpc.QuestionResponse{{
				Question: q.Question, SelectedOptionIDs: []string{q.Options[n-1].ID},
			}}}})
		}
		return
	}
	switch k.r {
	case '\r', '\n':
		text := strings.TrimSpace(string(t.input))
		t.input = t.input[:0]
		if text == "" {
			return
		}
		if err := t.srv.TypeTurn(text); err != nil {
			t.notice = err.Error()
		}
	case keyBackspace, keyCtrlH:
		if len(t.input) > 0 {
			t.input = t.input[:len(t.input)-1]
		}
	default:
		if k.r >= ' ' && k.r != keyBackspace && k.r != utf8.RuneError {
			t.input = append(t.input, k.r)
		}
	}
}

// answer answers the open widget's prompt from this terminal; the widget
// closes, as agy's does when the person answers in it.
func (t *terminal) answer(resp rpc.InteractionResponse) {
	if err := t.srv.AnswerFromTerminal(t.widget.key.conv, resp); err != nil {
		t.notice = err.Error()
		return
	}
	t.widget = nil
}

// update reads the server, moves the widget on, and redraws when the screen
// changed.
func (t *terminal) update() {
	conv := t.srv.ConversationID()
	steps := t.srv.Steps(conv)
	if w := t.widget; w != nil && !w.stale {
		if w.key.conv != conv || w.key.index >= len(steps) || steps[w.key.index].Status != rpc.StatusWaiting {
			w.stale = true
		}
	}
	if t.widget == nil {
		for _, s := range steps {
			k := promptKey{conv, s.Index()}
			if s.Status == rpc.StatusWaiting && s.RequestedInteraction != nil && !t.dismissed[k] {
				t.widget = &widget{key: k, ask: *s.RequestedInteraction}
			}
		}
	}
	screen := render(screenView{
		header: t.header,
		steps:  steps,
		status: t.srv.RunStatus(conv),
		widget: t.widget,
		input:  string(t.input),
		notice: t.notice,
		height: t.height,
	})
	if screen == t.drawn {
		return
	}
	t.drawn = screen
	_, _ = io.WriteString(t.out, clearScreen+screen)
}

// screenView is everything one screen shows.
type screenView struct {
	header string
	steps  []rpc.Step
	status rpc.RunStatus
	widget *widget
	input  string
	notice string
	height int
}

// render draws a screen: the conversation (trimmed to its last lines when
// the screen is short), a status line, the widget and the input line.
func render(v screenView) string {
	var conv []string
	for _, s := range v.steps {
		conv = append(conv, stepLines(s)...)
	}
	var foot []string
	foot = append(foot, "", "-- "+statusWord(v.status)+" --")
	if w := v.widget; w != nil {
		foot = append(foot, widgetLines(w)...)
	}
	if v.notice != "" {
		foot = append(foot, "! "+v.notice)
	}
	foot = append(foot, "> "+v.input)
	var head []string
	if v.header != "" {
		head = []string{v.header, ""}
	}
	if v.height > 0 {
		if room := max(v.height-len(head)-len(foot), 0); len(conv) > room {
			conv = conv[len(conv)-room:]
		}
	}
	return strings.Join(append(append(head, conv...), foot...), "\n")
}

// stepLines is how agy's terminal shows a step: the person's turns, the
// assistant's text, commands run, questions asked and tools used.
func stepLines(s rpc.Step) []string {
	switch {
	case s.Type == rpc.StepUserInput && s.UserInput != nil:
		text := s.UserInput.UserResponse
		if text == "" && len(s.UserInput.Items) > 0 {
			text = s.UserInput.Items[0].Text
		}
		return prefixed("> ", text)
	case s.Type == rpc.StepPlannerResponse && s.PlannerResponse != nil:
		text := s.PlannerResponse.Response
		if text == "" {
			text = s.PlannerResponse.ModifiedResponse
		}
		if text == "" {
			return nil
		}
		return prefixed("", text)
	case s.Type == rpc.StepRunCommand && s.RunCommand != nil:
		lines := []string{"$ " + s.RunCommand.CommandLine}
		if o := s.RunCommand.CombinedOutput; o != nil {
			lines = append(lines, prefixed("  ", strings.TrimRight(o.Full, "\n"))...)
		}
		return lines
	case s.Type == rpc.StepAskQuestion && s.AskQuestion != nil:
		var lines []string
		for _, q := range s.AskQuestion.Questions {
			line := "? " + q.Question
			if len(q.SelectedOptionIDs) > 0 {
				line += " -> " + optionTexts(q)
			}
			lines = append(lines, line)
		}
		return lines
	case s.Metadata.ToolAction != "" && s.Type != rpc.StepPlannerResponse:
		return []string{"* " + s.Metadata.ToolAction}
	}
	return nil
}

func optionTexts(q rpc.Question) string {
	var texts []string
	for _, id := range q.SelectedOptionIDs {
		for _, o := range q.Options {
			if o.ID == id {
				texts = append(texts, o.Text)
			}
		}
	}
	return strings.Join(texts, ", ")
}

func prefixed(prefix, text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return lines
}

func statusWord(st rpc.RunStatus) string {
	if st == "" {
		return "idle"
	}
	return strings.ToLower(strings.TrimPrefix(string(st), "CASCADE_RUN_STATUS_"))
}

// widgetLines draws the prompt dialog: a permission as "Allow <action>
// <target>? [y/n]", a question with numbered options.
func widgetLines(w *widget) []string {
	lines := []string{"+-- agy asks ---------------------------------"}
	switch {
	case w.ask.Permission != nil:
		what := w.ask.Permission.ActionDescription
		if r := w.ask.Permission.Resource; r != nil {
			what = strings.TrimSpace(r.Action + " " + r.Target)
		}
		lines = append(lines, "| Allow "+what+"? [y/n]")
	case w.ask.AskQuestion != nil:
		qs := w.ask.AskQuestion.Questions
		for _, q := range qs {
			lines = append(lines, "| "+q.Question)
			for i, o := range q.Options {
				lines = append(lines, "|   "+strconv.Itoa(i+1)+") "+o.Text)
			}
		}
		if len(qs) == 1 {
			lines = append(lines, fmt.Sprintf("| [1-%d, Esc to close]", len(qs[0].Options)))
		} else {
			lines = append(lines, "| (several questions: answer them over RPC; Esc to close)")
		}
	}
	if w.stale {
		lines = append(lines, "| (prompt answered elsewhere - Esc to close)")
	}
	return append(lines, "+---------------------------------------------")
}
