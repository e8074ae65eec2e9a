package acp

import (
	"context"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDescribeEventUsesTheMappersDetail(t *testing.T) {
	edit := describeEvent(&messages.Event{Name: "replace_file_content", Arguments: `{}`, Kind: messages.ToolEdit, Title: "Edit /w/a.go",
		Locations: []messages.Location{{Path: "/w/a.go", Line: 3}},
		Diffs:     []messages.FileDiff{{Path: "/w/a.go", OldText: messages.Ptr("a\n"), NewText: "b\n", Line: 3}, {Path: "/w/new.go", NewText: "package w\n"}}})
	assert.Equal(t, "Edit /w/a.go", edit.title)
	assert.Equal(t, sdk.ToolKindEdit, edit.kind)
	require.Len(t, edit.locations, 1)
	assert.Equal(t, 3, *edit.locations[0].Line)
	require.Len(t, edit.content, 2)
	d := edit.content[0].Diff
	require.NotNil(t, d)
	assert.Equal(t, "/w/a.go", d.Path)
	assert.Equal(t, "a\n", *d.OldText)
	assert.Equal(t, "b\n", d.NewText)
	assert.Nil(t, edit.content[1].Diff.OldText, "a new file has no old text")

	// An event without detail falls back on the arguments.
	bare := describeEvent(&messages.Event{Name: "run_command", Arguments: `{"command":"ls"}`})
	assert.Equal(t, "ls", bare.title)
	assert.Equal(t, sdk.ToolKindExecute, bare.kind)
}

func TestOutputUpdateShowsDiffsHitsAndLocations(t *testing.T) {
	proposed := []messages.FileDiff{{Path: "/w/a.go", OldText: messages.Ptr("a\n"), NewText: "b\n"}}
	u := outputUpdate(&messages.Event{CallID: "e1", Kind: messages.ToolEdit, Output: "edited /w/a.go"}, proposed).ToolCallUpdate
	require.Len(t, u.Content, 2)
	assert.Equal(t, "b\n", u.Content[0].Diff.NewText, "the proposed diff stays when agy sent none applied")
	assert.Equal(t, "edited /w/a.go", u.Content[1].Content.Content.Text.Text)

	applied := []messages.FileDiff{{Path: "/w/a.go", OldText: messages.Ptr("a\nx\n"), NewText: "b\nx\n"}}
	u = outputUpdate(&messages.Event{CallID: "e1", Kind: messages.ToolEdit, Diffs: applied}, proposed).ToolCallUpdate
	require.Len(t, u.Content, 1)
	assert.Equal(t, "b\nx\n", u.Content[0].Diff.NewText, "the applied diff wins")

	s := outputUpdate(&messages.Event{CallID: "g1", Kind: messages.ToolSearch, Output: "/w/a.go:3: TODO",
		Hits: []messages.Hit{{Path: "/w/a.go", Line: 3, Text: "TODO"}}, HitCount: messages.Ptr(1),
		Locations: []messages.Location{{Path: "/w/a.go", Line: 3}}}, nil).ToolCallUpdate
	require.Len(t, s.Locations, 1)
	assert.Equal(t, "/w/a.go", s.Locations[0].Path)
	raw := s.RawOutput.(map[string]any)
	assert.Equal(t, 1, raw["hit_count"])
	assert.NotNil(t, raw["hits"])
}

// TestEditShowsItsDiffAndCommandOutputStreams runs an edit that asks
// permission, a search and a command whose output grows, through the
// agent: the edit's tool call and its permission request carry ACP diff
// content, the command's tool call gets its output as it grows.
func TestEditShowsItsDiffAndCommandOutputStreams(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Edit(agytest.EditAction{Path: "/w/main.go", NeedsApproval: true, Chunks: []agytest.EditChunk{{Old: "count := 0\n", New: "total := 0\n", Line: 4}}}),
		agytest.Search(agytest.SearchAction{Tool: "grep_search", Query: "total", Path: "/w", Hits: []agytest.SearchHit{{Path: "/w/main.go", Line: 4, Text: "total := 0"}}}),
		agytest.Run(agytest.CommandAction{Line: "go test ./...", Output: "ok  w/a\nok  w/b\nok  w/c\nok  w/d\n", Chunks: 4}),
		agytest.Say("Done.", 1),
	)), nil)
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow")}, nil
	}
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "rename and test")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)

	require.Len(t, r.client.permissions, 1)
	p := r.client.permissions[0].ToolCall
	require.Len(t, p.Content, 1, "the permission request shows the edit")
	require.NotNil(t, p.Content[0].Diff)
	assert.Equal(t, "count := 0\n", *p.Content[0].Diff.OldText)
	assert.Equal(t, "total := 0\n", p.Content[0].Diff.NewText)
	require.Len(t, p.Locations, 1)
	assert.Equal(t, "/w/main.go", p.Locations[0].Path)

	starts := map[sdk.ToolKind]*sdk.SessionUpdateToolCall{}
	updates := map[sdk.ToolCallId][]*sdk.SessionToolCallUpdate{}
	for _, u := range r.client.snapshot() {
		if tc := u.Update.ToolCall; tc != nil {
			starts[tc.Kind] = tc
		}
		if tu := u.Update.ToolCallUpdate; tu != nil {
			updates[tu.ToolCallId] = append(updates[tu.ToolCallId], tu)
		}
	}
	edit := starts[sdk.ToolKindEdit]
	require.NotNil(t, edit, "an edit tool call: %s", dump(r.client.snapshot()))
	assert.Equal(t, "Edit /w/main.go", edit.Title)
	assert.Equal(t, p.ToolCallId, edit.ToolCallId, "the permission request names the edit")
	require.Len(t, edit.Content, 1)
	assert.Equal(t, "diff", edit.Content[0].Diff.Type)
	require.Len(t, edit.Locations, 1)
	assert.Equal(t, 4, *edit.Locations[0].Line)
	last := updates[edit.ToolCallId][len(updates[edit.ToolCallId])-1]
	assert.Equal(t, sdk.ToolCallStatusCompleted, *last.Status)
	require.NotEmpty(t, last.Content)
	require.NotNil(t, last.Content[0].Diff, "the applied diff")
	assert.Contains(t, last.Content[0].Diff.NewText, "total := 0")

	search := starts[sdk.ToolKindSearch]
	require.NotNil(t, search)
	assert.Equal(t, `Search for "total" in /w`, search.Title)

	cmd := starts[sdk.ToolKindExecute]
	require.NotNil(t, cmd)
	var seen []string
	for _, u := range updates[cmd.ToolCallId] {
		if *u.Status == sdk.ToolCallStatusInProgress {
			require.Len(t, u.Content, 1)
			text := u.Content[0].Content.Content.Text.Text
			if n := len(seen); n > 0 {
				assert.True(t, strings.HasPrefix(text, seen[n-1]), "the output only grows: %q then %q", seen[n-1], text)
			}
			seen = append(seen, text)
		}
	}
	assert.GreaterOrEqual(t, len(seen), 2, "the output streamed as it grew: %q", seen)
	final := updates[cmd.ToolCallId][len(updates[cmd.ToolCallId])-1]
	assert.Equal(t, sdk.ToolCallStatusCompleted, *final.Status)
	assert.Equal(t, "ok  w/a\nok  w/b\nok  w/c\nok  w/d\n", final.Content[0].Content.Content.Text.Text)
}
