package acp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/rpc/agytest"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer that Main's logger may write while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// mainRig is Main running in-process, with an SDK client on its stdio.
type mainRig struct {
	conn   *sdk.ClientSideConnection
	stderr *lockedBuffer
	code   chan int
	in     *io.PipeWriter // the client's side of Main's stdin
}

func startMain(t *testing.T, args ...string) *mainRig {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	r := &mainRig{stderr: &lockedBuffer{}, code: make(chan int, 1), in: toAgentW}
	go func() {
		r.code <- Main(context.Background(), args, toAgentR, toClientW, r.stderr)
		_ = toAgentR.Close() // the client's writes fail instead of blocking
		_ = toClientW.Close()
	}()
	gate := &gatedReader{r: toClientR, open: make(chan struct{})}
	r.conn = sdk.NewClientSideConnection(newTestClient(), toAgentW, gate)
	r.conn.SetLogger(slog.New(slog.DiscardHandler))
	close(gate.open)
	t.Cleanup(func() {
		_ = toAgentW.Close()
		select {
		case <-r.code:
		case <-time.After(20 * time.Second):
			t.Error("Main did not return after the client disconnected")
		}
		<-r.conn.Done()
	})
	return r
}

// exit closes the client's side and returns Main's exit code.
func (r *mainRig) exit(t *testing.T) int {
	t.Helper()
	_ = r.in.Close()
	select {
	case code := <-r.code:
		r.code <- code
		return code
	case <-time.After(20 * time.Second):
		t.Fatal("Main did not return after the client disconnected")
		return -1
	}
}

func TestMainReadsTheCSRFTokenFromAFile(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: scenario(agytest.Say("hi", 1)), CSRFToken: "S3CRET-in-a-file"})
	tokenFile := filepath.Join(t.TempDir(), "csrf")
	require.NoError(t, os.WriteFile(tokenFile, []byte("S3CRET-in-a-file\n"), 0o600))
	r := startMain(t, "--attach-port", strconv.Itoa(srv.Port()), "--csrf-token-file", tokenFile, "--attach-timeout", "10s")
	_, err := r.conn.Initialize(ctx(t), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	require.NoError(t, err)
	sess, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	require.NoError(t, err, "the session attached with the file's token; stderr:\n%s", r.stderr.String())
	assert.Equal(t, srv.ConversationID(), string(sess.SessionId))
	assert.Equal(t, exitOK, r.exit(t))
	assert.NotContains(t, r.stderr.String(), "S3CRET", "the token is never logged")
}

func TestMainRefusesABadCSRFTokenFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--csrf-token-file", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"--csrf-token-file", empty}, "is empty"},
		{[]string{"--csrf-token", "x", "--csrf-token-file", empty}, "not both"},
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), tc.args, bytes.NewReader(nil), io.Discard, &stderr)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
	var stderr bytes.Buffer
	assert.Equal(t, exitOK, Main(context.Background(), []string{"--help"}, bytes.NewReader(nil), io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "--csrf-token-file")
	assert.Contains(t, stderr.String(), "process list")
}

func TestMainRefusesATmuxSessionPrefixTmuxWouldExpand(t *testing.T) {
	for _, prefix := range []string{"p#(touch x)", "p#{pane_pid}", "a:b", "a b", ""} {
		var stderr bytes.Buffer
		code := Main(context.Background(), []string{"--tmux-session-prefix", prefix}, bytes.NewReader(nil), io.Discard, &stderr)
		assert.Equal(t, exitUsage, code, "%q", prefix)
		assert.Contains(t, stderr.String(), "--tmux-session-prefix", "%q", prefix)
		assert.Contains(t, stderr.String(), "use letters, digits, - and _", "%q", prefix)
	}
}

func TestMainWarnsAboutAnOpenCSRFTokenFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "csrf")
	require.NoError(t, os.WriteFile(p, []byte("S3CRET\n"), 0o600))
	require.NoError(t, os.Chmod(p, 0o604))
	stderr := &lockedBuffer{} // the SDK may still log as Main returns
	// No client: stdin ends at once, and so does the adapter.
	code := Main(context.Background(), []string{"--csrf-token-file", p, "--session-dir", "-"}, bytes.NewReader(nil), io.Discard, stderr)
	assert.Equal(t, exitOK, code, stderr.String())
	assert.Contains(t, stderr.String(), "agyharness acp: warning: token file \""+p+"\" is open to its group or others (mode 0604): run chmod 600")
	assert.NotContains(t, stderr.String(), "S3CRET")
}
