package rpc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
)

// received is one request as the in-test Connect server saw it.
type received struct {
	Proto  int
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// connectServer is an in-test Connect handler over TLS and HTTP/2 that
// records every request and answers with handle.
type connectServer struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []received
	handle func(w http.ResponseWriter, r *http.Request, body []byte)
}

// newConnectServer starts a server on a fresh loopback port.
func newConnectServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *connectServer {
	t.Helper()
	return startConnectServer(t, nil, nil, handle)
}

// startConnectServer starts a server on l (a fresh port when nil) with cert
// (httptest's own when nil).
func startConnectServer(t *testing.T, l net.Listener, cert *tls.Certificate, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *connectServer {
	t.Helper()
	cs := &connectServer{handle: handle}
	cs.Server = httptest.NewUnstartedServer(http.HandlerFunc(cs.serve))
	// Refused handshakes (the certificate tests) are expected, not news.
	cs.Config.ErrorLog = log.New(io.Discard, "", 0)
	if l != nil {
		cs.Listener.Close()
		cs.Listener = l
	}
	if cert != nil {
		cs.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	cs.EnableHTTP2 = true
	cs.StartTLS()
	t.Cleanup(cs.Close)
	return cs
}

func (cs *connectServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	cs.mu.Lock()
	cs.reqs = append(cs.reqs, received{Proto: r.ProtoMajor, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	cs.mu.Unlock()
	cs.handle(w, r, body)
}

// requests returns what the server received so far.
func (cs *connectServer) requests() []received {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]received(nil), cs.reqs...)
}

// last returns the only request received, failing otherwise.
func (cs *connectServer) last(t *testing.T) received {
	t.Helper()
	reqs := cs.requests()
	require.Len(t, reqs, 1)
	return reqs[0]
}

func (cs *connectServer) port() int { return cs.Listener.Addr().(*net.TCPAddr).Port }

// client returns a client for the server, with cfg's other fields.
func (cs *connectServer) client(t *testing.T, cfg rpc.Config) *rpc.Client {
	t.Helper()
	cfg.Port = cs.port()
	c, err := rpc.NewClient(cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// reply answers a unary call with status and body.
func reply(status int, body string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// selfSignedCert makes a fresh certificate for 127.0.0.1, so a test can
// restart a server on the same port with a different identity.
func selfSignedCert(t *testing.T) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "agy-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// ctxT is a context bounded well below the test timeout.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// jsonEq asserts that got is the JSON want, ignoring spacing.
func jsonEq(t *testing.T, want string, got []byte) {
	t.Helper()
	require.JSONEq(t, want, string(got))
	require.False(t, strings.TrimSpace(string(got)) == "", "empty body")
}
