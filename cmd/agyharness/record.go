package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// A capture is a JSON-lines file: a header line, then one record per thing
// the session read, in the order it read them, each with the time it
// arrived. Payloads are what actors.Spec.Recorder hands over: steps exactly
// as agy sent them (unknown fields included), so a newer mapper can replay
// an old capture.
//
//	{"kind":"capture","version":1,"time":"..."}
//	{"kind":"frame","conversation_id":"C","time":"...","payload":{"update":{...}}}           a StreamAgentStateUpdates data frame
//	{"kind":"snapshot","conversation_id":"C","time":"...","payload":{"steps":[...],"offset":N,"runStatus":"..."}}  a GetCascadeTrajectorySteps read from trajectory index N
//
// Replay also understands these kinds, for sessions that record them:
//
//	{"kind":"turn","payload":{"text":"..."}}                                     this session sent a turn (origin harness)
//	{"kind":"resolved","payload":{"elicitation_id":"E","action":"accept","step_index":7}}  an answer reached agy
//	{"kind":"models","payload":{"<enum>":{"model":"...","displayName":"..."}}}   the model catalog
//	{"kind":"bind","conversation_id":"C","payload":{"pane_owned":true,"live":true}}  the session bound (or rotated to) C; payload optional
//
// Unknown kinds are skipped, so older replayers read newer captures.
const captureVersion = 1

// captureRecord is one line of a capture.
type captureRecord struct {
	Kind           string          `json:"kind"`
	Version        int             `json:"version,omitempty"`
	Time           time.Time       `json:"time"`
	ConversationID string          `json:"conversation_id,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
}

// resolvedPayload is a "resolved" record's payload.
type resolvedPayload struct {
	ElicitationID string `json:"elicitation_id"`
	Action        string `json:"action"`
	StepIndex     int    `json:"step_index"`
	Choice        string `json:"choice,omitempty"`
}

// recorder writes a capture. Record never blocks on the file: records are
// queued and written by the recorder's own goroutine, which Close stops
// after writing everything queued.
type recorder struct {
	f    *os.File
	w    *bufio.Writer
	wake chan struct{}
	done chan struct{} // closed by Close
	wg   sync.WaitGroup
	// onError is told of the first write error (the session goes on; Close
	// reports the error too).
	onError func(error)

	mu     sync.Mutex
	queue  [][]byte
	err    error
	closed bool
}

// recordFlags are --record and --force, on every command that records.
type recordFlags struct {
	path  string
	force bool
}

func (r *recordFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.path, "record", "", "write every frame and snapshot received to this file (for replay); created 0600")
	fs.BoolVar(&r.force, "force", false, "with --record: replace the file if it exists")
}

// openCapture opens path for a capture. A new file is created 0600 (a
// capture holds a whole conversation). An existing regular file is
// replaced (removed, then created anew, so neither its mode nor a hard
// link to it carries over) only with force. A symbolic link is refused,
// force or not: the capture would land wherever it points. Any other
// existing file (a device, a FIFO) holds nothing to replace and is
// written as it is. Refusals are usage errors.
func openCapture(path string, force bool) (*os.File, error) {
	const create = os.O_WRONLY | os.O_CREATE | os.O_EXCL | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("record: %w", err)
	case fi.Mode()&os.ModeSymlink != 0:
		return nil, usagef("record: %s is a symbolic link: give the path of the file itself", path)
	case fi.Mode().IsRegular() && !force:
		return nil, usagef("record: %s exists: add --force to replace it", path)
	case fi.Mode().IsRegular():
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("record: replace %s: %w", path, err)
		}
	case fi.IsDir():
		return nil, usagef("record: %s is a directory", path)
	default:
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
		// What was opened is still what Lstat saw, not a file put there since.
		if ofi, err := f.Stat(); err != nil || ofi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("record: %s changed while it was opened", path)
		}
		return f, nil
	}
	// O_EXCL: a file or link that appeared since Lstat is not opened.
	f, err := os.OpenFile(path, create, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return f, nil
}

// createRecorder opens path (openCapture) and starts writing a capture to
// it. onError, if not nil, is called once, at the first write error.
func createRecorder(path string, force bool, onError func(error)) (*recorder, error) {
	f, err := openCapture(path, force)
	if err != nil {
		return nil, err
	}
	r := &recorder{f: f, w: bufio.NewWriter(f), wake: make(chan struct{}, 1), done: make(chan struct{}), onError: onError}
	r.enqueue(captureRecord{Kind: "capture", Version: captureVersion, Time: time.Now().UTC()})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.writeLoop()
	}()
	return r, nil
}

// Record is the session's capture hook (actors.Spec.Recorder). It is safe
// for concurrent use and does not block.
func (r *recorder) Record(kind, conv string, payload json.RawMessage, t time.Time) {
	r.enqueue(captureRecord{Kind: kind, ConversationID: conv, Time: t.UTC(), Payload: payload})
}

func (r *recorder) enqueue(rec captureRecord) {
	b, err := json.Marshal(rec)
	r.mu.Lock()
	switch {
	case r.closed:
	case err != nil:
		if r.err == nil {
			r.err = fmt.Errorf("record: %w", err)
		}
	default:
		r.queue = append(r.queue, append(b, '\n'))
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *recorder) writeLoop() {
	for {
		r.mu.Lock()
		batch := r.queue
		r.queue = nil
		r.mu.Unlock()
		for _, b := range batch {
			if _, err := r.w.Write(b); err != nil {
				r.fail(err)
			}
		}
		// Flush per batch: a capture of a session that crashes is the
		// one most worth having.
		if len(batch) > 0 {
			if err := r.w.Flush(); err != nil {
				r.fail(err)
			}
		}
		select {
		case <-r.wake:
		case <-r.done:
			r.mu.Lock()
			empty := len(r.queue) == 0
			r.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	first := r.err == nil
	if first {
		r.err = fmt.Errorf("record: %w", err)
	}
	r.mu.Unlock()
	if first && r.onError != nil {
		r.onError(err)
	}
}

// Close writes what is queued, closes the file and reports the first error.
// Records after Close are dropped.
func (r *recorder) Close() error {
	r.mu.Lock()
	already := r.closed
	r.closed = true
	r.mu.Unlock()
	if already {
		return nil
	}
	close(r.done)
	r.wg.Wait()
	cerr := r.f.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if cerr != nil {
		return fmt.Errorf("record: %w", cerr)
	}
	return nil
}
