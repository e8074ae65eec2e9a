// Package loopport picks loopback TCP ports for servers that must be told
// their port before they bind it (the nodes of a cluster started on one
// machine, each given every peer's address up front: the bench's --cluster,
// the cluster tests), and for tests that need a port nobody listens on.
//
// A port found free by binding port 0 and closing the listener is the
// kernel's to hand out again at once, to the next bind of port 0 or the
// next outgoing connection of any process, and a node started a moment
// later then fails on "address already in use". On Linux, Pick draws its
// ports from below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), which the kernel never hands out by
// itself: only a program that names such a port can take it first.
package loopport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// rangeFile holds the kernel's ephemeral port range on Linux.
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// span is how many ports below the ephemeral range Pick draws from.
const span = 16384

// minPort is the lowest port Pick draws: above the privileged ones.
const minPort = 1024

// Pick returns n distinct loopback ports, each free when picked: drawn
// from below the kernel's ephemeral range where it can be read, else
// picked by the kernel (port 0).
func Pick(n int) ([]int, error) {
	low, err := ephemeralLow()
	if err != nil || low-span < minPort {
		return pick(n, kernelPort, nil)
	}
	from := low - span
	return pick(n, func() (int, error) { return from + rand.IntN(span), nil }, bindable)
}

// pick draws candidates until it holds n distinct ones that check accepts
// (all, when check is nil), trying at most 64 candidates a port.
func pick(n int, candidate func() (int, error), check func(int) bool) ([]int, error) {
	ports := make([]int, 0, n)
	seen := make(map[int]bool, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 64*n {
			return nil, fmt.Errorf("loopport: no %d free loopback ports found in %d tries", n, tries)
		}
		p, err := candidate()
		if err != nil {
			return nil, err
		}
		if seen[p] || (check != nil && !check(p)) {
			continue
		}
		seen[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// bindable reports whether a listener can bind 127.0.0.1:port now.
func bindable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// kernelPort is a port the kernel picks for a bind of port 0.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("loopport: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the lowest port of the kernel's ephemeral range.
func ephemeralLow() (int, error) {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return 0, err
	}
	low, _, err := parseRange(string(b))
	return low, err
}

// parseRange reads the two ports of ip_local_port_range ("32768\t60999\n").
func parseRange(s string) (low, high int, err error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, errors.New("loopport: the ephemeral port range is not two numbers")
	}
	if low, err = strconv.Atoi(f[0]); err != nil {
		return 0, 0, fmt.Errorf("loopport: the ephemeral port range: %w", err)
	}
	if high, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, fmt.Errorf("loopport: the ephemeral port range: %w", err)
	}
	if low < 1 || high > 65535 || low > high {
		return 0, 0, fmt.Errorf("loopport: the ephemeral port range %d–%d is not one", low, high)
	}
	return low, high, nil
}
