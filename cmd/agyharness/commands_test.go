package main

import (
	"errors"
	"testing"

	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCommand(t *testing.T) {
	good := []string{
		`{"type":"turn","text":"hello"}`,
		`{"type":"turn","text":"hello","model":"MODEL_X"}`,
		`{"type":"resolve","elicitation_id":"c/prompt/4","action":"accept"}`,
		`{"type":"resolve","elicitation_id":"c/prompt/6","action":"accept","answers":[{"question":"Q?","selected_option_ids":["2"]}]}`,
		`{"type":"resolve","elicitation_id":"c/prompt/6","action":"accept","answers":[{"write_in":"my own"}]}`,
		`{"type":"resolve","elicitation_id":"c/prompt/6","action":"decline"}`,
		`{"type":"interrupt"}`,
		`{"type":"detach"}`,
	}
	for _, line := range good {
		_, err := parseCommand([]byte(line))
		assert.NoError(t, err, line)
	}
	bad := map[string]string{
		`{"type":"turn"`:                                           "bad command JSON",
		`not json`:                                                 "bad command JSON",
		`{"type":"turn","text":"a"} {}`:                            "more than one value",
		`{"text":"hello"}`:                                         `"type" is required`,
		`{"type":"dance"}`:                                         `unknown command type "dance"`,
		`{"type":"turn"}`:                                          `"text" is required`,
		`{"type":"turn","text":"  "}`:                              `"text" is required`,
		`{"type":"turn","txt":"hello"}`:                            `unknown field "txt"`,
		`{"type":"turn","text":"a","action":"accept"}`:             `only "text" and "model" apply`,
		`{"type":"resolve","action":"accept"}`:                     `"elicitation_id" is required`,
		`{"type":"resolve","elicitation_id":"e"}`:                  `"action" is required`,
		`{"type":"resolve","elicitation_id":"e","action":"maybe"}`: `unknown action "maybe"`,
		`{"type":"resolve","elicitation_id":"e","action":"accept","answers":[{"question":"Q"}]}`:             "needs selected_option_ids or write_in",
		`{"type":"resolve","elicitation_id":"e","action":"accept","answers":[{"selected_option_ids":[""]}]}`: "empty option id",
		`{"type":"resolve","elicitation_id":"e","action":"decline","answers":[{"write_in":"x"}]}`:            "decline takes no answers",
		`{"type":"interrupt","text":"x"}`:                                         "interrupt: takes no fields",
		`{"type":"detach","model":"x"}`:                                           "detach: takes no fields",
		`{"type":"resolve","elicitation_id":"e","action":"accept","answers":"x"}`: "bad command JSON",
	}
	for line, want := range bad {
		_, err := parseCommand([]byte(line))
		if assert.Error(t, err, line) {
			assert.Contains(t, err.Error(), want, line)
		}
	}
}

func TestCLIErrorEvent(t *testing.T) {
	ev := cliErrorEvent("s1", "c1", 3, errors.New("boom"))
	assert.Equal(t, messages.EventError, ev.Type)
	assert.Equal(t, "cli/error/3", ev.ID)
	assert.Equal(t, "s1", ev.SessionID)
	assert.Equal(t, "c1", ev.ConversationID)
	assert.Zero(t, ev.Seq)
	assert.Equal(t, "boom", ev.Message)
	require.NotNil(t, ev.Retryable)
	assert.False(t, *ev.Retryable)
}

func question(id string, multi, writeIn bool, opts ...string) *messages.Event {
	q := messages.Question{Question: "Which?", MultiSelect: multi, AllowWriteIn: writeIn}
	for i, o := range opts {
		q.Options = append(q.Options, messages.Option{ID: string(rune('1' + i)), Text: o})
	}
	return &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: id, Kind: messages.KindQuestion, Questions: []messages.Question{q}}
}

func TestPendingPromptQuestion(t *testing.T) {
	p := &pendingPrompt{ev: question("e1", false, false, "a", "b", "c")}
	assert.Contains(t, p.hint(), "a number 1-3")
	_, err := p.input("4")
	assert.ErrorContains(t, err, "not an option number")
	_, err = p.input("1,2")
	assert.ErrorContains(t, err, "pick one option")
	_, err = p.input("")
	assert.ErrorContains(t, err, "required")
	done, err := p.input(" 2 ")
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, messages.Resolve{ElicitationID: "e1", Action: "accept",
		Answers: []messages.Answer{{Question: "Which?", SelectedOptionIDs: []string{"2"}}}}, p.resolve())

	p = &pendingPrompt{ev: question("e2", true, true, "a", "b", "c")}
	assert.Contains(t, p.hint(), "comma-separated")
	assert.Contains(t, p.hint(), "your own answer")
	done, err = p.input("1, 3")
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, []string{"1", "3"}, p.resolve().Answers[0].SelectedOptionIDs)

	p = &pendingPrompt{ev: question("e3", false, true, "a")}
	_, err = p.input("3")
	assert.ErrorContains(t, err, "not an option number", "a number is never a write-in")
	done, err = p.input("something else")
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, "something else", p.resolve().Answers[0].WriteIn)

	ev := question("e4", false, false, "a")
	ev.Questions = append(ev.Questions, messages.Question{Question: "Second?", Options: []messages.Option{{ID: "1", Text: "x"}}})
	p = &pendingPrompt{ev: ev}
	assert.Contains(t, p.hint(), "(1/2")
	done, err = p.input("1")
	require.NoError(t, err)
	assert.False(t, done)
	assert.Contains(t, p.hint(), "(2/2: Second?)")
	done, err = p.input("1")
	require.NoError(t, err)
	assert.True(t, done)
	assert.Len(t, p.resolve().Answers, 2)
}

func TestPendingPromptPermission(t *testing.T) {
	ev := &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "p", Kind: messages.KindPermission}
	p := &pendingPrompt{ev: ev}
	assert.Equal(t, "allow? [y/n]", p.hint())
	_, err := p.input("maybe")
	assert.ErrorContains(t, err, "y or n")
	done, err := p.input("N")
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, messages.ActionDecline, p.resolve().Action)
	p = &pendingPrompt{ev: ev}
	_, _ = p.input("yes")
	assert.Equal(t, messages.ActionAccept, p.resolve().Action)
	assert.Empty(t, p.resolve().Answers)
}

func TestAutoResolve(t *testing.T) {
	r, ok := autoResolve(question("e", false, false, "first", "second"))
	assert.True(t, ok)
	assert.Equal(t, messages.Resolve{ElicitationID: "e", Action: "accept",
		Answers: []messages.Answer{{Question: "Which?", SelectedOptionIDs: []string{"1"}}}}, r)
	r, _ = autoResolve(&messages.Event{ElicitationID: "p", Kind: messages.KindPermission})
	assert.Equal(t, messages.Resolve{ElicitationID: "p", Action: "accept"}, r)
	r, _ = autoResolve(question("e", false, true))
	require.NoError(t, checkResolve(r))
	r, ok = autoResolve(&messages.Event{ElicitationID: "m", Kind: messages.KindElicitation})
	assert.True(t, ok)
	assert.Equal(t, messages.Resolve{ElicitationID: "m", Action: "accept"}, r)
	_, ok = autoResolve(&messages.Event{ElicitationID: "o", Kind: messages.KindOther})
	assert.False(t, ok, "agy's terminal answers a prompt of kind other")
}
