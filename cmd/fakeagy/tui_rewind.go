package main

import (
	"fmt"

	"github.com/agyharness/agyharness/rpc/agytest"
)

// rewind is /rewind (alias /undo): the conversation goes back to before
// its last user turn, which is gone with everything after it. agy opens a
// picker of the user turns; the fake always picks the last one.
func (t *terminal) rewind() {
	conv := t.srv.ConversationID()
	if conv == "" {
		t.notice = "nothing to rewind"
		return
	}
	steps := t.srv.Steps(conv)
	at := agytest.LastUserInput(steps)
	if at < 0 {
		t.notice = "nothing to rewind"
		return
	}
	if err := t.srv.Rewind(conv, at); err != nil {
		t.notice = err.Error()
		return
	}
	t.notice = fmt.Sprintf("rewound to step %d", at)
}
