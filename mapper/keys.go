package mapper

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/agyharness/agyharness/messages"
)

// PermissionChoices are the choices a permission request offers: allow once
// and deny always (the RPC's allow true/false); with paneOwned also agy's
// two "always" rows, which only its terminal dialog gives (their wording is
// agy's, docs/DECISIONS.md "agy's options 2 and 3"). A filePermission's
// dialog has no such rows for the one file: it offers allow once and deny.
func PermissionChoices(p *Prompt, paneOwned bool) []messages.Choice {
	out := []messages.Choice{{ID: messages.ChoiceAllowOnce, Action: messages.ActionAccept, Text: "Yes"}}
	if paneOwned && p.Interaction != "filePermission" {
		conv, settings := alwaysTexts(p)
		out = append(out,
			messages.Choice{ID: messages.ChoiceAllowAlwaysConversation, Action: messages.ActionAccept, Text: conv},
			messages.Choice{ID: messages.ChoiceAllowAlwaysSettings, Action: messages.ActionAccept, Text: settings})
	}
	return append(out, messages.Choice{ID: messages.ChoiceDeny, Action: messages.ActionDecline, Text: "No"})
}

// alwaysTexts are agy's words for its rows 2 and 3: for a command, the
// prefix agy suggests (suggestedPersistPattern, else the command line);
// for another tool, the grant as settings.json spells it, action(target).
func alwaysTexts(p *Prompt) (conv, settings string) {
	if p.Command != nil || (p.Resource != nil && p.Resource.Action == "command") {
		prefix := p.Pattern
		switch {
		case prefix != "":
		case p.Command != nil:
			prefix = p.Command.Line
		default:
			prefix = p.Resource.Target
		}
		return "Yes, and always allow in this conversation for commands that start with '" + prefix + "'",
			"Yes, and always allow for commands that start with '" + prefix + "' (Persist to settings.json)"
	}
	grant := "*"
	if p.Resource != nil {
		grant = p.Resource.Action + "(" + p.Resource.Target + ")"
	}
	return "Yes, and always allow '" + grant + "' in this conversation",
		"Yes, and always allow '" + grant + "' (Persist to settings.json)"
}

// CloseKeys are the keys that give r in agy's own dialog for p, as tmux key
// names, in groups: one group per screen of the dialog (a question dialog
// shows one question at a time), pressed in order with a pause between so
// the dialog can draw its next question. agy's terminal keeps its dialog
// open after an RPC answer, and the next turn typed would land in it; agy's
// "always" rows are given only by these keys.
//
// screen is the pane's visible text where the session can read it, "" where
// it cannot. A permission's rows are read from its numbered rows: deny
// presses the digit of the row that says "No" (agy's dialog has four rows,
// or three with the sandbox on or for a file outside the workspace), an
// "always" choice the digit of its row, then Enter. Without a screen: 1 for
// allow once, 2 and 3 for the "always" rows of the four-row dialog, and n
// (agy's documented reject key, whatever the row count) for deny. A choice
// the dialog on screen has no row for is an error.
//
// A question: per question, single-select its option's digits then Enter;
// multi-select Down from the top to each chosen option and Space on it,
// then Enter (a digit's meaning in agy's checkbox list was never recorded:
// arrows cannot submit early); a write-in, a decline or a cancel is Escape,
// which closes the whole dialog.
//
// An option's id is pressed as its keys only when it is plain digits (at
// most 3): an id from agy like "Enter", "C-c" or "q" would be a tmux key
// name or a character agy's terminal acts on otherwise. Another id is an
// error, and no key is pressed.
func CloseKeys(p *Prompt, r messages.Resolve, screen string) ([][]string, error) {
	if p == nil {
		return nil, nil
	}
	switch {
	case p.Interaction == "filePermission":
		return filePermissionKeys(r)
	case p.Kind == messages.KindElicitation:
		return [][]string{{"Escape"}}, nil // its dialog was never recorded; Escape closes agy's panels
	case p.Kind == messages.KindOther:
		return nil, nil // never answered over RPC
	}
	switch p.Kind {
	case messages.KindPermission:
		return permissionKeys(r, screen)
	case messages.KindQuestion:
		return questionKeys(p, r)
	}
	return nil, nil
}

// filePermissionKeys answer agy's file-access dialog: three rows, "Yes,
// allow access" the first and "No, deny access" the third (antigravity-cli
// issues 289, 324; docs/DECISIONS.md). Its second row allows every file
// outside the workspace, not the one asked about, and is not offered.
func filePermissionKeys(r messages.Resolve) ([][]string, error) {
	switch r.Choice {
	case "", messages.ChoiceAllowOnce, messages.ChoiceDeny:
	default:
		return nil, fmt.Errorf("agy's file-access dialog has no row for %s", trimID(r.Choice))
	}
	if r.Action == messages.ActionAccept {
		return [][]string{{"1", "Enter"}}, nil
	}
	return [][]string{{"3", "Enter"}}, nil
}

func permissionKeys(r messages.Resolve, screen string) ([][]string, error) {
	choice := r.Choice
	if choice == "" {
		choice = messages.ChoiceDeny
		if r.Action == messages.ActionAccept {
			choice = messages.ChoiceAllowOnce
		}
	}
	rows := DialogRows(screen)
	var match func(string) bool
	var fallback []string
	switch choice {
	case messages.ChoiceAllowOnce:
		return [][]string{{"1", "Enter"}}, nil
	case messages.ChoiceDeny:
		match = func(t string) bool { return t == "No" || strings.HasPrefix(t, "No,") || strings.HasPrefix(t, "No ") }
		fallback = []string{"n"}
	case messages.ChoiceAllowAlwaysConversation:
		match = func(t string) bool {
			return strings.Contains(t, "always allow") && strings.Contains(t, "in this conversation")
		}
		fallback = []string{"2", "Enter"}
	case messages.ChoiceAllowAlwaysSettings:
		match = func(t string) bool {
			return strings.Contains(t, "always allow") && strings.Contains(t, "settings.json")
		}
		fallback = []string{"3", "Enter"}
	default:
		return nil, fmt.Errorf("unknown choice %q", trimID(choice))
	}
	if len(rows) == 0 {
		return [][]string{fallback}, nil
	}
	for i, t := range rows {
		if match(t) {
			return [][]string{{fmt.Sprint(i + 1), "Enter"}}, nil
		}
	}
	return nil, fmt.Errorf("agy's dialog shows no row for %s (its rows: %s)", choice, trimID(strings.Join(rows, " / ")))
}

func questionKeys(p *Prompt, r messages.Resolve) ([][]string, error) {
	if r.Action != messages.ActionAccept || len(r.Answers) == 0 {
		return [][]string{{"Escape"}}, nil
	}
	qs := p.Questions
	if len(qs) == 0 {
		// No question texts to go by: the first answer's options.
		qs = []messages.Question{{}}
	}
	var out [][]string
	for i, q := range qs {
		a, ok := answerTo(q, i, len(qs), r.Answers)
		if !ok || a.WriteIn != "" || len(a.SelectedOptionIDs) == 0 {
			// Escape closes the whole dialog (the RPC answer went already).
			return append(out, []string{"Escape"}), nil
		}
		for _, id := range a.SelectedOptionIDs {
			if !digits(id) {
				return nil, fmt.Errorf("mapper: option id %q is not plain digits: it is not pressed in agy's terminal", trimID(id))
			}
		}
		if !q.MultiSelect {
			out = append(out, append(slices.Clone(a.SelectedOptionIDs), "Enter"))
			continue
		}
		var at []int
		for _, id := range a.SelectedOptionIDs {
			n := slices.IndexFunc(q.Options, func(o messages.Option) bool { return o.ID == id })
			if n < 0 {
				return nil, fmt.Errorf("question %q has no option id %q", trimID(q.Question), trimID(id))
			}
			at = append(at, n)
		}
		slices.Sort(at)
		var keys []string
		cur := 0
		for _, n := range slices.Compact(at) {
			for ; cur < n; cur++ {
				keys = append(keys, "Down")
			}
			keys = append(keys, "Space")
		}
		out = append(out, append(keys, "Enter"))
	}
	return out, nil
}

// answerTo finds the answer to question i of n: the one naming its text,
// else by order when no answer names its question.
func answerTo(q messages.Question, i, n int, answers []messages.Answer) (messages.Answer, bool) {
	for _, a := range answers {
		if a.Question != "" && a.Question == q.Question {
			return a, true
		}
	}
	if q.Question == "" && i == 0 {
		return answers[0], true
	}
	if len(answers) == n && i < len(answers) && answers[i].Question == "" {
		return answers[i], true
	}
	return messages.Answer{}, false
}

// DialogRows reads the rows of the dialog agy's pane shows: the texts of
// its last run of numbered lines "1. ...", "2. ...", in order ("" when the
// screen shows none). A line's leading frame and cursor marks (anything
// before its number that is not a letter or a digit) are skipped.
func DialogRows(screen string) []string {
	var last, run []string
	for _, line := range strings.Split(screen, "\n") {
		n, text, ok := numberedRow(line)
		switch {
		case ok && n == 1:
			if len(run) >= 2 {
				last = run
			}
			run = []string{text}
		case ok && n == len(run)+1 && len(run) > 0:
			run = append(run, text)
		default:
			if len(run) >= 2 {
				last = run
			}
			run = nil
		}
	}
	if len(run) >= 2 {
		last = run
	}
	return last
}

// numberedRow parses "<marks> N. text" (N one digit).
func numberedRow(line string) (int, string, bool) {
	i := strings.IndexFunc(line, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
	if i < 0 || i+2 >= len(line) {
		return 0, "", false
	}
	c := line[i]
	if c < '1' || c > '9' || line[i+1] != '.' {
		return 0, "", false
	}
	return int(c - '0'), strings.TrimSpace(line[i+2:]), true
}

// digits reports whether id is 1 to 3 ASCII digits.
func digits(id string) bool {
	if id == "" || len(id) > 3 {
		return false
	}
	for _, c := range []byte(id) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// trimID shortens an id quoted in an error.
func trimID(id string) string {
	if len(id) > 40 {
		return id[:40] + "..."
	}
	return id
}
