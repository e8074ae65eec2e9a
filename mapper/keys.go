package mapper

import "github.com/agyharness/agyharness/messages"

// CloseKeys are the keys that close agy's own dialog for a prompt answered
// over RPC, as tmux key names: agy's terminal keeps its dialog open after an
// RPC answer, and the next turn typed would land in it. Recorded live:
// a permission's dialog ("Do you want to proceed?") takes 1 (yes) or 4 (no)
// and Enter; a question's takes its option digits and Enter (only the first
// question's, as agy's dialog shows one at a time); Escape dismisses a
// question declined, or answered with a write-in only.
func CloseKeys(p *Prompt, r messages.Resolve) []string {
	if p == nil {
		return nil
	}
	switch p.Kind {
	case messages.KindPermission:
		if r.Action == messages.ActionAccept {
			return []string{"1", "Enter"}
		}
		return []string{"4", "Enter"}
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
			return []string{"Escape"}
		}
		return append(append([]string(nil), first.SelectedOptionIDs...), "Enter")
	}
	return nil
}
