package agytest_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// Behaviours of agy recorded live (issue 19), which the fake has by default.

func TestFreshServerHasNoConversationUntilATurnIsTyped(t *testing.T) {
	opts := fast(script(agytest.Say("Hello.", 2)))
	opts.Conversation = false
	srv, c, _ := start(t, opts)
	ctx := testCtx(t)

	assert.Empty(t, srv.ConversationID())
	all, err := c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	assert.Empty(t, all.TrajectorySummaries, "a fresh agy lists no conversation")

	require.NoError(t, srv.TypeTurn("hello"))
	conv := srv.ConversationID()
	require.NotEmpty(t, conv, "the first typed turn mints the conversation")
	waitIdle(t, srv, conv)
	all, err = c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	require.Contains(t, all.TrajectorySummaries, conv)
	steps := srv.Steps(conv)
	require.NotEmpty(t, steps)
	assert.Equal(t, wire.StepUserInput, steps[0].Type)
	assert.Equal(t, "hello", steps[0].UserInput.UserResponse)
	assert.Equal(t, wire.SourceUserExplicit, steps[0].Metadata.Source)

	require.NoError(t, srv.TypeTurn("again"))
	assert.Equal(t, conv, srv.ConversationID(), "later turns go to the same conversation")
}

func TestEarlierRunsAreListedButNotActive(t *testing.T) {
	opts := fast(script(agytest.Say("Hello.", 2)))
	opts.Conversation = false
	opts.EarlierRuns = 2
	srv, c, _ := start(t, opts)
	ctx := testCtx(t)

	assert.Empty(t, srv.ConversationID(), "agy's terminal starts on a new conversation")
	all, err := c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	require.Len(t, all.TrajectorySummaries, 2)
	var lastActive time.Time
	for id, s := range all.TrajectorySummaries {
		assert.Equal(t, wire.RunIdle, s.Status, id)
		at, err := time.Parse(time.RFC3339Nano, s.LastUserInputTime)
		require.NoError(t, err)
		assert.True(t, at.Before(time.Now().Add(-30*time.Minute)), "an earlier run was active hours ago")
		if at.After(lastActive) {
			lastActive = at
		}
		steps, err := c.GetCascadeTrajectorySteps(ctx, id)
		require.NoError(t, err)
		require.Len(t, steps, 2)
		assert.Equal(t, wire.StatusDone, steps[1].Status)
	}

	require.NoError(t, srv.TypeTurn("hello"))
	conv := srv.ConversationID()
	require.NotEmpty(t, conv)
	assert.NotContains(t, all.TrajectorySummaries, conv, "the typed turn mints a new conversation")
	waitIdle(t, srv, conv)
}

func TestEarlierSubagentsAreListedAsChildren(t *testing.T) {
	opts := fast(script(agytest.Say("Hello.", 2)))
	opts.EarlierRuns, opts.EarlierSubagents = 1000, true
	srv, c, _ := start(t, opts)
	all, err := c.GetAllCascadeTrajectories(testCtx(t))
	require.NoError(t, err)
	require.Len(t, all.TrajectorySummaries, 1001, "the earlier runs and the active conversation")
	children := 0
	for id, s := range all.TrajectorySummaries {
		md := s.TrajectoryMetadata
		if md.ParentConversationID == "" {
			assert.Contains(t, []string{"", id}, md.RootConversationID, "a root is its own root")
			continue
		}
		children++
		parent, ok := all.TrajectorySummaries[md.ParentConversationID]
		require.True(t, ok, "a child's parent is listed")
		assert.Empty(t, parent.TrajectoryMetadata.ParentConversationID, "a child's parent is a root")
		assert.Equal(t, md.ParentConversationID, md.RootConversationID, id)
		assert.NotEqual(t, srv.ConversationID(), md.ParentConversationID, "the active conversation has no listed children")
		assert.Equal(t, wire.RunIdle, s.Status, id)
		assert.NotEmpty(t, s.LastUserInputTime, id)
	}
	assert.Equal(t, 250, children, "one in four is a subagent child")
	for _, conv := range []string{srv.ConversationID(), srv.Conversations()[3]} {
		s, ok, err := c.TrajectorySummaryOf(testCtx(t), conv)
		require.NoError(t, err)
		require.True(t, ok, conv)
		assert.Equal(t, all.TrajectorySummaries[conv], s, "one entry read is the list's")
	}
	_, ok, err := c.TrajectorySummaryOf(testCtx(t), "no-such-conversation")
	require.NoError(t, err)
	assert.False(t, ok, "a conversation not listed")
}

func TestStartCascadeNeedsASourceAndIsNeverTheTerminals(t *testing.T) {
	opts := fast(script(agytest.Say("Hello.", 2)))
	opts.Conversation = false
	srv, c, _ := start(t, opts)
	ctx := testCtx(t)

	var resp struct {
		CascadeID string `json:"cascadeId"`
	}
	err := c.Call(ctx, rpc.MethodStartCascade, map[string]string{}, &resp)
	var rerr *rpc.Error
	require.ErrorAs(t, err, &rerr, "agy requires a source")
	assert.Equal(t, rpc.CodeInvalidArgument, rerr.Code)

	raw, err := c.StartCascade(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "cascadeId")
	assert.Len(t, srv.Conversations(), 1)
	assert.Empty(t, srv.ConversationID(), "a StartCascade conversation is not the one agy's terminal shows")

	require.NoError(t, srv.TypeTurn("typed"))
	assert.NotEqual(t, srv.Conversations()[0], srv.ConversationID())
}

// agy may send no stream frame while a prompt is parked: only a read of the
// steps shows it WAITING.
func TestUnstreamedPromptIsSeenOnlyByReadingTheSteps(t *testing.T) {
	for _, p := range []float64{1, -1} {
		t.Run(fmt.Sprintf("UnstreamedPrompts=%v", p), func(t *testing.T) {
			opts := fast(script(agytest.Run(agytest.CommandAction{Line: "ls", Output: "a\n", NeedsApproval: true})))
			opts.UnstreamedPrompts = p
			srv, c, conv := start(t, opts)
			ctx := testCtx(t)
			st, err := c.StreamAgentStateUpdates(ctx, conv, "sub-1")
			require.NoError(t, err)
			defer st.Close()
			r := newReader()
			r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true }) // the snapshot
			send(t, c, conv, "run it")
			prompt := waitPrompt(t, srv, conv, 0)
			steps, err := c.GetCascadeTrajectorySteps(ctx, conv)
			require.NoError(t, err)
			assert.Equal(t, wire.StatusWaiting, steps[prompt.Index()].Status, "a read of the steps shows the prompt")
			carriesWaiting := func(f *rpc.StreamFrame) bool {
				su := f.Update.MainTrajectoryUpdate.StepsUpdate
				for i, idx := range su.Indices {
					if int(idx) == prompt.Index() && su.Steps[i].Status == wire.StatusWaiting {
						return true
					}
				}
				return false
			}
			if p < 0 {
				// Streamed: a frame carries it WAITING (answered before the
				// stream wrote it, it would stream as answered).
				r.readUntil(t, st, carriesWaiting)
			}
			require.NoError(t, c.HandleCascadeUserInteraction(ctx, conv, allow(prompt, true)))
			r.readUntil(t, st, idleFrame)
			assert.Equal(t, p < 0, slices.ContainsFunc(r.frames, carriesWaiting))
			assert.Equal(t, wire.StatusDone, r.latest[prompt.Index()].Status, "the step streams again once answered")
		})
	}
}

func TestStepsAreReadInWindows(t *testing.T) {
	opts := fast(script(agytest.Say("Hello there.", 2)))
	opts.MaxStepsPerRead = 3
	srv, c, conv := start(t, opts)
	ctx := testCtx(t)
	for i := range 3 {
		send(t, c, conv, fmt.Sprintf("turn %d", i))
		waitIdle(t, srv, conv)
	}
	all := srv.Steps(conv)
	require.Greater(t, len(all), 6)

	first, err := c.GetCascadeTrajectorySteps(ctx, conv)
	require.NoError(t, err)
	assert.Len(t, first, 3, "one answer holds at most MaxStepsPerRead steps")
	var read []wire.Step
	for off := 0; ; {
		w, err := c.GetCascadeTrajectoryStepsFrom(ctx, conv, off, nil)
		require.NoError(t, err)
		if len(w) == 0 {
			break
		}
		for i, s := range w {
			assert.Equal(t, off+i, s.Index(), "steps carry their trajectory index")
		}
		read = append(read, w...)
		off += len(w)
	}
	require.Len(t, read, len(all))
	for i := range all {
		assert.Equal(t, canon(t, all[i]), canon(t, read[i]))
	}
	past, err := c.GetCascadeTrajectoryStepsFrom(ctx, conv, len(all)+5, nil)
	require.NoError(t, err)
	assert.Empty(t, past)
}

func TestMovingModifiedTime(t *testing.T) {
	opts := fast(script(agytest.Say("Hello.", 2)))
	opts.MovingModifiedTime = true
	srv, c, conv := start(t, opts)
	ctx := testCtx(t)
	send(t, c, conv, "hi")
	waitIdle(t, srv, conv)
	read := func() string {
		all, err := c.GetAllCascadeTrajectories(ctx)
		require.NoError(t, err)
		return all.TrajectorySummaries[conv].LastModifiedTime
	}
	a := read()
	require.Eventually(t, func() bool { return read() != a }, 5*time.Second, time.Millisecond,
		"lastModifiedTime moves at rest")
	assert.Equal(t, wire.RunIdle, srv.RunStatus(conv))
}
