package rpc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
