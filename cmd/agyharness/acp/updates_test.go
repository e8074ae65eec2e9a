package acp

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDescribeCall(t *testing.T) {
	cases := []struct {
		name, tool, args string
		title            string
		kind             sdk.ToolKind
		path             string
	}{
		{"command", "run_command", `{"CommandLine":"ls -la","Cwd":"/w","toolSummary":"Run ls command"}`, "ls -la", sdk.ToolKindExecute, ""},
		{"mapped command", "run_command", `{"command":"go test ./...","cwd":"/w"}`, "go test ./...", sdk.ToolKindExecute, ""},
		{"view file", "view_file", `{"AbsolutePath":"/w/main.go","toolSummary":"Read /w/main.go"}`, "Read /w/main.go", sdk.ToolKindRead, "/w/main.go"},
		{"list dir without summary", "list_dir", `{"DirectoryPath":"/w"}`, "list_dir /w", sdk.ToolKindRead, "/w"},
		{"search", "grep_search", `{"Query":"TODO"}`, "grep_search", sdk.ToolKindSearch, ""},
		{"edit", "replace_file_content", `{"TargetFile":"/w/a.go"}`, "replace_file_content", sdk.ToolKindEdit, "/w/a.go"},
		{"question", "ask_question", `{"questions":[{"question":"Which part?"}]}`, "Question: Which part?", sdk.ToolKindOther, ""},
		{"unknown tool, bad JSON", "mystery", `not json`, "mystery", sdk.ToolKindOther, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := describeCall(c.tool, c.args)
			assert.Equal(t, c.title, tc.title)
			assert.Equal(t, c.kind, tc.kind)
			if c.path == "" {
				assert.Empty(t, tc.locations)
			} else {
				require.Len(t, tc.locations, 1)
				assert.Equal(t, c.path, tc.locations[0].Path)
			}
			assert.NotNil(t, tc.rawInput)
		})
	}
}

func TestAdvance(t *testing.T) {
	assert.Equal(t, " world", advance("hello", "hello world"))
	assert.Equal(t, "", advance("hello", "hello"))
	assert.Equal(t, "hello", advance("", "hello"))
	rewritten := advance("hello wrold", "hello world")
	assert.True(t, strings.HasPrefix(rewritten, "\n\n[agy rewrote"), rewritten)
	assert.True(t, strings.HasSuffix(rewritten, "hello world"), rewritten)
}

func TestPromptText(t *testing.T) {
	mime := "text/plain"
	blocks := []sdk.ContentBlock{
		sdk.TextBlock("Explain this file"),
		sdk.TextBlock("   "),
		sdk.ResourceLinkBlock("main.go", "file:///w/main.go"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///w/a.go", Text: "package a\n", MimeType: &mime}}),
		sdk.ImageBlock("AAAA", "image/png"),
	}
	assert.Equal(t, "Explain this file\n\n@file:///w/main.go\n\nfile:///w/a.go:\n```\npackage a\n```", promptText(blocks))
	assert.Empty(t, promptText([]sdk.ContentBlock{sdk.ImageBlock("AAAA", "image/png")}))
}

func TestOutputUpdate(t *testing.T) {
	failed := outputUpdate(&messages.Event{CallID: "c1", Output: "boom\n", ExitCode: messages.Ptr(2)}, nil).ToolCallUpdate
	require.NotNil(t, failed)
	assert.Equal(t, sdk.ToolCallStatusFailed, *failed.Status)
	assert.Equal(t, "boom\n", failed.Content[0].Content.Content.Text.Text)
	ok := outputUpdate(&messages.Event{CallID: "c2", Output: "done"}, nil).ToolCallUpdate
	assert.Equal(t, sdk.ToolCallStatusCompleted, *ok.Status)
	empty := outputUpdate(&messages.Event{CallID: "c3", ExitCode: messages.Ptr(0)}, nil).ToolCallUpdate
	assert.Equal(t, sdk.ToolCallStatusCompleted, *empty.Status)
	assert.Empty(t, empty.Content)
}

func TestModelOptions(t *testing.T) {
	opts, state := modelOptions(nil, "X")
	assert.Nil(t, opts)
	assert.Nil(t, state)

	models := []wire.ModelInfo{{Model: "M1", DisplayName: "One", Recommended: true}, {Model: "M2"}}
	opts, state = modelOptions(models, "")
	require.Len(t, opts, 1)
	assert.Equal(t, sdk.SessionConfigValueId("M1"), opts[0].Select.CurrentValue, "the first (recommended) model by default")
	assert.Equal(t, "One", (*opts[0].Select.Options.Ungrouped)[0].Name)
	assert.Equal(t, "M2", (*opts[0].Select.Options.Ungrouped)[1].Name, "no display name: the enum")
	assert.Equal(t, sdk.ModelId("M1"), state.CurrentModelId)

	opts, _ = modelOptions(models, "M9")
	assert.Len(t, *opts[0].Select.Options.Ungrouped, 3, "a current model missing from the catalog is listed")
	assert.Len(t, models, 2, "the catalog itself is untouched")
}

func TestMainFlags(t *testing.T) {
	run := func(args ...string) (int, string) {
		var out syncBuffer
		code := Main(context.Background(), args, strings.NewReader(""), &syncBuffer{}, &out)
		return code, out.String()
	}
	code, out := run("--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "agent_servers")
	assert.Contains(t, out, "--attach-port")

	code, out = run("--attach-port", "1", "--attach-pid", "2")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, out, "exclusive")
	code, _ = run("--attach-port", "70000")
	assert.Equal(t, exitUsage, code)
	code, _ = run("--no-such-flag")
	assert.Equal(t, exitUsage, code)
	code, _ = run("--agy", "")
	assert.Equal(t, exitUsage, code)
}

// syncBuffer is a bytes.Buffer safe for the SDK's reader goroutine, which
// logs its "connection closed" just after Serve has returned.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMainServesUntilStdinCloses(t *testing.T) {
	var stdout, stderr syncBuffer
	// An empty stdin is a client that connected and left at once.
	code := Main(context.Background(), []string{"--attach-port", "1"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, exitOK, code, stderr.String())
	assert.Empty(t, stdout.String(), "nothing but protocol on stdout")
}

// bareSession is a session without a harness session or a connection, for
// driving the pump's event handling directly.
func bareSession(t *testing.T) *session {
	t.Helper()
	a, err := NewAgent(Options{Host: &actors.Host{}})
	require.NoError(t, err)
	t.Cleanup(a.cancel)
	s := &session{a: a, id: "conv", log: a.log, ctx: a.ctx, historyDone: make(chan struct{}), turnSlot: make(chan struct{}, 1),
		texts: map[string]string{}, thoughts: map[string]string{}, calls: map[string]bool{}, pending: map[string]context.CancelFunc{}}
	s.endHistory()
	return s
}

func TestErrorDuringATurnFailsThePrompt(t *testing.T) {
	s := bareSession(t)
	tr := &turn{ctx: context.Background(), done: make(chan struct{})}
	s.turn = tr
	s.handle(&messages.Event{Type: messages.EventUserMessage, Origin: messages.OriginHarness, Text: "go"})
	s.handle(&messages.Event{Type: messages.EventError, Message: "port lost", Retryable: messages.Ptr(true)})
	s.handle(&messages.Event{Type: messages.EventError, Message: "quota exceeded", Retryable: messages.Ptr(false)})
	s.handle(&messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	select {
	case <-tr.done:
	default:
		t.Fatal("idle after our turn did not end it")
	}
	_, err := s.result(tr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "quota exceeded", "a retryable error does not fail the turn; the first fatal one does")
}

func TestIdleBeforeOurTurnDoesNotEndIt(t *testing.T) {
	s := bareSession(t)
	tr := &turn{ctx: context.Background(), done: make(chan struct{})}
	s.turn = tr
	s.handle(&messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	select {
	case <-tr.done:
		t.Fatal("an idle status before agy took the turn ended it")
	default:
	}
	s.handle(&messages.Event{Type: messages.EventStatus, State: messages.StateRunning})
	s.handle(&messages.Event{Type: messages.EventStatus, State: messages.StateIdle})
	select {
	case <-tr.done:
	default:
		t.Fatal("running then idle did not end the turn")
	}
	res, err := s.result(tr)
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
}
