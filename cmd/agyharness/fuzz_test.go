package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseCommand: any stdin line is either refused with an error or a
// command that passes its own checks and survives a JSON round trip.
func FuzzParseCommand(f *testing.F) {
	for _, seed := range []string{
		`{"type":"turn","text":"hi"}`,
		`{"type":"turn","text":"hi","model":"MODEL_X"}`,
		`{"type":"resolve","elicitation_id":"c/prompt/4","action":"accept","answers":[{"question":"Q?","selected_option_ids":["1","2"],"write_in":"w"}]}`,
		`{"type":"interrupt"}`, `{"type":"detach"}`, `{"type":"nope"}`, `{}`, `[]`, `{"type":"turn"} {}`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		c, err := parseCommand(line)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if err := checkCommand(c); err != nil {
			t.Fatalf("parsed but fails its checks: %v", err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseCommand(b)
		if err != nil {
			t.Fatalf("round trip refused: %v (%s)", err, b)
		}
		b2, _ := json.Marshal(again)
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed the command:\n%s\n%s", b, b2)
		}
	})
}
