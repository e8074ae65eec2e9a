package agytest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
	"github.com/agyharness/agyharness/wire"
)

// frameJSON is one StreamAgentStateUpdates data frame. Steps are the
// already-marshalled streamed copies.
type frameJSON struct {
	Update struct {
		ConversationID       string         `json:"conversationId,omitempty"`
		TrajectoryID         string         `json:"trajectoryId,omitempty"`
		Status               wire.RunStatus `json:"status,omitempty"`
		MainTrajectoryUpdate struct {
			StepsUpdate struct {
				Indices     []int             `json:"indices,omitempty"`
				Steps       []json.RawMessage `json:"steps,omitempty"`
				TotalLength int               `json:"totalLength,omitempty"`
			} `json:"stepsUpdate"`
		} `json:"mainTrajectoryUpdate"`
	} `json:"update"`
}

// serveStream serves StreamAgentStateUpdates: a snapshot frame, then one
// frame per batch of changes (coalesced while the client reads), each
// carrying cumulative copies of just the changed steps. It always answers
// 200; errors go in the end-of-stream envelope.
func (s *Server) serveStream(ctx context.Context, w http.ResponseWriter, r *http.Request, pre *connectError) {
	s.mu.Lock()
	gone := s.restarted
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/connect+json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	end := func(e *connectError) {
		writeEndStream(w, e)
		_ = rc.Flush()
	}
	if pre != nil {
		end(pre)
		return
	}
	payload, cerr := readRequestEnvelope(r.Body)
	if cerr != nil {
		end(cerr)
		return
	}
	var req rpc.StreamRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		end(errorf(rpc.CodeInvalidArgument, "unmarshal into StreamAgentStateUpdates request: %v", err))
		return
	}
	sub := s.subscribe(req.SubscriberID, req.ConversationID)
	if sub == nil {
		end(errNotFound())
		return
	}
	defer s.unsubscribe(sub)
	st := &streamState{srv: s, sub: sub, w: w, rc: rc, dropAt: -1, lagDue: map[int]bool{}, lagSeen: map[int]bool{}}
	var lagTimer *time.Timer
	var lagC <-chan time.Time
	defer func() {
		if lagTimer != nil {
			lagTimer.Stop()
		}
	}()
	force := false
	for {
		frame := st.next(force)
		force = false
		if frame != nil {
			if !st.write(frame) {
				return
			}
		}
		if big := st.big; big != nil {
			st.big = nil
			if !st.writeBig(big) {
				return
			}
		}
		if len(st.lagDue) > 0 && lagC == nil {
			d := s.opts.ChunkDelay
			if d <= 0 {
				d = time.Millisecond
			}
			lagTimer = time.NewTimer(d)
			lagC = lagTimer.C
		}
		select {
		case <-sub.notify:
		case <-lagC:
			lagC = nil
			force = true
		case <-sub.done:
			end(nil)
			return
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		case <-gone:
			return
		}
	}
}

// subscribe opens a subscription; a repeated subscriber id closes the
// older stream. nil when the conversation is not hosted.
func (s *Server) subscribe(id, convID string) *subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[convID]
	if c == nil {
		return nil
	}
	sub := newSubscriber(id, c)
	if id != "" {
		if old := s.subsByID[id]; old != nil {
			old.close()
		}
		s.subsByID[id] = sub
	}
	c.mu.Lock()
	c.subs[sub] = struct{}{}
	c.mu.Unlock()
	return sub
}

func (s *Server) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subsByID[sub.id] == sub {
		delete(s.subsByID, sub.id)
	}
	c := sub.current()
	c.mu.Lock()
	delete(c.subs, sub)
	c.mu.Unlock()
}

// streamState is the stream goroutine's own bookkeeping.
type streamState struct {
	srv    *Server
	sub    *subscriber
	w      http.ResponseWriter
	rc     *http.ResponseController
	conv   *conversation
	frames int
	dropAt int // frame count at which the stream is reset; -1: none
	// lagSeen: last steps already held back once; lagDue: held back until
	// the lag timer fires.
	lagSeen map[int]bool
	lagDue  map[int]bool
	// carried: the text versions of the frame being built (RecordTimes).
	carried []TextVersion
	// big is a first frame of a conversation with a history, to be written
	// as it is made (writeSnapshotFrame).
	big *bigSnapshot
}

// bigSnapshot is what a first frame of a conversation with a history
// carries, taken under the conversation's lock: the history is made again
// from its indices as it is written.
type bigSnapshot struct {
	conv   *conversation
	status wire.RunStatus
	n      int
	tail   [][]byte // streamed copies of the stored steps after the history
}

// writeBig writes a bigSnapshot as one data frame: its size is counted
// first by making it once without keeping it.
func (st *streamState) writeBig(b *bigSnapshot) bool {
	var count countingWriter
	if err := writeSnapshotFrame(&count, b.conv, b.status, b.n, b.tail); err != nil {
		return false
	}
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[1:], uint32(min(count.n, math.MaxUint32)))
	if _, err := st.w.Write(hdr[:]); err != nil {
		return false
	}
	if err := writeSnapshotFrame(st.w, b.conv, b.status, b.n, b.tail); err != nil {
		return false
	}
	if err := st.rc.Flush(); err != nil {
		return false
	}
	st.srv.timing.frames.Add(1)
	st.srv.timing.frameBytes.Add(int64(count.n))
	st.frames++
	return true
}

// next builds the next frame from what changed, or nil when nothing did.
func (st *streamState) next(force bool) []byte {
	sub := st.sub
	sub.mu.Lock()
	c, full, dirty, statusDirty := sub.conv, sub.full, sub.dirty, sub.statusDirty
	sub.full, sub.statusDirty = false, false
	sub.dirty = map[int]struct{}{}
	sub.mu.Unlock()
	if c != st.conv {
		st.conv = c
		clear(st.lagSeen)
		clear(st.lagDue)
	}
	forced := map[int]bool{}
	if force {
		for i := range st.lagDue {
			dirty[i] = struct{}{}
			forced[i] = true
		}
		clear(st.lagDue)
	}
	if !full && len(dirty) == 0 && !statusDirty {
		return nil
	}
	var f frameJSON
	u := &f.Update
	su := &u.MainTrajectoryUpdate.StepsUpdate
	c.mu.Lock()
	u.ConversationID, u.TrajectoryID, u.Status = c.id, c.trajectoryID, c.status
	n := len(c.steps)
	su.TotalLength = n
	if full && n > 0 && c.steps[0] == nil {
		b := &bigSnapshot{conv: c, status: c.status, n: n}
		for i := range n {
			if f := c.steps[i]; f != nil {
				b.tail = append(b.tail, f.wire(true))
			}
		}
		c.mu.Unlock()
		st.big = b
		return nil
	}
	st.carried = st.carried[:0]
	var idxs []int
	if full {
		for i := range n {
			idxs = append(idxs, i)
		}
	} else {
		for i := range dirty {
			if i < n {
				idxs = append(idxs, i)
			}
		}
		slices.Sort(idxs)
	}
	for _, i := range idxs {
		// agy may send nothing while a prompt is parked.
		if p := c.prompt; p != nil && p.idx == i && p.unstreamed && !full && c.steps[i].step.Status == wire.StatusWaiting {
			continue
		}
		// agy reports IDLE before it flushes the turn's last step.
		if mode, ok := c.lag[i]; ok && !full && !forced[i] && c.status == wire.RunIdle && !st.lagSeen[i] {
			st.lagSeen[i] = true
			if mode == lagLater {
				st.lagDue[i] = true
			}
			continue
		}
		su.Indices = append(su.Indices, i)
		su.Steps = append(su.Steps, c.steps[i].wire(true))
		if st.srv.opts.RecordTimes {
			if v, ok := liveTextVersion(c.id, i, c.steps[i]); ok {
				st.carried = append(st.carried, v)
			}
		}
	}
	c.mu.Unlock()
	if len(su.Steps) == 0 && !statusDirty && !full {
		return nil
	}
	b, err := json.Marshal(&f)
	if err != nil {
		st.srv.log.Error("marshal frame", "err", err)
		return nil
	}
	return b
}

// write sends one data frame, applying armed stream faults. It returns
// false when the stream must end (the client is gone).
func (st *streamState) write(payload []byte) bool {
	s := st.srv
	s.mu.Lock()
	if st.dropAt < 0 {
		if f := s.takeFaultLocked(FaultDropStreamAfter, ""); f != nil {
			st.dropAt = st.frames + f.N
		}
	}
	truncated := s.takeFaultLocked(FaultTruncatedFrame, "") != nil
	oversized := !truncated && s.takeFaultLocked(FaultOversizedFrame, "") != nil
	s.mu.Unlock()
	if st.dropAt >= 0 && st.frames >= st.dropAt {
		st.abort()
	}
	switch {
	case truncated:
		var hdr [5]byte
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
		_, _ = st.w.Write(hdr[:])
		_, _ = st.w.Write(payload[:len(payload)/2])
		_ = st.rc.Flush()
		st.abort()
	case oversized:
		var hdr [5]byte
		binary.BigEndian.PutUint32(hdr[1:], maxFrame+1)
		_, _ = st.w.Write(hdr[:])
		_, _ = st.w.Write(payload[:min(len(payload), 64)])
		_ = st.rc.Flush()
		st.abort()
	}
	// The write time is taken before the write: the frame's latency
	// includes the server's own write and flush.
	at := time.Now()
	if err := connectserver.WriteEnvelope(st.w, 0, payload); err != nil {
		return false
	}
	if err := st.rc.Flush(); err != nil {
		return false
	}
	s.timing.frames.Add(1)
	s.timing.frameBytes.Add(int64(len(payload)))
	if s.opts.RecordTimes {
		s.timing.written(st.carried, at)
	}
	st.frames++
	if st.dropAt >= 0 && st.frames >= st.dropAt {
		st.abort()
	}
	return true
}

// abort resets the stream without an end-of-stream envelope, as a dropped
// connection does.
func (st *streamState) abort() {
	_ = st.rc.Flush()
	panic(http.ErrAbortHandler)
}
