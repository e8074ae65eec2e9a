package mapper

import (
	"encoding/json"
	"hash/maphash"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// Config configures a Reconciler.
type Config struct {
	ConversationID       string                    // the conversation whose steps it maps; its events carry it
	ParentConversationID string                    // set for a subagent's reconciler: its events carry it
	Models               map[string]wire.ModelInfo // catalog keyed by model enum (display names); may be nil
	// Window is how many of the latest step indices are kept whole
	// (DefaultWindow when 0): older finished steps are dropped from memory,
	// a fingerprint kept (see "Memory" in the package doc).
	Window int
	// Fingerprints bounds the dropped steps that keep a fingerprint
	// (DefaultFingerprints when 0): a copy of an older one is taken as
	// delivered.
	Fingerprints int
	// PaneOwned: the session owns agy's terminal pane (launch, acp), so a
	// permission request also offers agy's two "always" rows, which only
	// its dialog can give (messages.ChoiceAllowAlways*).
	PaneOwned bool
	// Live: every step of the conversation happens while the session
	// watches, from its first (a subagent spawned by a step the parent's
	// reconciler reports Watched), so none is history (see liveFrom).
	Live bool
}

// Reconciler maps the observations of one conversation to events, each
// exactly once, whatever mix of snapshots, frames, replays and stale reads it
// is fed. It is not safe for concurrent use: its owner (the session actor) is
// its only caller. The zero value is not usable; call NewReconciler.
type Reconciler struct {
	cfg Config

	slots map[int]*slot // per step index of the window: what has been emitted for it
	known int           // highest step index seen + 1
	// The steps dropped from the window (window.go): a fingerprint per
	// index from pastBase on; indices below pastBase are sealed.
	past            []stepPrint
	pastBase        int
	window, maxPast int
	lastRaw         int // the last step when a snapshot was last applied: it kept its raw bytes (releaseRaw)
	// stale: the observation being applied is a snapshot that ends before
	// the steps already seen. It was read before them (the session's poller
	// and stream reader race), and its IDLE cannot close the turn.
	stale bool

	expected  []expectedTurn // turns this session sent, not yet seen
	lastModel string
	// liveFrom is the first step index the session saw happen (-1 until
	// known): that of a turn it sent, else the end of its first
	// observation. A planner step from there on that is first seen finished
	// still gives its thinking (planner).
	liveFrom int

	state  string // the last status state emitted ("" before any)
	resume bool   // MarkResolved closed the last prompt: report running next

	closingTurn bool // goIdle is expiring prompts: no running in between

	awaitingDetail bool // the last Apply deferred a question prompt (see AwaitingDetail)

	turnError string // the text of the last final ERROR_MESSAGE of this turn ("" since the last user turn)

	prompts   []*promptState // in the order they opened
	promptIDs map[string]*promptState

	unknown      map[wire.StepType]bool
	commands     map[string]string // commandId -> command line, of the latest commands that ran
	commandOrder []string          // the keys of commands, oldest first
	// The subagent children (subagent.go): records from childBase on (a
	// forgotten one leaves a hole until those before it go), and a hash of
	// each child forgotten (ForgetChild), up to maxPast.
	children  []Child
	childBase int
	childAt   map[string]int // id -> index in the children seen, from 0
	forgotten map[uint64]struct{}
	statusIDs map[statusKey]int

	totalIn, totalOut int64

	rewinds rewindState
	hold    runHold // a run held behind the end of the one before (runorder.go)

	// Set for the duration of one Apply.
	out []messages.Event
	obs Observation
}

// slot is what the reconciler knows of one step index.
type slot struct {
	hash uint64 // of the raw bytes of the last copy seen: unchanged copies are skipped
	// raw is the Raw that hash was taken of when that copy came in a
	// snapshot (nil after a frame: frames' copies are not kept alive). A
	// snapshot step that rpc reused from the poller's previous read carries
	// this very slice again, and is known unchanged without hashing. Only
	// the steps a read can bring again keep it (releaseRaw): a finished
	// step before the first live one (and before the last) is read again
	// only when a read starts over, and is hashed then.
	raw      []byte
	typ      wire.StepType
	terminal bool // a terminal copy was accepted: live copies are stale from now on

	epoch   int    // the rewinds before this slot was made: its ids carry it
	created string // metadata.createdAt of its step: the step's identity at this index
	cleared bool   // its step is CLEARED (rewound away, kept marked): nothing to map

	// user turns
	userDone bool

	// planner responses: the text emitted so far (the base of the next
	// delta), in texts
	streamed  bool // first seen live: deltas are due
	committed bool

	// tool steps
	callID               string
	callDone, outputDone bool
	kind                 string // the call's tool kind, repeated on its output

	// texts are what was emitted of a step's texts while it streams: nil
	// until then, and again once it finished (they are no longer a delta's
	// base), so a finished step's slot holds none of its text.
	texts *slotTexts

	prompt *promptState // the prompt this step asked, if any
	// asks counts the prompts this step asked (agy asks again on the same
	// step: each segment of `a && b`); askSig is the signature of the last
	// (askSignature), sigs every one seen, askCount the highest count of
	// answered decisions seen when one opened.
	asks     int
	askSig   string
	sigs     map[string]bool
	askCount int
}

// slotTexts are a streaming step's texts as emitted: a planner step's
// reasoning and answer, a tool step's live output.
type slotTexts struct{ thinking, text, out emitted }

// live returns the slot's texts, made when first needed.
func (st *slot) live() *slotTexts {
	if st.texts == nil {
		st.texts = &slotTexts{}
	}
	return st.texts
}

// shownText is the answer emitted so far ("" when none).
func (st *slot) shownText() string {
	if st.texts == nil {
		return ""
	}
	return st.texts.text.cur
}

// emitted is one text of a planner step (its reasoning or its answer) as
// the consumer has it: the base of the next delta, and the ids of its
// events, made once per step rather than once per delta.
type emitted struct {
	cur   string
	snaps int    // snapshots sent: a rewrite of the text starts a new delta id base
	item  string // the item the deltas belong to
	base  string // what delta ids begin with ("" until the first delta)
}

type promptState struct {
	Prompt
	closed   bool
	timedOut bool   // its freshest step went ERROR: kept open, a retry may follow
	inFlight string // the action of an answer the harness is delivering
	choice   string // the permission choice of that answer (messages.Choice*), "" for none
	// superseded: its step asked something new since (Superseded)
	superseded bool
}

// statusKey is a status id's anchor and state: a repeat is numbered.
type statusKey struct {
	anchor int
	state  string
}

var hashSeed = maphash.MakeSeed()

// NewReconciler returns a Reconciler for one conversation.
func NewReconciler(cfg Config) *Reconciler {
	r := &Reconciler{
		cfg:       cfg,
		slots:     make(map[int]*slot),
		window:    cfg.Window,
		maxPast:   cfg.Fingerprints,
		promptIDs: make(map[string]*promptState),
		unknown:   make(map[wire.StepType]bool),
		commands:  make(map[string]string),
		childAt:   make(map[string]int),
		statusIDs: make(map[statusKey]int),
		rewinds:   newRewindState(),
		hold:      newRunHold(),
		liveFrom:  -1,
	}
	if r.window <= 0 {
		r.window = DefaultWindow
	}
	if r.maxPast <= 0 {
		r.maxPast = DefaultFingerprints
	}
	if cfg.Live {
		r.liveFrom = 0
	}
	return r
}

// SetModels replaces the model catalog used for display names.
func (r *Reconciler) SetModels(models map[string]wire.ModelInfo) { r.cfg.Models = models }

// ExpectTurn records that this session sent a turn with text: the next
// USER_INPUT with that text (matched in order of sending) is reported with
// origin harness rather than terminal.
func (r *Reconciler) ExpectTurn(text string) {
	r.expected = append(r.expected, expectedTurn{text: text})
}

// ExpectTypedTurn records that this session typed a turn with text into
// agy's terminal: the next USER_INPUT whose text is the same as typed
// (TypedForm of both) is reported with origin harness, once.
func (r *Reconciler) ExpectTypedTurn(text string) {
	r.expected = append(r.expected, expectedTurn{text: TypedForm(text), typed: true})
}

// expectedTurn is a turn this session sent (its text), or typed (its
// TypedForm).
type expectedTurn struct {
	text  string
	typed bool
}

// TypedForm is text as agy takes it when it is typed into agy's terminal
// as a paste: CR LF and CR as LF, no control characters but LF and tab (a
// paste carries no others), and no blanks around it (agy trims its draft).
func TypedForm(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, text))
}

// LastModel is the last per-turn model seen on a USER_INPUT ("" if none).
func (r *Reconciler) LastModel() string { return r.lastModel }

// Steps is the number of step slots known (the highest index seen + 1).
func (r *Reconciler) Steps() int { return r.known }

// Identities is the metadata.createdAt of each step in the reconciler's
// window that agy gave one, by trajectory index: what a reader that starts
// afresh (after agy moved to a new port) compares a shorter trajectory's
// last step with, to read a rewind from its cut rather than from index 0.
// A fresh map, the caller's.
func (r *Reconciler) Identities() map[int]string {
	out := make(map[int]string, len(r.slots))
	for i, sl := range r.slots {
		if sl.created != "" {
			out[i] = sl.created
		}
	}
	return out
}

// State is the last status state reported ("" before any).
func (r *Reconciler) State() string { return r.state }

// FirstLive is the lowest trajectory index whose step can still change: the
// first step seen that is not terminal, else the next index. A reader that
// looks for what agy is doing (a WAITING prompt) reads from there.
func (r *Reconciler) FirstLive() int {
	first := r.known
	for i, sl := range r.slots {
		if !sl.terminal && i < first {
			first = i
		}
	}
	return first
}

// Apply maps one observation and returns the events it implies, in order.
// SessionID and Seq are left empty: the session sets them. A frame for
// another conversation than the configured one yields nothing.
func (r *Reconciler) Apply(obs Observation) []messages.Event {
	return r.AppendApply(nil, obs)
}

// AppendApply is Apply appending the events to dst (as strconv's Append
// functions do), so that a caller applying frame after frame can reuse one
// slice.
func (r *Reconciler) AppendApply(dst []messages.Event, obs Observation) []messages.Event {
	if obs.Kind == Frame && obs.ConversationID != "" && r.cfg.ConversationID != "" && obs.ConversationID != r.cfg.ConversationID {
		return dst
	}
	r.obs = obs
	r.out = dst
	r.awaitingDetail = false
	defer func() { r.obs, r.out, r.stale = Observation{}, nil, false }()
	var at func(int) int
	if obs.Kind == Snapshot {
		at = Indexer(obs.Steps, obs.Offset)
		end := obs.Offset
		if n := len(obs.Steps); n > 0 {
			end = at(n-1) + 1
		}
		r.stale = end < r.known
		r.rewinds.end = end
		r.shrunk()
	}

	if r.resume {
		r.resume = false
		r.resumeIfClear()
	}
	switch obs.Kind {
	case Frame:
		for i := range obs.Steps {
			if i < len(obs.Indices) && !r.held(obs.Indices[i], &obs.Steps[i]) {
				r.step(obs.Indices[i], &obs.Steps[i])
				r.compact()
			}
		}
	default:
		for i := range obs.Steps {
			r.step(at(i), &obs.Steps[i])
			r.compact()
		}
		r.liftHold(r.rewinds.end)
		r.releaseRaw(at)
	}
	r.runStatus()
	r.letGoOfClosedPrompts()
	if r.liveFrom < 0 && (obs.Kind == Snapshot || len(obs.Steps) > 0) {
		r.liveFrom = r.known // what the first read found was there before
	}
	return r.out
}

// Watched reports whether the step at index happened while the session
// watched: at or after its own turn, or after what its first observation
// found. A subagent spawned by such a step is Config.Live.
func (r *Reconciler) Watched(index int) bool { return r.liveFrom >= 0 && index >= r.liveFrom }

// step maps one copy of the step at index.
func (r *Reconciler) step(index int, s *wire.Step) {
	if index < 0 || r.retired(index, s) {
		return
	}
	if index >= r.known {
		r.known = index + 1
	}
	st := r.slots[index]
	if st == nil && r.dropped(index, s) {
		return
	}
	if st != nil && sameSlice(st.raw, s.Raw) {
		return
	}
	h := hashStep(s)
	var raw []byte
	if r.obs.Kind == Snapshot {
		raw = s.Raw
	}
	if st != nil && st.hash == h {
		st.raw = raw
		return
	}
	if st != nil && r.rewritten(index, st, s) {
		st = nil // a rewind: the slot was dropped
	}
	if s.Status == wire.StatusCleared {
		r.cleared(index, st, h)
		return
	}
	first := st == nil
	if st != nil && s.Type != "" && st.typ != "" && s.Type != st.typ {
		// The slot holds another step now (history rewritten): start over.
		first = true
	}
	if first {
		st = &slot{typ: s.Type, epoch: r.rewinds.epoch, created: s.Metadata.CreatedAt}
		r.slots[index] = st
	}
	st.hash, st.raw = h, raw
	if st.typ == "" {
		st.typ = s.Type
	}
	terminal := s.Status.Terminal()
	if st.terminal && !terminal {
		return // a stale live copy of a finished step
	}
	st.terminal = terminal

	r.expireBehind(index, s)

	switch s.Type {
	case wire.StepUserInput:
		r.userInput(index, s, st)
	case wire.StepPlannerResponse:
		r.planner(index, s, st, first)
	case wire.StepCheckpoint, wire.StepConversationHistory, wire.StepSystemMessage:
		// Not conversation items.
	case StepErrorMessage:
		r.errorMessage(index, s, st)
	default:
		if isTool(s) {
			r.tool(index, s, st, first)
			return
		}
		if rowOf(s.Type).role == roleUnknown && !r.unknown[s.Type] && len(r.unknown) < maxUnknownTypes {
			r.unknown[s.Type] = true
			e := r.event(messages.EventUnknownStep, r.cfg.ConversationID+"/unknown/"+string(s.Type))
			e.StepType = string(s.Type)
			e.StepIndex = messages.Ptr(index)
			r.emit(e)
		}
		r.prompt(index, s, st)
	}
}

// releaseRaw lets go of the raw bytes of the snapshot's finished steps
// that no read brings again: those before its first step that can still
// change, but the last step seen. A session's reads start at that first
// live step, else at the last one (trajectoryWindow.from), so the steps
// from there on come again at every read, reused, and keep their bytes to
// be known unchanged without hashing; a finished step's bytes are not kept
// beside what was mapped of them otherwise.
func (r *Reconciler) releaseRaw(at func(int) int) {
	steps := r.obs.Steps
	live := len(steps)
	for i := range steps {
		if st := r.slots[at(i)]; st != nil && !st.terminal {
			live = i
			break
		}
	}
	firstLive := r.known
	if live < len(steps) {
		firstLive = at(live)
	}
	release := func(index int) {
		if st := r.slots[index]; st != nil && st.terminal && index < r.known-1 && index < firstLive {
			st.raw = nil
		}
	}
	for i := range steps[:live] {
		release(at(i))
	}
	release(r.lastRaw) // the last step of an earlier snapshot, if no longer last
	r.lastRaw = r.known - 1
}

// hashStep hashes the raw bytes of a step (or its encoding, for steps built
// in Go without Raw).
func hashStep(s *wire.Step) uint64 {
	raw := s.Raw
	if len(raw) == 0 {
		b, err := json.Marshal(s)
		if err != nil {
			return 0
		}
		raw = b
	}
	return maphash.Bytes(hashSeed, raw)
}

// runStatus applies the cascade run status of the observation.
func (r *Reconciler) runStatus() {
	obs := &r.obs
	switch obs.RunStatus {
	case wire.RunRunning, wire.RunBusy:
		if r.state == "" || r.state == messages.StateIdle {
			r.setState(messages.StateRunning, r.known)
		}
	case wire.RunIdle:
		// Only steps read after agy said IDLE close the turn: a frame's IDLE
		// can come before the last steps are flushed, and a snapshot without
		// a status may have been read before the IDLE (the caller reads one
		// with the status when a frame says IDLE).
		if obs.Kind == Snapshot && !r.stale {
			r.goIdle()
		}
	}
}

// goIdle closes the turn: prompts left open after a timeout expire, then idle.
// A prompt still WAITING means the IDLE report was not the end: no idle.
func (r *Reconciler) goIdle() {
	// A step still live means the IDLE report is older than the steps (read
	// before a new turn started): the turn is not over.
	for _, sl := range r.slots {
		if !sl.terminal {
			return
		}
	}
	for _, p := range r.prompts {
		if !p.closed && !p.timedOut {
			return
		}
	}
	r.closingTurn = true
	for _, p := range r.prompts {
		if !p.closed {
			r.closePrompt(p, messages.ActionCancel, messages.ByExpired, nil)
		}
	}
	r.closingTurn = false
	r.setState(messages.StateIdle, r.known)
}

// idleBound reports whether this observation will close the turn, so a
// prompt closing inside it does not flap the status to running first.
func (r *Reconciler) idleBound() bool {
	return r.obs.Kind == Snapshot && r.obs.RunStatus == wire.RunIdle
}

func (r *Reconciler) setState(state string, anchor int) {
	if r.state == state {
		return
	}
	r.state = state
	id := r.cfg.ConversationID + "/status/" + strconv.Itoa(anchor) + "/" + state
	k := statusKey{anchor, state}
	if n := r.statusIDs[k]; n > 0 {
		r.statusIDs[k] = n + 1
		id += "." + strconv.Itoa(n+1)
	} else {
		r.statusIDs[k] = 1
	}
	e := r.event(messages.EventStatus, id)
	e.State = state
	r.emit(e)
}

// event makes an event with the header the reconciler knows.
func (r *Reconciler) event(t messages.EventType, id string) messages.Event {
	return messages.Event{
		Type:                 t,
		ID:                   id,
		ConversationID:       r.cfg.ConversationID,
		ParentConversationID: r.cfg.ParentConversationID,
		Time:                 r.obs.Time,
	}
}

func (r *Reconciler) emit(e messages.Event) { r.out = append(r.out, e) }

func (r *Reconciler) itemID(index int, suffix string) string {
	return r.idBase(index) + "/" + strconv.Itoa(index) + "/" + suffix
}

// userInput maps a USER_INPUT step: user_message, model_changed, running.
func (r *Reconciler) userInput(index int, s *wire.Step, st *slot) {
	if st.userDone {
		return
	}
	text := userText(s)
	if text == "" && !s.Status.Terminal() {
		return // not filled in yet
	}
	st.userDone = true
	r.turnError = ""
	if text != "" {
		e := r.event(messages.EventUserMessage, r.itemID(index, "user"))
		e.Text = text
		e.Origin = messages.OriginTerminal
		if r.takeExpected(text) {
			e.Origin = messages.OriginHarness
			if r.liveFrom < 0 || index < r.liveFrom {
				r.liveFrom = index
			}
		}
		r.emit(e)
	}
	if model := turnModel(s); model != "" {
		if r.lastModel != "" && model != r.lastModel {
			e := r.event(messages.EventModelChanged, r.itemID(index, "model"))
			e.From, e.To, e.DisplayName = r.lastModel, model, r.displayName(model)
			r.emit(e)
		}
		r.lastModel = model
	}
	if r.openCount() == 0 {
		// A turn seen late (behind an open prompt) does not hide the prompt.
		r.setState(messages.StateRunning, index)
	}
}

func userText(s *wire.Step) string {
	ui := s.UserInput
	if ui == nil {
		return ""
	}
	if ui.UserResponse != "" {
		return ui.UserResponse
	}
	text := ""
	for i, it := range ui.Items {
		if i > 0 {
			text += "\n"
		}
		text += it.Text
	}
	return text
}

func turnModel(s *wire.Step) string {
	if ui := s.UserInput; ui != nil && ui.UserConfig != nil {
		if m := ui.UserConfig.PlannerConfig.Model(); m != "" {
			return m
		}
	}
	if rm := s.Metadata.RequestedModel; rm != nil {
		return rm.Model
	}
	return ""
}

func (r *Reconciler) takeExpected(text string) bool {
	typed := ""
	for i, t := range r.expected {
		if t.typed && typed == "" {
			typed = TypedForm(text)
		}
		if t.text == text || (t.typed && t.text == typed) {
			r.expected = append(r.expected[:i:i], r.expected[i+1:]...)
			return true
		}
	}
	return false
}

// displayName looks a model enum up in the catalog: by key, else by the
// entries' model field (smallest key first, for determinism).
func (r *Reconciler) displayName(model string) string {
	if m, ok := r.cfg.Models[model]; ok && m.DisplayName != "" {
		return m.DisplayName
	}
	keys := make([]string, 0, len(r.cfg.Models))
	for k, m := range r.cfg.Models {
		if m.Model == model {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return r.cfg.Models[keys[0]].DisplayName
}
