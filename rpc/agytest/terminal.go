package agytest

import (
	"context"
	"slices"
	"sync"

	"github.com/agyharness/agyharness/wire"
)

// Terminal is agy's own terminal as a harness that owns it uses it: Type
// types a turn there (TypeTurn: the first one mints the conversation of a
// fresh server), Press presses keys, which it records; the fake draws no
// dialog (cmd/fakeagy --tui does), but as agy's dialog does it takes row 2
// or 3 and Enter ("Yes, and always allow ...") as allowing the active
// conversation's open permission prompt. It satisfies actors.Terminal.
type Terminal struct {
	srv *Server

	mu      sync.Mutex
	typed   []string
	pressed [][]string
}

// Terminal returns the server's terminal.
func (s *Server) Terminal() *Terminal { return &Terminal{srv: s} }

// Type types text as a turn in agy's terminal.
func (t *Terminal) Type(_ context.Context, text string) error {
	t.mu.Lock()
	t.typed = append(t.typed, text)
	t.mu.Unlock()
	return t.srv.TypeTurn(text)
}

// Press records keys pressed in agy's terminal; row 2 or 3 and Enter
// allow an open permission prompt of the active conversation.
func (t *Terminal) Press(_ context.Context, keys ...string) error {
	t.mu.Lock()
	t.pressed = append(t.pressed, slices.Clone(keys))
	t.mu.Unlock()
	if slices.Equal(keys, []string{"2", "Enter"}) || slices.Equal(keys, []string{"3", "Enter"}) {
		conv := t.srv.ConversationID()
		if p, ok := t.srv.OpenPrompt(conv); ok && p.RequestedInteraction != nil && p.RequestedInteraction.Permission != nil {
			_ = t.srv.AnswerFromTerminal(conv, wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}})
		}
	}
	return nil
}

// Typed lists the turns typed, in order.
func (t *Terminal) Typed() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.typed)
}

// Pressed lists the keys pressed, one entry per Press, in order.
func (t *Terminal) Pressed() [][]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.pressed)
}
