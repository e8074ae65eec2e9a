package agytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

func TestFaultDropStreamAfterNFrames(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Say("one two three four five six seven eight nine ten", 10))))
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultDropStreamAfter, N: 3})
	st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st.Close()
	send(t, c, conv, "count")
	frames := 0
	for {
		_, err = st.Next()
		if err != nil {
			break
		}
		frames++
	}
	assert.Equal(t, 3, frames, "the stream carried N frames, then dropped")
	assert.False(t, isEOF(err), "a drop is not a clean end: %v", err)
	assert.Equal(t, 1, srv.FaultsInjected()["drop_stream_after"])

	// Only one stream is dropped: a new one works.
	st2, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st2.Close()
	_, err = st2.Next()
	require.NoError(t, err)
	waitIdle(t, srv, conv)
}

func TestFaultTruncatedFrame(t *testing.T) {
	srv, c, _ := start(t, fast(nil))
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultTruncatedFrame})
	st, err := c.StreamAgentStateUpdates(testCtx(t), srv.ConversationID(), "")
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Next()
	require.Error(t, err)
	assert.False(t, isEOF(err))
	assert.Equal(t, 1, srv.FaultsInjected()["truncated_frame"])
}

func TestFaultOversizedFrame(t *testing.T) {
	srv, c, _ := start(t, fast(nil))
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultOversizedFrame})
	st, err := c.StreamAgentStateUpdates(testCtx(t), srv.ConversationID(), "")
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Next()
	require.ErrorIs(t, err, rpc.ErrMessageTooLarge)
	assert.Equal(t, 1, srv.FaultsInjected()["oversized_frame"])
}

func burstCodes(t *testing.T, seed int64) []rpc.Code {
	opts := fast(nil)
	opts.Seed = seed
	srv, c, _ := start(t, opts)
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultBurst5xx, Method: rpc.MethodHeartbeat, Count: 6})
	ctx := testCtx(t)
	require.NoError(t, c.Call(ctx, rpc.MethodGetAvailableModels, rpc.Empty{}, &rpc.ModelsResponse{}), "other methods are untouched")
	var codes []rpc.Code
	for range 6 {
		err := c.Call(ctx, rpc.MethodHeartbeat, rpc.Empty{}, &rpc.Empty{})
		var rerr *rpc.Error
		require.ErrorAs(t, err, &rerr)
		assert.Contains(t, []rpc.Code{rpc.CodeUnavailable, rpc.CodeInternal}, rerr.Code)
		codes = append(codes, rerr.Code)
	}
	require.NoError(t, c.Heartbeat(ctx), "the burst is over")
	assert.Equal(t, 6, srv.FaultsInjected()["burst_5xx"])
	return codes
}

func TestFaultBurst5xxIsSeeded(t *testing.T) {
	a := burstCodes(t, 42)
	b := burstCodes(t, 42)
	assert.Equal(t, a, b, "the same seed fails the same way")
}

func TestFaultBurstOnAStreamEndsItWithAnError(t *testing.T) {
	srv, c, _ := start(t, fast(nil))
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultBurst5xx, Method: rpc.MethodStreamAgentStateUpdates})
	st, err := c.StreamAgentStateUpdates(testCtx(t), srv.ConversationID(), "")
	if err == nil {
		defer st.Close()
		_, err = st.Next()
	}
	var rerr *rpc.Error
	require.ErrorAs(t, err, &rerr)
	assert.Contains(t, []rpc.Code{rpc.CodeUnavailable, rpc.CodeInternal}, rerr.Code)
}

func TestFaultSlow(t *testing.T) {
	srv, c, _ := start(t, fast(nil))
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlow, Method: rpc.MethodGetAvailableModels, Duration: 60 * time.Millisecond, Count: 2})
	ctx := testCtx(t)
	start := time.Now()
	_, err := c.GetAvailableModels(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 60*time.Millisecond)

	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = c.GetAvailableModels(short)
	require.Error(t, err, "a slow call runs into the caller's deadline")
	assert.Equal(t, 2, srv.FaultsInjected()["slow"])
}

func TestFaultRestartChangesPortAndKeepsState(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Say("Hi.", 2))))
	ctx := testCtx(t)
	send(t, c, conv, "hello")
	waitIdle(t, srv, conv)
	before := srv.Steps(conv)
	st, err := c.StreamAgentStateUpdates(ctx, conv, "")
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Next()
	require.NoError(t, err)

	oldPort := srv.Port()
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultRestart})
	assert.NotEqual(t, oldPort, srv.Port())
	assert.Equal(t, 1, srv.FaultsInjected()["restart"])

	err = drainErr(st)
	assert.False(t, isEOF(err), "open streams die with the old port: %v", err)
	err = c.Heartbeat(ctx)
	require.ErrorIs(t, err, rpc.ErrPortGone)

	c2 := client(t, srv)
	ok, err := c2.ConversationMatches(ctx, conv)
	require.NoError(t, err)
	assert.True(t, ok, "the new port hosts the same conversation")
	steps, err := c2.GetCascadeTrajectorySteps(ctx, conv)
	require.NoError(t, err)
	assert.Len(t, steps, len(before))

	port, err := srv.Restart()
	require.NoError(t, err)
	assert.Equal(t, port, srv.Port())
}

func TestFaultPromptTimeoutExpiresTheNextPrompt(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Run(agytest.CommandAction{Line: "make", NeedsApproval: true}), agytest.Say("Made.", 1))))
	srv.InjectFault(agytest.Fault{Kind: agytest.FaultPromptTimeout})
	send(t, c, conv, "build")
	at := waitExpired(t, srv, conv)
	retry := waitPrompt(t, srv, conv, at+1)
	assert.Equal(t, at+1, retry.Index(), "agy retries at the next index")
	steps := srv.Steps(conv)
	expired := steps[at]
	assert.Equal(t, wire.StepRunCommand, expired.Type)
	assert.Equal(t, wire.StatusError, expired.Status, "the first prompt expired before anyone answered")
	assert.Equal(t, 1, srv.FaultsInjected()["prompt_timeout"])
	require.NoError(t, c.HandleCascadeUserInteraction(testCtx(t), conv, allow(retry, true)))
	waitIdle(t, srv, conv)
	assert.Equal(t, wire.StatusDone, srv.Steps(conv)[retry.Index()].Status)
}

func TestClosedServerRefusesTurns(t *testing.T) {
	srv, err := agytest.NewServer(fast(nil))
	require.NoError(t, err)
	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close(), "Close is idempotent")
	assert.Error(t, srv.TypeTurn("hi"))
	_, err = srv.Restart()
	assert.Error(t, err)
	assert.Error(t, srv.WaitIdle(context.Background(), "nope"))
}
