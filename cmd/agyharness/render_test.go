package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agyharness/agyharness/messages"
)

func renderEvents(color bool, evs ...*messages.Event) string {
	var b bytes.Buffer
	r := newRenderer(&b, color)
	for _, ev := range evs {
		r.event(ev)
	}
	r.endLine()
	return b.String()
}

func TestRenderEditAsAUnifiedDiffUnderItsPath(t *testing.T) {
	call := &messages.Event{Type: messages.EventFunctionCall, CallID: "e1", Name: "multi_replace_file_content", Kind: messages.ToolEdit,
		Title: "Edit /w/main.go", Locations: []messages.Location{{Path: "/w/main.go", Line: 4}},
		Diffs: []messages.FileDiff{
			{Path: "/w/main.go", OldText: messages.Ptr("count := 0\nfor range 3 {\n"), NewText: "total := 0\nfor range 3 {\n", Line: 4},
			{Path: "/w/other.go", OldText: messages.Ptr("a\n"), NewText: "b\n"},
		}}
	out := &messages.Event{Type: messages.EventFunctionCallOutput, CallID: "e1", Kind: messages.ToolEdit, Output: "edited /w/main.go (+1 -1)",
		Diffs: []messages.FileDiff{{Path: "/w/main.go", Unified: "-count := 0\n+total := 0\n"}}}
	got := renderEvents(false, call, out)
	assert.Equal(t, strings.Join([]string{
		"→ Edit /w/main.go",
		"  @@ -4,2 +4,2 @@",
		"  -count := 0",
		"  +total := 0",
		"   for range 3 {",
		"  /w/other.go",
		"  -a",
		"  +b",
		"  edited /w/main.go (+1 -1)", // the applied diff is not drawn twice
	}, "\n")+"\n", got)

	colored := renderEvents(true, call)
	assert.Contains(t, colored, "\x1b[31m-count := 0\x1b[0m")
	assert.Contains(t, colored, "\x1b[32m+total := 0\x1b[0m")
}

func TestRenderNewFileAndAnEditShownOnlyAtItsOutput(t *testing.T) {
	call := &messages.Event{Type: messages.EventFunctionCall, CallID: "w1", Name: "write_to_file", Kind: messages.ToolEdit, Title: "Create /w/README.md",
		Locations: []messages.Location{{Path: "/w/README.md"}}}
	out := &messages.Event{Type: messages.EventFunctionCallOutput, CallID: "w1", Kind: messages.ToolEdit, Output: "created /w/README.md (+2 -0)",
		Diffs: []messages.FileDiff{{Path: "/w/README.md", NewText: "# w\nA tool.\n", Unified: "+# w\n+A tool.\n"}}}
	assert.Equal(t, "→ Create /w/README.md\n  @@ -0,0 +1,2 @@\n  +# w\n  +A tool.\n  created /w/README.md (+2 -0)\n", renderEvents(false, call, out))
}

func TestRenderSearchAsItsHits(t *testing.T) {
	call := &messages.Event{Type: messages.EventFunctionCall, CallID: "g1", Name: "grep_search", Kind: messages.ToolSearch, Title: `Search for "TODO" in /w`}
	var hits []messages.Hit
	for i := 1; i <= 12; i++ {
		hits = append(hits, messages.Hit{Path: fmt.Sprintf("/w/f%d.go", i), Line: i, Text: "// TODO"})
	}
	out := &messages.Event{Type: messages.EventFunctionCallOutput, CallID: "g1", Kind: messages.ToolSearch, Output: "(raw)", Hits: hits, HitCount: messages.Ptr(15)}
	got := renderEvents(false, call, out)
	assert.True(t, strings.HasPrefix(got, "→ Search for \"TODO\" in /w\n  /w/f1.go:1: // TODO\n"), got)
	assert.Contains(t, got, "  /w/f10.go:10: // TODO\n")
	assert.NotContains(t, got, "/w/f11.go", "the first hits only")
	assert.True(t, strings.HasSuffix(got, "  … 5 more (15 in all)\n"), got)
	assert.NotContains(t, got, "(raw)")

	find := &messages.Event{Type: messages.EventFunctionCallOutput, CallID: "f1", Kind: messages.ToolSearch, Hits: []messages.Hit{{Path: "/w/a_test.go"}}, HitCount: messages.Ptr(1)}
	assert.Equal(t, "  /w/a_test.go\n  1 result\n", renderEvents(false, find))
	none := &messages.Event{Type: messages.EventFunctionCallOutput, CallID: "f2", Kind: messages.ToolSearch, Output: "no results", HitCount: messages.Ptr(0)}
	assert.Equal(t, "  no results\n", renderEvents(false, none))
}

func TestRenderWebReadAsItsURLAndSize(t *testing.T) {
	out := &messages.Event{Type: messages.EventFunctionCallOutput, CallID: "u1", Kind: messages.ToolFetch, URL: "https://go.dev/ref/mod", Output: strings.Repeat("x", 2048)}
	assert.Equal(t, "  https://go.dev/ref/mod (2.0 KiB)\n", renderEvents(false, out))
}

func TestRenderCommandOutputAsItGrows(t *testing.T) {
	call := &messages.Event{Type: messages.EventFunctionCall, CallID: "c1", Name: "run_command", Kind: messages.ToolExecute, Arguments: `{"command":"go test ./..."}`}
	d1 := &messages.Event{Type: messages.EventFunctionCallOutputDelta, CallID: "c1", ItemID: "c/2/output", Delta: "ok  w/db\nFA"}
	d2 := &messages.Event{Type: messages.EventFunctionCallOutputDelta, CallID: "c1", ItemID: "c/2/output", Delta: "IL w\n"}
	out := &messages.Event{Type: messages.EventFunctionCallOutput, CallID: "c1", Kind: messages.ToolExecute, Output: "ok  w/db\nFAIL w\nFAIL\n", ExitCode: messages.Ptr(1)}

	var b bytes.Buffer
	r := newRenderer(&b, false)
	r.event(call)
	r.event(d1)
	assert.Equal(t, "$ go test ./...\n  ok  w/db\n", b.String(), "whole lines as they come")
	r.event(d2)
	r.event(out)
	assert.Equal(t, "$ go test ./...\n  ok  w/db\n  FAIL w\n  FAIL\n  exit 1\n", b.String(), "the rest at the end, once")

	// Many lines: the first maxOutputLines, then a count.
	var long strings.Builder
	for i := range 25 {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	got := renderEvents(false, call,
		&messages.Event{Type: messages.EventFunctionCallOutputDelta, CallID: "c1", Delta: long.String()},
		&messages.Event{Type: messages.EventFunctionCallOutput, CallID: "c1", Output: long.String(), ExitCode: messages.Ptr(0)})
	assert.Contains(t, got, "  line 19\n  … 5 more lines\n")
	assert.NotContains(t, got, "line 20")
}

// agy's "always" rows, when offered, are listed numbered, their text
// cleaned like all of agy's.
func TestRenderPermissionListsAgysRows(t *testing.T) {
	req := &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "p1", Kind: messages.KindPermission,
		Command: &messages.CommandLine{Line: "pwd"},
		Choices: []messages.Choice{{ID: "allow_once", Text: "Yes"}, {ID: "allow_always_conversation", Text: "Yes, and always allow 'p\x1b[2Jwd'"},
			{ID: "allow_always_settings", Text: "Yes, persist"}, {ID: "deny", Text: "No"}}}
	got := renderEvents(false, req)
	assert.Contains(t, got, "  1) Yes\n  2) Yes, and always allow 'p")
	assert.Contains(t, got, "  4) No\n")
	assert.NotContains(t, got, "\x1b[2J")
	two := &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "p2", Kind: messages.KindPermission,
		Command: &messages.CommandLine{Line: "pwd"}, Choices: []messages.Choice{{ID: "allow_once", Text: "Yes"}, {ID: "deny", Text: "No"}}}
	assert.NotContains(t, renderEvents(false, two), "1) Yes", "allow once and deny are y and n")
}

func TestRenderSaysAPermissionWasAllowedAlways(t *testing.T) {
	req := &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "p1", Kind: messages.KindPermission, Command: &messages.CommandLine{Line: "pwd"}}
	res := &messages.Event{Type: messages.EventElicitationResolved, ElicitationID: "p1", Action: messages.ActionAccept, By: messages.ByHarness,
		Choice: messages.ChoiceAllowAlwaysConversation}
	assert.Contains(t, renderEvents(false, req, res), "✓ allowed always in this conversation: $ pwd\n")
}

func TestRenderPermissionShowsTheEditItWouldMake(t *testing.T) {
	req := &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "p1", CallID: "e9", Kind: messages.KindPermission,
		Resource: &messages.Resource{Action: "write_file", Target: "/w/x.go"},
		Diffs:    []messages.FileDiff{{Path: "/w/x.go", OldText: messages.Ptr("a\n"), NewText: "b\n", Line: 2}}}
	got := renderEvents(false, req)
	assert.Equal(t, "? agy wants to write /w/x.go\n  /w/x.go\n  @@ -2,1 +2,1 @@\n  -a\n  +b\n", got)
}

// TestRenderAgyErrorWithItsCode: an error agy showed the user is printed
// with its code, a retry notice apart (dim), agy's text through the
// terminal sanitiser; a rewind says to which step.
func TestRenderAgyErrorWithItsCode(t *testing.T) {
	out := renderEvents(false,
		&messages.Event{Type: messages.EventError, Code: messages.ErrorQuotaExhausted, Final: messages.Ptr(false), Retryable: messages.Ptr(true),
			Message: "The model API is currently overloaded."},
		&messages.Event{Type: messages.EventError, Code: messages.ErrorQuotaExhausted, Final: messages.Ptr(true), Retryable: messages.Ptr(false),
			Message: "Individual quota reached." + terminalAttacks[0].text},
		&messages.Event{Type: messages.EventConversationRewound, ToStep: messages.Ptr(4), Epoch: 1},
	)
	assert.Contains(t, out, "agy retries (quota_exhausted): The model API is currently overloaded.")
	assert.Contains(t, out, "agy: Individual quota reached."+terminalAttacks[0].shown+" (quota_exhausted)")
	assert.NotContains(t, out, "\x1b")
	assert.Contains(t, out, "conversation rewound to step 4")
}

// A segment of a compound command asked on its own names the segment; an
// interaction the harness cannot answer says to answer it in agy's terminal;
// an MCP elicitation names its server. agy's texts pass the sanitiser.
func TestRenderReaskedAndOtherPrompts(t *testing.T) {
	seg := &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "c/prompt/3.2", Kind: messages.KindPermission,
		Command: &messages.CommandLine{Line: "git status && git log"}, Resource: &messages.Resource{Action: "command", Target: "git log"}}
	assert.Equal(t, "? agy wants to run: $ git status && git log\n  this asks for: $ git log\n", renderEvents(false, seg))
	done := &messages.Event{Type: messages.EventElicitationResolved, ElicitationID: "c/prompt/3.2", Action: messages.ActionAccept, By: messages.ByHarness}
	assert.Contains(t, renderEvents(false, seg, done), "✓ allowed: $ git log\n", "the segment is what was allowed")

	other := &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "c/prompt/4", Kind: messages.KindOther,
		Interaction: "browserAction", Text: "Click \x1b[31mlogin", Message: "answer it in agy's terminal"}
	got := renderEvents(false, other)
	assert.Equal(t, "? agy asks browserAction: Click ^[[31mlogin\n  answer it in agy's terminal\n", got)
	assert.NotContains(t, got, "\x1b")

	mcp := &messages.Event{Type: messages.EventElicitationRequest, ElicitationID: "c/prompt/5", Kind: messages.KindElicitation,
		Interaction: "elicitation", Text: "Which repo?", Elicitation: &messages.MCPElicitation{Server: "github"}}
	assert.Equal(t, "? github (MCP) asks: Which repo?\n", renderEvents(false, mcp))
}
