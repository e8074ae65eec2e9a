package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runSim runs "sim --json --yes" plus args and returns its events.
func runSim(t *testing.T, args ...string) []*messages.Event {
	t.Helper()
	cmd := exec.Command(harness(t), append([]string{"sim", "--json", "--yes", "--chunk-delay", "1ms"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "sim failed; stderr:\n%s", stderr.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("sim did not finish; stderr:\n%s\nstdout tail:\n%s", stderr.String(), lastLines(stdout.String(), 10))
	}
	var evs []*messages.Event
	for _, line := range strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n") {
		evs = append(evs, decodeEvent(t, line)) // stdout carries only events
	}
	return evs
}

func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// indexOf is the position of the first event after from that matches.
func indexOf(evs []*messages.Event, from int, match func(*messages.Event) bool) int {
	for i := from; i < len(evs); i++ {
		if match(evs[i]) {
			return i
		}
	}
	return -1
}

func TestSimJSONShowsEveryKindOfEvent(t *testing.T) {
	evs := runSim(t)
	require.NotEmpty(t, evs)

	var last uint64
	for _, ev := range evs {
		assert.Greater(t, ev.Seq, last, "seq strictly increasing at %s", ev.ID)
		last = ev.Seq
		assert.NotEmpty(t, ev.SessionID)
		if ev.State != messages.StateNoConversation {
			assert.NotEmpty(t, ev.ConversationID)
		}
		assert.NotEmpty(t, ev.ID)
		assert.False(t, ev.Time.IsZero())
		assert.NotEqual(t, messages.EventError, ev.Type, "unexpected error: %s", ev.Message)
	}

	// The event kinds the scenario must show, in this order.
	steps := []struct {
		what  string
		match func(*messages.Event) bool
	}{
		{"status running", isStatus(messages.StateRunning)},
		{"message", isType(messages.EventMessage)},
		{"usage", isType(messages.EventUsage)},
		{"function_call run_command", func(ev *messages.Event) bool {
			return ev.Type == messages.EventFunctionCall && ev.Name == "run_command"
		}},
		{"permission prompt", func(ev *messages.Event) bool {
			return ev.Type == messages.EventElicitationRequest && ev.Kind == messages.KindPermission && ev.Command != nil
		}},
		// by is not checked: the session can attribute an answer it
		// delivered to agy's terminal when agy's frame beats the reply
		// (reported to the actors owner).
		{"permission resolved", func(ev *messages.Event) bool {
			return ev.Type == messages.EventElicitationResolved && ev.By != messages.ByExpired && ev.Action == messages.ActionAccept
		}},
		{"function_call_output", isType(messages.EventFunctionCallOutput)},
		{"question prompt", func(ev *messages.Event) bool {
			return ev.Type == messages.EventElicitationRequest && ev.Kind == messages.KindQuestion && len(ev.Questions) > 0
		}},
		{"question resolved", func(ev *messages.Event) bool {
			return ev.Type == messages.EventElicitationResolved && ev.By != messages.ByExpired && ev.Action == messages.ActionAccept
		}},
		{"status idle", isStatus(messages.StateIdle)},
		{"model_changed", func(ev *messages.Event) bool {
			return ev.Type == messages.EventModelChanged && ev.From != "" && ev.To != "" && ev.From != ev.To
		}},
		{"status running (second turn)", isStatus(messages.StateRunning)},
		{"status idle (second turn)", isStatus(messages.StateIdle)},
	}
	at := 0
	for _, s := range steps {
		i := indexOf(evs, at, s.match)
		require.GreaterOrEqual(t, i, 0, "no %s after event %d; events: %s", s.what, at, summary(evs))
		at = i + 1
	}
	assert.Equal(t, messages.StateIdle, evs[len(evs)-1].State, "sim ends idle")
	// The first turn is typed into a fresh agy: its first steps may be
	// done by the time the session follows the conversation agy minted,
	// and later ones stream.
	idle := indexOf(evs, 0, isStatus(messages.StateIdle))
	for _, typ := range []messages.EventType{messages.EventReasoningDelta, messages.EventOutputTextDelta} {
		i := indexOf(evs, 0, isType(typ))
		assert.True(t, i >= 0 && i < idle, "a %s in the first turn", typ)
	}
	assert.Equal(t, messages.StateNoConversation, evs[0].State, "a fresh agy has no conversation")

	// Both turns were the harness's own.
	var turns []string
	for _, ev := range evs {
		if ev.Type == messages.EventUserMessage {
			assert.Equal(t, messages.OriginHarness, ev.Origin)
			turns = append(turns, ev.Text)
		}
	}
	assert.Equal(t, []string{"Show me what you can do", "Now read the README"}, turns)

	// Deltas of a message concatenate to its text.
	text := map[string]string{}
	for _, ev := range evs {
		switch {
		case ev.Type == messages.EventOutputTextDelta && ev.Snapshot != "":
			text[ev.ItemID] = ev.Snapshot
		case ev.Type == messages.EventOutputTextDelta:
			text[ev.ItemID] += ev.Delta
		case ev.Type == messages.EventMessage && text[ev.ItemID] != "":
			assert.Equal(t, ev.Text, text[ev.ItemID])
		}
	}
}

func TestSimScenarioFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"name":"tiny","turns":[
		{"actions":[{"think":"hmm"},{"say":"hello there","chunks":3}]},
		{"match":"fail","actions":[{"fail":"quota exceeded"}]}
	]}`), 0o600))
	evs := runSim(t, "--scenario", path)
	var texts []string
	for _, ev := range evs {
		if ev.Type == messages.EventMessage {
			texts = append(texts, ev.Text)
		}
	}
	assert.Contains(t, texts, "hello there")
	assert.GreaterOrEqual(t, indexOf(evs, 0, isType(messages.EventModelChanged)), 0, "turns alternate models")
	assert.Equal(t, "Please fail", evs[indexOf(evs, indexOf(evs, 0, isType(messages.EventUserMessage))+1, isType(messages.EventUserMessage))].Text)
}

func TestRecordThenReplayGivesTheSameEvents(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "sim.capture.jsonl")
	live := runSim(t, "--record", capture)

	raw, err := os.ReadFile(capture)
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec captureRecord
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		kinds[rec.Kind]++
	}
	assert.Equal(t, 1, kinds["capture"])
	assert.Positive(t, kinds["frame"])
	assert.Positive(t, kinds["snapshot"])
	for _, k := range []string{"bind", "models", "turn", "delivering", "resolved"} {
		assert.Positivef(t, kinds[k], "a %q record", k)
	}

	out, err := exec.Command(harness(t), "replay", capture, "--json").Output()
	require.NoError(t, err)
	var replayed []*messages.Event
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		replayed = append(replayed, decodeEvent(t, line))
	}

	// The capture holds the session's turns and answers too, so the replay
	// knows which were the harness's: origin and by compare as well.
	assert.Equal(t, itemsOf(live), itemsOf(replayed))
	assert.Equal(t, deltaText(live), deltaText(replayed))

	// Human rendering of the same capture.
	out, err = exec.Command(harness(t), "replay", capture).Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), "$ ls -la")
	assert.Contains(t, string(out), "The README has a single heading.")
	assert.Contains(t, string(out), "→ Edit /workspace/main.go\n  @@ -1,1 +1,3 @@\n   package main\n  +\n  +import \"fmt\"\n")
}

// TestSimShowsAnEditAsADiffAndASearch: the default scenario's edit comes
// with its diffs (proposed, then applied), its search with its hits, and
// its command's output as it grows, in --json as in the typed events.
func TestSimShowsAnEditAsADiffAndASearch(t *testing.T) {
	evs := runSim(t)
	var edit, grep, command *messages.Event
	outputs := map[string]*messages.Event{}
	live := map[string]string{}
	for _, ev := range evs {
		switch ev.Type {
		case messages.EventFunctionCall:
			switch ev.Kind {
			case messages.ToolEdit:
				edit = ev
			case messages.ToolSearch:
				grep = ev
			case messages.ToolExecute:
				command = ev
			}
		case messages.EventFunctionCallOutput:
			outputs[ev.CallID] = ev
		case messages.EventFunctionCallOutputDelta:
			if ev.Snapshot != "" {
				live[ev.CallID] = ev.Snapshot
			} else {
				live[ev.CallID] += ev.Delta
			}
		}
	}
	require.NotNil(t, edit, "an edit: %s", summary(evs))
	assert.Equal(t, "Edit /workspace/main.go", edit.Title)
	assert.Equal(t, []messages.Location{{Path: "/workspace/main.go", Line: 1}}, edit.Locations)
	require.Len(t, edit.Diffs, 2)
	assert.Equal(t, "func main() {}\n", *edit.Diffs[1].OldText)
	require.NotNil(t, outputs[edit.CallID])
	require.Len(t, outputs[edit.CallID].Diffs, 1, "the applied diff")
	assert.Contains(t, outputs[edit.CallID].Diffs[0].Unified, "+\tfmt.Println(\"hello\")\n")

	require.NotNil(t, grep, "a search")
	assert.Equal(t, "grep_search", grep.Name)
	require.NotNil(t, outputs[grep.CallID])
	assert.Equal(t, []messages.Hit{{Path: "/workspace/main.go", Line: 3, Text: "func main() {}"}}, outputs[grep.CallID].Hits)

	require.NotNil(t, command)
	require.NotNil(t, outputs[command.CallID])
	assert.Equal(t, outputs[command.CallID].Output, live[command.CallID], "the command's output streamed, all of it")
}

// itemsOf are the committed events (not deltas), without the header fields
// a replay stamps differently (session, seq, time).
func itemsOf(evs []*messages.Event) []messages.Event {
	var out []messages.Event
	for _, ev := range evs {
		if ev.Type.Delta() {
			continue
		}
		c := *ev
		c.SessionID, c.Seq, c.Time = "", 0, time.Time{}
		out = append(out, c)
	}
	return out
}

// deltaText concatenates each item's deltas (coalescing may merge them).
func deltaText(evs []*messages.Event) map[string]string {
	out := map[string]string{}
	for _, ev := range evs {
		if !ev.Type.Delta() {
			continue
		}
		key := string(ev.Type) + " " + ev.ItemID
		if ev.Snapshot != "" {
			out[key] = ev.Snapshot
		} else {
			out[key] += ev.Delta
		}
	}
	return out
}

// summary lists the events' types (and states), deltas left out.
func summary(evs []*messages.Event) string {
	var b strings.Builder
	for i, ev := range evs {
		if ev.Type == messages.EventReasoningDelta || ev.Type == messages.EventOutputTextDelta {
			continue
		}
		b.WriteString(fmt.Sprintf("%d:%s", i, ev.Type))
		if ev.State != "" {
			b.WriteString("=" + ev.State)
		}
		b.WriteString(" ")
	}
	return b.String()
}

// runSimStatus runs "sim --json --yes" plus args and returns its exit code
// and stderr.
func runSimStatus(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(harness(t), append([]string{"sim", "--json", "--yes", "--chunk-delay", "1ms"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stderr.String()
		}
		require.NoError(t, err)
		return 0, stderr.String()
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("sim did not finish; stderr:\n%s", stderr.String())
		return -1, ""
	}
}

func TestSimRecordWriteErrorExitsOne(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	code, stderr := runSimStatus(t, "--record", "/dev/full")
	assert.Equal(t, exitFailure, code, "stderr:\n%s", stderr)
	assert.Contains(t, stderr, "no space left on device")
}

func TestSimRecordRefusesToReplaceWithoutForce(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "capture.jsonl")
	require.NoError(t, os.WriteFile(capture, []byte("keep me\n"), 0o644))
	code, stderr := runSimStatus(t, "--record", capture)
	assert.Equal(t, exitUsage, code, "stderr:\n%s", stderr)
	assert.Contains(t, stderr, "--force")
	got, err := os.ReadFile(capture)
	require.NoError(t, err)
	assert.Equal(t, "keep me\n", string(got), "the file is untouched")

	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink(capture, link))
	code, stderr = runSimStatus(t, "--record", link, "--force")
	assert.Equal(t, exitUsage, code, "stderr:\n%s", stderr)
	assert.Contains(t, stderr, "symbolic link")
	got, err = os.ReadFile(capture)
	require.NoError(t, err)
	assert.Equal(t, "keep me\n", string(got), "the link's target is untouched")

	code, stderr = runSimStatus(t, "--record", capture, "--force")
	require.Equal(t, exitOK, code, "stderr:\n%s", stderr)
	fi, err := os.Stat(capture)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a capture is the user's alone")
	got, err = os.ReadFile(capture)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), `{"kind":"capture"`), "replaced with a capture: %.40q", got)
}
