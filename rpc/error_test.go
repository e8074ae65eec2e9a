package rpc_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/internal/loopport"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
	"github.com/agyharness/agyharness/wire"
)

var sentinels = []error{
	rpc.ErrPortGone, rpc.ErrCertificateChanged, rpc.ErrInputNotRegistered, rpc.ErrTrajectoryNotFound,
	rpc.ErrUnimplemented, rpc.ErrModelRequired, rpc.ErrDeprecated, rpc.ErrNotLoopback, rpc.ErrProtocol,
	rpc.ErrMessageTooLarge,
}

func TestServerErrorClasses(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		code      rpc.Code
		message   string
		is        error // the one sentinel it matches, nil for none
		transient bool
	}{
		{name: "input not registered", status: 500, body: `{"code":"unknown","message":"input not registered for step 14"}`,
			code: rpc.CodeUnknown, message: "input not registered for step 14", is: rpc.ErrInputNotRegistered},
		{name: "trajectory not found", status: 500, body: `{"code":"unknown","message":"trajectory not found"}`,
			code: rpc.CodeUnknown, message: "trajectory not found", is: rpc.ErrTrajectoryNotFound},
		{name: "unknown method 404", status: 404, body: `404 page not found`,
			code: rpc.CodeUnimplemented, message: "404 page not found", is: rpc.ErrUnimplemented},
		{name: "connect unimplemented", status: 501, body: `{"code":"unimplemented","message":"no such method"}`,
			code: rpc.CodeUnimplemented, message: "no such method", is: rpc.ErrUnimplemented},
		{name: "model required", status: 500, body: `{"code":"unknown","message":"failed: neither PlanModel nor RequestedModel specified"}`,
			code: rpc.CodeUnknown, message: "failed: neither PlanModel nor RequestedModel specified", is: rpc.ErrModelRequired},
		{name: "deprecated", status: 500, body: `{"error":{"message":"reactive state is deprecated"}}`,
			code: rpc.CodeUnknown, message: "reactive state is deprecated", is: rpc.ErrDeprecated},
		{name: "overloaded 500", status: 500, body: `{"code":"unknown","message":"model overloaded, try again"}`,
			code: rpc.CodeUnknown, message: "model overloaded, try again", transient: true},
		{name: "connect unavailable", status: 503, body: `{"code":"unavailable","message":"busy"}`,
			code: rpc.CodeUnavailable, message: "busy", transient: true},
		{name: "rate limited", status: 429, body: `{"code":"resource_exhausted","message":"slow down","details":[{"type":"x","value":"eA"}]}`,
			code: rpc.CodeResourceExhausted, message: "slow down", transient: true},
		{name: "bad gateway text", status: 502, body: `upstream gone`,
			code: rpc.CodeUnavailable, message: "upstream gone", transient: true},
		{name: "empty 500", status: 500, body: ``,
			code: rpc.CodeUnknown, message: "Internal Server Error", transient: true},
		{name: "invalid argument", status: 400, body: `{"code":"invalid_argument","message":"bad"}`,
			code: rpc.CodeInvalidArgument, message: "bad"},
		{name: "bare 400", status: 400, body: `nope`, code: rpc.CodeInternal, message: "nope"},
		{name: "unauthenticated", status: 401, body: `{"code":"unauthenticated","message":"csrf"}`, code: rpc.CodeUnauthenticated, message: "csrf"},
		{name: "bare 403", status: 403, body: ``, code: rpc.CodePermissionDenied, message: "Forbidden"},
		{name: "unknown code string", status: 503, body: `{"code":"weird","message":"m"}`, code: rpc.CodeUnavailable, message: "m", transient: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newConnectServer(t, reply(tt.status, tt.body))
			err := srv.client(t, rpc.Config{}).CancelCascadeSteps(ctxT(t), conv)
			var e *rpc.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, rpc.MethodCancelCascadeSteps, e.Method)
			assert.Equal(t, tt.status, e.HTTPStatus)
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, tt.message, e.Message)
			assert.Contains(t, err.Error(), tt.message)
			for _, s := range sentinels {
				assert.Equal(t, s == tt.is, errors.Is(err, s), "errors.Is(%v)", s)
			}
			assert.Equal(t, tt.transient, rpc.IsTransient(err))
		})
	}
}

func TestErrorDetailsAndStepIndex(t *testing.T) {
	srv := newConnectServer(t, reply(500, `{"code":"unknown","message":"input not registered for step 14","details":[{"type":"t","value":"AA"}]}`))
	err := srv.client(t, rpc.Config{}).HandleCascadeUserInteraction(ctxT(t), conv,
		wire.InteractionResponse{TrajectoryID: traj, StepIndex: 14, Permission: &wire.PermissionAnswer{Allow: true}})
	var e *rpc.Error
	require.ErrorAs(t, err, &e)
	n, ok := e.StepIndex()
	assert.True(t, ok)
	assert.Equal(t, 14, n)
	require.Len(t, e.Details, 1)
	assert.JSONEq(t, `{"type":"t","value":"AA"}`, string(e.Details[0]))

	_, ok = (&rpc.Error{Message: "trajectory not found"}).StepIndex()
	assert.False(t, ok)
}

func TestDeadPortIsPortGone(t *testing.T) {
	ports, err := loopport.Pick(1) // nothing listens, nor will the kernel hand it to anyone meanwhile
	require.NoError(t, err)
	port := ports[0]

	c, err := rpc.NewClient(rpc.Config{Port: port})
	require.NoError(t, err)
	defer c.Close()
	err = c.Heartbeat(ctxT(t))
	var e *rpc.Error
	require.ErrorAs(t, err, &e)
	assert.ErrorIs(t, err, rpc.ErrPortGone)
	assert.NotErrorIs(t, err, rpc.ErrCertificateChanged)
	assert.Equal(t, rpc.CodeUnavailable, e.Code)
	assert.False(t, rpc.IsTransient(err), "a gone port calls for rediscovery, not a retry")
}

func TestServerThatClosesOnConnectIsPortGone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close() // EOF during the TLS handshake
		}
	}()
	defer func() { l.Close(); <-done }()

	c, err := rpc.NewClient(rpc.Config{Port: l.Addr().(*net.TCPAddr).Port})
	require.NoError(t, err)
	defer c.Close()
	assert.ErrorIs(t, c.Heartbeat(ctxT(t)), rpc.ErrPortGone)
}

func TestCertificateChangeIsPortGone(t *testing.T) {
	ok := func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = w.Write([]byte(`{}`)) }
	cert := selfSignedCert(t)
	first := startConnectServer(t, nil, cert, ok)
	port := first.port()
	c := first.client(t, rpc.Config{})
	require.NoError(t, c.Heartbeat(ctxT(t)))
	first.Close()
	// Drop the pooled connection to the old server: a call on it could fail
	// as port-gone before the client notices it died, which is right but
	// not what this test is about.
	c.Close()

	// The same certificate again (agy restarted in place): still trusted.
	restart := func(cert *tls.Certificate) *connectServer {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		require.NoError(t, err)
		return startConnectServer(t, l, cert, ok)
	}
	same := restart(cert)
	require.NoError(t, c.Heartbeat(ctxT(t)))
	same.Close()
	c.Close()

	// Someone else on the port, with another certificate: never trusted.
	other := restart(selfSignedCert(t))
	err := c.Heartbeat(ctxT(t))
	var e *rpc.Error
	require.ErrorAs(t, err, &e)
	assert.ErrorIs(t, err, rpc.ErrCertificateChanged)
	assert.ErrorIs(t, err, rpc.ErrPortGone)
	assert.False(t, rpc.IsTransient(err))
	assert.Empty(t, other.requests(), "no request may reach an unpinned server")

	// It stays refused: the pin is not replaced.
	assert.ErrorIs(t, c.Heartbeat(ctxT(t)), rpc.ErrCertificateChanged)

	// A new client given the pin (a session binding the port again) refuses
	// the other server from its first handshake.
	pinned := c.Pinned()
	require.Equal(t, cert.Certificate[0], pinned)
	again, err := rpc.NewClient(rpc.Config{Port: port, Pin: pinned})
	require.NoError(t, err)
	defer again.Close()
	assert.ErrorIs(t, again.Heartbeat(ctxT(t)), rpc.ErrCertificateChanged)
	assert.Empty(t, other.requests(), "no request may reach a server without the pinned certificate")
}

func TestIsTransient(t *testing.T) {
	assert.False(t, rpc.IsTransient(nil))
	assert.False(t, rpc.IsTransient(errors.New("plain")))
	assert.True(t, rpc.IsTransient(context.DeadlineExceeded))
	assert.False(t, rpc.IsTransient(context.Canceled))
	assert.True(t, rpc.IsTransient(fmt.Errorf("wrapped: %w", &rpc.Error{Code: rpc.CodeUnavailable})))
	assert.True(t, rpc.IsTransient(&rpc.Error{Code: rpc.CodeInternal}), "end-stream internal (500)")
	assert.False(t, rpc.IsTransient(&rpc.Error{Code: rpc.CodeUnimplemented}))
	assert.False(t, rpc.IsTransient(&rpc.Error{Code: rpc.CodeInvalidArgument}))
	assert.False(t, rpc.IsTransient(&rpc.Error{Code: rpc.CodeUnknown, Message: "input not registered for step 3"}))
	assert.False(t, rpc.IsTransient(&rpc.Error{Code: rpc.CodeUnavailable, Err: fmt.Errorf("%w: x", rpc.ErrPortGone)}))
	assert.False(t, rpc.IsTransient(rpc.ErrProtocol))
}

func TestCodeMapping(t *testing.T) {
	statuses := map[rpc.Code]int{
		rpc.CodeCanceled: 499, rpc.CodeUnknown: 500, rpc.CodeInvalidArgument: 400, rpc.CodeDeadlineExceeded: 504,
		rpc.CodeNotFound: 404, rpc.CodeAlreadyExists: 409, rpc.CodePermissionDenied: 403, rpc.CodeResourceExhausted: 429,
		rpc.CodeFailedPrecondition: 400, rpc.CodeAborted: 409, rpc.CodeOutOfRange: 400, rpc.CodeUnimplemented: 501,
		rpc.CodeInternal: 500, rpc.CodeUnavailable: 503, rpc.CodeDataLoss: 500, rpc.CodeUnauthenticated: 401,
	}
	for code, status := range statuses {
		assert.Equal(t, status, rpc.HTTPStatusFromCode(code), code)
		assert.True(t, code.Valid())
	}
	assert.Equal(t, 500, rpc.HTTPStatusFromCode("bogus"))
	assert.False(t, rpc.Code("bogus").Valid())

	inferred := map[int]rpc.Code{
		400: rpc.CodeInternal, 401: rpc.CodeUnauthenticated, 403: rpc.CodePermissionDenied, 404: rpc.CodeUnimplemented,
		429: rpc.CodeUnavailable, 502: rpc.CodeUnavailable, 503: rpc.CodeUnavailable, 504: rpc.CodeUnavailable,
		500: rpc.CodeUnknown, 418: rpc.CodeUnknown, 501: rpc.CodeUnknown,
	}
	for status, code := range inferred {
		assert.Equal(t, code, rpc.CodeFromHTTPStatus(status), status)
	}
}

func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	connectserver.WriteError(rec, rpc.CodeResourceExhausted, "slow down")
	assert.Equal(t, 429, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"code":"resource_exhausted","message":"slow down"}`, rec.Body.String())
}

func TestErrorString(t *testing.T) {
	e := &rpc.Error{Method: "Heartbeat", HTTPStatus: 503, Code: rpc.CodeUnavailable, Message: "busy"}
	assert.Equal(t, "rpc Heartbeat: unavailable (HTTP 503): busy", e.Error())
	e = &rpc.Error{Method: "Heartbeat", Code: rpc.CodeUnavailable, Err: rpc.ErrPortGone}
	assert.Equal(t, "rpc Heartbeat: unavailable: rpc: language server port gone", e.Error())
}

func TestErrorNeverShowsCSRFToken(t *testing.T) {
	srv := newConnectServer(t, reply(500, `{"code":"unknown","message":"boom"}`))
	err := srv.client(t, rpc.Config{CSRFToken: "hunter2-token"}).Heartbeat(ctxT(t))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2-token")
	assert.NotContains(t, fmt.Sprintf("%+v", err), "hunter2-token")
}
