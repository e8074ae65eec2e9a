package agytest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// waitTarget waits until the open prompt asks for target.
func waitTarget(t *testing.T, srv *agytest.Server, conv, target string) wire.Step {
	t.Helper()
	var step wire.Step
	require.Eventually(t, func() bool {
		s, ok := srv.OpenPrompt(conv)
		step = s
		return ok && s.RequestedInteraction != nil && s.RequestedInteraction.Permission != nil &&
			s.RequestedInteraction.Permission.Resource.Target == target
	}, 10*time.Second, time.Millisecond, "no prompt for %q", target)
	return step
}

// TestCompoundCommandIsAskedBySegment: `a && b` asks for a, then, once a is
// allowed, the same step (same index) stays WAITING asking for b, with the
// first answer in completedInteractions and permissionGrants.
func TestCompoundCommandIsAskedBySegment(t *testing.T) {
	srv, c, conv := start(t, fast(script(
		agytest.Run(agytest.CommandAction{Line: "git status && git log", Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Done.", 1),
	)))
	send(t, c, conv, "look")
	first := waitTarget(t, srv, conv, "git status")
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(first, true)))
	second := waitTarget(t, srv, conv, "git log")
	assert.Equal(t, first.Index(), second.Index(), "the same step asks again")
	assert.Equal(t, wire.StatusWaiting, second.Status)
	require.Len(t, second.CompletedInteractions, 1)
	var perms struct {
		Grants []json.RawMessage `json:"permissionGrants"`
	}
	require.NoError(t, json.Unmarshal(second.Permissions, &perms))
	assert.Len(t, perms.Grants, 1)
	assert.Contains(t, string(second.Raw), `"suggestedPersistPattern":"git"`)

	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(second, true)))
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[first.Index()]
	assert.Equal(t, wire.StatusDone, done.Status)
	assert.Len(t, done.CompletedInteractions, 2)
	require.NoError(t, json.Unmarshal(done.Permissions, &perms))
	assert.Len(t, perms.Grants, 2)
	assert.Equal(t, "ok\n", done.RunCommand.CombinedOutput.Full)
}

// TestCompoundCommandDeniedSegmentEndsTheStep: a denied segment ends the
// step (DONE, never run); nothing more is asked.
func TestCompoundCommandDeniedSegmentEndsTheStep(t *testing.T) {
	srv, c, conv := start(t, fast(script(
		agytest.Run(agytest.CommandAction{Line: "make && make install", Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Stopped.", 1),
	)))
	send(t, c, conv, "build")
	first := waitTarget(t, srv, conv, "make")
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(first, true)))
	second := waitTarget(t, srv, conv, "make install")
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(second, false)))
	waitIdle(t, srv, conv)
	done := srv.Steps(conv)[first.Index()]
	assert.Equal(t, wire.StatusDone, done.Status)
	assert.Nil(t, done.RunCommand.CombinedOutput)
}

// TestNoReaskAsksOnce: Options.NoReask asks the whole line once.
func TestNoReaskAsksOnce(t *testing.T) {
	opts := fast(script(agytest.Run(agytest.CommandAction{Line: "a && b", NeedsApproval: true}), agytest.Say("ok", 1)))
	opts.NoReask = true
	srv, c, conv := start(t, opts)
	send(t, c, conv, "go")
	p := waitTarget(t, srv, conv, "a && b")
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(p, true)))
	waitIdle(t, srv, conv)
}
