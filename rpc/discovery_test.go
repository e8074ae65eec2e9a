package rpc_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
)

// listenChild starts this test binary as a child that listens on loopback
// (see TestMain) with args on its command line, and returns its pid and port.
func listenChild(t *testing.T, args ...string) (pid, port int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close() // the child exits when its stdin closes
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	port, err = strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err, "child said %q", line)
	return cmd.Process.Pid, port
}

func listen(t *testing.T, addr string) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l, l.Addr().(*net.TCPAddr).Port
}

func TestCandidatePortsOwnProcessAndDescendants(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	_, own := listen(t, "127.0.0.1:0")
	_, wildcard := listen(t, "0.0.0.0:0") // not loopback: never a candidate
	l6, err := net.Listen("tcp", "[::1]:0")
	var own6 int
	if err == nil {
		defer l6.Close()
		own6 = l6.Addr().(*net.TCPAddr).Port
	}
	// An established connection is not a listener.
	dialTarget, _ := listen(t, "127.0.0.1:0")
	conn, err := net.Dial("tcp", dialTarget.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	accepted, err := dialTarget.Accept()
	require.NoError(t, err)
	defer accepted.Close()
	clientPort := conn.LocalAddr().(*net.TCPAddr).Port

	_, childPort := listenChild(t)

	ports, err := rpc.CandidatePorts(os.Getpid())
	require.NoError(t, err)
	assert.Contains(t, ports, own)
	assert.Contains(t, ports, childPort, "a descendant's listener counts")
	if own6 != 0 {
		assert.Contains(t, ports, own6)
	}
	assert.NotContains(t, ports, wildcard)
	assert.NotContains(t, ports, clientPort)
	assert.IsIncreasing(t, ports, "sorted, no duplicates")
}

func TestCandidatePortsOfChildOnly(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	_, own := listen(t, "127.0.0.1:0")
	pid, port := listenChild(t)
	ports, err := rpc.CandidatePorts(pid)
	require.NoError(t, err)
	assert.Equal(t, []int{port}, ports, "the parent's listeners are not the child's")
	assert.NotContains(t, ports, own)
}

func TestCandidatePortsBadPid(t *testing.T) {
	_, err := rpc.CandidatePorts(0)
	assert.Error(t, err)
	_, err = rpc.CandidatePorts(1 << 30)
	assert.Error(t, err)
}

func TestCSRFTokenFromCmdline(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	pid, _ := listenChild(t, "--other", "x", "--csrf_token", "tok-123")
	assert.Equal(t, "tok-123", rpc.CSRFTokenFromCmdline(pid))
	pid, _ = listenChild(t, "--csrf_token=tok-456")
	assert.Equal(t, "tok-456", rpc.CSRFTokenFromCmdline(pid))
	plain, _ := listenChild(t, "--other", "x")
	assert.Equal(t, "", rpc.CSRFTokenFromCmdline(plain), "no token on its command line")
	assert.Contains(t, []string{"tok-123", "tok-456"}, rpc.CSRFTokenFromCmdline(os.Getpid()),
		"agy's token is found under the process named (a terminal pane's shell)")
	assert.Equal(t, "", rpc.CSRFTokenFromCmdline(1<<30))
}

func TestPortFromLogLine(t *testing.T) {
	port, ok := rpc.PortFromLogLine("I0802 04:49:01.123 server.go:42] Language server listening on random port at 53123 for HTTPS")
	assert.True(t, ok)
	assert.Equal(t, 53123, port)
	for _, line := range []string{
		"Language server listening on random port at 53124 for HTTP",
		"Language server listening on random port at 99999 for HTTPS",
		"Language server listening on random port at 0 for HTTPS",
		"something else",
		"",
	} {
		_, ok := rpc.PortFromLogLine(line)
		assert.False(t, ok, line)
	}
}

func TestAddressFromEnv(t *testing.T) {
	cases := map[string]struct {
		host string
		port int
		ok   bool
	}{
		"127.0.0.1:1234":          {"127.0.0.1", 1234, true},
		"https://127.0.0.1:1234":  {"127.0.0.1", 1234, true},
		"https://localhost:1234/": {"localhost", 1234, true},
		"1234":                    {"127.0.0.1", 1234, true},
		" 1234\n":                 {"127.0.0.1", 1234, true},
		"[::1]:1234":              {"::1", 1234, true},
		"10.0.0.1:1234":           {ok: false},
		"http://127.0.0.1:1234":   {ok: false},
		"127.0.0.1":               {ok: false},
		"127.0.0.1:70000":         {ok: false},
		"0":                       {ok: false},
		"":                        {ok: false},
	}
	for v, want := range cases {
		t.Run(v, func(t *testing.T) {
			t.Setenv(rpc.EnvAddress, v)
			host, port, ok := rpc.AddressFromEnv()
			assert.Equal(t, want.ok, ok)
			if want.ok {
				assert.Equal(t, want.host, host)
				assert.Equal(t, want.port, port)
			}
		})
	}
	t.Run("unset", func(t *testing.T) {
		t.Setenv(rpc.EnvAddress, "")
		os.Unsetenv(rpc.EnvAddress)
		_, _, ok := rpc.AddressFromEnv()
		assert.False(t, ok)
	})
	_, _, err := rpc.ParseAddress("10.0.0.1:1234")
	assert.ErrorIs(t, err, rpc.ErrNotLoopback)
}

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
			rpc.WriteError(w, rpc.CodeUnknown, "trajectory not found")
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	ok, err = rpc.Probe(context.Background(), rpc.Config{Port: dead}, conv)
	assert.False(t, ok)
	assert.ErrorIs(t, err, rpc.ErrPortGone)
}

func TestAddressFromProcessAndLoopbackListeners(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	t.Setenv(rpc.EnvAddress, "127.0.0.1:4567") // inherited by the child, as agy's language server would set it
	pid, port := listenChild(t)
	host, p, ok := rpc.AddressFromProcess(pid)
	require.True(t, ok)
	assert.Equal(t, "127.0.0.1", host)
	assert.Equal(t, 4567, p)
	_, _, ok = rpc.AddressFromProcess(1 << 30)
	assert.False(t, ok)

	assert.Contains(t, rpc.LoopbackListeners(1<<16), port, "every loopback listener of the machine")
	assert.Len(t, rpc.LoopbackListeners(1), 1, "at most max")
	assert.True(t, rpc.ProcessAlive(pid))
	assert.False(t, rpc.ProcessAlive(1<<30))
}
