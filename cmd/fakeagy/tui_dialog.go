package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agyharness/agyharness/wire"
)

// agy's prompt dialogs as the fake draws them, worded as the public sources
// quote agy's (docs/DECISIONS.md "agy's options 2 and 3", "Question dialogs
// of several questions"):
//   - a permission: "Do you want to proceed?" with four rows, 1 "Yes", 2 and
//     3 "Yes, and always allow ..." (this conversation; persisted to
//     settings.json), 4 "No";
//   - a command while agy's terminal sandbox is on (--sandbox): three rows,
//     1 "Yes", 2 "Yes, and run without sandbox restrictions", 3 "No";
//   - a file read or write outside the workspace (a permission on a
//     read_file or write_file outside it, or agy's filePermission
//     interaction): "Allow access to this file?" with 1 "Yes, allow
//     access", 2 "Yes, and always allow non-workspace access", 3 "No, deny
//     access";
//   - an MCP elicitation, or an interaction of another kind: "Yes", "No";
//   - when the same step asks again (a compound command's next segment) the
//     dialog is redrawn for the new ask;
//   - a question dialog shows one question at a time ("question i of n"):
//     a single-select question takes a digit (or the arrows) then Enter, a
//     multi-select one the arrows and Space (or digits) then Enter; Left
//     goes back a question; the last Enter answers them all.
//
// The cursor starts on the first row; a digit moves it to its row (toggles
// the row in a multi-select question); Up and Down move it; Enter takes the
// row under it. y and n (agy's documented confirm keys) allow once and deny
// a permission at once. Escape declines. Text typed goes into the dialog's
// own line, and Enter then only clears that line.

// dialogOptions say how the dialogs look.
type dialogOptions struct {
	sandbox   bool   // agy's terminal sandbox is on: a command's dialog has three rows
	workspace string // files outside it get the file-access dialog ("" : none do)
}

// grants are the prefixes and grants agy's "always" rows allowed, as
// settings.json spells them (command(<prefix>), read_file(<path>)): a later
// prompt they cover is allowed without a dialog, as agy's is. settings are
// the ones row 3 persisted (kept in memory: the fake writes no file).
type grants struct {
	conversation map[string]bool // conversation id + "\x00" + grant
	settings     map[string]bool
}

// dialog is agy's prompt dialog on screen. Like agy's, it takes the
// keyboard while drawn (what is typed goes into it, never into a turn), and
// it stays drawn after its prompt was answered elsewhere (stale) until the
// keys that close it.
type dialog struct {
	key    promptKey
	ask    wire.Interaction
	kind   dialogKind
	rows   []string // a permission's rows
	grant  string   // the grant its "always" rows give
	multi  []bool   // per question: takes several options
	stale  bool     // answered elsewhere
	q      int      // the question on screen
	cursor int      // the row under the cursor (0-based)
	picked [][]int  // per question: the options picked (1-based), in order
	typed  []rune   // text typed into the dialog: agy's filter/amend line, lost on Enter
	// done is how many asks of its step were answered when it was drawn:
	// agy asks again on the same step (a compound command's next segment)
	// and redraws its dialog for the new ask.
	done int
	// name is agy's name for what it asks when it is neither a permission
	// nor a question ("filePermission", "elicitation", "browserAction", ...).
	name string
}

type dialogKind int

const (
	dialogQuestion dialogKind = iota
	dialogPermission
	dialogSandbox
	dialogFileAccess
	dialogOther // an MCP elicitation, or an interaction of another kind
)

// The four rows' words (agy 1.1.5's, as shindgew/agy-acp quotes them).
func fourRows(grant string, command bool) []string {
	if command {
		return []string{"Yes",
			"Yes, and always allow in this conversation for commands that start with '" + grant + "'",
			"Yes, and always allow for commands that start with '" + grant + "' (Persist to settings.json)",
			"No"}
	}
	return []string{"Yes",
		"Yes, and always allow '" + grant + "' in this conversation",
		"Yes, and always allow '" + grant + "' (Persist to settings.json)",
		"No"}
}

var (
	sandboxRows    = []string{"Yes", "Yes, and run without sandbox restrictions", "No"}
	fileAccessRows = []string{"Yes, allow access", "Yes, and always allow non-workspace access", "No, deny access"}
)

func (t *terminal) newDialog(conv string, s wire.Step) *dialog {
	d := &dialog{key: promptKey{conv, s.Index()}, ask: *s.RequestedInteraction, done: len(s.CompletedInteractions)}
	if d.ask.Permission == nil && d.ask.AskQuestion == nil {
		d.name = interactionName(s)
		d.kind, d.rows = dialogOther, []string{"Yes", "No"}
		if d.ask.FilePermission != nil {
			d.kind, d.rows = dialogFileAccess, fileAccessRows
		}
		return d
	}
	if p := d.ask.Permission; p != nil {
		d.kind, d.grant = dialogPermission, grantOf(p)
		res := p.Resource
		command := res == nil || res.Action == "command"
		switch {
		case res != nil && (res.Action == "read_file" || res.Action == "write_file") && t.dialogs.outside(res.Target):
			d.kind, d.rows = dialogFileAccess, fileAccessRows
		case command && t.dialogs.sandbox:
			d.kind, d.rows = dialogSandbox, sandboxRows
		default:
			prefix := p.SuggestedPersistPattern
			if prefix == "" && res != nil {
				prefix = res.Target
			}
			if !command {
				prefix = d.grant
			}
			d.rows = fourRows(prefix, command)
		}
		return d
	}
	qs := d.ask.AskQuestion.Questions
	d.multi, d.picked = make([]bool, len(qs)), make([][]int, len(qs))
	if s.Metadata.ToolCall != nil {
		// Whether a question takes several options is only in the tool
		// call's arguments, as agy records it.
		var args struct {
			Questions []struct {
				MultiSelect bool `json:"is_multi_select"`
			} `json:"questions"`
		}
		if json.Unmarshal([]byte(s.Metadata.ToolCall.ArgumentsJSON), &args) == nil {
			for i := range min(len(args.Questions), len(qs)) {
				d.multi[i] = args.Questions[i].MultiSelect
			}
		}
	}
	return d
}

// outside reports whether path is outside the workspace.
func (o dialogOptions) outside(path string) bool {
	if o.workspace == "" || path == "" {
		return false
	}
	rel, err := filepath.Rel(o.workspace, filepath.Clean(path))
	return err != nil || rel == ".." || strings.HasPrefix(rel, "../")
}

// grantOf is a permission's grant as settings.json spells it.
func grantOf(p *wire.PermissionRequest) string {
	res := p.Resource
	if res == nil {
		return "command(*)"
	}
	target := res.Target
	if res.Action == "command" && p.SuggestedPersistPattern != "" {
		target = p.SuggestedPersistPattern
	}
	return res.Action + "(" + target + ")"
}

// granted reports whether an "always" row allowed this permission already.
func (t *terminal) granted(conv string, p *wire.PermissionRequest) bool {
	g := grantOf(p)
	if t.grants.settings[g] || t.grants.conversation[conv+"\x00"+g] {
		return true
	}
	if res := p.Resource; res != nil && res.Action == "command" {
		// A command prefix covers the commands that start with it.
		for have := range t.grants.settings {
			if coversCommand(have, res.Target) {
				return true
			}
		}
		for have := range t.grants.conversation {
			if c, ok := strings.CutPrefix(have, conv+"\x00"); ok && coversCommand(c, res.Target) {
				return true
			}
		}
	}
	return false
}

func coversCommand(grant, line string) bool {
	prefix, ok := strings.CutPrefix(grant, "command(")
	if !ok {
		return false
	}
	prefix = strings.TrimSuffix(prefix, ")")
	return line == prefix || strings.HasPrefix(line, prefix+" ")
}

// options are the rows on screen: a permission's, or the current question's.
func (d *dialog) options() []string {
	if d.kind != dialogQuestion {
		return d.rows
	}
	var texts []string
	if qs := d.ask.AskQuestion.Questions; d.q < len(qs) {
		for _, o := range qs[d.q].Options {
			texts = append(texts, o.Text)
		}
	}
	return texts
}

func (d *dialog) multiNow() bool {
	return d.kind == dialogQuestion && d.q < len(d.multi) && d.multi[d.q]
}

// nextDialog is the dialog of the first prompt not shown yet: one WAITING,
// or one answered elsewhere since (shown stale, as agy's terminal keeps it).
// A permission an "always" row covers is allowed at once, with no dialog.
func (t *terminal) nextDialog(conv string, steps []wire.Step) *dialog {
	for _, s := range steps {
		key := promptKey{conv, s.Index()}
		if s.RequestedInteraction == nil || t.shown[key] {
			continue
		}
		answered := len(s.CompletedInteractions) > 0 && s.Index() >= t.history[conv]
		if s.Status != wire.StatusWaiting && !answered {
			continue
		}
		t.shown[key] = true
		if p := s.RequestedInteraction.Permission; p != nil && s.Status == wire.StatusWaiting && t.granted(conv, p) {
			if err := t.srv.AnswerFromTerminal(conv, wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}}); err != nil {
				t.notice = err.Error()
			}
			continue
		}
		d := t.newDialog(conv, s)
		d.stale = s.Status != wire.StatusWaiting
		return d
	}
	return nil
}

// dialogKey applies a key to the dialog.
func (t *terminal) dialogKey(k key) {
	t.checkStale()
	d := t.dialog
	n := len(d.options())
	switch {
	case k.r == keyEscape:
		if !d.stale {
			t.decline()
		}
		t.dialog = nil
	case k.r == '\r' || k.r == '\n':
		t.confirm()
	case k.r == keyBackspace || k.r == keyCtrlH:
		if len(d.typed) > 0 {
			d.typed = d.typed[:len(d.typed)-1]
		}
	case k.r == keyCtrlK:
		d.typed = d.typed[:0]
	case k.r == keyUp:
		d.cursor = max(d.cursor-1, 0)
	case k.r == keyDown:
		d.cursor = min(d.cursor+1, max(n-1, 0))
	case k.r == keyLeft && d.kind == dialogQuestion && d.q > 0:
		// Back a question, its answer kept (agy 1.0.3 memorizes them).
		d.q--
		d.cursor = 0
		if p := d.picked[d.q]; len(p) > 0 {
			d.cursor = p[len(p)-1] - 1
		}
	case len(d.typed) == 0 && k.r == ' ' && d.multiNow():
		d.toggle(d.cursor + 1)
	case len(d.typed) == 0 && d.kind != dialogQuestion && (k.r == 'y' || k.r == 'n'):
		if d.stale {
			t.dialog = nil
			return
		}
		t.answer(d.nonQuestionAnswer(k.r == 'y'))
	case len(d.typed) == 0 && k.r >= '1' && k.r <= '9':
		row := int(k.r - '0')
		switch {
		case row > n:
			t.notice = fmt.Sprintf("no option %d", row)
		case d.multiNow():
			d.toggle(row)
			d.cursor = row - 1
		default:
			d.cursor = row - 1
		}
	case printable(k.r):
		d.typed = append(d.typed, k.r)
	}
}

// toggle picks or unpicks option row (1-based) of the current question.
func (d *dialog) toggle(row int) {
	p := d.picked[d.q]
	if slices.Contains(p, row) {
		d.picked[d.q] = slices.DeleteFunc(p, func(x int) bool { return x == row })
		return
	}
	d.picked[d.q] = append(p, row)
}

// confirm is Enter in the dialog: it takes the row under the cursor (a
// multi-select question: the rows picked), and answers once the last
// question is taken.
func (t *terminal) confirm() {
	d := t.dialog
	if len(d.typed) > 0 {
		d.typed = d.typed[:0] // what was typed into the dialog is lost
		return
	}
	if len(d.options()) == 0 {
		t.notice = "nothing to pick: Esc closes this"
		return
	}
	if d.kind != dialogQuestion {
		row := d.cursor + 1
		if d.stale {
			t.dialog = nil
			return
		}
		allow := !strings.HasPrefix(d.rows[d.cursor], "No")
		if allow && d.kind == dialogPermission && d.ask.Permission != nil && (row == 2 || row == 3) {
			t.keepGrant(d, row == 3)
		}
		t.answer(d.nonQuestionAnswer(allow))
		return
	}
	if !d.multiNow() {
		d.picked[d.q] = []int{d.cursor + 1}
	}
	if d.q+1 < len(d.picked) {
		d.q++
		d.cursor = 0
		return
	}
	if d.stale {
		t.dialog = nil
		return
	}
	qs := d.ask.AskQuestion.Questions
	var rs []wire.QuestionResponse
	for i, q := range qs {
		r := wire.QuestionResponse{Question: q.Question}
		for _, n := range d.picked[i] {
			r.SelectedOptionIDs = append(r.SelectedOptionIDs, q.Options[n-1].ID)
		}
		rs = append(rs, r)
	}
	t.answer(wire.InteractionResponse{AskQuestion: &wire.QuestionResponses{Responses: rs}})
}

// keepGrant records what row 2 (this conversation) or 3 (settings) allows.
func (t *terminal) keepGrant(d *dialog, settings bool) {
	if settings {
		if t.grants.settings == nil {
			t.grants.settings = map[string]bool{}
		}
		t.grants.settings[d.grant] = true
		return
	}
	if t.grants.conversation == nil {
		t.grants.conversation = map[string]bool{}
	}
	t.grants.conversation[d.key.conv+"\x00"+d.grant] = true
}

// decline is Escape on an open prompt: agy declines it (a question with no
// responses; a permission denied, as agy reports "User declined the tool
// call").
func (t *terminal) decline() {
	if d := t.dialog; d.kind != dialogQuestion {
		t.answer(d.nonQuestionAnswer(false))
		return
	}
	t.answer(wire.InteractionResponse{AskQuestion: &wire.QuestionResponses{Responses: []wire.QuestionResponse{}}})
}

// nonQuestionAnswer is the answer of a dialog that is not a question's, in
// the shape of agy's schema for what it asks.
func (d *dialog) nonQuestionAnswer(yes bool) wire.InteractionResponse {
	switch {
	case d.ask.Permission != nil:
		return wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: yes}}
	case d.ask.FilePermission != nil:
		return wire.InteractionResponse{FilePermission: &wire.FilePermissionAnswer{Allow: yes, Scope: wire.PermissionScopeOnce, AbsolutePathURI: d.ask.FilePermission.AbsolutePathURI}}
	case d.ask.Elicitation != nil:
		action := "decline"
		if yes {
			action = "accept"
		}
		return wire.InteractionResponse{Elicitation: &wire.ElicitationAnswer{Action: action}}
	}
	// Any other kind: the fake takes any answer from its terminal.
	return wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: yes}}
}

// answer answers the dialog's prompt from this terminal, and closes the
// dialog, as agy's closes when the person answers in it. An answer agy
// refuses (the prompt was answered elsewhere meanwhile) closes it too.
func (t *terminal) answer(resp wire.InteractionResponse) {
	if err := t.srv.AnswerFromTerminal(t.dialog.key.conv, resp); err != nil {
		t.notice = err.Error()
	}
	t.dialog = nil
}

// checkStale marks the dialog stale once its step left WAITING (answered
// over RPC, or gone), and redraws it when its step asks again.
func (t *terminal) checkStale() {
	d := t.dialog
	if d == nil || d.stale {
		return
	}
	s, ok := stepAt(t.srv.Steps(d.key.conv), d.key.index)
	switch {
	case !ok || s.Status != wire.StatusWaiting:
		d.stale = true
	case len(s.CompletedInteractions) != d.done && s.RequestedInteraction != nil:
		// The same step asks again: agy redraws its dialog for the new ask
		// (keys pressed now answer that one).
		t.dialog = t.newDialog(d.key.conv, s)
	}
}

// interactionName is the key of a step's requestedInteraction as agy sent
// it ("" when there is none).
func interactionName(s wire.Step) string {
	var v struct {
		RI map[string]json.RawMessage `json:"requestedInteraction"`
	}
	if json.Unmarshal(s.Raw, &v) != nil {
		return ""
	}
	names := make([]string, 0, len(v.RI))
	for k := range v.RI {
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// dialogLines draws the dialog: its header, its rows numbered (the cursor's
// marked >, a picked one *), text typed into it on its own line, and what
// its keys do.
func dialogLines(d *dialog) []string {
	lines := []string{"+-- agy asks ---------------------------------"}
	opts := d.options()
	switch d.kind {
	case dialogFileAccess:
		verb, target := "Read", ""
		if fp := d.ask.FilePermission; fp != nil {
			target = strings.TrimPrefix(fp.AbsolutePathURI, "file://")
		} else if r := d.ask.Permission.Resource; r != nil {
			target = r.Target
			if r.Action == "write_file" {
				verb = "Write"
			}
		}
		lines = append(lines, "| "+verb+": "+target, "| Reason: outside workspace", "| Allow access to this file?")
	case dialogOther:
		if e := d.ask.Elicitation; e != nil {
			lines = append(lines, "| "+e.ServerName+" (MCP) asks: "+e.Message)
		} else {
			lines = append(lines, "| agy asks: "+d.name, "| Do you want to proceed?")
		}
	case dialogPermission, dialogSandbox:
		what := d.ask.Permission.ActionDescription
		if r := d.ask.Permission.Resource; r != nil {
			what = strings.TrimSpace(r.Action + " " + r.Target)
		}
		lines = append(lines, "| "+what, "| Do you want to proceed?")
	default:
		qs := d.ask.AskQuestion.Questions
		if len(qs) > 1 {
			lines = append(lines, fmt.Sprintf("| (question %d of %d)", d.q+1, len(qs)))
		}
		if d.q < len(qs) {
			lines = append(lines, "| "+qs[d.q].Question)
		}
	}
	for i, o := range opts {
		mark := " "
		switch {
		case d.multiNow() && slices.Contains(d.picked[d.q], i+1):
			mark = "*"
		case i == d.cursor:
			mark = ">"
		}
		lines = append(lines, fmt.Sprintf("| %s %d. %s", mark, i+1, o))
	}
	if len(d.typed) > 0 {
		lines = append(lines, "| > "+strings.ReplaceAll(string(d.typed), "\n", " "))
	}
	several := ""
	if d.multiNow() {
		several = ", several (arrows, Space)"
	}
	if d.stale {
		lines = append(lines, fmt.Sprintf("| (answered elsewhere: 1-%d%s then Enter, or Esc, closes this)", len(opts), several))
	} else {
		lines = append(lines, fmt.Sprintf("| [1-%d%s then Enter; Esc declines]", len(opts), several))
	}
	return append(lines, "+---------------------------------------------")
}
