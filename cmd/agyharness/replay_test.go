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
