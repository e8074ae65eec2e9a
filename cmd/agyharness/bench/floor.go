package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// A floor run (--floor, with --external-fakes) puts no harness between the
// fakes and the frames: each fake gets a floorReader, which reads its
// StreamAgentStateUpdates frame by frame with the rpc package (TLS, HTTP/2,
// the envelope, the JSON decode of the frame), drops the frame, and sends
// the next essay turn when the stream says the cascade is IDLE again.
// Nothing is mapped, logged, published or checked. Its CPU per frame, in the
// same scenario as a campaign, is what reading the same frames costs this
// machine with nothing else done: the floor under the harness's figure
// (docs/PERFORMANCE.md). With --floor-raw the frames are not decoded either:
// what is left is the transport's cost alone.

// floorReader drives one fake in a floor run.
type floorReader struct {
	client *rpc.Client
	conv   string
	model  string
	stream *rpc.Stream
	raw    bool          // take frames undecoded (Options.FloorRaw)
	idle   chan struct{} // one token per turn the stream saw end
	frames atomic.Int64
	turns  int
	err    error // the reader's end, other than a close
}

// newFloorReader binds a client to f and opens its stream.
func newFloorReader(ctx context.Context, f fake, raw bool) (*floorReader, error) {
	c, err := rpc.NewClient(rpc.Config{Port: f.port})
	if err != nil {
		return nil, fmt.Errorf("bench: floor: %w", err)
	}
	r := &floorReader{client: c, conv: f.conv, raw: raw, idle: make(chan struct{}, 1)}
	models, err := c.GetAvailableModels(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("bench: floor: models: %w", err)
	}
	r.model = firstRecommended(models.Response.Models)
	if r.stream, err = c.StreamAgentStateUpdates(ctx, f.conv, rpc.NewSubscriberID()); err != nil {
		c.Close()
		return nil, fmt.Errorf("bench: floor: stream: %w", err)
	}
	return r, nil
}

// firstRecommended is the enum of the first recommended model by name,
// else of the first (a model without an enum is sent by its name, as the
// turn sender does).
func firstRecommended(catalog map[string]wire.ModelInfo) string {
	names := slices.Sorted(maps.Keys(catalog))
	pick := func(name string) string {
		if m := catalog[name].Model; m != "" {
			return m
		}
		return name
	}
	for _, name := range names {
		if catalog[name].Recommended {
			return pick(name)
		}
	}
	if len(names) > 0 {
		return pick(names[0])
	}
	return ""
}

// read reads frames until the stream ends, and tells drive of every turn
// that ended (a frame saying IDLE after one saying RUNNING).
func (r *floorReader) read() {
	running := false
	for {
		status, err := r.next()
		if err != nil {
			var rerr *rpc.Error
			if !errors.Is(err, io.EOF) && !(errors.As(err, &rerr) && rerr.Code == rpc.CodeCanceled) {
				r.err = err
			}
			return
		}
		r.frames.Add(1)
		switch status {
		case wire.RunRunning:
			running = true
		case wire.RunIdle:
			if running {
				running = false
				select {
				case r.idle <- struct{}{}:
				default:
				}
			}
		}
	}
}

// next takes the next frame off the stream and returns its run status:
// decoded, or in a raw reader looked for in the frame's bytes.
func (r *floorReader) next() (wire.RunStatus, error) {
	if r.raw {
		payload, err := r.stream.NextRaw()
		if err != nil {
			return "", err
		}
		return rawRunStatus(payload), nil
	}
	f, err := r.stream.Next()
	if err != nil {
		return "", err
	}
	status := f.Update.Status
	f.Release()
	return status, nil
}

// Run statuses as they appear in a frame's JSON. In the fakes' essay turns
// nothing else in a frame holds these names, and they are written
// unescaped, so a search finds the status without decoding; a frame with
// neither says nothing of the run.
var (
	rawIdle    = []byte(`"` + wire.RunIdle + `"`)
	rawRunning = []byte(`"` + wire.RunRunning + `"`)
)

// rawRunStatus is the run status a frame's bytes carry, or "".
func rawRunStatus(payload []byte) wire.RunStatus {
	switch {
	case bytes.Contains(payload, rawIdle):
		return wire.RunIdle
	case bytes.Contains(payload, rawRunning):
		return wire.RunRunning
	}
	return ""
}

// drive sends essay turns one after another until deadline, each once the
// last has ended.
func (r *floorReader) drive(ctx context.Context, deadline time.Time, turnTimeout time.Duration) error {
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := r.client.SendUserCascadeMessage(ctx, r.conv, "essay turn "+strconv.Itoa(r.turns), r.model); err != nil {
			return fmt.Errorf("bench: floor: turn %d: %w", r.turns, err)
		}
		r.turns++
		select {
		case <-r.idle:
		case <-time.After(turnTimeout):
			return fmt.Errorf("bench: floor: turn %d did not end within %s", r.turns-1, turnTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// settle returns once the readers have taken no frame for quiet, after
// limit, or when ctx ends. A fake, like agy, may flush a turn's last step a
// chunk delay after the frame that says IDLE: that frame is written, so the
// readers must take it before their streams are closed, or the run would
// count a frame no reader read.
func settle(ctx context.Context, readers []*floorReader, quiet, limit time.Duration) {
	total := func() (n int64) {
		for _, r := range readers {
			n += r.frames.Load()
		}
		return n
	}
	tick := time.NewTicker(quiet / 10)
	defer tick.Stop()
	start := time.Now()
	last, lastAt := total(), start
	for {
		var now time.Time
		select {
		case now = <-tick.C:
		case <-ctx.Done():
			return
		}
		if n := total(); n != last {
			last, lastAt = n, now
		}
		if now.Sub(lastAt) >= quiet || now.Sub(start) >= limit {
			return
		}
	}
}

// floor runs the floor on the external fakes' first o.Sessions: bare
// readers, no harness; it fills the turn, frame and CPU figures.
func (b *bench) floor(ctx context.Context) error {
	stopProfile, err := startCPUProfile(b.o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	cpuBefore, start := cpuTime(), time.Now()
	readers, errs, err := b.readFloor(ctx)
	if err != nil {
		return err
	}
	b.res.DurationS = time.Since(start).Seconds()
	b.res.HarnessCPUS = (cpuTime() - cpuBefore).Seconds()
	stopProfile()

	var read int64
	for i, r := range readers {
		b.res.Turns += r.turns
		read += r.frames.Load()
		if err := errors.Join(errs[i], r.err); err != nil {
			b.res.problem("floor reader %d: %v", i, err)
		}
	}
	b.res.Events = int(read) // what the readers took off their streams
	frames, frameBytes, _, err := b.ext.stop()
	if err != nil {
		return err
	}
	b.res.Frames = frames
	b.res.perFrame(frameBytes)
	return nil
}

// readFloor opens a floor reader on each fake, drives them for o.Duration
// and lets them take the frames left. The readers are closed when it
// returns; errs[i] is how reader i's driving ended.
func (b *bench) readFloor(ctx context.Context) (readers []*floorReader, errs []error, err error) {
	o := b.o
	var open []*floorReader
	var readWG sync.WaitGroup
	defer func() {
		for _, r := range open {
			_ = r.stream.Close()
		}
		readWG.Wait()
		for _, r := range open {
			r.client.Close()
		}
	}()
	for _, f := range b.ext.fakes[:o.Sessions] {
		r, err := newFloorReader(ctx, f, o.FloorRaw)
		if err != nil {
			return nil, nil, err
		}
		open = append(open, r)
		readWG.Go(r.read)
	}

	driveStart, driveUsage := time.Now(), usage()
	deadline := driveStart.Add(o.Duration)
	errs = make([]error, len(open))
	var wg sync.WaitGroup
	for i, r := range open {
		wg.Go(func() { errs[i] = r.drive(ctx, deadline, o.TurnTimeout) })
	}
	wg.Wait()
	b.res.driven(driveStart, driveUsage)
	settle(ctx, open, o.ChunkDelay+250*time.Millisecond, 5*time.Second)
	return open, errs, nil
}
