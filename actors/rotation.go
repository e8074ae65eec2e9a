package actors

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/asynkron/protoactor-go/actor"
)

// rotationWatcher is the actor that notices agy starting a new root
// conversation (/clear in its TUI, or agy's first conversation when the
// session has none: the conversation it minted for the first turn typed).
// Its one job: read GetAllCascadeTrajectories when something says a new
// conversation may exist, and report *messages.ConversationRotated when a
// root conversation is strictly more recently active than the bound one
// (and than the moment it was bound), or appeared after the watcher's
// first read. Subagent children (a parentConversationId, or a
// rootConversationId not their own) are never rotation targets.
//
// agy lists every conversation it keeps on disk and every subagent child,
// so one read costs as much as that list is long (docs/PERFORMANCE.md,
// "Conversations agy lists"); an entry unchanged since the last read is
// not decoded again (rpc.SummaryCache). It reads:
//   - when it starts, and at once on *messages.ReadNow: the session sends
//     one when a frame names another conversation (agy's stream names the
//     active conversation after a /clear) or a turn is typed into a fresh
//     agy;
//   - while the stream of the bound conversation is down, or was never
//     told up (*messages.StreamState), every Config.RotationInterval: no
//     frame can name a new conversation then;
//   - while the stream is up, only as a safety read for an agy whose
//     stream would not name the new conversation: the tick pending when
//     the stream came up reads, then the next waits rotationSafetyFirst
//     intervals, each wait after it twice the one before, up to
//     rotationSafetyMax intervals (30 s doubling to 5 min by default). A
//     ReadNow, and the stream going down, start that over.
//
// Without a conversation (a fresh agy), a ReadNow from the session says the
// first turn was typed: agy mints its conversation now, and the watcher
// reads every 50ms (or Config.PollFast, when shorter) until it finds it, so
// little of the first turn is streamed before the session follows it.
//
// A transient error waits for the next tick; a lost port is a failure.
type rotationWatcher struct {
	child
	started time.Time       // activity before this is history, not a rotation
	known   map[string]bool // conversations present at the first read
	// list is agy's list at the last read, what the rule needs of each
	// entry; lent to the read running (nil meanwhile), it comes back with
	// its rotationRead.
	list     *rpc.SummaryCache[listedConv]
	busy     bool
	reported bool
	// eager: a first turn was typed into a fresh agy (ReadNow without a
	// conversation): its conversation is looked for every Config.PollFast.
	eager bool
	// streamUp: the session said the bound conversation's stream is up;
	// safety counts the safety reads since a ReadNow or the stream going
	// down (each waits twice the one before).
	streamUp bool
	safety   int
	// tickSeq numbers ticks: arming anew (the stream went down) leaves the
	// pending tick stale.
	tickSeq int
}

// firstConversationPoll is how often a fresh agy is read for the
// conversation its first turn mints, once typed: for a second or so.
const firstConversationPoll = 50 * time.Millisecond

// rotationSafetyFirst and rotationSafetyMax bound the wait before a safety
// read while the stream is up, in Config.RotationIntervals: 30 s doubling
// to 5 min at the default interval.
const (
	rotationSafetyFirst = 15
	rotationSafetyMax   = 150
)

type rotationTick struct{ seq int }

type rotationRead struct {
	list *rpc.SummaryCache[listedConv]
	err  error
}

// listedConv is what the rotation rule needs of a listed conversation.
type listedConv struct {
	root bool
	act  time.Time // activity
}

func listedOf(id string, s rpc.TrajectorySummary) listedConv {
	return listedConv{root: isRoot(id, s), act: activity(s)}
}

// conversationList is what the rotation rule reads of agy's list
// (*rpc.SummaryCache[listedConv]).
type conversationList interface {
	Len() int
	Get(conv string) (listedConv, bool)
	All() iter.Seq2[string, listedConv]
}

// newRotationWatcher watches for a rotation away from conv ("" for agy's
// first conversation), counting activity after since (the moment conv was
// bound; zero: when the watcher starts).
func newRotationWatcher(c child, since time.Time) actor.Actor {
	return &rotationWatcher{child: c, started: since, list: new(rpc.SummaryCache[listedConv])}
}

// Receive reads on ticks and reports a rotation once.
func (w *rotationWatcher) Receive(ctx actor.Context) {
	w.lifecycle(ctx)
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if w.started.IsZero() {
			w.started = time.Now() // compared with agy's times: the machine's clock
		}
		w.read(ctx)
	case *messages.StreamState:
		if m.Gen != w.gen || m.Up == w.streamUp {
			return
		}
		w.streamUp = m.Up
		if !m.Up {
			// No frame can name a new conversation now: read at the
			// interval again (the pending tick may be a safety read's).
			w.safety = 0
			if !w.busy && !w.reported {
				w.arm(ctx, w.cfg.RotationInterval)
			}
		} // up: the tick pending reads, then the safety reads follow it
	case *rotationTick:
		if m.seq != w.tickSeq {
			return // armed anew since
		}
		w.read(ctx)
	case *messages.ReadNow:
		if m.Gen == w.gen {
			w.eager = w.conv == ""
			w.safety = 0
			w.read(ctx)
		}
	case *rotationRead:
		w.busy, w.list = false, m.list
		if m.err != nil {
			if errors.Is(m.err, rpc.ErrPortGone) {
				fail("rotation", m.err)
			}
		} else if to, isNew, ok := w.rotationTarget(m.list); ok && !w.reported {
			w.reported = true
			ctx.Send(ctx.Parent(), &messages.ConversationRotated{Gen: w.gen, From: w.conv, To: to, New: isNew})
			return
		}
		w.arm(ctx, w.next())
	}
}

// next is the wait before the next read, after one.
func (w *rotationWatcher) next() time.Duration {
	interval := w.cfg.RotationInterval
	switch {
	case w.eager:
		return min(interval, w.cfg.PollFast, firstConversationPoll)
	case !w.streamUp:
		return interval
	}
	n := min(rotationSafetyFirst<<w.safety, rotationSafetyMax)
	if n < rotationSafetyMax {
		w.safety++
	}
	return time.Duration(n) * interval
}

// arm arms the next tick in d, leaving any pending one stale.
func (w *rotationWatcher) arm(ctx actor.Context, d time.Duration) {
	w.tickSeq++
	w.t.tick(d, ctx.Self(), &rotationTick{seq: w.tickSeq})
}

func (w *rotationWatcher) read(ctx actor.Context) {
	if w.busy || w.reported {
		return
	}
	w.busy = true
	self, list, client := ctx.Self(), w.list, w.client
	w.list = nil
	w.t.run(func(c context.Context) {
		// Entries unchanged since the last read are not decoded again.
		err := rpc.ReadSummaries(c, client, list, listedOf)
		w.t.send(self, &rotationRead{list, err})
	})
}

// rotationTarget applies the rotation rule to one read. isNew: the target
// appeared after the watcher's first read (ConversationRotated.New).
func (w *rotationWatcher) rotationTarget(all conversationList) (to string, isNew, ok bool) {
	first := w.known == nil
	if first {
		w.known = make(map[string]bool, all.Len())
		for id := range all.All() {
			w.known[id] = true
		}
	}
	// The bound conversation counts as active from the moment it was bound
	// (a conversation just minted by /clear has no times yet), so only
	// activity after that elsewhere is a rotation.
	b, _ := all.Get(w.conv)
	bound := b.act
	if w.started.After(bound) {
		bound = w.started
	}
	var best string
	var bestAct = bound
	for id, c := range all.All() {
		if id == w.conv || !c.root {
			continue
		}
		act := c.act
		newer := act.After(bound)
		appeared := !first && !w.known[id]
		if !newer && !appeared {
			continue
		}
		if best == "" || act.After(bestAct) || (act.Equal(bestAct) && id < best) {
			best, bestAct = id, act
		}
	}
	return best, best != "" && !w.known[best], best != ""
}
