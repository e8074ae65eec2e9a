package agyproc_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/internal/agyproc"
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

	ports, err := agyproc.CandidatePorts(os.Getpid())
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
	ports, err := agyproc.CandidatePorts(pid)
	require.NoError(t, err)
	assert.Equal(t, []int{port}, ports, "the parent's listeners are not the child's")
	assert.NotContains(t, ports, own)
}

func TestCandidatePortsBadPid(t *testing.T) {
	_, err := agyproc.CandidatePorts(0)
	assert.Error(t, err)
	_, err = agyproc.CandidatePorts(1 << 30)
	assert.Error(t, err)
}

func TestCSRFTokenFromCmdline(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	pid, _ := listenChild(t, "--other", "x", "--csrf_token", "tok-123")
	assert.Equal(t, "tok-123", agyproc.CSRFTokenFromCmdline(pid))
	pid, _ = listenChild(t, "--csrf_token=tok-456")
	assert.Equal(t, "tok-456", agyproc.CSRFTokenFromCmdline(pid))
	plain, _ := listenChild(t, "--other", "x")
	assert.Equal(t, "", agyproc.CSRFTokenFromCmdline(plain), "no token on its command line")
	assert.Contains(t, []string{"tok-123", "tok-456"}, agyproc.CSRFTokenFromCmdline(os.Getpid()),
		"agy's token is found under the process named (a terminal pane's shell)")
	assert.Equal(t, "", agyproc.CSRFTokenFromCmdline(1<<30))
}

func TestPortFromLogLine(t *testing.T) {
	port, ok := agyproc.PortFromLogLine("I0802 04:49:01.123 server.go:42] Language server listening on random port at 53123 for HTTPS")
	assert.True(t, ok)
	assert.Equal(t, 53123, port)
	for _, line := range []string{
		"Language server listening on random port at 53124 for HTTP",
		"Language server listening on random port at 99999 for HTTPS",
		"Language server listening on random port at 0 for HTTPS",
		"something else",
		"",
	} {
		_, ok := agyproc.PortFromLogLine(line)
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
			t.Setenv(agyproc.EnvAddress, v)
			host, port, ok := agyproc.AddressFromEnv()
			assert.Equal(t, want.ok, ok)
			if want.ok {
				assert.Equal(t, want.host, host)
				assert.Equal(t, want.port, port)
			}
		})
	}
	t.Run("unset", func(t *testing.T) {
		t.Setenv(agyproc.EnvAddress, "")
		os.Unsetenv(agyproc.EnvAddress)
		_, _, ok := agyproc.AddressFromEnv()
		assert.False(t, ok)
	})
	_, _, err := agyproc.ParseAddress("10.0.0.1:1234")
	assert.ErrorIs(t, err, rpc.ErrNotLoopback)
}

func TestAddressFromProcessAndLoopbackListeners(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	t.Setenv(agyproc.EnvAddress, "127.0.0.1:4567") // inherited by the child, as agy's language server would set it
	pid, port := listenChild(t)
	host, p, ok := agyproc.AddressFromProcess(pid)
	require.True(t, ok)
	assert.Equal(t, "127.0.0.1", host)
	assert.Equal(t, 4567, p)
	_, _, ok = agyproc.AddressFromProcess(1 << 30)
	assert.False(t, ok)

	assert.Contains(t, agyproc.LoopbackListeners(1<<16), port, "every loopback listener of the machine")
	assert.Len(t, agyproc.LoopbackListeners(1), 1, "at most max")
	assert.True(t, agyproc.ProcessAlive(pid))
	assert.False(t, agyproc.ProcessAlive(1<<30))
}
