package acp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc/agytest"
)

// startupRig launches fakeagy --tui with fakeArgs for each new session.
func startupRig(t *testing.T, trust bool, fakeArgs ...string) (*rig, string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fakeagy")
	out, err := exec.Command("go", "build", "-race", "-o", fake, "github.com/agyharness/agyharness/cmd/fakeagy").CombinedOutput()
	require.NoError(t, err, "go build fakeagy:\n%s", out)
	sc := filepath.Join(dir, "scenario.json")
	require.NoError(t, os.WriteFile(sc, []byte(`{"name": "acp-startup", "turns": [{"actions": [{"say": "Hello, person.", "chunks": 1}]}]}`), 0o600))
	socket := fmt.Sprintf("agyharness-acp-start-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	tm := Tmux{Agy: append([]string{fake, "--tui", "--seed", "3", "--chunk-delay", "2ms", "--scenario", sc, "--log", filepath.Join(dir, "fakeagy.log")}, fakeArgs...),
		SessionPrefix: "acp-start", Socket: socket, TrustWorkspace: trust}
	r := startRigOn(t, agytest.Options{}, func(_ *agytest.Server, o *Options) {
		o.AttachPort, o.Launcher, o.SessionDir = 0, tm, ""
		o.AttachTimeout, o.RequestTimeout = 30*time.Second, 30*time.Second
	})
	r.init(t, sdk.ClientCapabilities{})
	return r, dir
}

// A launched agy that asks whether to trust the folder fails session/new
// with what to do; with TrustWorkspace (acp --trust-workspace) the dialog
// is answered and the first prompt runs. A signed-out agy fails it with
// auth_required.
func TestNewSessionOnAnAgyThatAsksToTrustOrIsSignedOut(t *testing.T) {
	r, dir := startupRig(t, false, "--trust-prompt")

	_, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	var re *sdk.RequestError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Contains(t, re.Message, "agy asks whether to trust this folder")
	assert.Contains(t, re.Message, "--trust-workspace")

	r, dir = startupRig(t, true, "--trust-prompt")
	sess, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	require.NoError(t, err)
	res, err := r.prompt(t, sess.SessionId, "hello")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)

	r, dir = startupRig(t, false, "--signed-out")
	_, err = r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, -32000, re.Code, "auth_required")
	assert.Contains(t, fmt.Sprint(re.Data), "not signed in")
}

// The first prompt of a new session, sent at once, reaches agy although
// agy refuses turns while it verifies the account: it is typed again.
func TestFirstPromptWhileAgyVerifiesIsNotLost(t *testing.T) {
	r, dir := startupRig(t, false, "--startup-delay", "5s")
	sess, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	require.NoError(t, err)
	res, err := r.prompt(t, sess.SessionId, "hello")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	message, _ := texts(r.client.snapshot())
	assert.Contains(t, message, "Hello, person.")
}
