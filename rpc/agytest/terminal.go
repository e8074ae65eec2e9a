package agytest

import (
	"context"
	"slices"
	"sync"
)

// Terminal is agy's own terminal as a harness that owns it uses it: Type
// types a turn there (TypeTurn: the first one mints the conversation of a
// fresh server), Press presses keys, which it only records (the fake draws
// no dialog; cmd/fakeagy --tui does). It satisfies actors.Terminal.
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

// Press records keys pressed in agy's terminal.
func (t *Terminal) Press(_ context.Context, keys ...string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pressed = append(t.pressed, slices.Clone(keys))
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
