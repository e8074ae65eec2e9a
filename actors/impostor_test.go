package actors_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/internal/agyproc"
	"github.com/agyharness/agyharness/internal/loopport"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// impostor is a TLS HTTP/2 server that takes over a port after agy left
// it, and answers as a language server would to get the next request: it
// echoes whatever conversation it is asked about. It records every request.
type impostor struct {
	srv  *http.Server
	mu   sync.Mutex
	seen []string // "path token=... body"
}

func startImpostor(t *testing.T, port int) *impostor {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	var ln net.Listener
	require.Eventually(t, func() bool {
		ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		return err == nil
	}, waitLong, 10*time.Millisecond, "port %d never came free", port)
	imp := &impostor{}
	imp.srv = &http.Server{
		Handler:   http.HandlerFunc(imp.serve),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, NextProtos: []string{"h2"}},
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go func() { _ = imp.srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = imp.srv.Close() })
	return imp
}

func (imp *impostor) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	imp.mu.Lock()
	imp.seen = append(imp.seen, fmt.Sprintf("%s token=%s %s", r.URL.Path, r.Header.Get("x-codeium-csrf-token"), body))
	imp.mu.Unlock()
	var req struct {
		ConversationID string `json:"conversationId"`
		CascadeID      string `json:"cascadeId"`
	}
	_ = json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/GetConversationMetadata"):
		fmt.Fprintf(w, `{"metadata":{"rootConversationId":%q}}`, req.ConversationID)
	case strings.HasSuffix(r.URL.Path, "/GetAllCascadeTrajectories"):
		fmt.Fprintf(w, `{"trajectorySummaries":{"x":{"status":"CASCADE_RUN_STATUS_IDLE"}}}`)
	default:
		fmt.Fprint(w, `{}`)
	}
}

func (imp *impostor) requests() []string {
	imp.mu.Lock()
	defer imp.mu.Unlock()
	return append([]string(nil), imp.seen...)
}

const secret = "S3CRET-csrf-token"

// A session attached by --port trusts only the certificate it first bound:
// a process that takes the port after agy left gets neither the CSRF token
// nor a turn, and the driver is told.
func TestImpostorOnTheNamedPortGetsNothing(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, CSRFToken: secret, ChunkDelay: time.Millisecond})
	port := srv.Port()
	s := attach(t, newHost(t, testConfig()), actors.Spec{Port: port, CSRFToken: secret})
	ev := collect(s.Events())
	ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.State == messages.StateIdle })

	require.NoError(t, srv.Close())
	imp := startImpostor(t, port)
	ev.waitFor(t, messages.EventError, func(e *messages.Event) bool { return strings.Contains(e.Message, "another certificate") })
	// The requester's deadline is on the machine's clock (its context's).
	tctx, tcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer tcancel()
	require.Error(t, s.SendTurn(tctx, "the secret plan", ""), "no agy to take the turn")
	assert.Empty(t, imp.requests(), "the impostor got no request at all")
}

// A session attached by --pid binds only ports whose socket belongs to
// agy's process tree: a port written into agy's log by someone else is
// never probed (nor sent the token), and the session follows agy to its
// own new port.
func TestImpostorPortInAgysLogIsNotProbed(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "agy.log")
	cmd, _ := fakeAgyProcess(t, "--log", logFile, "--csrf-token", secret, "--chunk-delay", "1ms",
		"--scenario", "../testdata/scenarios/text.json")
	first := nextPortFromLog(t, logFile, 0)
	s := attach(t, newHost(t, testConfig()), actors.Spec{PID: cmd.Process.Pid, LogFile: logFile, CSRFToken: secret})
	collect(s.Events()) // read until the host's shutdown closes it
	require.Equal(t, first, s.Port())

	// agy moves; then a stranger listens and writes agy's log line for its port.
	ports, err := loopport.Pick(1) // free, and outside what the kernel hands out meanwhile
	require.NoError(t, err)
	strangerPort := ports[0]
	imp := startImpostor(t, strangerPort)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	second := nextPortFromLog(t, logFile, first)
	f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	fmt.Fprintf(f, "Language server listening on random port at %d for HTTPS\n", strangerPort)
	require.NoError(t, f.Close())

	require.Eventually(t, func() bool { return s.Port() == second }, waitLong, 10*time.Millisecond)
	assert.Empty(t, imp.requests(), "the stranger's port was never probed")
}

// nextPortFromLog waits for agy's log to name an HTTPS port other than not.
func nextPortFromLog(t *testing.T, path string, not int) int {
	t.Helper()
	port := 0
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(data), "\n") {
			if p, ok := agyproc.PortFromLogLine(line); ok && p != not {
				port = p
			}
		}
		return port != 0
	}, waitLong, 10*time.Millisecond, "no new port in agy's log")
	return port
}
