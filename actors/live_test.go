package actors_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

// Behaviours of agy recorded live (issue 19), each against the fake doing
// them, as agy does by default.

// agy may send no stream frame while a prompt is parked: the prompt is
// found by reading the steps within Config.PollActive, however long the
// slow reconciliation interval, and in stream mode too.
func TestParkedPromptNotStreamedIsFoundWithinThePollInterval(t *testing.T) {
	for _, mode := range []actors.ReadMode{actors.ReadBoth, actors.ReadStream} {
		t.Run(string(mode), func(t *testing.T) {
			sc := scenario(agytest.Run(agytest.CommandAction{Line: "make deploy", Output: "ok\n", NeedsApproval: true}), agytest.Say("Done.", 1))
			srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond, UnstreamedPrompts: 1})
			cfg := testConfig()
			cfg.PollSlow = time.Hour
			cfg.PollActive = 50 * time.Millisecond
			r := newRigWith(t, cfg, srv, actors.Spec{ReadMode: mode})
			seq := r.turn("deploy")
			req := r.ev.waitFor(t, messages.EventElicitationRequest, func(ev *messages.Event) bool { return ev.Seq > seq })
			assert.Equal(t, "make deploy", req.Command.Line)
			waiting := r.ev.waitFor(t, messages.EventStatus, func(ev *messages.Event) bool { return ev.Seq > seq && ev.State == messages.StateWaiting })
			assert.Greater(t, waiting.Seq, req.Seq, "waiting comes from the WAITING step")
			assert.Equal(t, wire.RunRunning, srv.RunStatus(r.s.ConversationID()), "agy reports RUNNING while parked")
			require.NoError(t, r.resolve(messages.Resolve{ElicitationID: req.ElicitationID, Action: messages.ActionAccept}))
			r.ev.waitIdleAfter(t, req.Seq)
			itemsOnce(t, srv, r.s.ConversationID(), r.ev.all())
		})
	}
}

// If agy moved a conversation's lastModifiedTime on every read at rest
// (none is known to; nothing promises it does not), turns still reach idle
// within 2 s of agy's last step.
func TestIdleDoesNotHingeOnLastModifiedTime(t *testing.T) {
	for _, mode := range []actors.ReadMode{actors.ReadBoth, actors.ReadStream, actors.ReadPoll} {
		t.Run(string(mode), func(t *testing.T) {
			sc := scenario(agytest.Think("Brief."), agytest.Say("Hello there, all is well.", 4))
			srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond, MovingModifiedTime: true})
			cfg := testConfig()
			cfg.PollSlow = time.Hour
			r := newRigWith(t, cfg, srv, actors.Spec{ReadMode: mode})
			for i := range 3 {
				seq := r.turn(fmt.Sprintf("hello %d", i))
				ctx, cancel := context.WithTimeout(context.Background(), waitLong)
				require.NoError(t, srv.WaitIdle(ctx, r.s.ConversationID()))
				cancel()
				rested := time.Now()
				r.ev.wait(t, "idle within 2 s of agy's last step", func(evs []*messages.Event) bool {
					for _, ev := range evs {
						if ev.Seq > seq && ev.Type == messages.EventStatus && ev.State == messages.StateIdle {
							return true
						}
					}
					return false
				})
				assert.Less(t, time.Since(rested), 2*time.Second)
			}
			itemsOnce(t, srv, r.s.ConversationID(), r.ev.all())
		})
	}
}

// longConversation starts a fake whose conversation has 30 turns behind
// it (over 100 steps), answered at most 7 steps a read.
func longConversation(t *testing.T) (srv *agytest.Server, conv string, history int) {
	t.Helper()
	sc := scenario(agytest.Say("One more answer.", 2), agytest.Run(agytest.CommandAction{Line: "ls", Output: "a\n"}))
	srv = agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: -1, MaxStepsPerRead: 7})
	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	defer c.Close()
	conv = srv.ConversationID()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for i := range 30 {
		require.NoError(t, c.SendUserCascadeMessage(ctx, conv, fmt.Sprintf("turn %d", i), "MODEL_PLACEHOLDER_M20"))
		require.NoError(t, srv.WaitIdle(ctx, conv))
	}
	history = len(srv.Steps(conv))
	require.Greater(t, history, 100)
	return srv, conv, history
}

// A long conversation is only ever seen in windows (agy caps one answer):
// it is read whole once, window by window, and afterwards the polls read its
// tail, never the whole history again.
func TestLongConversationIsReadInWindows(t *testing.T) {
	srv, conv, history := longConversation(t)

	for _, mode := range []actors.ReadMode{actors.ReadBoth, actors.ReadPoll} {
		t.Run(string(mode), func(t *testing.T) {
			r := newRigOn(t, srv, actors.Spec{ReadMode: mode})
			itemsOnce(t, srv, conv, r.ev.all())
			before := srv.StepsServed()
			seq := r.turn("one more")
			r.ev.waitIdleAfter(t, seq)
			itemsOnce(t, srv, conv, r.ev.all())
			read := srv.StepsServed() - before
			assert.Less(t, read, int64(history), "reads after the first start at the steps that can still change")
		})
	}
}

// fakeTerminal is agy's terminal for tests: typed turns go to the fake's
// TypeTurn (a person typing in agy's terminal), keys are recorded.
type fakeTerminal struct {
	srv     *agytest.Server
	swallow bool // types nothing: as agy's terminal with a dialog left open
	// onPress, when set, sees every key group pressed (as agy's dialog
	// would take it).
	onPress func(keys []string)
	mu      sync.Mutex
	typed   []string
	keys    [][]string
}

// screenTerminal is a fakeTerminal whose pane shows screen (an
// actors.Screen).
type screenTerminal struct {
	*fakeTerminal
	screen string
}

func (s *screenTerminal) Capture(context.Context) (string, error) { return s.screen, nil }

func (f *fakeTerminal) Type(_ context.Context, text string) error {
	f.mu.Lock()
	f.typed = append(f.typed, text)
	f.mu.Unlock()
	if f.swallow {
		return nil
	}
	return f.srv.TypeTurn(text)
}

func (f *fakeTerminal) Press(_ context.Context, keys ...string) error {
	f.mu.Lock()
	f.keys = append(f.keys, keys)
	on := f.onPress
	f.mu.Unlock()
	if on != nil {
		on(keys)
	}
	return nil
}

func (f *fakeTerminal) pressed() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys)
}

func (f *fakeTerminal) typedTurns() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.typed)
}

// attachCold attaches to srv without waiting for an idle status (a fresh agy
// has no conversation, so there is none).
func attachCold(t *testing.T, cfg actors.Config, srv *agytest.Server, spec actors.Spec) (*actors.Session, *collector) {
	t.Helper()
	events := collectUntilShutdown(t)
	spec.Port = srv.Port()
	s := attach(t, newHost(t, cfg), spec)
	return s, events(s)
}

// A fresh agy has no conversation until the first turn is typed into its
// terminal: attach says so and binds the one agy mints.
func TestAttachToAFreshAgyWaitsForItsFirstConversation(t *testing.T) {
	sc := scenario(agytest.Say("Hello, ready.", 2))
	srv := agytest.Start(t, agytest.Options{Scenario: sc, ChunkDelay: time.Millisecond})
	s, ev := attachCold(t, testConfig(), srv, actors.Spec{})
	waiting := ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.State == messages.StateNoConversation })
	assert.Empty(t, waiting.ConversationID)
	assert.Empty(t, s.ConversationID())
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.ErrorIs(t, s.SendTurn(ctx, "hello", ""), actors.ErrNoConversation, "no terminal to type the first turn into")

	require.NoError(t, srv.TypeTurn("hi from the terminal"))
	user := ev.waitFor(t, messages.EventUserMessage, nil)
	assert.Equal(t, messages.OriginTerminal, user.Origin)
	assert.Equal(t, srv.ConversationID(), user.ConversationID)
	ev.waitIdleAfter(t, user.Seq)
	assert.Equal(t, srv.ConversationID(), s.ConversationID())
	assert.Empty(t, ofType(ev.all(), messages.EventConversationRotated), "a first conversation is not a rotation")
	itemsOnce(t, srv, s.ConversationID(), ev.all())
}

func TestWaitForTheFirstConversationIsBounded(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{ChunkDelay: time.Millisecond})
	cfg := testConfig()
	clock := actors.NewTestClock()
	cfg.Clock = clock
	s, ev := attachCold(t, cfg, srv, actors.Spec{WaitConversation: time.Hour})
	ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.State == messages.StateNoConversation })
	require.Never(t, closed(s.Done()), 50*time.Millisecond, 5*time.Millisecond, "an hour has not passed")
	advanceUntil(t, clock, time.Hour, "the session to end", closed(s.Done()))
	ev.waitFor(t, messages.EventError, func(e *messages.Event) bool { return strings.Contains(e.Message, "no conversation") })
	require.Error(t, s.Err())
}

// An agy the harness started lists the conversations of earlier runs: the
// session binds the one agy mints for the turn typed into its terminal,
// never an earlier one. Later turns go over RPC; answers close agy's own
// dialog with agy's keys.
func TestFirstTurnTypedIntoAFreshAgyBindsTheConversationItMints(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{
		{Match: "deploy", Actions: []agytest.Action{
			agytest.Run(agytest.CommandAction{Line: "make deploy", Output: "ok\n", NeedsApproval: true}),
			agytest.Ask(agytest.QuestionSpec{Question: "Tag it?", Options: []string{"yes", "no"}}),
			agytest.Say("Deployed.", 1)}},
		{Actions: []agytest.Action{agytest.Say("Hello, ready.", 2)}},
	}}
	srv := agytest.Start(t, agytest.Options{Scenario: sc, ChunkDelay: time.Millisecond, EarlierRuns: 8, EarlierSubagents: true})
	earlier := srv.Conversations()
	term := &fakeTerminal{srv: srv}
	s, ev := attachCold(t, testConfig(), srv, actors.Spec{NewConversation: true, Terminal: term})
	ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.State == messages.StateNoConversation })

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, s.SendTurn(ctx, "hello", ""))
	user := ev.waitFor(t, messages.EventUserMessage, nil)
	assert.Equal(t, messages.OriginHarness, user.Origin, "the harness typed it")
	assert.NotContains(t, earlier, user.ConversationID, "never a conversation of an earlier run")
	ev.waitIdleAfter(t, user.Seq)
	assert.Equal(t, []string{"hello"}, term.typedTurns())

	// The next turn goes over RPC; its prompts are answered and closed in
	// agy's terminal with agy's keys.
	require.NoError(t, s.SendTurn(ctx, "deploy it", ""))
	perm := ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Kind == messages.KindPermission })
	require.NoError(t, s.Resolve(ctx, messages.Resolve{ElicitationID: perm.ElicitationID, Action: messages.ActionAccept}))
	q := ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Kind == messages.KindQuestion })
	require.NoError(t, s.Resolve(ctx, messages.Resolve{ElicitationID: q.ElicitationID, Action: messages.ActionAccept,
		Answers: []messages.Answer{{SelectedOptionIDs: []string{"2"}}}}))
	ev.waitIdleAfter(t, q.Seq)
	assert.Equal(t, []string{"hello"}, term.typedTurns(), "turns after the first went over RPC")
	require.Eventually(t, func() bool { return len(term.pressed()) == 2 }, waitLong, time.Millisecond)
	assert.Equal(t, [][]string{{"1", "Enter"}, {"2", "Enter"}}, term.pressed())
	itemsOnce(t, srv, s.ConversationID(), ev.all())
}

// With TurnsTUI every turn is typed; an interrupt while a question is open
// declines it and closes agy's dialog with Escape.
func TestTurnsTypedIntoTheTerminalAndAnInterruptClosesTheDialog(t *testing.T) {
	sc := scenario(agytest.Ask(agytest.QuestionSpec{Question: "Which one?", Options: []string{"a", "b"}}), agytest.Say("Done.", 1))
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	term := &fakeTerminal{srv: srv}
	r := newRigOn(t, srv, actors.Spec{Terminal: term, Turns: actors.TurnsTUI})
	seq := r.turn("pick one")
	q := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
	user := r.ev.waitFor(t, messages.EventUserMessage, func(e *messages.Event) bool { return e.Seq > seq })
	assert.Equal(t, messages.OriginHarness, user.Origin)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, r.s.Interrupt(ctx))
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(e *messages.Event) bool { return e.ElicitationID == q.ElicitationID })
	assert.Equal(t, messages.ActionCancel, res.Action)
	require.Eventually(t, func() bool { return len(term.pressed()) == 1 }, waitLong, time.Millisecond)
	assert.Equal(t, [][]string{{"Escape"}}, term.pressed())
	assert.Equal(t, []string{"pick one"}, term.typedTurns())
}

// A typed turn that never shows in agy's conversation is an error event,
// and is never typed a second time.
func TestTypedTurnThatNeverShowsIsAnError(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{ChunkDelay: time.Millisecond})
	term := &fakeTerminal{srv: srv, swallow: true}
	cfg := testConfig()
	clock := actors.NewTestClock()
	cfg.Clock, cfg.TypedTurnTimeout = clock, time.Hour
	s, ev := attachCold(t, cfg, srv, actors.Spec{NewConversation: true, Terminal: term})
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, s.SendTurn(ctx, "hello", ""))
	advanceUntil(t, clock, time.Hour, "an error event", func() bool { return len(ofType(ev.all(), messages.EventError)) > 0 })
	e := ev.waitFor(t, messages.EventError, nil)
	assert.Contains(t, e.Message, "did not show in agy's conversation")
	assert.Equal(t, []string{"hello"}, term.typedTurns(), "typed once")
}

// The keys that close agy's dialog are pressed even when agy's frame
// showing the prompt answered arrives before the answer's reply (a denied
// command ends at once). A deny presses the digit of the row the pane shows
// saying "No".
func TestDialogClosedWhenTheFrameBeatsTheAnswersReply(t *testing.T) {
	sc := scenario(agytest.Run(agytest.CommandAction{Line: "rm -rf /", Output: "", NeedsApproval: true}), agytest.Say("Not run.", 1))
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	term := &screenTerminal{fakeTerminal: &fakeTerminal{srv: srv}, screen: fourRows}
	for i := range 2 {
		r := newRigOn(t, srv, actors.Spec{Terminal: term})
		seq := r.turn(fmt.Sprintf("clean up %d", i))
		perm := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
		srv.InjectFault(agytest.Fault{Kind: agytest.FaultSlowReply, Method: "HandleCascadeUserInteraction", Duration: 300 * time.Millisecond})
		require.NoError(t, r.resolve(messages.Resolve{ElicitationID: perm.ElicitationID, Action: messages.ActionDecline}))
		r.ev.waitIdleAfter(t, perm.Seq)
		require.Eventually(t, func() bool { return len(term.pressed()) == i+1 }, waitLong, time.Millisecond, "pressed %v", term.pressed())
		assert.Equal(t, []string{"4", "Enter"}, term.pressed()[i])
	}
}

// A session bound again to agy (agy moved to a new port) reads the steps
// that can still change, not the long history it has mapped already.
func TestRebindingDoesNotReadTheHistoryAgain(t *testing.T) {
	srv, conv, history := longConversation(t)

	r := newRigOn(t, srv, actors.Spec{PID: os.Getpid(), ConversationID: conv, ReadMode: actors.ReadPoll})
	seq := r.turn("before the move")
	r.ev.waitIdleAfter(t, seq)
	before := srv.StepsServed()
	_, err := srv.Restart()
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.s.Stats().Rebinds == 1 && r.s.Port() == srv.Port() }, waitLong, 10*time.Millisecond)
	seq = r.turn("after the move")
	r.ev.waitIdleAfter(t, seq)
	assert.Less(t, srv.StepsServed()-before, int64(history/2), "reads after the move start at the steps that can still change")
	itemsOnce(t, srv, conv, r.ev.all())
}

// agy's permission dialogs as the sources word them (docs/DECISIONS.md
// "agy's options 2 and 3").
const (
	fourRows = "Do you want to proceed?\n> 1. Yes\n  2. Yes, and always allow in this conversation for commands that start with 'make'\n" +
		"  3. Yes, and always allow for commands that start with 'make' (Persist to settings.json)\n  4. No\n"
	sandboxRows = "Do you want to proceed?\n> 1. Yes\n  2. Yes, and run without sandbox restrictions\n  3. No\n"
)

// A deny is the "No" row's digit where the pane shows the rows (three rows
// with agy's sandbox on), and agy's reject key n where it cannot be read.
func TestDenyPressesTheNoRowOfTheDialogOnScreen(t *testing.T) {
	for _, tc := range []struct {
		name string
		term func(*fakeTerminal) actors.Terminal
		want []string
	}{
		{"sandbox's three rows", func(f *fakeTerminal) actors.Terminal { return &screenTerminal{fakeTerminal: f, screen: sandboxRows} }, []string{"3", "Enter"}},
		{"no screen", func(f *fakeTerminal) actors.Terminal { return f }, []string{"n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario(agytest.Run(agytest.CommandAction{Line: "rm -rf /", NeedsApproval: true}), agytest.Say("Not run.", 1))
			srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
			f := &fakeTerminal{srv: srv}
			r := newRigOn(t, srv, actors.Spec{Terminal: tc.term(f)})
			seq := r.turn("clean up")
			perm := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
			require.NoError(t, r.resolve(messages.Resolve{ElicitationID: perm.ElicitationID, Choice: messages.ChoiceDeny}))
			r.ev.waitIdleAfter(t, perm.Seq)
			require.Eventually(t, func() bool { return len(f.pressed()) == 1 }, waitLong, time.Millisecond)
			assert.Equal(t, [][]string{tc.want}, f.pressed())
		})
	}
}

func choiceIDs(cs []messages.Choice) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// Where the session owns agy's pane, a permission request offers agy's two
// "always" rows; one chosen is given with agy's keys in the pane (the row's
// digit, read from the pane), and no RPC answer is sent: agy's dialog takes
// it, and the trajectory shows it answered by the harness, with the choice.
func TestAllowAlwaysIsGivenWithAgysKeysAndNoRPCAnswer(t *testing.T) {
	for _, tc := range []struct {
		choice string
		want   []string
	}{
		{messages.ChoiceAllowAlwaysConversation, []string{"2", "Enter"}},
		{messages.ChoiceAllowAlwaysSettings, []string{"3", "Enter"}},
	} {
		t.Run(tc.choice, func(t *testing.T) {
			sc := scenario(agytest.Run(agytest.CommandAction{Line: "make test", Output: "ok\n", NeedsApproval: true}), agytest.Say("Tested.", 1))
			srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
			f := &fakeTerminal{srv: srv}
			f.onPress = func(keys []string) {
				if len(keys) > 0 && keys[0] != "1" && keys[0] != "n" {
					// agy's dialog: rows 2 and 3 allow (and keep a grant).
					_ = srv.AnswerFromTerminal(srv.ConversationID(), wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}})
				}
			}
			r := newRigOn(t, srv, actors.Spec{Terminal: &screenTerminal{fakeTerminal: f, screen: fourRows}})
			seq := r.turn("run the tests")
			perm := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
			assert.Equal(t, []string{messages.ChoiceAllowOnce, messages.ChoiceAllowAlwaysConversation, messages.ChoiceAllowAlwaysSettings, messages.ChoiceDeny}, choiceIDs(perm.Choices))
			require.NoError(t, r.resolve(messages.Resolve{ElicitationID: perm.ElicitationID, Choice: tc.choice}))
			res := r.ev.waitFor(t, messages.EventElicitationResolved, func(e *messages.Event) bool { return e.ElicitationID == perm.ElicitationID })
			assert.Equal(t, messages.ActionAccept, res.Action)
			assert.Equal(t, messages.ByHarness, res.By)
			assert.Equal(t, tc.choice, res.Choice)
			r.ev.waitIdleAfter(t, res.Seq)
			assert.Equal(t, [][]string{tc.want}, f.pressed(), "the row's keys, once: no close keys after")
			assert.Zero(t, srv.Calls("HandleCascadeUserInteraction"), "no RPC answer beside the dialog's")
			assert.Empty(t, ofType(r.ev.all(), messages.EventError))
		})
	}
}

// An "always" answer agy does not take within TypedTurnTimeout goes over
// RPC as allowed once, and an error event says nothing was allowed always.
func TestAllowAlwaysFallsBackToAllowOnceWhenAgyDoesNotMove(t *testing.T) {
	sc := scenario(agytest.Run(agytest.CommandAction{Line: "make test", Output: "ok\n", NeedsApproval: true}), agytest.Say("Tested.", 1))
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	f := &fakeTerminal{srv: srv} // takes no key: agy's dialog does not move
	cfg := testConfig()
	cfg.TypedTurnTimeout = 200 * time.Millisecond
	r := newRigWith(t, cfg, srv, actors.Spec{Terminal: f})
	seq := r.turn("run the tests")
	perm := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: perm.ElicitationID, Choice: messages.ChoiceAllowAlwaysConversation}))
	e := r.ev.waitFor(t, messages.EventError, nil)
	assert.Contains(t, e.Message, "allowed once over RPC instead")
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(e *messages.Event) bool { return e.ElicitationID == perm.ElicitationID })
	assert.Equal(t, messages.ChoiceAllowOnce, res.Choice)
	r.ev.waitIdleAfter(t, res.Seq)
	assert.Equal(t, 1, srv.Calls("HandleCascadeUserInteraction"))
	require.Eventually(t, func() bool { return len(f.pressed()) == 2 }, waitLong, time.Millisecond)
	assert.Equal(t, [][]string{{"2", "Enter"}, {"1", "Enter"}}, f.pressed(), "the row tried, then the dialog closed as allowed once")
}

// Without agy's pane (attach) a permission request offers allow once and
// deny only, and an "always" answer is refused with a clear error.
func TestAllowAlwaysIsNotOfferedWithoutThePane(t *testing.T) {
	sc := scenario(agytest.Run(agytest.CommandAction{Line: "make test", Output: "ok\n", NeedsApproval: true}), agytest.Say("Tested.", 1))
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	r := newRigOn(t, srv, actors.Spec{})
	seq := r.turn("run the tests")
	perm := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
	assert.Equal(t, []string{messages.ChoiceAllowOnce, messages.ChoiceDeny}, choiceIDs(perm.Choices))
	err := r.resolve(messages.Resolve{ElicitationID: perm.ElicitationID, Choice: messages.ChoiceAllowAlwaysSettings})
	assert.ErrorContains(t, err, "only a session that owns agy's pane")
	assert.ErrorIs(t, err, actors.ErrBadAnswer)
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: perm.ElicitationID, Choice: messages.ChoiceAllowOnce}))
	res := r.ev.waitFor(t, messages.EventElicitationResolved, func(e *messages.Event) bool { return e.ElicitationID == perm.ElicitationID })
	assert.Equal(t, messages.ActionAccept, res.Action)
	assert.Equal(t, messages.ChoiceAllowOnce, res.Choice)
}

// A dialog of several questions is closed one question at a time: a key
// group per question, single-select by digit, multi-select by arrows and
// Space, each then Enter.
func TestQuestionDialogClosedQuestionByQuestion(t *testing.T) {
	sc := scenario(agytest.Ask(
		agytest.QuestionSpec{Question: "Which language?", Options: []string{"Go", "Rust", "Zig"}},
		agytest.QuestionSpec{Question: "Which extras?", Options: []string{"Tests", "Docs", "CI"}, MultiSelect: true},
	), agytest.Say("Set up.", 1))
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond})
	f := &fakeTerminal{srv: srv}
	r := newRigOn(t, srv, actors.Spec{Terminal: f})
	seq := r.turn("start a project")
	q := r.ev.waitFor(t, messages.EventElicitationRequest, func(e *messages.Event) bool { return e.Seq > seq })
	require.NoError(t, r.resolve(messages.Resolve{ElicitationID: q.ElicitationID, Action: messages.ActionAccept, Answers: []messages.Answer{
		{Question: "Which language?", SelectedOptionIDs: []string{"2"}},
		{Question: "Which extras?", SelectedOptionIDs: []string{"3", "1"}},
	}}))
	r.ev.waitIdleAfter(t, q.Seq)
	require.Eventually(t, func() bool { return len(f.pressed()) == 2 }, waitLong, time.Millisecond)
	assert.Equal(t, [][]string{{"2", "Enter"}, {"Space", "Down", "Down", "Space", "Enter"}}, f.pressed())
}

// After a first turn typed into agy's terminal, the session knows agy's
// model catalog (read once it bound the conversation): the model of the
// turn has its display name, not only its enum. It reports agy's version
// as the embedder read it, and whether it is newer than the one modelled.
func TestSessionNamesTheModelOfATypedTurnAndReportsAgyVersion(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{ChunkDelay: time.Millisecond})
	term := &fakeTerminal{srv: srv}
	s, ev := attachCold(t, testConfig(), srv, actors.Spec{NewConversation: true, Terminal: term, AgyVersion: "1.3.0"})
	ev.waitFor(t, messages.EventStatus, func(e *messages.Event) bool { return e.State == messages.StateNoConversation })
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, s.SendTurn(ctx, "hello", ""))
	usage := ev.waitFor(t, messages.EventUsage, func(e *messages.Event) bool { return e.Model != "" })
	require.Eventually(t, func() bool { return s.ModelDisplayName(usage.Model) != "" }, waitLong, time.Millisecond,
		"the catalog names %s", usage.Model)
	assert.Equal(t, "Gemini 3.1 Pro (Medium)", s.ModelDisplayName("MODEL_PLACEHOLDER_M20"))
	assert.Empty(t, s.ModelDisplayName("MODEL_NOT_IN_THE_CATALOG"))
	st := s.Stats()
	assert.Equal(t, "1.3.0", st.AgyVersion)
	assert.True(t, st.AgyVersionNewer)
}
