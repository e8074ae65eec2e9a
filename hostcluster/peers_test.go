//go:build !race

package hostcluster

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// dialRemoteFrom connects to a node's remote endpoint from a given local
// address (every 127.0.0.0/8 address is on Linux's loopback, so a second
// "host" needs no second machine), with a cluster certificate: the filter
// is a second layer, behind mutual TLS.
func dialRemoteFrom(t *testing.T, from, to string, clientTLS *tls.Config) remote.RemotingClient {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := grpc.Dial(to, grpc.WithTransportCredentials(credentials.NewTLS(clientTLS)),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", addr)
		}))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return remote.NewRemotingClient(conn)
}

func TestRemoteRefusesAnAddressThatIsNoMember(t *testing.T) {
	nodes, locals := testNodes(t, "A")
	addr := nodes[0].Address()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stranger := dialRemoteFrom(t, "127.0.0.2", addr, nodes[0].cfg.ClientTLS)
	_, err := stranger.ListProcesses(ctx, &remote.ListProcessesRequest{})
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "a unary call from a stranger: %v", err)
	stream, err := stranger.Receive(ctx)
	if err == nil {
		_, err = stream.Recv()
	}
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "the message stream from a stranger: %v", err)

	// The same call from the node's own host passes the filter, and reaches
	// Proto.Actor's handler, which panics (it is declared, not implemented):
	// the call fails and the node lives on.
	member := dialRemoteFrom(t, "127.0.0.1", addr, nodes[0].cfg.ClientTLS)
	_, err = member.ListProcesses(ctx, &remote.ListProcessesRequest{})
	assert.Equal(t, codes.Internal, status.Code(err), "a call from a member's host: %v", err)
	_, err = member.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{})
	assert.Equal(t, codes.Internal, status.Code(err), "a call from a member's host: %v", err)
	locals[0].add("still-here")
	assert.Len(t, nodes[0].Sessions(ctx), 1, "the node still answers")
}
