package rpc_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/internal/loopport"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
)

func TestProbe(t *testing.T) {
	srv := newConnectServer(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch r.URL.Path {
		case "/" + rpc.Service + "/Heartbeat":
			_, _ = io.WriteString(w, `{}`)
		case "/" + rpc.Service + "/GetConversationMetadata":
			if strings.Contains(string(body), conv) {
				_, _ = io.WriteString(w, `{"metadata":{"rootConversationId":"`+conv+`"}}`)
				return
			}
			connectserver.WriteError(w, rpc.CodeUnknown, "trajectory not found")
		default:
			http.NotFound(w, r)
		}
	})
	ctx := ctxT(t)
	cfg := rpc.Config{Port: srv.port()}

	ok, err := rpc.Probe(ctx, cfg, conv)
	require.NoError(t, err)
	assert.True(t, ok)

	ok, err = rpc.Probe(ctx, cfg, "someone-else")
	require.NoError(t, err)
	assert.False(t, ok)

	ok, err = rpc.Probe(ctx, cfg, "")
	require.NoError(t, err)
	assert.True(t, ok, "without a conversation the heartbeat decides")

	_, err = rpc.Probe(ctx, rpc.Config{Host: "10.1.1.1", Port: 1}, conv)
	assert.ErrorIs(t, err, rpc.ErrNotLoopback)

	// A port nothing listens on any more.
	ports, err := loopport.Pick(1) // nothing listens, nor will the kernel hand it to anyone meanwhile
	require.NoError(t, err)
	dead := ports[0]
	ok, err = rpc.Probe(context.Background(), rpc.Config{Port: dead}, conv)
	assert.False(t, ok)
	assert.ErrorIs(t, err, rpc.ErrPortGone)
}
