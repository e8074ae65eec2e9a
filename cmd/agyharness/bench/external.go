package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agyharness/agyharness/rpc/agytest"
)

// externalFakes is a fakeagy process (`fakeagy --servers N`) hosting the
// campaign's fakes, so that this process's CPU time and heap are the
// harness's own. It cannot be faulted or read for ground truth.
type externalFakes struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dir   string
	times string
	fakes []fake
	waitc chan error
	lines chan string // fakeagy's stdout, by line
	ended bool        // stop or kill has run: the process is gone
}

// These mirror the lines cmd/fakeagy's --servers mode prints and writes.
type serverLine struct {
	Index        int    `json:"index"`
	Port         int    `json:"port"`
	Conversation string `json:"conversation"`
}

type timesHeader struct {
	Frames     int64 `json:"frames"`
	FrameBytes int64 `json:"frame_bytes"`
}

type timesLine struct {
	Conversation string `json:"c"`
	StepIndex    int    `json:"i"`
	Length       int    `json:"n"`
	Changed      int64  `json:"ch"`
	Written      int64  `json:"w"`
}

// startExternalFakes starts n fakes in one fakeagy process: fake i has seed
// o.Seed+i and the campaign's scenario. The binary is o.Fakeagy, or one
// built from this module with `go build` into a temporary directory;
// extra are more flags for it.
func startExternalFakes(ctx context.Context, o Options, n int, extra ...string) (*externalFakes, error) {
	dir, err := os.MkdirTemp("", "agyharness-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: external fakes: %w", err)
	}
	e := &externalFakes{dir: dir, times: filepath.Join(dir, "times.jsonl")}
	fail := func(err error) (*externalFakes, error) {
		if e.lines != nil {
			go func() { // let the reader finish, so kill's wait returns
				for range e.lines {
				}
			}()
		}
		e.kill()
		return nil, fmt.Errorf("bench: external fakes: %w", err)
	}
	bin := o.Fakeagy
	if bin == "" {
		bin = filepath.Join(dir, "fakeagy")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/agyharness/agyharness/cmd/fakeagy")
		if out, err := build.CombinedOutput(); err != nil {
			return fail(fmt.Errorf("go build fakeagy (or pass --fakeagy PATH): %w: %s", err, out))
		}
	}
	sc, err := json.Marshal(campaignScenario())
	if err != nil {
		return fail(err)
	}
	scPath := filepath.Join(dir, "scenario.json")
	if err := os.WriteFile(scPath, sc, 0o600); err != nil {
		return fail(err)
	}
	e.cmd = exec.Command(bin, "--conversation", "--servers", strconv.Itoa(n), "--exit-on-eof", "--times", e.times,
		"--seed", strconv.FormatInt(o.Seed, 10), "--scenario", scPath,
		"--chunk-delay", o.ChunkDelay.String(), "--prompt-timeout", "1m", "--history-steps", strconv.Itoa(o.HistorySteps))
	e.cmd.Args = append(e.cmd.Args, extra...)
	e.cmd.Stderr = os.Stderr
	if e.stdin, err = e.cmd.StdinPipe(); err != nil {
		return fail(err)
	}
	stdout, err := e.cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	if err := e.cmd.Start(); err != nil {
		return fail(err)
	}
	e.waitc = make(chan error, 1)
	lines := make(chan string)
	e.lines = lines
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		e.waitc <- e.cmd.Wait()
	}()
	// Starting 1,000 TLS servers takes a while on 2 cores.
	timeout := time.After(time.Minute + time.Duration(n)*50*time.Millisecond)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return fail(errors.New("fakeagy exited before it was ready"))
			}
			if l == "ready" {
				if len(e.fakes) != n {
					return fail(fmt.Errorf("fakeagy announced %d servers, want %d", len(e.fakes), n))
				}
				e.lines = nil
				go func() { // nothing more is printed; keep the pipe drained
					for range lines {
					}
				}()
				return e, nil
			}
			var sl serverLine
			if err := json.Unmarshal([]byte(l), &sl); err != nil || sl.Port == 0 {
				return fail(fmt.Errorf("fakeagy printed %q", l))
			}
			e.fakes = append(e.fakes, fake{port: sl.Port, conv: sl.Conversation})
		case <-timeout:
			return fail(errors.New("fakeagy not ready in time"))
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
}

// stop ends the process (closing its stdin) and reads its frame counts and
// text version times.
func (e *externalFakes) stop() (frames, frameBytes int64, times map[agytest.TextVersion]agytest.VersionTimes, err error) {
	e.ended = true
	defer os.RemoveAll(e.dir)
	_ = e.stdin.Close()
	select {
	case err = <-e.waitc:
	case <-time.After(60 * time.Second):
		_ = e.cmd.Process.Signal(syscall.SIGKILL)
		<-e.waitc
		return 0, 0, nil, errors.New("bench: external fakes did not stop in time")
	}
	if err != nil {
		return 0, 0, nil, fmt.Errorf("bench: external fakes: %w", err)
	}
	f, err := os.Open(e.times)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("bench: external fakes' times: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	times = map[agytest.TextVersion]agytest.VersionTimes{}
	first := true
	for sc.Scan() {
		if first {
			first = false
			var h timesHeader
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
				return 0, 0, nil, fmt.Errorf("bench: external fakes' times: %w", err)
			}
			frames, frameBytes = h.Frames, h.FrameBytes
			continue
		}
		var l timesLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return 0, 0, nil, fmt.Errorf("bench: external fakes' times: %w", err)
		}
		vt := agytest.VersionTimes{Changed: time.Unix(0, l.Changed)}
		if l.Written != 0 {
			vt.Written = time.Unix(0, l.Written)
		}
		times[agytest.TextVersion{ConversationID: l.Conversation, StepIndex: l.StepIndex, Length: l.Length}] = vt
	}
	if err := sc.Err(); err != nil {
		return 0, 0, nil, fmt.Errorf("bench: external fakes' times: %w", err)
	}
	if first {
		return 0, 0, nil, errors.New("bench: external fakes wrote no times")
	}
	return frames, frameBytes, times, nil
}

// kill ends the process without reading anything (a failed start, or a
// run that failed before stop); after stop it does nothing.
func (e *externalFakes) kill() {
	if e.ended {
		return
	}
	e.ended = true
	if e.cmd != nil && e.cmd.Process != nil {
		_ = e.cmd.Process.Signal(syscall.SIGKILL)
		if e.waitc != nil {
			<-e.waitc
		} else {
			_ = e.cmd.Wait()
		}
	}
	_ = os.RemoveAll(e.dir)
}
