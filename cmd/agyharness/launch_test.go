package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

func TestCloseKeysFlag(t *testing.T) {
	var k keyList
	assert.Nil(t, k.keys(), "not given: agy's own keys")
	require.NoError(t, k.Set("Escape"))
	assert.Equal(t, []string{"Escape"}, k.keys())
	require.NoError(t, k.Set("1 Enter"))
	assert.Equal(t, []string{"1", "Enter"}, k.keys())
	require.NoError(t, k.Set(""))
	assert.NotNil(t, k.keys(), `"" presses none, and is not agy's keys`)
	assert.Empty(t, k.keys())
}

func TestParseTurns(t *testing.T) {
	m, err := parseTurns("tui")
	require.NoError(t, err)
	assert.Equal(t, actors.TurnsTUI, m)
	_, err = parseTurns("")
	assert.Error(t, err)
}

// Human mode says what to do about an agy with no conversation: launch
// types the first turn; attach waits for one typed in agy's terminal.
func TestNoConversationIsDrawnAsWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		typesTurns bool
		want       string
	}{
		{true, "agy has no conversation yet: the first turn you send is typed into agy"},
		{false, "agy has no conversation yet: waiting for the first turn typed in agy's terminal"},
	} {
		var out bytes.Buffer
		d := newDriver(driverConfig{interactive: true, typesTurns: tc.typesTurns}, nil, &out, nil, nil, nil)
		d.render.event(&messages.Event{Type: messages.EventStatus, State: messages.StateNoConversation})
		assert.Contains(t, out.String(), tc.want)
		assert.NotContains(t, out.String(), "no_conversation")
	}
}
