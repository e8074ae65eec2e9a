package mapper

import (
	"fmt"

	"github.com/agyharness/agyharness/messages"
)

// CloseKeys are the keys that close agy's own dialog for a prompt answered
// over RPC, as tmux key names: agy's terminal keeps its dialog open after an
// RPC answer, and the next turn typed would land in it. Recorded live:
// a permission's dialog ("Do you want to proceed?") takes 1 (yes) or 4 (no)
// and Enter; a question's takes its option digits and Enter (only the first
// question's, as agy's dialog shows one at a time); Escape dismisses a
// question declined, or answered with a write-in only.
//
// An option's id is pressed as its keys only when it is plain digits (at
// most 3): an id from agy like "Enter", "C-c" or "q" would be a tmux key
// name or a character agy's terminal acts on otherwise. Another id is an
// error, and no key is pressed.
func CloseKeys(p *Prompt, r messages.Resolve) ([]string, error) {
	if p == nil {
		return nil, nil
	}
	switch {
	case p.Interaction == "filePermission":
		// Its dialog has three rows, "No, deny access" the third
		// (antigravity-cli issues 289, 324; docs/DECISIONS.md).
		if r.Action == messages.ActionAccept {
			return []string{"1", "Enter"}, nil
		}
		return []string{"3", "Enter"}, nil
	case p.Kind == messages.KindElicitation:
		return []string{"Escape"}, nil // its dialog was never recorded; Escape closes agy's panels
	case p.Kind == messages.KindOther:
		return nil, nil // never answered over RPC
	}
	switch p.Kind {
	case messages.KindPermission:
		if r.Action == messages.ActionAccept {
			return []string{"1", "Enter"}, nil
		}
		return []string{"4", "Enter"}, nil
	case messages.KindQuestion:
		var first messages.Answer
		if r.Action == messages.ActionAccept && len(r.Answers) > 0 {
			first = r.Answers[0]
			if len(p.Questions) > 0 {
				for _, a := range r.Answers {
					if a.Question == p.Questions[0].Question {
						first = a
						break
					}
				}
			}
		}
		if len(first.SelectedOptionIDs) == 0 {
			return []string{"Escape"}, nil
		}
		for _, id := range first.SelectedOptionIDs {
			if !digits(id) {
				return nil, fmt.Errorf("mapper: option id %q is not plain digits: it is not pressed in agy's terminal", trimID(id))
			}
		}
		return append(append([]string(nil), first.SelectedOptionIDs...), "Enter"), nil
	}
	return nil, nil
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
