// Package agyproc finds agy's language server from the outside: the
// loopback ports a process tree listens on (CandidatePorts, from /proc or
// lsof), the port agy's log announces (PortFromLogLine, PortFromLogFile),
// the address in ANTIGRAVITY_LS_ADDRESS (AddressFromEnv, ParseAddress,
// AddressFromProcess) and the CSRF token on its command line
// (CSRFTokenFromCmdline). It holds no actor logic and dials nothing: which
// candidate is agy is for rpc.Probe to tell, and for the discovery actor
// (package actors) to decide.
package agyproc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/rpc"
)

// ErrListenersHidden: the process's file descriptors cannot be read (a
// restricted /proc, as in some containers), so its listeners cannot be told
// from other processes'.
var ErrListenersHidden = errors.New("agyproc: a process's listeners cannot be read")

// EnvAddress names the environment variable that can carry the language
// server's address ("127.0.0.1:1234", "https://127.0.0.1:1234" or "1234").
const EnvAddress = "ANTIGRAVITY_LS_ADDRESS"

// procRoot is where the proc filesystem is mounted (a variable for tests).
var procRoot = "/proc"

// CandidatePorts lists the TCP ports listening on a loopback address that
// belong to pid or any of its descendants, sorted and without duplicates.
// agy's language server listens on two such ports (HTTPS, and plain HTTP
// usually one above), so each candidate must still be probed.
//
// On Linux it reads /proc: the process tree from /proc/<pid>/task/*/children,
// socket inodes from /proc/<pid>/fd, and LISTEN rows from
// /proc/<pid>/net/tcp{,6}. Without /proc it runs
// `lsof -nP -a -p PID -iTCP -sTCP:LISTEN`.
func CandidatePorts(pid int) ([]int, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("agyproc: invalid pid %d", pid)
	}
	if _, err := os.Stat(filepath.Join(procRoot, "self")); err != nil {
		return candidatePortsLsof(pid)
	}
	if _, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid))); err != nil {
		return nil, fmt.Errorf("agyproc: process %d: %w", pid, err)
	}
	pids := processTree(pid)
	inodes := make(map[uint64]bool)
	for i, p := range pids {
		if err := socketInodes(p, inodes); i == 0 && errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("%w: process %d: %v", ErrListenersHidden, pid, err)
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	var ports []int
	for _, name := range []string{"tcp", "tcp6"} {
		// The process's own view: it may live in another network namespace.
		f, err := os.Open(filepath.Join(procRoot, strconv.Itoa(pid), "net", name))
		if err != nil {
			continue
		}
		ports = append(ports, parseProcNetTCP(f, inodes)...)
		f.Close()
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// processTree returns pid and all its descendants, each once.
func processTree(pid int) []int {
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for i := 0; i < len(queue); i++ {
		tasks, _ := filepath.Glob(filepath.Join(procRoot, strconv.Itoa(queue[i]), "task", "*", "children"))
		for _, t := range tasks {
			data, err := os.ReadFile(t)
			if err != nil {
				continue // the task exited meanwhile
			}
			for _, f := range strings.Fields(string(data)) {
				if child, err := strconv.Atoi(f); err == nil && !seen[child] {
					seen[child] = true
					queue = append(queue, child)
				}
			}
		}
	}
	return queue
}

// socketInodes adds the inodes of pid's sockets to into. Unreadable fds
// (another user's process, or one that exited) are skipped; the error
// says why the table could not be read.
func socketInodes(pid int, into map[uint64]bool) error {
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") || !strings.HasSuffix(link, "]") {
			continue
		}
		if ino, err := strconv.ParseUint(link[len("socket:["):len(link)-1], 10, 64); err == nil {
			into[ino] = true
		}
	}
	return nil
}

// tcpListen is the kernel's TCP_LISTEN state as /proc/net/tcp prints it.
const tcpListen = "0A"

// LoopbackListeners lists the TCP ports listening on a loopback address on
// this machine, whoever owns them, sorted, at most max of them: the last
// resort of discovery where agy's listeners cannot be tied to its process
// (a restricted /proc, or a language server whose socket agy's process does
// not hold). Linux only; nil elsewhere.
func LoopbackListeners(max int) []int {
	var ports []int
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, "net", name))
		if err != nil {
			continue
		}
		ports = append(ports, parseProcNetTCP(f, nil)...)
		f.Close()
	}
	slices.Sort(ports)
	ports = slices.Compact(ports)
	if len(ports) > max {
		ports = ports[:max]
	}
	return ports
}

// ProcessAlive reports whether pid names a process (Linux: /proc/<pid>
// exists; elsewhere: assumed).
func ProcessAlive(pid int) bool {
	if _, err := os.Stat(filepath.Join(procRoot, "self")); err != nil {
		return true
	}
	_, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid)))
	return err == nil
}

// parseProcNetTCP returns the ports of rows in r (a /proc/net/tcp or tcp6
// table) that are listening on loopback with an inode in inodes (nil: any).
func parseProcNetTCP(r io.Reader, inodes map[uint64]bool) []int {
	var ports []int
	sc := bufio.NewScanner(r)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != tcpListen {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil || (inodes != nil && !inodes[ino]) {
			continue
		}
		ip, port, ok := parseProcAddr(f[1])
		if ok && ip.IsLoopback() {
			ports = append(ports, port)
		}
	}
	return ports
}

// parseProcAddr decodes "0100007F:1F90": the address is printed as 32-bit
// words in host byte order, the port as big-endian hex.
func parseProcAddr(s string) (net.IP, int, bool) {
	addrHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, false
	}
	raw, err := hex.DecodeString(addrHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil || port == 0 {
		return nil, 0, false
	}
	return ip, int(port), true
}

// candidatePortsLsof is CandidatePorts where /proc is missing (macOS).
// Descendants come from pgrep -P when it is available.
func candidatePortsLsof(pid int) ([]int, error) {
	pids := []string{strconv.Itoa(pid)}
	for i := 0; i < len(pids); i++ {
		out, err := exec.Command("pgrep", "-P", pids[i]).Output()
		if err != nil {
			continue // pgrep exits 1 when there are no children
		}
		pids = append(pids, strings.Fields(string(out))...)
	}
	out, err := exec.Command("lsof", "-nP", "-a", "-p", strings.Join(pids, ","), "-iTCP", "-sTCP:LISTEN").Output()
	if err != nil {
		var ee *exec.ExitError
		// lsof exits 1 when nothing matches.
		if !errors.As(err, &ee) || len(out) > 0 {
			return nil, fmt.Errorf("agyproc: lsof for pid %d: %w", pid, err)
		}
	}
	ports := parseLsof(out)
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// parseLsof reads the NAME column of `lsof -nP -iTCP -sTCP:LISTEN` output
// ("127.0.0.1:53123 (LISTEN)", "[::1]:53124 (LISTEN)") and keeps loopback
// listeners.
func parseLsof(out []byte) []int {
	var ports []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[len(f)-1] != "(LISTEN)" {
			continue
		}
		host, portStr, err := net.SplitHostPort(f[len(f)-2])
		if err != nil || !rpc.IsLoopbackHost(host) {
			continue
		}
		if port, err := strconv.Atoi(portStr); err == nil && port > 0 && port <= 65535 {
			ports = append(ports, port)
		}
	}
	return ports
}

var logLinePattern = regexp.MustCompile(`Language server listening on random port at (\d+) for HTTPS`)

// PortFromLogLine extracts the HTTPS port from agy's log line "Language
// server listening on random port at <N> for HTTPS".
func PortFromLogLine(line string) (int, bool) {
	m := logLinePattern.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	port, err := strconv.Atoi(m[1])
	if err != nil || port <= 0 || port > 65535 {
		return 0, false
	}
	return port, true
}

// maxLogTail bounds how much of a log file PortFromLogFile reads (its end).
const maxLogTail = 256 << 10

// PortFromLogFile returns the HTTPS port of the last "Language server
// listening on random port at <N> for HTTPS" line in agy's log file (agy
// logs it again each time its language server moves). Only the file's last
// 256 KiB are read. ok is false when no such line is there.
func PortFromLogFile(path string) (port int, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	off := st.Size() - maxLogTail
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return 0, false, err
	}
	lines := strings.Split(string(buf), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if p, ok := PortFromLogLine(lines[i]); ok {
			return p, true, nil
		}
	}
	return 0, false, nil
}

// AddressFromEnv reads ANTIGRAVITY_LS_ADDRESS with ParseAddress. ok is false
// when the variable is unset or does not parse.
func AddressFromEnv() (host string, port int, ok bool) {
	v, set := os.LookupEnv(EnvAddress)
	if !set {
		return "", 0, false
	}
	host, port, err := ParseAddress(v)
	return host, port, err == nil
}

// ParseAddress reads a language server address: "127.0.0.1:1234",
// "[::1]:1234", "https://127.0.0.1:1234", or a bare port "1234" (host
// 127.0.0.1). The host must be loopback (rpc.ErrNotLoopback otherwise).
func ParseAddress(s string) (host string, port int, err error) {
	s = strings.TrimSpace(s)
	hostPort := s
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return "", 0, fmt.Errorf("agyproc: address %q: %w", s, err)
		}
		if u.Scheme != "https" {
			return "", 0, fmt.Errorf("agyproc: address %q: scheme %q, want https", s, u.Scheme)
		}
		hostPort = u.Host
	}
	if n, err := strconv.Atoi(hostPort); err == nil {
		host, port = rpc.DefaultHost, n
	} else {
		h, p, err := net.SplitHostPort(hostPort)
		if err != nil {
			return "", 0, fmt.Errorf("agyproc: address %q: %w", s, err)
		}
		if port, err = strconv.Atoi(p); err != nil {
			return "", 0, fmt.Errorf("agyproc: address %q: bad port %q", s, p)
		}
		host = h
	}
	if port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("agyproc: address %q: port %d out of range", s, port)
	}
	if !rpc.IsLoopbackHost(host) {
		return "", 0, fmt.Errorf("%w: address %q", rpc.ErrNotLoopback, s)
	}
	return host, port, nil
}

// CSRFTokenFromCmdline returns the value of --csrf_token (as "--csrf_token X"
// or "--csrf_token=X", one or two dashes) on the command line of pid or of
// one of its descendants (agy under a terminal pane's shell), or "" when
// there is none or the command lines cannot be read (Linux only).
func CSRFTokenFromCmdline(pid int) string {
	for _, p := range processTree(pid) {
		data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(p), "cmdline"))
		if err != nil {
			continue
		}
		if tok := csrfTokenFromArgs(strings.Split(string(bytes.TrimRight(data, "\x00")), "\x00")); tok != "" {
			return tok
		}
	}
	return ""
}

// AddressFromProcess reads ANTIGRAVITY_LS_ADDRESS from the environment of
// pid or of one of its descendants (ParseAddress), where agy's language
// server may announce itself. ok is false when none has it (Linux only).
func AddressFromProcess(pid int) (host string, port int, ok bool) {
	for _, p := range processTree(pid) {
		data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(p), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(data), "\x00") {
			if v, found := strings.CutPrefix(kv, EnvAddress+"="); found {
				if host, port, err := ParseAddress(v); err == nil {
					return host, port, true
				}
			}
		}
	}
	return "", 0, false
}

func csrfTokenFromArgs(args []string) string {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "csrf_token" || !strings.HasPrefix(a, "-") {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
