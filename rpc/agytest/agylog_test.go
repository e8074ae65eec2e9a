package agytest_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/agyharness/agyharness/internal/agyproc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/require"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

func TestAgyLogAnnouncesEveryPort(t *testing.T) {
	var log lockedBuffer
	srv := agytest.Start(t, agytest.Options{Conversation: true, AgyLog: &log})
	first := log.lines()
	require.Len(t, first, 2)
	p, ok := agyproc.PortFromLogLine(first[0])
	require.True(t, ok)
	require.Equal(t, srv.Port(), p)
	require.Contains(t, first[1], "for HTTP")

	port, err := srv.Restart()
	require.NoError(t, err)
	all := log.lines()
	require.Len(t, all, 4)
	p, ok = agyproc.PortFromLogLine(all[2])
	require.True(t, ok)
	require.Equal(t, port, p, "the new port, logged again")
}
