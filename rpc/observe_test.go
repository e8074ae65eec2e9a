package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOnErrorSeesFailedCallsByClass(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := newConnectServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		switch r.URL.Path {
		case "/" + rpc.Service + "/" + rpc.MethodHeartbeat:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
		case "/" + rpc.Service + "/" + rpc.MethodHandleCascadeUserInteraction:
			connectserver.WriteError(w, rpc.CodeUnknown, "input not registered for step 4")
		default:
			connectserver.WriteError(w, rpc.CodeUnavailable, "overloaded")
		}
	})
	c := srv.client(t, rpc.Config{OnError: func(method string, err error) {
		mu.Lock()
		seen[method+" "+rpc.ErrorClass(err)]++
		mu.Unlock()
	}})
	ctx := context.Background()

	require.NoError(t, c.Heartbeat(ctx))
	_, err := c.GetCascadeTrajectorySteps(ctx, "conv")
	require.Error(t, err)
	err = c.HandleCascadeUserInteraction(ctx, "conv", wire.InteractionResponse{TrajectoryID: "t", StepIndex: 4, Permission: &wire.PermissionAnswer{Allow: true}})
	require.ErrorIs(t, err, rpc.ErrInputNotRegistered)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.GetCascadeTrajectorySteps(cancelled, "conv")
	require.Error(t, err)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{
		rpc.MethodGetCascadeTrajectorySteps + " transient":               1,
		rpc.MethodHandleCascadeUserInteraction + " input_not_registered": 1,
	}, seen, "successes and the caller's own cancellation are not failures")
}

func TestErrorClass(t *testing.T) {
	assert.Equal(t, "", rpc.ErrorClass(nil))
	assert.Equal(t, "port_gone", rpc.ErrorClass(rpc.ErrCertificateChanged))
	assert.Equal(t, "model_required", rpc.ErrorClass(rpc.ErrModelRequired))
	assert.Equal(t, "canceled", rpc.ErrorClass(context.Canceled))
	assert.Equal(t, "other", rpc.ErrorClass(errors.New("x")))
}

func TestOnErrorSeesAStreamEndingInError(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	onError := func(method string, err error) {
		mu.Lock()
		seen = append(seen, method+" "+rpc.ErrorClass(err))
		mu.Unlock()
	}
	srv := streamServer(t, envelope(0, frameJSON(0, "hi")), envelope(rpc.FlagEndStream, `{"error":{"code":"unavailable","message":"going away"}}`))
	c := srv.client(t, rpc.Config{OnError: onError})
	st, err := c.StreamAgentStateUpdates(context.Background(), "conv", "")
	require.NoError(t, err)
	_, err = st.Next()
	require.NoError(t, err)
	_, err = st.Next()
	require.Error(t, err)

	clean := streamServer(t, envelope(rpc.FlagEndStream, `{}`))
	c2 := clean.client(t, rpc.Config{OnError: onError})
	st2, err := c2.StreamAgentStateUpdates(context.Background(), "conv", "")
	require.NoError(t, err)
	_, err = st2.Next()
	require.ErrorIs(t, err, io.EOF)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{rpc.MethodStreamAgentStateUpdates + " transient"}, seen, "a clean end is not a failure")
}

func TestNotDelivered(t *testing.T) {
	assert.True(t, rpc.NotDelivered(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}))
	assert.True(t, rpc.NotDelivered(fmt.Errorf("wrapped: %w", &net.OpError{Op: "write", Err: syscall.EPIPE})))
	assert.True(t, rpc.NotDelivered(rpc.ErrCertificateChanged))
	assert.False(t, rpc.NotDelivered(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), "the server may have acted on it")
	assert.False(t, rpc.NotDelivered(io.ErrUnexpectedEOF))
	assert.False(t, rpc.NotDelivered(nil))

	// A real refused connection, through the client.
	c, err := rpc.NewClient(rpc.Config{Port: 1})
	require.NoError(t, err)
	defer c.Close()
	err = c.SendUserCascadeMessage(context.Background(), "conv", "hi", "MODEL_X")
	require.Error(t, err)
	assert.True(t, rpc.NotDelivered(err), "%v", err)
}
