package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
)

// TestReplayOfEveryGoldenCapture replays each capture of testdata/captures
// (written by the mapper's golden test from the same moments as its golden
// file) and checks that replay prints the golden events, stamped with the
// replay's session and sequence.
func TestReplayOfEveryGoldenCapture(t *testing.T) {
	captures, err := filepath.Glob(filepath.Join("..", "..", "testdata", "captures", "*.capture.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, captures)
	stamp := regexp.MustCompile(`"session_id":"replay","conversation_id":"conv-1",("parent_conversation_id":"[^"]*",)?"seq":\d+,`)
	for _, path := range captures {
		name := strings.TrimSuffix(filepath.Base(path), ".capture.jsonl")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", name+".jsonl"))
			require.NoError(t, err)
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			var got strings.Builder
			var seq uint64
			require.NoError(t, replayCapture(f, "replay", func(ev *messages.Event) {
				seq++
				assert.Equal(t, seq, ev.Seq, "seq counts the events")
				b, err := json.Marshal(ev)
				require.NoError(t, err)
				line := string(b)
				require.Regexp(t, stamp, line)
				got.WriteString(stamp.ReplaceAllStringFunc(line, func(m string) string {
					if p := regexp.MustCompile(`"parent_conversation_id":"[^"]*",`).FindString(m); p != "" {
						return p
					}
					return ""
				}) + "\n")
			}))
			assert.Equal(t, string(want), got.String())
		})
	}
}

// A bind record that says its conversation is live (the session followed a
// /clear it watched happen) replays a planner step first seen finished with
// its thinking, as the session gave it; without it, the first read is
// history and gives none.
func TestReplayOfALiveBindKeepsTheThinking(t *testing.T) {
	const step = `{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE",` +
		`"metadata":{"sourceTrajectoryStepInfo":{"stepIndex":1}},"plannerResponse":{"thinking":"Hmm.","response":"Hi."}}`
	capture := func(bind string) string {
		return `{"kind":"capture","version":1,"time":"2026-01-02T15:04:05Z"}` + "\n" +
			`{"kind":"bind","conversation_id":"c","time":"2026-01-02T15:04:05Z"` + bind + "}\n" +
			`{"kind":"snapshot","conversation_id":"c","time":"2026-01-02T15:04:06Z","payload":{"steps":[` +
			`{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE","userInput":{"userResponse":"hello"}},` + step +
			`],"offset":0,"runStatus":"CASCADE_RUN_STATUS_IDLE"}}` + "\n"
	}
	thinking := func(bind string) string {
		text := ""
		require.NoError(t, replayCapture(strings.NewReader(capture(bind)), "replay", func(ev *messages.Event) {
			if ev.Type == messages.EventReasoningDelta {
				text += ev.Delta
			}
		}))
		return text
	}
	assert.Equal(t, "Hmm.", thinking(`,"payload":{"live":true}`))
	assert.Empty(t, thinking(""), "a first read's history")
}
