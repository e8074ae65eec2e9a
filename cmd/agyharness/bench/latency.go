package bench

import (
	"strconv"
	"strings"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// textVersion names the version of its item's text an output_text_delta
// brings the consumer to: the mapper's delta id ends in "@<offset>" (the
// text length before the delta), so the version is offset + len(delta).
// Snapshots and merged-in snapshots are not matched (false).
func textVersion(ev *messages.Event) (agytest.TextVersion, bool) {
	if ev.Type != messages.EventOutputTextDelta || ev.Delta == "" || ev.Snapshot != "" {
		return agytest.TextVersion{}, false
	}
	at := strings.LastIndexByte(ev.ID, '@')
	if at < 0 {
		return agytest.TextVersion{}, false
	}
	off, err := strconv.Atoi(ev.ID[at+1:])
	if err != nil {
		return agytest.TextVersion{}, false
	}
	idx, ok := stepIndex(ev.ItemID, ev.ConversationID)
	if !ok {
		return agytest.TextVersion{}, false
	}
	return agytest.TextVersion{ConversationID: ev.ConversationID, StepIndex: idx, Length: off + len(ev.Delta)}, true
}

// fakeLatencies measures, for every text delta the consumer received, the
// time from the fake to the consumer: for a streaming session from the
// fake's write of the first frame carrying that text version, for a
// poll-only session from the fake's change of the step to that version (no
// frame is written to it; the change is when a stream would have been
// written). Deltas whose version the fake never streamed (a poll read
// overtook the frame) are measured from the change. streamed holds the
// latencies measured from a frame's write alone: what the stream's path
// takes, without the reads'.
func fakeLatencies(d *driver, times map[agytest.TextVersion]agytest.VersionTimes) (all, streamed []time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, da := range d.deltas.xs {
		vt, ok := times[da.v]
		if !ok {
			continue
		}
		from := vt.Written
		if d.mode == actors.ReadPoll || from.IsZero() || da.at.Before(from) {
			from = vt.Changed
		} else {
			streamed = append(streamed, da.at.Sub(from))
		}
		if from.IsZero() {
			continue
		}
		all = append(all, max(0, da.at.Sub(from)))
	}
	return all, streamed
}
