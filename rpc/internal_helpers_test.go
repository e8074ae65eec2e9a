package rpc

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// listenInternal opens a loopback listener and returns its closer and port.
func listenInternal(t *testing.T) (func(), int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return func() { l.Close() }, l.Addr().(*net.TCPAddr).Port
}
