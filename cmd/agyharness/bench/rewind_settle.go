package bench

import (
	"context"
	"slices"
	"time"
)

// rewindSettle bounds how long a rewind waits for the session to catch up
// with its fake (caughtUp) before it is given up for this turn.
const rewindSettle = 2 * time.Second

// caughtUp waits, up to settle, until agy is at rest (no turn, and
// no background task's wake due: agytest.Server.AtRest) and the session
// has emitted every item of its fake's ground truth, and reports whether
// it did. A rewind cuts away the steps after the last user turn, and the
// ground truth keeps them: a run nobody typed (a background task's wake,
// which may come after any later turn) that ended just before, with its
// last step not yet read, would be counted lost though no session could
// have read it. At rest, agy writes nothing until the driver acts.
func (d *driver) caughtUp(ctx context.Context, settle time.Duration) bool {
	tctx, cancel := context.WithTimeout(ctx, settle)
	defer cancel()
	conv := d.s.ConversationID()
	for {
		if d.srv.AtRest(conv) && d.itemsMatch() {
			return true
		}
		select {
		case <-d.wake:
		case <-tctx.Done():
			return false
		}
	}
}

// payRewind does, before the session ends, the rewind its last draw of
// "rewind" could not do (not at rest in rewindSettle on a loaded machine,
// a fault refused it, or the turn before it could not be rewound): a text
// turn when the last turn cannot be rewound, then the rewind, waiting for
// agy at rest as long as a turn may take. So a campaign whose mix drew a
// rewind always rewinds (unless agy refuses every time), however slow the
// machine; what the session then reports is checked as for any rewind.
func (d *driver) payRewind(ctx context.Context) {
	if !d.rewindOwed || d.srv == nil || ctx.Err() != nil {
		return
	}
	select {
	case <-d.s.Done():
		return
	default:
	}
	for range 3 { // a turn refused by a fault leaves nothing to rewind: again
		if !rewindable(d.lastKind) {
			d.turn(ctx, "text")
		}
		if rewindable(d.lastKind) {
			d.rewind(ctx, d.turnWait)
		}
		if !d.rewindOwed || ctx.Err() != nil {
			return
		}
	}
}

// rewindable says whether the driver may rewind a last turn of this kind:
// one that opened no prompt (an answer the check compares with agy's steps
// stays there) and spawned no subagent; "" is a turn agy refused.
func rewindable(kind string) bool {
	return kind != "" && kind != "subagent" && !slices.Contains(promptKinds, kind)
}
