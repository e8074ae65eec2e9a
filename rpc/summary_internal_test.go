package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The entry found by its key is the one the whole answer's decode gives,
// whatever else names the id; where the key is not certain the whole answer
// is decoded.
func TestSummaryInMatchesTheWholeDecode(t *testing.T) {
	const conv = "0b5c2a9e-7d1f-4c3e-9a8b-1f2e3d4c5b6a"
	entry := `{"status":"CASCADE_RUN_STATUS_IDLE","stepCount":"12","lastUserInputStepIndex":"10","lastUserInputTime":"2026-12-01T10:00:00Z"}`
	child := `{"status":"CASCADE_RUN_STATUS_RUNNING","stepCount":"3","trajectoryMetadata":{"parentConversationId":"` + conv + `","rootConversationId":"` + conv + `"}}`
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `"c-%d":%s,`, i, child)
		}
		return b.String()
	}
	cases := map[string]struct {
		body  string
		found bool // by its key alone
	}{
		"after children naming it":   {`{"trajectorySummaries":{` + many(3) + `"` + conv + `":` + entry + `}}`, true},
		"first, spaced":              {`{ "trajectorySummaries" : { "` + conv + `" :` + entry + ` , ` + strings.TrimSuffix(many(2), ",") + `} }`, true},
		"named in a string":          {`{"trajectorySummaries":{"x":{"trajectoryId":"\"` + conv + `\": {}"},"` + conv + `":` + entry + `}}`, true},
		"after an escaped backslash": {`{"trajectorySummaries":{"x":{"trajectoryId":"\\"},"` + conv + `":` + entry + `}}`, true},
		"not listed":                 {`{"trajectorySummaries":{` + strings.TrimSuffix(many(2), ",") + `}}`, false},
		"key escaped":                {`{"trajectorySummaries":{"\u0030` + conv[1:] + `":` + entry + `}}`, false},
		"twice":                      {`{"trajectorySummaries":{"` + conv + `":{"stepCount":"1"},"` + conv + `":` + entry + `}}`, false},
		"empty":                      {`{}`, false},
		"no body":                    {``, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var want TrajectoriesResponse
			if tc.body != "" {
				require.NoError(t, wire.Unmarshal([]byte(tc.body), &want))
			}
			_, found := findSummary([]byte(tc.body), conv)
			assert.Equal(t, tc.found, found, "found by its key alone")
			got, ok, err := summaryIn([]byte(tc.body), conv)
			require.NoError(t, err)
			w, wok := want.TrajectorySummaries[conv]
			assert.Equal(t, wok, ok)
			assert.Equal(t, w, got)
		})
	}
	_, _, err := summaryIn([]byte(`{"trajectorySummaries":{`), conv)
	assert.Error(t, err, "a broken answer is an error")
	_, found := findSummary([]byte(`{"trajectorySummaries":{"a\"b":{}}}`), `a"b`)
	assert.False(t, found, "an id needing escapes is not looked for by its key")
}

// A long list's summary is read without decoding the list: the allocations
// do not grow with it.
func TestFindSummaryAllocatesNothingPerListedConversation(t *testing.T) {
	const conv = "0b5c2a9e-7d1f-4c3e-9a8b-1f2e3d4c5b6a"
	body := func(n int) []byte {
		all := TrajectoriesResponse{TrajectorySummaries: map[string]TrajectorySummary{conv: {Status: wire.RunIdle, StepCount: 4}}}
		for i := range n {
			all.TrajectorySummaries[fmt.Sprintf("c-%d", i)] = TrajectorySummary{Status: wire.RunIdle, StepCount: 9,
				TrajectoryMetadata: TrajectoryMetadata{ParentConversationID: conv, RootConversationID: conv}}
		}
		data, err := json.Marshal(all)
		require.NoError(t, err)
		return data
	}
	small, large := body(10), body(1000)
	allocs := func(data []byte) float64 {
		return testing.AllocsPerRun(20, func() {
			if _, ok := findSummary(data, conv); !ok {
				t.Fatal("not found")
			}
		})
	}
	// A whole decode allocates thousands more for 1,000; -race may add one.
	assert.LessOrEqual(t, allocs(large), allocs(small)+2)
}

// A keyFinder finds what bytes.Index finds, from any offset, whatever the
// text: its byte rare, common, or common only outside the sample it was
// chosen on (the fall back to bytes.Index).
func TestKeyFinderFindsWhatBytesIndexFinds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]string{`ab"`, `abc:"{}`, "a"}).Draw(t, "alphabet")
		letter := rapid.SampledFrom([]byte(alphabet))
		text := func(label string, max int) []byte {
			return rapid.SliceOfN(letter, 0, max).Draw(t, label)
		}
		key := rapid.SliceOfN(letter, 2, 6).Draw(t, "key")
		sample := text("sample", 2*keyFinderWindows*keyFinderWindow)
		data := append(append(sample, text("rest", 3000)...), key...)
		data = append(data, text("tail", 40)...)
		from := rapid.IntRange(0, len(data)).Draw(t, "from")
		want := bytes.Index(data[from:], key)
		if want >= 0 {
			want += from
		}
		if got := newKeyFinder(key, data).index(data, from); got != want {
			t.Fatalf("index(%q, %d) = %d, bytes.Index gives %d", key, from, got, want)
		}
	})
}

// In a list of 1,000 conversations with ids and times of every hex digit,
// the entry is found by its key alone, after children naming it and
// before another entry whose key differs from it in its last character.
func TestFindSummaryInALongListOfUUIDs(t *testing.T) {
	const conv = "7c3e1a55-2b9d-4f6e-8a10-c4d2e9f1b370"
	all := ListedWith(conv, TrajectorySummary{Status: wire.RunRunning, StepCount: 41}, 1000, conv)
	all.TrajectorySummaries[conv[:len(conv)-1]+"1"] = TrajectorySummary{Status: wire.RunIdle, StepCount: 7}
	all.TrajectorySummaries["0"+conv[1:]] = TrajectorySummary{Status: wire.RunIdle, StepCount: 8}
	data, err := json.Marshal(all)
	require.NoError(t, err)
	got, ok := findSummary(data, conv)
	require.True(t, ok, "found by its key alone")
	assert.Equal(t, all.TrajectorySummaries[conv], got)
}
