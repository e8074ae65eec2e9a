package actors

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
	"github.com/asynkron/protoactor-go/actor"
)

// conversations are the session's reconcilers: the bound (root)
// conversation's and one per subagent child. They outlive an incarnation
// of the session, so nothing emitted is emitted again after a restart;
// mirrors (the Subagent actors) are one incarnation's.
type conversations struct {
	root         *mapper.Reconciler
	rootConv     string
	models       map[string]wire.ModelInfo
	children     map[string]*mapper.Reconciler // subagent conversation -> its reconciler, until mirrored to the end
	childrenDone map[uint64]struct{}           // subagents mirrored to the end: their ids' hashes (done, markDone)
	orphans      map[string]bool               // children of a root left by a rotation

	mirrors map[string]*actor.PID // child conversation -> its Subagent
	synced  int                   // the root's children syncSubagents has seen, this incarnation
}

func newConversations() conversations {
	return conversations{
		children:     make(map[string]*mapper.Reconciler),
		childrenDone: make(map[uint64]struct{}),
		orphans:      make(map[string]bool),
	}
}

// doneSeed hashes the ids of the subagents mirrored to the end: a session
// that runs many keeps a 64-bit hash of each, not its id.
var doneSeed = maphash.MakeSeed()

// done tells whether the subagent conv was mirrored to its end.
func (c *conversations) done(conv string) bool {
	_, ok := c.childrenDone[maphash.String(doneSeed, conv)]
	return ok
}

// markDone records that the subagent conv was mirrored to its end.
func (c *conversations) markDone(conv string) {
	c.childrenDone[maphash.String(doneSeed, conv)] = struct{}{}
}

// newIncarnation forgets the previous incarnation's Subagent actors.
func (c *conversations) newIncarnation() { c.mirrors, c.synced = make(map[string]*actor.PID), 0 }

// all are the root's reconciler and every subagent child's.
func (c *conversations) all() []*mapper.Reconciler {
	out := []*mapper.Reconciler{c.root}
	for _, r := range c.children {
		out = append(out, r)
	}
	return out
}

// findPrompt finds an open prompt in any conversation.
func (c *conversations) findPrompt(id string) (*mapper.Prompt, bool) {
	if p, ok := c.root.Prompt(id); ok {
		return p, true
	}
	for _, r := range c.children {
		if p, ok := r.Prompt(id); ok {
			return p, true
		}
	}
	return nil, false
}

// reconcilerOf finds the reconciler holding an open prompt (the root's when none does).
func (c *conversations) reconcilerOf(elicitationID string) *mapper.Reconciler {
	if _, ok := c.root.Prompt(elicitationID); !ok {
		for _, r := range c.children {
			if _, ok := r.Prompt(elicitationID); ok {
				return r
			}
		}
	}
	return c.root
}

// paneOwned: the session owns agy's pane with agy's own keys (no
// Spec.CloseKeys), so its permission requests offer agy's "always" rows,
// which are given by those keys.
func (s *session) paneOwned() bool {
	return s.shared.spec.Terminal != nil && s.shared.spec.CloseKeys == nil
}

// bindConversation makes conv the session's root conversation, with a fresh
// reconciler unless it is already the bound one. live: every step of conv
// happened while the session watched (mapper.Config.Live).
func (s *session) bindConversation(conv string, live bool) {
	if s.convs.root != nil && s.convs.rootConv == conv {
		return
	}
	s.convs.rootConv, s.convs.synced = conv, 0
	s.convs.root = mapper.NewReconciler(mapper.Config{ConversationID: conv, Models: s.convs.models, Window: s.cfg.StepWindow, PaneOwned: s.paneOwned(), Live: live})
	for _, tt := range s.desk.typed {
		s.convs.root.ExpectTypedTurn(tt.text) // typed before this conversation was bound
	}
	var bound any
	if s.paneOwned() || live {
		// pane_owned: its permission requests offer agy's "always" rows;
		// live: none of it is history.
		bound = map[string]bool{"pane_owned": s.paneOwned(), "live": live}
	}
	s.record("bind", conv, bound, s.now()) // "": agy's port, no conversation yet
}

func (s *session) setModels(models map[string]wire.ModelInfo) {
	s.convs.models = models
	list := make([]wire.ModelInfo, 0, len(models))
	for _, m := range models {
		list = append(list, m)
	}
	slices.SortFunc(list, func(a, b wire.ModelInfo) int { return strings.Compare(a.Model, b.Model) })
	s.shared.publishView(func(v *sessionView) { v.models, v.modelList = models, list })
	s.record("models", s.conv(), models, s.now())
	s.convs.root.SetModels(models)
	for _, r := range s.convs.children {
		r.SetModels(models)
	}
}

// ---- applying what the readers observe ----

// maxScratchEvents bounds the scratch slice a session keeps: a frame yields
// a few events, a first read of a long history thousands (584 bytes each),
// which are not worth keeping room for.
const maxScratchEvents = 32

func (s *session) onSnapshot(ctx actor.Context, m *messages.SnapshotRead) {
	if s.shared.spec.Recorder != nil {
		s.record("snapshot", m.ConversationID, captureSnapshot(m), m.Received)
	}
	obs := mapper.FromWindow(m.Steps, m.Offset, m.RunStatus, m.Received)
	if m.HasLength {
		obs = obs.WithLength(m.Length)
	}
	s.apply(ctx, m.ConversationID, obs)
	if m.ConversationID == s.conv() {
		s.confirmSent()
	}
}

func (s *session) onFrame(ctx actor.Context, m *frameReceived) {
	up := &m.frame.Update
	if s.shared.spec.Recorder != nil {
		conv := up.ConversationID
		if conv == "" {
			conv = s.conv()
		}
		s.record("frame", conv, captureFrame(m.frame), m.received)
	}
	if up.ConversationID != "" && up.ConversationID != s.conv() {
		if _, child := s.convs.children[up.ConversationID]; !child && !s.convs.done(up.ConversationID) {
			// The frame names another conversation: agy may have rotated.
			s.lookForConversation(ctx)
		}
		return
	}
	s.apply(ctx, s.conv(), mapper.FromFrame(m.frame, m.received))
	if up.Status == wire.RunIdle {
		// agy can report IDLE before its last steps are flushed: read once more.
		s.readNow(ctx)
	} else if n := int(up.MainTrajectoryUpdate.StepsUpdate.TotalLength); n > 0 && s.convs.root != nil && n < s.convs.root.Steps() {
		// The trajectory is shorter than what was seen (a rewind): the
		// reads with the summary tell it from a stale frame.
		s.readNow(ctx)
	}
}

// onFrameSkipped has the poller read what a frame over the limit carried
// (agy's first frame of a long conversation: every step), window by
// window. Nothing is lost: no error event; a warning, once a stream.
func (s *session) onFrameSkipped(ctx actor.Context, m *frameSkipped) {
	if m.first {
		s.cfg.Logger.Warn("a stream frame over the limit was skipped; reading the steps instead",
			"session", s.shared.spec.SessionID, "limit", s.cfg.MaxMessageSize, "err", m.err)
	}
	s.readNow(ctx)
}

// onReadOverLimit tells the driver that agy's answer of the steps is over
// the limit: retryable, as the reads go on (past the steps skipped, or
// with backoff). The poller sends a failure once per run of them, and each
// skip once.
func (s *session) onReadOverLimit(ctx actor.Context, m *readOverLimit) {
	var msg string
	if sk := m.skipped; sk != nil {
		msg = fmt.Sprintf("agy's answer of the steps of %s is over the limit of %d bytes: steps %d to %d were not read, reading from %d on (%v)",
			m.conv, s.cfg.MaxMessageSize, sk.from, sk.to-1, sk.to, m.err)
	} else {
		msg = fmt.Sprintf("agy's answer of the steps of %s is over the limit of %d bytes and cannot be read past: reading again with backoff (%v)",
			m.conv, s.cfg.MaxMessageSize, m.err)
	}
	s.cfg.Logger.Warn(msg, "session", s.shared.spec.SessionID)
	s.publishError(ctx, msg, true)
}

// apply runs an observation through the conversation's reconciler and
// publishes what it implies.
func (s *session) apply(ctx actor.Context, conv string, obs mapper.Observation) {
	rec := s.convs.root
	child := false
	if conv != s.conv() {
		r, ok := s.convs.children[conv]
		if !ok {
			return
		}
		rec, child = r, true
	}
	// One slice for every apply (taken, in case publishing re-entered).
	evs := rec.AppendApply(s.scratch[:0], obs)
	s.scratch = nil
	for i := range evs {
		ev := evs[i] // published by pointer: a copy of its own
		s.publish(&ev)
		s.react(ctx, rec, &ev)
	}
	if cap(evs) <= maxScratchEvents {
		clear(evs) // keep no event's strings alive
		s.scratch = evs[:0]
	}
	if !child {
		if rec.AwaitingDetail() || rec.RewindSuspected() || rec.AwaitingRead() {
			// A question seen on the stream lacks its flags, a read found
			// the trajectory shorter (a second read confirms a rewind), or
			// a run the stream began is held until a read brings the end
			// of the run before it: read now.
			s.readNow(ctx)
		}
		s.syncSubagents(ctx)
	}
}

// react starts and stops Interaction actors as prompts open and close, and
// tells the poller when a turn of the bound conversation starts and ends.
func (s *session) react(ctx actor.Context, rec *mapper.Reconciler, ev *messages.Event) {
	switch ev.Type {
	case messages.EventStatus:
		if rec == s.convs.root {
			s.tellTurnActive(ctx)
		}
	case messages.EventUserMessage:
		if rec == s.convs.root {
			s.sawUserTurn(ev)
		}
	case messages.EventElicitationRequest:
		s.warnInteraction(ev)
		if p, ok := rec.Prompt(ev.ElicitationID); ok {
			s.ensureInteraction(ctx, p)
		}
	case messages.EventElicitationResolved:
		if ev.By == messages.ByHarness {
			_, delivering := s.prompts.answers[ev.ElicitationID]
			s.answered(ctx, ev.ElicitationID) // agy shows our answer before its delivery is confirmed
			if delivering {
				// Its Interaction reports the delivery (AnswerDelivered, with
				// the step it reached, recorded for replay), then stops.
				return
			}
		}
		s.stopInteraction(ctx, ev.ElicitationID)
	}
}

// syncSubagents mirrors every child conversation the root has spawned. It
// runs on every apply of the root, so it looks only at the children that
// appeared since it last ran (each is mirrored, or done, from then on).
func (s *session) syncSubagents(ctx actor.Context) {
	if s.link.client == nil {
		return
	}
	added, n := s.convs.root.ChildrenSince(s.convs.synced)
	s.convs.synced = n
	for _, c := range added {
		if s.convs.done(c.ConversationID) {
			continue
		}
		if _, ok := s.convs.children[c.ConversationID]; !ok {
			s.convs.children[c.ConversationID] = mapper.NewReconciler(mapper.Config{
				ConversationID: c.ConversationID, ParentConversationID: s.conv(), Models: s.convs.models, Window: s.cfg.StepWindow,
				Live: s.convs.root.Watched(c.ParentStepIndex),
			})
		}
		if _, ok := s.convs.mirrors[c.ConversationID]; ok {
			continue
		}
		sc := s.childOf(c.ConversationID)
		s.convs.mirrors[sc.conv] = s.spawn(ctx, "subagent", func() actor.Actor { return newSubagent(sc) })
	}
}

func (s *session) maybeStopSubagent(ctx actor.Context, conv string) {
	parentDone := s.convs.orphans[conv]
	if c, ok := s.convs.root.Child(conv); ok && c.ParentTerminal {
		parentDone = true
	}
	if !parentDone {
		return
	}
	if pid, ok := s.convs.mirrors[conv]; ok {
		s.stopChild(ctx, pid)
		delete(s.convs.mirrors, conv)
		s.convs.markDone(conv)
		s.convs.root.ForgetChild(conv)
		// Nothing more is read of it: its reconciler goes (a session that
		// runs many subagents would otherwise keep one for each), unless a
		// prompt of it is somehow still open.
		if r, ok := s.convs.children[conv]; ok && len(r.OpenPrompts()) == 0 {
			delete(s.convs.children, conv)
		}
	}
}
