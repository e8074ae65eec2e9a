package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
	sdk "github.com/coder/acp-go-sdk"
)

// session is one ACP session: a harness session on agy, the goroutine that
// turns its events into session/update notifications (the pump), and the
// prompt running on it, if any.
//
// The pump is the only reader of the harness events and the only writer of
// the fields marked "pump"; prompts, cancels and config changes meet it
// under mu.
type session struct {
	a        *Agent
	id       string
	hs       *actors.Session
	launched *Launched
	replay   bool // session/load: history is sent to the client
	log      *slog.Logger

	ctx    context.Context // ends when the session closes
	cancel context.CancelFunc
	wg     sync.WaitGroup // the pump and the prompt answerers

	historyDone chan struct{} // closed when the history has been read
	historyOnce sync.Once
	historyOver atomic.Bool
	turnSlot    chan struct{} // holds a token while a prompt runs
	closeOnce   sync.Once

	// pump
	conv      string            // the conversation the session follows ("" before agy has one)
	texts     map[string]string // item id -> agent text sent so far
	thoughts  map[string]string // item id -> reasoning sent so far
	lastText  string            // item of the last agent text chunk, for paragraph breaks
	openCalls []string          // tool calls without output, oldest first
	calls     map[string]bool   // tool calls announced to the client
	live      map[string]string // tool call -> its output streamed so far

	diffs map[string][]messages.FileDiff // pump: tool call -> the diffs its edit proposed

	mu   sync.Mutex
	turn *turn
	// stopped: the client's turn was stopped (session/cancel, or a question
	// it could not show). agy may still say something between our decline
	// of its prompt and the cancel: that is not shown, up to the next turn.
	stopped bool
	// busy: agy runs, or waits on a prompt, as its last status said.
	busy    bool
	models  []wire.ModelInfo
	current string                        // the model agy runs now, as last reported
	chosen  string                        // the model the client picked for the next turns
	pending map[string]context.CancelFunc // elicitation id -> cancels its question to the client
}

// turn is one session/prompt in flight.
type turn struct {
	ctx  context.Context // the prompt request's: cancelled by session/cancel
	done chan struct{}   // closed by finish
	text string          // what the client said

	// under session.mu
	sawUser   bool   // our user_message came back from agy
	sawRun    bool   // agy reported running after we sent it
	queued    bool   // agy was busy when we sent it: only our user_message makes a run ours
	cancelled bool   // session/cancel arrived
	failure   string // why the turn failed, if it did
	code      string // the code of the error agy showed that failed it (messages.Error*), if any
	finished  bool
	usage     sdk.Usage
	hasUsage  bool
}

func newSession(a *Agent, id string, hs *actors.Session, launched *Launched, replay bool) *session {
	ctx, cancel := context.WithCancel(a.ctx)
	return &session{
		a: a, id: id, hs: hs, launched: launched, replay: replay,
		log:         a.log.With("session", id),
		ctx:         ctx,
		cancel:      cancel,
		historyDone: make(chan struct{}),
		turnSlot:    make(chan struct{}, 1),
		texts:       make(map[string]string),
		thoughts:    make(map[string]string),
		calls:       make(map[string]bool),
		live:        make(map[string]string),
		diffs:       make(map[string][]messages.FileDiff),
		pending:     make(map[string]context.CancelFunc),
	}
}

// start runs the pump, reads the model catalog and waits until the history
// has been read (and, for session/load, sent).
func (s *session) start(ctx context.Context) error {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.pump()
	}()

	mctx, cancel := context.WithTimeout(ctx, s.a.opts.RequestTimeout)
	models, err := loadModels(mctx, s.hs.Port(), s.a.opts.CSRFToken)
	cancel()
	if err != nil {
		s.log.Warn("no model catalog; the session has no model option", "err", err)
	}
	s.mu.Lock()
	s.models = models
	s.mu.Unlock()

	timer := time.NewTimer(s.a.opts.HistoryTimeout)
	defer timer.Stop()
	select {
	case <-s.historyDone:
		return nil
	case <-timer.C:
		// Go on: what follows is live either way.
		s.log.Warn("agy's history was not read in time; going on", "timeout", s.a.opts.HistoryTimeout)
		s.endHistory()
		return nil
	case <-s.hs.Done():
		return sdk.NewInternalError(map[string]any{"error": fmt.Sprintf("the agy session ended: %v", s.hs.Err())})
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *session) endHistory() {
	s.historyOnce.Do(func() {
		s.historyOver.Store(true)
		close(s.historyDone)
	})
}

// close ends the session: the running prompt (if any) ends, the harness
// session detaches, the agy it launched stops.
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), s.a.opts.RequestTimeout)
		defer cancel()
		if err := s.hs.Detach(ctx); err != nil {
			s.log.Warn("detach", "err", err)
		}
		s.wg.Wait()
		s.a.stopLaunched(s.launched)
	})
}

// update sends one session/update. Sending never uses a prompt's context:
// updates of a cancelled prompt still go out until it returns.
func (s *session) update(u sdk.SessionUpdate) {
	conn := s.a.connection()
	if conn == nil {
		return
	}
	if err := conn.SessionUpdate(s.a.ctx, sdk.SessionNotification{SessionId: sdk.SessionId(s.id), Update: u}); err != nil && s.a.ctx.Err() == nil {
		s.log.Warn("session/update not sent", "err", err)
	}
}

// note tells the user something about the session as agent text.
func (s *session) note(text string) {
	s.lastText = ""
	s.update(sdk.UpdateAgentMessageText("\n\n_" + text + "_\n\n"))
}

// ---- prompts ----

// prompt sends text as a turn and streams it until agy is idle again.
func (s *session) prompt(ctx context.Context, text string) (sdk.PromptResponse, error) {
	select {
	case s.turnSlot <- struct{}{}:
	case <-ctx.Done():
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case <-s.ctx.Done():
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": "the session is closed"})
	}
	defer func() { <-s.turnSlot }()

	t := &turn{ctx: ctx, done: make(chan struct{}), text: text}
	s.mu.Lock()
	t.queued = s.busy
	s.turn = t
	s.stopped = false
	model := s.chosen
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.turn == t {
			s.turn = nil
		}
		s.mu.Unlock()
	}()

	sctx, cancel := context.WithTimeout(s.ctx, s.a.opts.RequestTimeout)
	err := s.hs.SendTurn(sctx, text, model)
	cancel()
	if errors.Is(err, actors.ErrNoConversation) {
		// An agy the adapter did not launch, with no conversation yet: the
		// first turn must be typed in agy's own terminal.
		s.note("agy has no conversation yet, and this session cannot type into agy's terminal: type your first message in agy's own terminal; this session follows the conversation agy starts for it.")
		return s.response(t, sdk.StopReasonEndTurn), nil
	}
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": fmt.Sprintf("agy did not take the turn: %v", err)})
	}

	select {
	case <-t.done:
		return s.result(t)
	case <-ctx.Done():
		return s.cancelTurn(t)
	case <-s.ctx.Done():
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": "the session was closed during the prompt"})
	}
}

// cancelTurn interrupts agy and returns cancelled once agy is idle, or at
// the cancel deadline.
func (s *session) cancelTurn(t *turn) (sdk.PromptResponse, error) {
	s.mu.Lock()
	t.cancelled = true
	s.stopped = true
	s.mu.Unlock()
	// The questions this turn put to the client were asked with its
	// context, so they are cancelled already; agy drops its prompts when
	// interrupted.
	interrupted := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, s.a.opts.CancelDeadline)
		defer cancel()
		interrupted <- s.hs.Interrupt(ctx)
	}()
	deadline := time.NewTimer(s.a.opts.CancelDeadline)
	defer deadline.Stop()
	select {
	case <-t.done:
	case err := <-interrupted:
		if err != nil {
			s.log.Warn("interrupt", "err", err)
		}
	case <-deadline.C:
		s.log.Warn("agy was not idle by the cancel deadline", "deadline", s.a.opts.CancelDeadline)
	case <-s.ctx.Done():
	}
	return s.response(t, sdk.StopReasonCancelled), nil
}

// result is the answer to a prompt whose turn ended.
func (s *session) result(t *turn) (sdk.PromptResponse, error) {
	s.mu.Lock()
	failure, cancelled := t.failure, t.cancelled
	s.mu.Unlock()
	if cancelled {
		return s.response(t, sdk.StopReasonCancelled), nil
	}
	s.mu.Lock()
	code := t.code
	s.mu.Unlock()
	switch {
	case code == messages.ErrorRefusal:
		return s.response(t, sdk.StopReasonRefusal), nil
	case code == messages.ErrorMaxTokens:
		return s.response(t, sdk.StopReasonMaxTokens), nil
	case code != "":
		// ACP has no stop reason for a quota or a provider failure: an
		// error that says so, its code in data (docs/DECISIONS.md).
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32603, Message: "agy: " + failure, Data: map[string]any{"error": failure, "code": code}}
	case failure != "":
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32603, Message: "agy failed the turn: " + failure, Data: map[string]any{"error": failure}}
	}
	return s.response(t, sdk.StopReasonEndTurn), nil
}

func (s *session) response(t *turn, reason sdk.StopReason) sdk.PromptResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := sdk.PromptResponse{StopReason: reason}
	if t.hasUsage {
		u := t.usage
		r.Usage = &u
	}
	return r
}

// finish ends the running turn (from the pump) with a failure, or none.
func (s *session) finish(failure string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishLocked(s.turn, failure)
}

// finishLocked ends turn t, if it runs, with a failure or none; s.mu held.
func (s *session) finishLocked(t *turn, failure string) {
	if t == nil || t.finished {
		return
	}
	if failure != "" && t.failure == "" {
		t.failure = failure
	}
	t.finished = true
	close(t.done)
}

// ---- models ----

func (s *session) modelState() ([]sdk.SessionConfigOption, *sdk.SessionModelState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.chosen
	if cur == "" {
		cur = s.current
	}
	if cur == "" {
		for _, m := range s.models {
			if m.Recommended {
				cur = m.Model
				break
			}
		}
	}
	return modelOptions(s.models, cur)
}

func (s *session) setModel(model string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	known := model == s.current
	for _, m := range s.models {
		if m.Model == model {
			known = true
		}
	}
	if !known {
		return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown model %q", model)})
	}
	s.chosen = model
	return nil
}

// ---- the pump ----

// pump turns the harness events into session updates until the harness
// session ends.
func (s *session) pump() {
	for ev := range s.hs.Events() {
		s.handle(ev)
	}
	err := s.hs.Err()
	if err == nil {
		err = errors.New("detached")
	}
	s.endHistory()
	s.finish(fmt.Sprintf("the agy session ended: %v", err))
}

// handle routes one event. Until the first idle or waiting status the
// events are agy's history (the session's first read replays the whole
// conversation, with a running status at each user turn): sent on
// session/load, skipped on session/new. Open prompts are live either way:
// they must be answered.
func (s *session) handle(ev *messages.Event) {
	s.follow(ev)
	if !s.historyOver.Load() {
		switch ev.Type {
		case messages.EventStatus:
			switch ev.State {
			case messages.StateIdle, messages.StateWaiting, messages.StateNoConversation:
				s.endHistory()
			}
			return
		case messages.EventElicitationRequest, messages.EventElicitationResolved:
		case messages.EventModelChanged:
			s.mu.Lock()
			s.current = ev.To
			s.mu.Unlock()
			return
		default:
			if !s.replay {
				return
			}
		}
	}
	child := ev.ParentConversationID != ""
	if s.muted(ev) {
		return
	}
	switch ev.Type {
	case messages.EventStatus:
		if !child {
			s.onStatus(ev.State)
		}
	case messages.EventUserMessage:
		if child {
			return
		}
		if ev.Origin == messages.OriginHarness && s.historyOver.Load() {
			s.mu.Lock()
			if s.turn != nil {
				s.turn.sawUser = true
			}
			s.mu.Unlock()
			return // the client shows its own prompt
		}
		s.lastText = ""
		s.update(sdk.UpdateUserMessageText(ev.Text))
	case messages.EventReasoningDelta:
		if !child {
			s.stream(s.thoughts, ev, sdk.UpdateAgentThoughtText)
		}
	case messages.EventOutputTextDelta:
		if !child {
			s.paragraph(ev.ItemID)
			s.stream(s.texts, ev, sdk.UpdateAgentMessageText)
		}
	case messages.EventMessage:
		if !child {
			s.paragraph(ev.ItemID)
			if chunk := advance(s.texts[ev.ItemID], ev.Text); chunk != "" {
				s.update(sdk.UpdateAgentMessageText(chunk))
			}
			delete(s.texts, ev.ItemID)
			delete(s.thoughts, ev.ItemID)
		}
	case messages.EventFunctionCall:
		s.toolCall(ev)
	case messages.EventFunctionCallOutputDelta:
		s.toolOutputDelta(ev)
	case messages.EventFunctionCallOutput:
		s.toolOutput(ev)
	case messages.EventElicitationRequest:
		s.elicit(ev)
	case messages.EventElicitationResolved:
		s.resolved(ev)
	case messages.EventUsage:
		s.usage(ev)
	case messages.EventModelChanged:
		s.modelChanged(ev)
	case messages.EventConversationRotated:
		s.note(fmt.Sprintf("agy started a new conversation (%s); this session follows it.", ev.To))
	case messages.EventError:
		s.agyError(ev)
	case messages.EventConversationRewound:
		if !child {
			s.rewound(ev)
		}
	case messages.EventUnknownStep:
		s.log.Info("agy step type not mapped", "type", ev.StepType)
	}
}

// follow notes the conversation an event shows the session following, and
// remembers it for session/load when the session's id is not its id (a
// session opened on a fresh agy).
func (s *session) follow(ev *messages.Event) {
	if ev.ConversationID == "" || ev.ParentConversationID != "" || ev.ConversationID == s.conv {
		return
	}
	s.conv = ev.ConversationID
	if s.conv == s.id {
		return
	}
	if err := s.a.store.put(s.id, s.conv); err != nil {
		s.log.Warn("the session's conversation was not saved: session/load will not find it after a restart", "conversation", s.conv, "err", err)
	}
}

// muted reports whether ev is what agy said or did after the client's turn
// was stopped: not shown (prompts, status, usage and errors still are).
func (s *session) muted(ev *messages.Event) bool {
	switch ev.Type {
	case messages.EventReasoningDelta, messages.EventOutputTextDelta, messages.EventMessage, messages.EventFunctionCall:
	case messages.EventFunctionCallOutput:
		if s.calls[ev.CallID] {
			return false // it completes a tool call the client shows
		}
	default:
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

func (s *session) onStatus(state string) {
	s.mu.Lock()
	s.busy = state == messages.StateRunning || state == messages.StateWaiting
	s.mu.Unlock()
	switch state {
	case messages.StateRunning:
		s.mu.Lock()
		if s.turn != nil {
			s.turn.sawRun = true
		}
		s.mu.Unlock()
	case messages.StateIdle:
		// The idle of a run that was not the prompt's (agy's terminal's,
		// with the prompt queued behind it) does not end the prompt: its
		// run follows, or the session reports agy did not take it.
		s.mu.Lock()
		t := s.turn
		ours := t != nil && (t.sawUser || t.sawRun && !t.queued)
		s.mu.Unlock()
		if ours {
			s.finish("")
		}
	case messages.StateError:
		s.finish("agy's session failed")
	}
}

// paragraph separates the text of a new planner step from the previous
// step's text: clients glue consecutive agent chunks together.
func (s *session) paragraph(item string) {
	if s.lastText != "" && s.lastText != item {
		s.update(sdk.UpdateAgentMessageText("\n\n"))
	}
	s.lastText = item
}

func (s *session) stream(sent map[string]string, ev *messages.Event, mk func(string) sdk.SessionUpdate) {
	prev := sent[ev.ItemID]
	next := prev + ev.Delta
	if ev.Snapshot != "" {
		next = ev.Snapshot
	}
	if chunk := advance(prev, next); chunk != "" {
		s.update(mk(chunk))
	}
	sent[ev.ItemID] = next
}

func (s *session) toolCall(ev *messages.Event) {
	tc := describeEvent(ev)
	s.lastText = ""
	s.calls[ev.CallID] = true
	s.openCalls = append(s.openCalls, ev.CallID)
	if len(ev.Diffs) > 0 {
		s.diffs[ev.CallID] = ev.Diffs
	}
	opts := []sdk.ToolCallStartOpt{
		sdk.WithStartKind(tc.kind),
		sdk.WithStartStatus(sdk.ToolCallStatusInProgress),
		sdk.WithStartRawInput(tc.rawInput),
		sdk.WithStartLocations(tc.locations),
	}
	if len(tc.content) > 0 {
		opts = append(opts, sdk.WithStartContent(tc.content))
	}
	s.update(sdk.StartToolCall(sdk.ToolCallId(ev.CallID), tc.title, opts...))
}

// toolOutputDelta streams a running tool's output into its tool call.
func (s *session) toolOutputDelta(ev *messages.Event) {
	if !s.calls[ev.CallID] {
		return // its call was history we skipped: the output closes it
	}
	next := s.live[ev.CallID] + ev.Delta
	if ev.Snapshot != "" {
		next = ev.Snapshot
	}
	s.live[ev.CallID] = next
	s.update(liveUpdate(ev.CallID, next))
}

func (s *session) toolOutput(ev *messages.Event) {
	for i, id := range s.openCalls {
		if id == ev.CallID {
			s.openCalls = append(s.openCalls[:i], s.openCalls[i+1:]...)
			break
		}
	}
	if !s.calls[ev.CallID] {
		// Its call was history we skipped: announce it so the update has a target.
		s.calls[ev.CallID] = true
		s.update(sdk.StartToolCall(sdk.ToolCallId(ev.CallID), "tool call", sdk.WithStartKind(sdk.ToolKindOther)))
	}
	s.update(outputUpdate(ev, s.diffs[ev.CallID]))
	delete(s.live, ev.CallID)
	delete(s.diffs, ev.CallID)
}

func (s *session) usage(ev *messages.Event) {
	val := func(p *int64) int {
		if p == nil {
			return 0
		}
		return int(*p)
	}
	in, out := val(ev.InputTokens), val(ev.OutputTokens)
	s.mu.Lock()
	if t := s.turn; t != nil && s.historyOver.Load() {
		t.hasUsage = true
		t.usage.InputTokens += in
		t.usage.OutputTokens += out
		t.usage.TotalTokens += in + out
		if ev.ThinkingTokens != nil {
			n := val(ev.ThinkingTokens)
			if t.usage.ThoughtTokens != nil {
				n += *t.usage.ThoughtTokens
			}
			t.usage.ThoughtTokens = &n
		}
		if ev.CacheReadTokens != nil {
			n := val(ev.CacheReadTokens)
			if t.usage.CachedReadTokens != nil {
				n += *t.usage.CachedReadTokens
			}
			t.usage.CachedReadTokens = &n
		}
	}
	s.mu.Unlock()
	// The last call's input plus its output is what the context holds now.
	used := in + out
	if ev.ContextTokens != nil {
		used = val(ev.ContextTokens)
	}
	s.update(sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{Used: used, Size: max(s.a.opts.ContextWindow, used)}})
}

func (s *session) modelChanged(ev *messages.Event) {
	s.mu.Lock()
	s.current = ev.To
	if s.chosen != "" && s.chosen != ev.To {
		// Changed in agy's own terminal: the latest choice wins.
		s.chosen = ev.To
	}
	s.mu.Unlock()
	opts, _ := s.modelState()
	if len(opts) > 0 {
		s.update(sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: opts}})
	}
}

func (s *session) agyError(ev *messages.Event) {
	retryable := ev.Retryable != nil && *ev.Retryable
	s.log.Warn("agy error", "message", ev.Message, "retryable", retryable, "code", ev.Code)
	if ev.ShownByAgy() {
		s.shownError(ev)
		return
	}
	s.mu.Lock()
	inTurn := s.turn != nil
	s.mu.Unlock()
	if ev.Code == messages.ErrorTurnNotTaken {
		// The client's message was lost: say so even after its prompt
		// ended (the idle of the run it was queued behind ends it), and
		// fail its prompt if it still waits (no idle of its own will come).
		s.note("agy: " + ev.Message)
		s.mu.Lock()
		if t := s.turn; t != nil && t.text == ev.Text && !t.sawUser {
			s.finishLocked(t, ev.Message)
		}
		s.mu.Unlock()
		return
	}
	if !inTurn {
		return
	}
	s.note("agy: " + ev.Message)
	if !retryable {
		s.mu.Lock()
		if s.turn != nil && s.turn.failure == "" {
			s.turn.failure = ev.Message
		}
		s.mu.Unlock()
	}
}

// shownError handles an error agy showed the user (an ERROR_MESSAGE step):
// its text goes to the thread, in a prompt or not (agy shows it either
// way); a retry notice only to the log. The final one fails the prompt
// with its code.
func (s *session) shownError(ev *messages.Event) {
	if ev.Final != nil && !*ev.Final {
		return
	}
	s.note("agy: " + ev.Message)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.turn; t != nil && t.failure == "" && ev.ParentConversationID == "" {
		t.failure, t.code = ev.Message, ev.Code
	}
}

// rewound tells the thread that agy's conversation was cut back (/rewind).
func (s *session) rewound(ev *messages.Event) {
	if ev.ToStep != nil {
		s.note(fmt.Sprintf("agy's conversation was rewound to step %d; what followed it is gone.", *ev.ToStep))
	}
}
