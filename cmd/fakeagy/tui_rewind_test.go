package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// TestRewindTypedInTheTerminal: /rewind takes the conversation back to
// before its last user turn.
func TestRewindTypedInTheTerminal(t *testing.T) {
	srv, term, out := newTestTerminalWith(t, &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("ok", 1)}}}})
	conv := srv.ConversationID()
	idle := func() bool { return srv.RunStatus(conv) == wire.RunIdle }
	press(term, "one\r")
	require.Eventually(t, func() bool { return idle() && len(srv.Steps(conv)) > 0 }, wait, time.Millisecond)
	at := len(srv.Steps(conv))
	press(term, "two\r")
	require.Eventually(t, func() bool { return idle() && len(srv.Steps(conv)) > at }, wait, time.Millisecond)
	press(term, "/rewind\r")
	assert.Len(t, srv.Steps(conv), at, "the last turn is gone")
	assert.Contains(t, out.screen(), "rewound to step")
}
