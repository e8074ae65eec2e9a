package agytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// The in-process terminal takes agy's "always" rows (2 or 3, Enter) as
// allowing the open permission prompt, as agy's dialog does; other keys
// are only recorded.
func TestTerminalTakesTheAlwaysRows(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
		agytest.Run(agytest.CommandAction{Line: "make test", Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Tested.", 1),
	}}}}
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: -1, PromptTimeout: -1})
	term := srv.Terminal()
	require.NoError(t, srv.TypeTurn("test it"))
	conv := srv.ConversationID()
	require.Eventually(t, func() bool { _, ok := srv.OpenPrompt(conv); return ok }, 10*time.Second, time.Millisecond)
	require.NoError(t, term.Press(context.Background(), "1", "Enter"))
	_, open := srv.OpenPrompt(conv)
	assert.True(t, open, "row 1 after an RPC answer closes a dialog: it answers nothing here")
	require.NoError(t, term.Press(context.Background(), "2", "Enter"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.WaitIdle(ctx, conv))
	var allowed bool
	for _, s := range srv.Steps(conv) {
		if s.Type == wire.StepRunCommand && len(s.CompletedInteractions) > 0 {
			allowed = s.CompletedInteractions[0].Response.Permission.Allow
		}
	}
	assert.True(t, allowed)
	assert.Equal(t, [][]string{{"1", "Enter"}, {"2", "Enter"}}, term.Pressed())
}
