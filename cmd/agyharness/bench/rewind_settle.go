package bench

import (
	"context"
	"time"
)

// rewindSettle bounds how long a rewind waits for the session to catch up
// with its fake (caughtUp) before it is given up for this turn.
const rewindSettle = 2 * time.Second

// caughtUp waits, up to rewindSettle, until agy is at rest (no turn, and
// no background task's wake due: agytest.Server.AtRest) and the session
// has emitted every item of its fake's ground truth, and reports whether
// it did. A rewind cuts away the steps after the last user turn, and the
// ground truth keeps them: a run nobody typed (a background task's wake,
// which may come after any later turn) that ended just before, with its
// last step not yet read, would be counted lost though no session could
// have read it. At rest, agy writes nothing until the driver acts.
func (d *driver) caughtUp(ctx context.Context) bool {
	tctx, cancel := context.WithTimeout(ctx, rewindSettle)
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
