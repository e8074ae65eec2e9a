package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agyharness/agyharness/wire"
)

// agyServer is what the terminal needs of the fake language server
// (*agytest.Server satisfies it).
type agyServer interface {
	ConversationID() string
	Steps(conversationID string) []wire.Step
	RunStatus(conversationID string) wire.RunStatus
	TypeTurn(text string) error
	AnswerFromTerminal(conversationID string, answer wire.InteractionResponse) error
	Rewind(conversationID string, index int) error
}

// errQuit is returned by terminal.run when the person pressed Ctrl-C.
var errQuit = errors.New("quit")

// Keys, and the two ends of a bracketed paste (ESC[200~ and ESC[201~,
// which tmux paste-buffer -p sends once the program asked for them).
const (
	keyCtrlA     = 0x01
	keyCtrlC     = 0x03
	keyCtrlE     = 0x05
	keyCtrlH     = 0x08
	keyCtrlK     = 0x0b
	keyEscape    = 0x1b
	keyBackspace = 0x7f

	keyPasteStart rune = -1
	keyPasteEnd   rune = -2

	// The arrow keys (ESC [ A..D, or ESC O A..D in application mode).
	keyUp    rune = -3
	keyDown  rune = -4
	keyRight rune = -5
	keyLeft  rune = -6
)

// clearScreen homes the cursor and clears the screen: every draw is a whole
// screen, which is all a minimal TUI needs.
const clearScreen = "\x1b[H\x1b[2J"

// Bracketed paste on and off: the program asks the terminal to mark pastes.
const (
	bracketedPasteOn  = "\x1b[?2004h"
	bracketedPasteOff = "\x1b[?2004l"
)

// terminal is the minimal TUI of agy that fakeagy --tui draws: the active
// conversation, a status line, the open prompt's dialog and the draft being
// typed. All its state is owned by run's goroutine.
type terminal struct {
	srv     agyServer
	out     io.Writer
	refresh time.Duration // how often the server is read for changes
	height  int           // screen rows; 0: never trim the conversation

	draft   []rune // the turn being typed
	cursor  int    // in draft
	pasting bool   // between ESC[200~ and ESC[201~
	dialog  *dialog
	notice  string // the last error, shown until the next key
	drawn   string // the screen last written

	// shown are the prompts that got a dialog: agy's terminal shows every
	// prompt that went WAITING, even one answered over RPC before the
	// screen was next drawn (and then keeps it open, stale). history holds,
	// per conversation already there when the terminal started, how many
	// of its steps were history then: their prompts get no dialog.
	shown   map[promptKey]bool
	history map[string]int

	dialogs dialogOptions // how agy's dialogs look (tui_dialog.go)
	grants  grants        // what agy's "always" rows allowed

	start *startup // startup screens and the survey (startup.go); nil: none
}

// promptKey names one WAITING step.
type promptKey struct {
	conv  string
	index int
}

func newTerminal(srv agyServer, out io.Writer, refresh time.Duration) *terminal {
	if refresh <= 0 {
		refresh = 50 * time.Millisecond
	}
	t := &terminal{srv: srv, out: out, refresh: refresh, shown: map[promptKey]bool{}, history: map[string]int{}}
	if conv := srv.ConversationID(); conv != "" {
		t.history[conv] = len(srv.Steps(conv))
	}
	return t
}

// run asks for bracketed paste, draws the screen, then redraws on every
// change it sees (read every refresh interval) and handles the keys read
// from in, until ctx ends (nil) or Ctrl-C arrives (errQuit). The goroutine
// reading in ends when in returns an error or EOF, or at once after run
// returned if it is blocked delivering a chunk; a read blocked on a
// terminal outlives run until the process exits.
func (t *terminal) run(ctx context.Context, in io.Reader) error {
	chunks := make(chan []byte)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(chunks)
		buf := make([]byte, 4096)
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
	_, _ = io.WriteString(t.out, bracketedPasteOn)
	defer func() { _, _ = io.WriteString(t.out, bracketedPasteOff) }()
	tick := time.NewTicker(t.refresh)
	defer tick.Stop()
	t.update()
	var rest []byte // an escape sequence or a character cut by the end of a read
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
			var keys []key
			keys, rest = parseKeys(append(rest, b...))
			// agy's terminal knows its prompts the moment they open (it
			// is the same process as its language server): look before
			// taking the keys, so none lands beside a dialog not drawn yet.
			t.update()
			for _, k := range keys {
				if k.r == keyCtrlC {
					return errQuit
				}
				t.handle(k)
			}
			t.update()
		}
	}
}

// key is one key press: a rune, Escape (keyEscape), an arrow (keyUp ...),
// or an end of a bracketed paste. Other escape sequences (function keys)
// are dropped.
type key struct{ r rune }

// parseKeys splits input into keys, and returns what is left of it: an
// escape sequence or a UTF-8 character cut short by the end of the input,
// to be completed by the next read. A lone ESC (or ESC before anything but
// '[' or 'O') is Escape; ESC [ 200~ and ESC [ 201~ start and end a
// bracketed paste; ESC [ A..D and ESC O A..D are the arrows; other
// ESC [ ... and ESC O x sequences are dropped.
func parseKeys(b []byte) ([]key, []byte) {
	var keys []key
	for len(b) > 0 {
		if b[0] == keyEscape {
			if len(b) > 1 && b[1] == '[' {
				i := 2
				for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
					i++
				}
				if i == len(b) {
					return keys, b // cut short
				}
				switch string(b[2 : i+1]) {
				case "200~":
					keys = append(keys, key{keyPasteStart})
				case "201~":
					keys = append(keys, key{keyPasteEnd})
				case "A", "B", "C", "D":
					keys = append(keys, key{arrow(b[i])})
				}
				b = b[i+1:]
				continue
			}
			if len(b) > 1 && b[1] == 'O' {
				if len(b) == 2 {
					return keys, b
				}
				if b[2] >= 'A' && b[2] <= 'D' {
					keys = append(keys, key{arrow(b[2])})
				}
				b = b[3:]
				continue
			}
			keys = append(keys, key{keyEscape})
			b = b[1:]
			continue
		}
		if !utf8.FullRune(b) {
			return keys, b
		}
		r, n := utf8.DecodeRune(b)
		keys = append(keys, key{r})
		b = b[n:]
	}
	return keys, nil
}

// arrow is the key of an arrow sequence's final byte (A up .. D left).
func arrow(c byte) rune {
	return [...]rune{keyUp, keyDown, keyRight, keyLeft}[c-'A']
}

// handle applies one key: to the dialog when one is drawn (as agy's dialogs
// take the keyboard), else to the draft.
func (t *terminal) handle(k key) {
	t.notice = ""
	switch k.r {
	case keyPasteStart:
		t.pasting = true
		return
	case keyPasteEnd:
		t.pasting = false
		return
	}
	if t.start.key(k, t.pasting) {
		return
	}
	if t.pasting {
		t.paste(k.r)
		return
	}
	if t.dialog != nil {
		t.dialogKey(k)
		return
	}
	switch k.r {
	case '\r', '\n':
		text := strings.TrimSpace(string(t.draft))
		t.draft, t.cursor = t.draft[:0], 0
		if text == "" || t.start.refuses() {
			return
		}
		if text == "/rewind" || text == "/undo" {
			t.rewind()
			return
		}
		if err := t.srv.TypeTurn(text); err != nil {
			t.notice = err.Error()
		}
	case keyBackspace, keyCtrlH:
		if t.cursor > 0 {
			t.draft = slices.Delete(t.draft, t.cursor-1, t.cursor)
			t.cursor--
		}
	case keyCtrlA:
		t.cursor = t.lineStart()
	case keyCtrlE:
		t.cursor = t.lineEnd()
	case keyCtrlK:
		end := t.lineEnd()
		if end == t.cursor && end < len(t.draft) {
			end++ // at the end of a line: join the next
		}
		t.draft = slices.Delete(t.draft, t.cursor, end)
	default:
		if printable(k.r) {
			t.insert(k.r)
		}
	}
}

func printable(r rune) bool { return r >= ' ' && r != utf8.RuneError && !unicode.IsControl(r) }

func (t *terminal) insert(r rune) {
	t.draft = slices.Insert(t.draft, t.cursor, r)
	t.cursor++
}

func (t *terminal) lineStart() int {
	i := t.cursor
	for i > 0 && t.draft[i-1] != '\n' {
		i--
	}
	return i
}

func (t *terminal) lineEnd() int {
	i := t.cursor
	for i < len(t.draft) && t.draft[i] != '\n' {
		i++
	}
	return i
}

// paste takes one pasted character: into the dialog when one is drawn,
// else into the draft (a line break stays a line break: Enter inside a
// paste sends nothing).
func (t *terminal) paste(r rune) {
	if r == '\r' {
		r = '\n'
	}
	if r != '\n' && r != '\t' && !printable(r) {
		return
	}
	if d := t.dialog; d != nil {
		d.typed = append(d.typed, r)
		return
	}
	t.insert(r)
}

func stepAt(steps []wire.Step, index int) (wire.Step, bool) {
	for _, s := range steps {
		if s.Index() == index {
			return s, true
		}
	}
	return wire.Step{}, false
}

// update reads the server, opens the dialog of a prompt, marks a dialog
// stale, and redraws when the screen changed.
func (t *terminal) update() {
	conv := t.srv.ConversationID()
	steps := t.srv.Steps(conv)
	t.checkStale()
	if t.dialog == nil {
		t.dialog = t.nextDialog(conv, steps)
	}
	status := t.srv.RunStatus(conv)
	t.start.observe(status, steps)
	screen := t.start.draw(render(screenView{
		conv:   conv,
		steps:  steps,
		status: status,
		dialog: t.dialog,
		draft:  string(t.draft),
		notice: t.notice,
		height: t.start.room(t.height),
	}), status)
	if screen == t.drawn {
		return
	}
	t.drawn = screen
	_, _ = io.WriteString(t.out, clearScreen+screen)
}

// screenView is everything one screen shows.
type screenView struct {
	conv   string // the active conversation, "" before the first turn
	steps  []wire.Step
	status wire.RunStatus
	dialog *dialog
	draft  string
	notice string
	height int
}

// render draws a screen: a title, the conversation (trimmed to its last
// lines when the screen is short), a status line, the dialog and the draft.
func render(v screenView) string {
	head := []string{"fakeagy (agy stand-in) no conversation yet: the first turn typed starts one", ""}
	if v.conv != "" {
		head[0] = "fakeagy (agy stand-in) conversation " + v.conv
	}
	var conv []string
	for _, s := range v.steps {
		conv = append(conv, stepLines(s)...)
	}
	var foot []string
	foot = append(foot, "", "-- "+statusWord(v.status)+" --")
	if d := v.dialog; d != nil {
		foot = append(foot, dialogLines(d)...)
	}
	if v.notice != "" {
		foot = append(foot, "! "+v.notice)
	}
	for i, line := range strings.Split(v.draft, "\n") {
		if i == 0 {
			foot = append(foot, "> "+line)
		} else {
			foot = append(foot, "  "+line)
		}
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
func stepLines(s wire.Step) []string {
	switch {
	case s.Type == wire.StepUserInput && s.UserInput != nil:
		text := s.UserInput.UserResponse
		if text == "" && len(s.UserInput.Items) > 0 {
			text = s.UserInput.Items[0].Text
		}
		return prefixed("> ", text)
	case s.Type == wire.StepPlannerResponse && s.PlannerResponse != nil:
		text := s.PlannerResponse.Response
		if text == "" {
			text = s.PlannerResponse.ModifiedResponse
		}
		if text == "" {
			return nil
		}
		return prefixed("", text)
	case s.Type == wire.StepRunCommand && s.RunCommand != nil:
		lines := []string{"$ " + s.RunCommand.CommandLine}
		if o := s.RunCommand.CombinedOutput; o != nil {
			lines = append(lines, prefixed("  ", strings.TrimRight(o.Full, "\n"))...)
		}
		return lines
	case s.Type == wire.StepAskQuestion && s.AskQuestion != nil:
		var lines []string
		for _, q := range s.AskQuestion.Questions {
			line := "? " + q.Question
			if len(q.SelectedOptionIDs) > 0 {
				line += " -> " + optionTexts(q)
			}
			lines = append(lines, line)
		}
		return lines
	case s.Metadata.ToolAction != "" && s.Type != wire.StepPlannerResponse:
		return []string{"* " + s.Metadata.ToolAction}
	}
	return nil
}

func optionTexts(q wire.Question) string {
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

func statusWord(st wire.RunStatus) string {
	if st == "" {
		return "idle"
	}
	return strings.ToLower(strings.TrimPrefix(string(st), "CASCADE_RUN_STATUS_"))
}
