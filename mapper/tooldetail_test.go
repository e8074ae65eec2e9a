package mapper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// TestADetailDecodesOnlyWhatItReads: a call and a result that read
// different members of a body decode different structs, so a member one of
// them does not read cannot take its detail away. A malformed startLine
// stops view_file's call at that member (the file, before it, is kept) but
// not its result, which tells the size; a query that is not a string loses
// internal_search's title but not its hits.
func TestADetailDecodesOnlyWhatItReads(t *testing.T) {
	cases := []struct {
		typ       wire.StepType
		body      string
		title     string
		output    string
		locations []messages.Location
	}{{
		typ:       wire.StepViewFile,
		body:      `"viewFile":{"absolutePathUri":"file:///w/main.go","startLine":"nine","numLines":20,"numBytes":300}`,
		title:     "Read /w/main.go",
		output:    "/w/main.go: 20 lines, 300 bytes",
		locations: []messages.Location{{Path: "/w/main.go"}},
	}, {
		typ:    "CORTEX_STEP_TYPE_INTERNAL_SEARCH",
		body:   `"internalSearch":{"query":5,"results":[{"url":"https://intra.example/x","title":"Oncall"}]}`,
		title:  "Searched", // the toolSummary: no title of its own
		output: "Oncall https://intra.example/x",
	}}
	for _, c := range cases {
		s := stepOf(t, c.typ, wire.StatusDone, `,"toolSummary":"Searched"`, c.body)
		evs := newTestReconciler().Apply(FromSnapshot([]wire.Step{s}, "", at(0)))
		require.Equal(t, []string{"function_call", "function_call_output"}, types(evs), c.typ)
		assert.Equal(t, c.title, evs[0].Title, c.typ)
		assert.Equal(t, c.locations, evs[0].Locations, c.typ)
		assert.Equal(t, c.output, evs[1].Output, c.typ)
	}
}
