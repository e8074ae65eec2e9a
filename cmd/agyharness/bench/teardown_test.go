package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestAFailedRunLeavesNothingRunning: a run that fails once its fakes and
// sessions are up (here the heap profile taken when the drivers stop cannot
// be written) stops them all before it returns: no fake process, no
// goroutine is left.
func TestAFailedRunLeavesNothingRunning(t *testing.T) {
	for _, external := range []bool{false, true} {
		t.Run(fmt.Sprintf("external fakes %t", external), func(t *testing.T) {
			if external && testing.Short() {
				t.Skip("builds fakeagy")
			}
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			heap := filepath.Join(t.TempDir(), "no such directory", "heap.pprof")
			_, err := Run(context.Background(), Options{
				Sessions: 2, Duration: 200 * time.Millisecond, TurnTimeout: 10 * time.Second, Seed: 3,
				TurnKinds: []string{"long"}, ExternalFakes: external, HeapProfileEnd: heap,
			})
			require.ErrorContains(t, err, "heap profile")
			assert.Empty(t, childProcesses(t), "no fake process is left")
		})
	}
}

// childProcesses lists the processes whose parent is this one (zombies
// too: a child killed and never waited for).
func childProcesses(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to list the child processes")
	}
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its ")".
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == self {
			out = append(out, e.Name()+" "+s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return out
}
