package rpc

import (
	"fmt"
	"hash/maphash"
	"maps"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/wire"
	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// cacheOf is what l holds, each entry's T the summary itself.
func cacheOf(l *SummaryCache[TrajectorySummary]) map[string]TrajectorySummary {
	m := map[string]TrajectorySummary{}
	for id, s := range l.All() {
		m[id] = s
	}
	return m
}

// wholeDecode is what GetAllCascadeTrajectories gives for body (an empty
// map for none), and whether it is an error.
func wholeDecode(body string) (map[string]TrajectorySummary, bool) {
	if strings.TrimSpace(body) == "" {
		body = "{}"
	}
	var all TrajectoriesResponse
	if err := wire.Unmarshal([]byte(body), &all); err != nil {
		return map[string]TrajectorySummary{}, true
	}
	m := map[string]TrajectorySummary{}
	maps.Copy(m, all.TrajectorySummaries)
	return m, false
}

func identity(_ string, s TrajectorySummary) TrajectorySummary { return s }

// Whatever the answer, read into an empty cache or one warm from another
// answer, the cache holds what the whole decode gives, and fails where it
// fails; where the answer's shape is not certain it is decoded whole.
func TestSummaryCacheMatchesTheWholeDecode(t *testing.T) {
	const conv = "0b5c2a9e-7d1f-4c3e-9a8b-1f2e3d4c5b6a"
	entry := `{"status":"CASCADE_RUN_STATUS_IDLE","stepCount":"12","lastUserInputStepIndex":"10","lastUserInputTime":"2026-12-01T10:00:00Z"}`
	child := `{"status":"CASCADE_RUN_STATUS_RUNNING","stepCount":"3","trajectoryMetadata":{"parentConversationId":"` + conv + `","rootConversationId":"` + conv + `"}}`
	warm := `{"trajectorySummaries":{"` + conv + `":{"stepCount":"4"},"c-0":` + child + `,"gone":` + entry + `}}`
	cases := map[string]struct {
		body    string
		inPlace bool // read entry by entry
	}{
		"plain":                    {`{"trajectorySummaries":{"` + conv + `":` + entry + `,"c-0":` + child + `}}`, true},
		"spaced, other members":    {` { "x" : [1,{"trajectorySummaries":{}}] , "trajectorySummaries" : { "` + conv + `" : ` + entry + ` } , "y":null } `, true},
		"empty list":               {`{"trajectorySummaries":{}}`, true},
		"no list":                  {`{}`, true},
		"no body":                  {``, false},
		"null":                     {`null`, false},
		"list null":                {`{"trajectorySummaries":null}`, false},
		"list named in other case": {`{"TrajectorySummaries":{"` + conv + `":` + entry + `}}`, false},
		"list twice":               {`{"trajectorySummaries":{"a":` + entry + `},"trajectorySummaries":{"b":` + child + `}}`, false},
		"list and its other case":  {`{"trajectorySummaries":{"a":` + entry + `},"trajectorysummaries":{"b":` + child + `}}`, false},
		"entry twice":              {`{"trajectorySummaries":{"` + conv + `":{"stepCount":"1"},"` + conv + `":` + entry + `}}`, false},
		"key escaped":              {`{"trajectorySummaries":{"\u0030` + conv[1:] + `":` + entry + `}}`, false},
		"key not UTF-8":            {"{\"trajectorySummaries\":{\"a\xffb\":" + entry + "}}", false},
		"entry null":               {`{"trajectorySummaries":{"` + conv + `":null}}`, false},
		"entry not an object":      {`{"trajectorySummaries":{"` + conv + `":"x"}}`, false},
		"field in other case":      {`{"trajectorySummaries":{"` + conv + `":{"StepCount":"7","stepcount":"8"}}}`, true},
		"entry field twice":        {`{"trajectorySummaries":{"` + conv + `":{"stepCount":"7","stepCount":"8"}}}`, true},
		"text not UTF-8":           {"{\"trajectorySummaries\":{\"a\":{\"trajectoryId\":\"x\xffy\"}}}", true},
		"a second value":           {`{"trajectorySummaries":{}} {}`, false},
		"broken":                   {`{"trajectorySummaries":{"a":{`, false},
		"a bad field":              {`{"trajectorySummaries":{"a":{"stepCount":"many"}}}`, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, wantErr := wholeDecode(tc.body)
			for _, start := range []string{"", warm} {
				var l SummaryCache[TrajectorySummary]
				if start != "" {
					require.NoError(t, l.update([]byte(start), identity))
				}
				err := l.update([]byte(tc.body), identity)
				assert.Equal(t, wantErr, err != nil, "an error where the whole decode fails: %v", err)
				assert.Equal(t, want, cacheOf(&l))
			}
			var l SummaryCache[TrajectorySummary]
			l.seed, l.seeded = maphash.MakeSeed(), true
			assert.Equal(t, tc.inPlace, l.scan([]byte(tc.body), identity), "read entry by entry")
		})
	}
}

// Over any run of answers (entries added, changed, dropped, repeated,
// broken), the cache after each read holds what the whole decode of that
// answer gives.
func TestSummaryCacheFollowsAnyRunOfAnswers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := []string{"a", "b", "c", "0b5c2a9e", "d-e_f"}
		fields := []string{`"stepCount":"1"`, `"stepCount":"2"`, `"status":"CASCADE_RUN_STATUS_IDLE"`,
			`"lastModifiedTime":"2026-12-01T10:00:00Z"`, `"trajectoryMetadata":{"parentConversationId":"a"}`, `"StepCount":"3"`}
		answer := func() string {
			var b strings.Builder
			b.WriteString(`{"trajectorySummaries":{`)
			n := rapid.IntRange(0, 6).Draw(t, "entries")
			for i := range n {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%q:", rapid.SampledFrom(ids).Draw(t, "id"))
				switch rapid.IntRange(0, 9).Draw(t, "value") {
				case 0:
					b.WriteString("null")
				case 1:
					b.WriteString(`{"stepCount":`) // broken
				default:
					b.WriteString("{")
					for j := range rapid.IntRange(0, 3).Draw(t, "fields") {
						if j > 0 {
							b.WriteString(",")
						}
						b.WriteString(rapid.SampledFrom(fields).Draw(t, "field"))
					}
					b.WriteString("}")
				}
			}
			b.WriteString("}}")
			return b.String()
		}
		var l SummaryCache[TrajectorySummary]
		var body string
		for range rapid.IntRange(1, 8).Draw(t, "reads") {
			if body == "" || rapid.IntRange(0, 3).Draw(t, "again") > 0 {
				body = answer() // else the last answer again, to the byte
			}
			want, wantErr := wholeDecode(body)
			err := l.update([]byte(body), identity)
			if wantErr != (err != nil) {
				t.Fatalf("%s: error %v, whole decode fails: %v", body, err, wantErr)
			}
			if got := cacheOf(&l); !maps.Equal(want, got) {
				t.Fatalf("%s:\n got %v\nwant %v", body, got, want)
			}
		}
	})
}

// An entry read again unchanged is not derived again, and reading a long
// list unchanged allocates no more than reading a short one.
func TestSummaryCacheDerivesOnlyWhatChanged(t *testing.T) {
	const conv = "0b5c2a9e-7d1f-4c3e-9a8b-1f2e3d4c5b6a"
	body := func(n, steps int) []byte {
		all := TrajectoriesResponse{TrajectorySummaries: map[string]TrajectorySummary{conv: {Status: wire.RunIdle, StepCount: wire.Int(steps)}}}
		for i := range n {
			all.TrajectorySummaries[fmt.Sprintf("c-%d", i)] = TrajectorySummary{Status: wire.RunIdle, StepCount: 9,
				LastModifiedTime:   "2026-11-30T10:00:02.123456789Z",
				TrajectoryMetadata: TrajectoryMetadata{ParentConversationID: conv, RootConversationID: conv}}
		}
		data, err := json.Marshal(all)
		require.NoError(t, err)
		return data
	}
	var derived []string
	count := func(id string, s TrajectorySummary) TrajectorySummary {
		derived = append(derived, id)
		return s
	}
	var l SummaryCache[TrajectorySummary]
	require.NoError(t, l.update(body(100, 4), count))
	assert.Len(t, derived, 101)
	derived = nil
	require.NoError(t, l.update(body(100, 5), count))
	assert.Equal(t, []string{conv}, derived, "only the conversation that changed")
	s, ok := l.Get(conv)
	assert.True(t, ok)
	assert.EqualValues(t, 5, s.StepCount)
	derived = nil
	require.NoError(t, l.update(body(99, 5), count))
	assert.Empty(t, derived)
	_, ok = l.Get("c-99")
	assert.False(t, ok, "a conversation no longer listed leaves")
	assert.Equal(t, 100, l.Len())

	allocs := func(data []byte) float64 {
		var l SummaryCache[TrajectorySummary]
		require.NoError(t, l.update(data, identity))
		return testing.AllocsPerRun(20, func() {
			if err := l.update(data, identity); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := body(10, 4), body(1000, 4)
	assert.LessOrEqual(t, allocs(large), allocs(small)+2) // -race may add one
}

// An answer the same to the byte as the last one read without error is
// not scanned again (a scan allocates its decoder); one read after an
// error, or one that differs, is.
func TestSummaryCacheSkipsTheLastAnswerAgain(t *testing.T) {
	list := []byte(`{"trajectorySummaries":{"a":{"stepCount":"1"},"b":{"stepCount":"2"}}}`)
	changed := []byte(`{"trajectorySummaries":{"a":{"stepCount":"1"},"b":{"stepCount":"3"}}}`)
	broken := []byte(`{"trajectorySummaries":{"a":{`)
	var l SummaryCache[TrajectorySummary]
	require.NoError(t, l.update(list, identity))
	assert.Zero(t, testing.AllocsPerRun(10, func() { require.NoError(t, l.update(list, identity)) }), "the last answer again")
	assert.NotZero(t, testing.AllocsPerRun(10, func() {
		require.NoError(t, l.update(changed, identity))
		require.NoError(t, l.update(list, identity))
	}), "answers that differ are scanned")

	require.Error(t, l.update(broken, identity))
	require.Error(t, l.update(broken, identity), "a failed answer again fails again")
	assert.Zero(t, l.Len())
	require.NoError(t, l.update(list, identity))
	want, _ := wholeDecode(string(list))
	assert.Equal(t, want, cacheOf(&l))
}
