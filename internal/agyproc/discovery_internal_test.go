package agyproc

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProcNetTCP(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 112 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F92 0100007F:C000 01 00000000:00000000 00:00000000 00000000  1000        0 113 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F93 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 999 1 0000000000000000 100 0 0 10 0
   4: 0201007F:1F94 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 114 1 0000000000000000 100 0 0 10 0
   5: garbage
`
	const table6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F95 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 115 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:1F96 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 116 1 0000000000000000 100 0 0 10 0
   2: 00000000000000000000000000000000:1F97 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 117 1 0000000000000000 100 0 0 10 0
`
	inodes := map[uint64]bool{111: true, 112: true, 113: true, 114: true, 115: true, 116: true, 117: true}
	// 0x1F90 = 8080: loopback LISTEN with our inode. 8081 wildcard, 8082
	// established, 8083 another process's inode, 8084 on 127.0.1.2.
	assert.Equal(t, []int{8080, 8084}, parseProcNetTCP(strings.NewReader(table), inodes))
	// ::1 and ::ffff:127.0.0.1 are loopback; :: is not.
	assert.Equal(t, []int{8085, 8086}, parseProcNetTCP(strings.NewReader(table6), inodes))
}

func TestParseLsof(t *testing.T) {
	out := `COMMAND   PID USER   FD   TYPE DEVICE SIZE/OFF NODE NAME
agy     12345 me   21u  IPv4 0x1      0t0  TCP 127.0.0.1:53123 (LISTEN)
agy     12345 me   22u  IPv4 0x2      0t0  TCP 127.0.0.1:53124 (LISTEN)
agy     12345 me   23u  IPv6 0x3      0t0  TCP [::1]:53125 (LISTEN)
agy     12345 me   24u  IPv4 0x4      0t0  TCP *:8080 (LISTEN)
agy     12345 me   25u  IPv4 0x5      0t0  TCP 10.0.0.2:9090 (LISTEN)
agy     12345 me   26u  IPv4 0x6      0t0  TCP 127.0.0.1:50000->127.0.0.1:53123 (ESTABLISHED)
`
	assert.Equal(t, []int{53123, 53124, 53125}, parseLsof([]byte(out)))
}

func TestCandidatePortsLsofFallback(t *testing.T) {
	if _, err := exec.LookPath("lsof"); err != nil {
		t.Skip("lsof not installed")
	}
	l, port := listenInternal(t)
	defer l()
	saved := procRoot
	procRoot = t.TempDir() + "/no-proc"
	defer func() { procRoot = saved }()
	ports, err := CandidatePorts(os.Getpid())
	require.NoError(t, err)
	assert.Contains(t, ports, port)
}

func TestCSRFTokenFromArgs(t *testing.T) {
	assert.Equal(t, "a", csrfTokenFromArgs([]string{"agy", "--csrf_token", "a"}))
	assert.Equal(t, "b", csrfTokenFromArgs([]string{"agy", "-csrf_token=b"}))
	assert.Equal(t, "", csrfTokenFromArgs([]string{"agy", "--csrf_token"}))
	assert.Equal(t, "", csrfTokenFromArgs([]string{"agy", "csrf_token", "c"}))
	assert.Equal(t, "", csrfTokenFromArgs([]string{"agy", "--csrf_token_file=x"}))
}

// listenInternal opens a loopback listener and returns its closer and port.
func listenInternal(t *testing.T) (func(), int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return func() { l.Close() }, l.Addr().(*net.TCPAddr).Port
}
