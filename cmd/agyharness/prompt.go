package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
)

// autoResolve is the unattended answer to a prompt (sim --yes): allow a
// permission, accept an MCP elicitation (no content), pick the first option
// of every question (a write-in of "yes" where a question has no options).
// A prompt of kind other has none (false): agy's terminal answers it.
func autoResolve(ev *messages.Event) (messages.Resolve, bool) {
	r := messages.Resolve{ElicitationID: ev.ElicitationID, Action: messages.ActionAccept}
	switch ev.Kind {
	case messages.KindOther:
		return r, false
	case messages.KindPermission, messages.KindElicitation:
		return r, true
	}
	for _, q := range ev.Questions {
		a := messages.Answer{Question: q.Question}
		if len(q.Options) > 0 {
			a.SelectedOptionIDs = []string{q.Options[0].ID}
		} else {
			a.WriteIn = "yes"
		}
		r.Answers = append(r.Answers, a)
	}
	return r, true
}

// pendingPrompt collects a person's answer to one elicitation, one typed
// line per question (or one y/n for a permission).
type pendingPrompt struct {
	ev       *messages.Event
	q        int // the question being asked
	answers  []messages.Answer
	declined bool // a permission answered "n"
}

// hint says what to type for the current question.
func (p *pendingPrompt) hint() string {
	switch p.ev.Kind {
	case messages.KindPermission:
		return "allow? [y/n]"
	case messages.KindElicitation:
		return "accept? [y/n]"
	}
	if p.q >= len(p.ev.Questions) {
		return ""
	}
	q := p.ev.Questions[p.q]
	var parts []string
	if len(q.Options) > 0 {
		if q.MultiSelect {
			parts = append(parts, fmt.Sprintf("numbers 1-%d, comma-separated", len(q.Options)))
		} else {
			parts = append(parts, fmt.Sprintf("a number 1-%d", len(q.Options)))
		}
	}
	if q.AllowWriteIn || len(q.Options) == 0 {
		parts = append(parts, "or your own answer")
	}
	h := "answer with " + strings.Join(parts, " ")
	if len(p.ev.Questions) > 1 {
		h = fmt.Sprintf("(%d/%d: %s) %s", p.q+1, len(p.ev.Questions), q.Question, h)
	}
	return h
}

// input takes one typed line. It reports whether the prompt is fully
// answered, or an error saying why the line is not an answer (ask again).
func (p *pendingPrompt) input(line string) (bool, error) {
	line = strings.TrimSpace(line)
	if p.ev.Kind == messages.KindPermission || p.ev.Kind == messages.KindElicitation {
		switch strings.ToLower(line) {
		case "y", "yes":
			p.declined = false
			return true, nil
		case "n", "no":
			p.declined = true
			return true, nil
		}
		return false, errors.New("type y or n")
	}
	if line == "" {
		return false, errors.New("an answer is required")
	}
	q := p.ev.Questions[p.q]
	a := messages.Answer{Question: q.Question}
	ids, ok := optionNumbers(line, len(q.Options))
	switch {
	case !ok && len(q.Options) > 0 && looksNumeric(line):
		return false, fmt.Errorf("%q is not an option number", line)
	case ok && len(ids) > 1 && !q.MultiSelect:
		return false, errors.New("pick one option")
	case ok:
		for _, n := range ids {
			a.SelectedOptionIDs = append(a.SelectedOptionIDs, q.Options[n-1].ID)
		}
	case q.AllowWriteIn || len(q.Options) == 0:
		a.WriteIn = line
	default:
		return false, fmt.Errorf("%q is not an option number", line)
	}
	p.answers = append(p.answers, a)
	p.q++
	return p.q >= len(p.ev.Questions), nil
}

// resolve is the command for the collected answer.
func (p *pendingPrompt) resolve() messages.Resolve {
	r := messages.Resolve{ElicitationID: p.ev.ElicitationID, Action: messages.ActionAccept}
	if p.ev.Kind == messages.KindPermission || p.ev.Kind == messages.KindElicitation {
		if p.declined {
			r.Action = messages.ActionDecline
		}
		return r
	}
	r.Answers = p.answers
	return r
}

// optionNumbers parses "2" or "1, 3" into option numbers within 1..n.
func optionNumbers(s string, n int) ([]int, bool) {
	if n == 0 {
		return nil, false
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > n {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// looksNumeric: "7" or "1,9" is a try at option numbers, never a write-in.
func looksNumeric(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && r != ',' && r != ' ' {
			return false
		}
	}
	return s != ""
}
