package loopport

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPickGivesDistinctFreePortsBelowTheEphemeralRange(t *testing.T) {
	ports, err := Pick(8)
	require.NoError(t, err)
	require.Len(t, ports, 8)
	seen := map[int]bool{}
	for _, p := range ports {
		require.False(t, seen[p], "port %d given twice", p)
		seen[p] = true
		require.True(t, bindable(p), "port %d is not free", p)
	}
	low, err := ephemeralLow()
	if err != nil {
		t.Logf("no ephemeral range here (%v): the kernel's ports were given", err)
		return
	}
	for _, p := range ports {
		require.GreaterOrEqual(t, p, low-span)
		require.Less(t, p, low, "port %d is in the kernel's ephemeral range, from %d", p, low)
	}
}

// seq hands out the ports given, in turn.
func seq(ports ...int) func() (int, error) {
	return func() (int, error) {
		if len(ports) == 0 {
			return 0, errors.New("no more candidates")
		}
		p := ports[0]
		ports = ports[1:]
		return p, nil
	}
}

func TestPickSkipsTakenAndRepeatedPorts(t *testing.T) {
	taken := func(p int) bool { return p != 6 }
	ports, err := pick(3, seq(5, 5, 6, 7, 8, 9), taken)
	require.NoError(t, err)
	require.Equal(t, []int{5, 7, 8}, ports)
}

func TestPickSkipsAPortHeldByAListener(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer held.Close()
	busy := held.Addr().(*net.TCPAddr).Port
	free, err := kernelPort()
	require.NoError(t, err)
	require.NotEqual(t, busy, free)

	ports, err := pick(1, seq(busy, free), bindable)
	require.NoError(t, err)
	require.Equal(t, []int{free}, ports, "port %d is held", busy)
}

func TestPickGivesUpWhenNothingIsFree(t *testing.T) {
	n := 0
	_, err := pick(2, func() (int, error) { n++; return 20000 + n, nil }, func(int) bool { return false })
	require.ErrorContains(t, err, "no 2 free loopback ports")
	require.Equal(t, 128, n, "tries")
}

func TestParseRange(t *testing.T) {
	low, high, err := parseRange("32768\t60999\n")
	require.NoError(t, err)
	require.Equal(t, [2]int{32768, 60999}, [2]int{low, high})
	for _, bad := range []string{"", "32768", "1 2 3", "a 60999", "32768 b", "60999 32768", "0 100", "1024 70000"} {
		_, _, err := parseRange(bad)
		require.Error(t, err, "%q", bad)
	}
}
