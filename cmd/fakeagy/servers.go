package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/agyharness/agyharness/rpc/agytest"
)

// multiFlags are the flags of the multi-server mode (--servers N), the
// external fakes of `agyharness bench --external-fakes`: one process
// hosting N fake language servers, so the harness's CPU and memory can be
// measured apart from the fakes'.
type multiFlags struct {
	servers   int
	times     string
	exitOnEOF bool
}

func addMultiFlags(fs *flag.FlagSet) *multiFlags {
	m := &multiFlags{}
	fs.IntVar(&m.servers, "servers", 0, "host this many fake servers (seeds seed, seed+1, ...) and print one line per server on stdout")
	fs.StringVar(&m.times, "times", "", "with --servers: at exit, write frame counts and text version times (JSON lines) to this file")
	fs.BoolVar(&m.exitOnEOF, "exit-on-eof", false, "with --servers: also exit at the end of stdin (a parent that dies closes it)")
	return m
}

// serverLine is what --servers prints on stdout for each server, in order,
// before "ready".
type serverLine struct {
	Index        int    `json:"index"`
	Port         int    `json:"port"`
	HTTPPort     int    `json:"http_port"`
	Conversation string `json:"conversation"`
}

// timesHeader is the first line of the --times file.
type timesHeader struct {
	Frames     int64 `json:"frames"`
	FrameBytes int64 `json:"frame_bytes"`
}

// timesLine is one text version in the --times file (unix nanoseconds;
// written is 0 when no frame carried the version).
type timesLine struct {
	Conversation string `json:"c"`
	StepIndex    int    `json:"i"`
	Length       int    `json:"n"`
	Changed      int64  `json:"ch"`
	Written      int64  `json:"w,omitempty"`
}

// runServers starts m.servers fakes, prints them, and serves until SIGTERM,
// SIGINT or (with --exit-on-eof) the end of stdin; then it closes them and
// writes the times.
func runServers(m *multiFlags, base agytest.Options, stdin io.Reader, stdout io.Writer) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	var srvs []*agytest.Server
	closeAll := func() {
		var wg sync.WaitGroup
		for _, s := range srvs {
			wg.Go(func() { _ = s.Close() })
		}
		wg.Wait()
	}
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	for i := range m.servers {
		o := base
		o.Seed = base.Seed + int64(i)
		o.RecordTimes = m.times != ""
		s, err := agytest.NewServer(o)
		if err != nil {
			closeAll()
			return fmt.Errorf("server %d: %w", i, err)
		}
		srvs = append(srvs, s)
		if err := enc.Encode(serverLine{Index: i, Port: s.Port(), HTTPPort: s.HTTPPort(), Conversation: s.ConversationID()}); err != nil {
			closeAll()
			return err
		}
	}
	fmt.Fprintln(out, "ready")
	if err := out.Flush(); err != nil {
		closeAll()
		return err
	}
	// The parent may also end the run by closing our stdin.
	var eof chan struct{}
	if m.exitOnEOF {
		eof = make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			close(eof)
		}()
	}
	select {
	case <-sigs:
	case <-eof:
	}
	// Frames and times are read after Close: no stream writes after that.
	done := make(chan struct{})
	go func() {
		closeAll()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("shutdown of %d servers timed out", len(srvs))
	}
	if m.times == "" {
		return nil
	}
	return writeTimes(m.times, srvs)
}

func writeTimes(path string, srvs []*agytest.Server) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	var h timesHeader
	for _, s := range srvs {
		fr, b := s.FramesWritten()
		h.Frames += fr
		h.FrameBytes += b
	}
	err = enc.Encode(h)
	for _, s := range srvs {
		for v, t := range s.TextTimes() {
			if err != nil {
				break
			}
			l := timesLine{Conversation: v.ConversationID, StepIndex: v.StepIndex, Length: v.Length, Changed: t.Changed.UnixNano()}
			if !t.Written.IsZero() {
				l.Written = t.Written.UnixNano()
			}
			err = enc.Encode(l)
		}
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
