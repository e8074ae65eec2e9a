package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
)

// Terminal is agy's own terminal when the harness owns it (agy started by
// `launch` or an ACP thread in a tmux pane): where a fresh agy's first turn
// must be typed (agy has no conversation before it, and mints one for it),
// where every turn goes in TurnsTUI mode, and where agy keeps its dialog
// for a prompt open after the prompt was answered over RPC, until the keys
// that close it are pressed.
type Terminal interface {
	// Type types text as a turn: it clears agy's draft, pastes text as a
	// bracketed paste, and presses Enter.
	Type(ctx context.Context, text string) error
	// Press presses keys, tmux key names ("1", "Enter", "Escape"), in one go.
	Press(ctx context.Context, keys ...string) error
}

// Screen is a Terminal that can also read what agy's pane shows (a
// *tmuxpane.Session can): the harness then reads the rows of agy's dialog
// before it answers there (mapper.CloseKeys), and sees a question dialog
// draw its next question.
type Screen interface {
	// Capture returns the pane's visible text.
	Capture(ctx context.Context) (string, error)
}

// TurnMode says how a session's turns reach agy.
type TurnMode string

// Turn modes. TurnsRPC sends SendUserCascadeMessage to the bound
// conversation, and types only a fresh agy's first turn (a Spec.Terminal is
// needed for that). TurnsTUI types every turn into Spec.Terminal: the turn
// then runs on the model agy's terminal has.
const (
	TurnsRPC TurnMode = "rpc"
	TurnsTUI TurnMode = "tui"
)

// ErrNoConversation: agy has no conversation yet (a fresh agy has none until
// the first turn is typed into its terminal), and the session has no
// terminal to type one into.
var ErrNoConversation = errors.New("agy has no conversation yet: type the first turn in agy's terminal (or start agy with launch)")

// terminalWriter is the actor that writes into agy's terminal for a session
// whose Spec has a Terminal. Its one job: type turns (*typeTurn, replied to
// with a *messages.TurnResult, and a turnTyped to the session) and press keys (*pressKeys, no reply) there, one at a
// time and in the order asked, so that the keys closing a dialog and a turn
// typed after them never interleave. A failure to press keys is logged: the
// answer itself already reached agy over RPC.
//
// It lives as long as its session (agy's terminal does not move with its
// port), and needs no restart: its work runs in goroutines it owns.
type terminalWriter struct {
	child
	term Terminal

	queue []any // *typeTurn and *pressKeys not yet done
	busy  bool
}

// typeTurn asks the terminal writer to type a turn. The reply, a
// *messages.TurnResult, goes to reply once the turn was typed (or failed).
type typeTurn struct {
	id    int // the session's typedTurn
	text  string
	reply *actor.PID
}

// pressKeys asks the terminal writer to press keys: keys as they are, or
// (dialog set) the keys that give an answer in agy's dialog, worked out
// from what the pane shows when it is pressed (mapper.CloseKeys). A dialog
// press that fails is told to the session (*dialogPressed); a plain one is
// logged.
type pressKeys struct {
	keys   []string
	dialog *dialogAnswer
	why    string // for the log
}

// dialogAnswer is an answer to give in agy's dialog.
type dialogAnswer struct {
	prompt  mapper.Prompt
	resolve messages.Resolve
}

// dialogPressed tells the session that the keys of a dialog answer were
// not pressed (or not all): err says why.
type dialogPressed struct {
	elicitationID string
	resolve       messages.Resolve
	err           error
}

// groupPause is the longest wait between the key groups of one dialog (a
// question dialog's questions): a Screen ends it as soon as the pane shows
// something new, a Terminal without one always waits that long.
const groupPause = 100 * time.Millisecond

// groupWait bounds the wait for a Screen to change between key groups.
const groupWait = time.Second

// turnTyped is sent by the terminal writer to its session once it typed
// the turn id, or failed to (err: the requester was told).
type turnTyped struct {
	id  int
	err error
}

// terminalDone is sent by the writer's goroutine to the writer.
type terminalDone struct{}

// terminalTimeout bounds one Type or Press.
const terminalTimeout = 20 * time.Second

func newTerminalWriter(c child, term Terminal) actor.Actor {
	return &terminalWriter{child: c, term: term}
}

// Receive queues the requests and runs them one at a time.
func (w *terminalWriter) Receive(ctx actor.Context) {
	w.lifecycle(ctx)
	switch m := ctx.Message().(type) {
	case *actor.Stopping, *actor.Restarting:
		for _, q := range w.queue {
			if tt, ok := q.(*typeTurn); ok {
				ctx.Send(tt.reply, &messages.TurnResult{Err: ErrSessionEnded})
			}
		}
		w.queue = nil
	case *typeTurn, *pressKeys:
		w.queue = append(w.queue, m)
		w.next(ctx)
	case *terminalDone:
		w.busy = false
		w.next(ctx)
	}
}

// answerDialog presses the keys that give an answer in agy's dialog, read
// from the pane where the terminal is a Screen: a group per screen of the
// dialog, waiting between groups for the dialog to draw its next one.
func (w *terminalWriter) answerDialog(ctx context.Context, d *dialogAnswer) error {
	screen, _ := w.capture(ctx)
	groups, err := mapper.CloseKeys(&d.prompt, d.resolve, screen)
	if err != nil {
		return err
	}
	for i, keys := range groups {
		if i > 0 {
			w.awaitChange(ctx, screen)
			screen, _ = w.capture(ctx)
		}
		if err := w.term.Press(ctx, keys...); err != nil {
			return fmt.Errorf("pressing %v: %w", keys, err)
		}
	}
	return nil
}

// capture reads the pane when the terminal can ("" when it cannot).
func (w *terminalWriter) capture(ctx context.Context) (string, error) {
	sc, ok := w.term.(Screen)
	if !ok {
		return "", nil
	}
	text, err := sc.Capture(ctx)
	if err != nil {
		return "", err
	}
	return text, nil
}

// awaitChange waits, after a key group, until the pane differs from before
// (up to groupWait), or for groupPause where the pane cannot be read.
func (w *terminalWriter) awaitChange(ctx context.Context, before string) {
	pause := time.NewTimer(groupPause)
	defer pause.Stop()
	if _, ok := w.term.(Screen); !ok {
		select {
		case <-ctx.Done():
		case <-pause.C:
		}
		return
	}
	deadline := time.NewTimer(groupWait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
			if now, err := w.capture(ctx); err != nil || now != before {
				// Let the dialog finish drawing what the keys did.
				select {
				case <-ctx.Done():
				case <-pause.C:
				}
				return
			}
		}
	}
}

func (w *terminalWriter) next(ctx actor.Context) {
	if w.busy || len(w.queue) == 0 {
		return
	}
	q := w.queue[0]
	w.queue = w.queue[1:]
	w.busy = true
	self, session, root, log := ctx.Self(), ctx.Parent(), ctx.ActorSystem().Root, w.cfg.Logger
	w.t.run(func(c context.Context) {
		c, cancel := context.WithTimeout(c, terminalTimeout)
		defer cancel()
		switch q := q.(type) {
		case *typeTurn:
			var res messages.TurnResult
			err := w.term.Type(c, q.text)
			if err != nil {
				res.Err = fmt.Errorf("turn: typing it into agy's terminal: %w", err)
			}
			root.Send(session, &turnTyped{id: q.id, err: err})
			// The requester gets its answer even if this actor stops meanwhile.
			root.Send(q.reply, &res)
		case *pressKeys:
			if q.dialog != nil {
				if err := w.answerDialog(c, q.dialog); err != nil {
					log.Warn("answering in agy's dialog", "why", q.why, "err", err)
					root.Send(session, &dialogPressed{elicitationID: q.dialog.prompt.ElicitationID, resolve: q.dialog.resolve, err: err})
				}
				break
			}
			if err := w.term.Press(c, q.keys...); err != nil {
				log.Warn("pressing keys in agy's terminal", "why", q.why, "keys", q.keys, "err", err)
			}
		}
		w.t.send(self, &terminalDone{})
	})
}
