package agytest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

const model = "MODEL_PLACEHOLDER_M20"

// fast is the option set most tests start from: millisecond chunks.
func fast(sc *agytest.Scenario) agytest.Options {
	return agytest.Options{Conversation: true, Seed: 7, ChunkDelay: time.Millisecond, Scenario: sc}
}

func script(actions ...agytest.Action) *agytest.Scenario {
	return &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: actions}}}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start starts a fake with opts and a client of it; conv is the fake's
// conversation ("" for a fresh agy's).
func start(t *testing.T, opts agytest.Options) (srv *agytest.Server, c *rpc.Client, conv string) {
	t.Helper()
	srv = agytest.Start(t, opts)
	return srv, client(t, srv), srv.ConversationID()
}

func client(t *testing.T, srv *agytest.Server) *rpc.Client {
	t.Helper()
	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// rawHTTPS is a plain net/http client for wire-exact checks over TLS/HTTP2.
func rawHTTPS(t *testing.T) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

type rawResponse struct {
	status int
	header http.Header
	body   []byte
	proto  int
}

func post(t *testing.T, hc *http.Client, port int, method, contentType string, body []byte, header ...string) rawResponse {
	t.Helper()
	url := fmt.Sprintf("https://127.0.0.1:%d/%s/%s", port, rpc.Service, method)
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Connect-Protocol-Version", "1")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: b, proto: resp.ProtoMajor}
}

func send(t *testing.T, c *rpc.Client, conv, text string) {
	t.Helper()
	require.NoError(t, c.SendUserCascadeMessage(testCtx(t), conv, text, model))
}

func waitIdle(t *testing.T, srv *agytest.Server, conv string) {
	t.Helper()
	require.NoError(t, srv.WaitIdle(testCtx(t), conv))
}

// waitPrompt waits until the conversation has an open WAITING step whose
// index is at least min.
func waitPrompt(t *testing.T, srv *agytest.Server, conv string, min int) wire.Step {
	t.Helper()
	var step wire.Step
	require.Eventually(t, func() bool {
		s, ok := srv.OpenPrompt(conv)
		step = s
		return ok && s.Index() >= min
	}, 10*time.Second, time.Millisecond, "no WAITING step at index >= %d", min)
	return step
}

// reader reassembles a stream: the latest copy of every step index, plus
// every frame as received.
type reader struct {
	frames []*rpc.StreamFrame
	latest map[int]wire.Step
	convs  []string
}

func newReader() *reader { return &reader{latest: map[int]wire.Step{}} }

func (r *reader) add(f *rpc.StreamFrame) {
	r.frames = append(r.frames, f)
	if n := len(r.convs); n == 0 || r.convs[n-1] != f.Update.ConversationID {
		r.convs = append(r.convs, f.Update.ConversationID)
		r.latest = map[int]wire.Step{}
	}
	su := f.Update.MainTrajectoryUpdate.StepsUpdate
	for i, idx := range su.Indices {
		r.latest[int(idx)] = su.Steps[i]
	}
}

// readUntil reads frames until cond holds after a frame.
func (r *reader) readUntil(t *testing.T, st *rpc.Stream, cond func(*rpc.StreamFrame) bool) {
	t.Helper()
	for {
		f, err := st.Next()
		require.NoError(t, err)
		r.add(f)
		if cond(f) {
			return
		}
	}
}

// drainErr reads until the stream fails or ends, returning the error.
func drainErr(st *rpc.Stream) error {
	for {
		if _, err := st.Next(); err != nil {
			return err
		}
	}
}

func idleFrame(f *rpc.StreamFrame) bool { return f.Update.Status == wire.RunIdle }

// canon re-marshals a decoded step (typed fields only) for comparisons.
func canon(t *testing.T, s wire.Step) string {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

// waitExpired waits until a prompt of the conversation has expired (a tool
// step in ERROR) and returns its index.
func waitExpired(t *testing.T, srv *agytest.Server, conv string) int {
	t.Helper()
	expired := -1
	require.Eventually(t, func() bool {
		for _, s := range srv.Steps(conv) {
			if s.Status == wire.StatusError && s.RequestedInteraction != nil {
				expired = s.Index()
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "no prompt expired")
	return expired
}
