package rpc

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/agyharness/agyharness/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Seeds of the differential fuzz target, besides the recorded steps and the
// repository's testdata: where encoding/json is lenient, and where v1 and
// v2 are known to part ways unless told not to.
var decodeEdgeSeeds = []string{
	`{"Type":"X","STATUS":"CORTEX_STEP_STATUS_DONE","metadata":{"SourceTrajectoryStepInfo":{"StepIndex":"3"}}}`,
	`{"metadata":{"sourceTrajectoryStepInfo":{"step_index":3,"step-index":4,"trajectory_id":"t"}}}`,
	`{"type":"A","type":"B","metadata":{"source":"x"},"metadata":{"executionId":"y"}}`,
	`{"metadata":{"source":"x"},"metadata":null,"type":"A","type":null}`,
	`{"plannerResponse":{"thinking":"a"},"plannerResponse":{"response":"b"}}`,
	// A repeated steps array decodes into the first one's elements: each
	// step is replaced whole, as v1's UnmarshalJSON does, not merged.
	`{"update":{"mainTrajectoryUpdate":{"stepsUpdate":{"steps":[{"type":"A","status":"S"}],"steps":[{"type":"B"}]}}}}`,
	`{"steps":[{"type":"A","status":"S"}],"steps":[{"type":"B"}]}`,
	`{"plannerResponse":{"toolCalls":[{"id":"1","name":"n"}]},"plannerResponse":{"toolCalls":[{"name":"m"}]}}`,
	"{\"type\":\"\xff\xfe\",\"plannerResponse\":{\"thinking\":\"caf\xc3\"}}",
	`{"plannerResponse":{"thinking":"\ud800 \udc00 \ud83d\ude00 \u0000"}}`,
	`{"metadata":{"modelUsage":{"inputTokens":"1e3","outputTokens":3.0,"cacheReadTokens":null}}}`,
	`{"metadata":{"sourceTrajectoryStepInfo":{"stepIndex":"\u0037"}}}`,
	`{"runCommand":{"exitCode":1.5}}`,
	`{"viewFile":null,"generic":{"args":null,"result":null},"checkpoint":{"a":[1,2,{}]}}`,
	`{"completedInteractions":[{"response":{"permission":{"allow":true}}},null]}`,
	`{"unknown":{"deep":[[[{"x":"y"}]]]},"type":"T"}`,
	`null`, `{}`, `[]`, `"step"`, `7`, ` {"type":"T"} `, `{"type":"T"} {}`, `{"type":`,
	`{"update":{"mainTrajectoryUpdate":{"stepsUpdate":{"indices":["1",2,null],"steps":[null,{},{"type":"T"}],"totalLength":"3"}}}}`,
	`{"Update":{"Status":"CASCADE_RUN_STATUS_IDLE","ConversationId":"c"}}`,
	`{"update":{"mainTrajectoryUpdate":{"stepsUpdate":{"steps":[{"type":"A"}]},"stepsUpdate":{"steps":[]}}}}`,
	`{"steps":[{"type":"A"},{"type":"B"}],"steps":[{"type":"C"}]}`,
	`{"steps":null}`, `{"steps":[]}`, `{"Steps":[{"type":"A"}]}`, `{"steps":{}}`, `{"steps":[1]}`,
}

// decodeSeeds is every file of the recorded agy steps, every file (and every
// line of every .jsonl) of the repository's testdata, the recorded steps
// wrapped in a frame and in a steps answer, and decodeEdgeSeeds.
func decodeSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var seeds, steps [][]byte
	const recordedDir = "../testdata/agy-steps"
	add := func(root string, recorded bool) {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if !recorded && path == recordedDir {
					return filepath.SkipDir // added as recorded steps
				}
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				tb.Fatal(err)
			}
			seeds = append(seeds, data)
			if filepath.Ext(path) == ".jsonl" {
				for _, line := range bytes.Split(data, []byte("\n")) {
					if len(bytes.TrimSpace(line)) > 0 {
						seeds = append(seeds, line)
					}
				}
			}
			if recorded && filepath.Ext(path) == ".json" {
				steps = append(steps, bytes.TrimSpace(data))
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	add(recordedDir, true)
	add("../testdata", false)
	if len(steps) == 0 {
		tb.Fatalf("no recorded steps in %s", recordedDir)
	}
	for i, s := range steps {
		seeds = append(seeds, []byte(`{"update":{"conversationId":"c","status":"CASCADE_RUN_STATUS_RUNNING","mainTrajectoryUpdate":{"stepsUpdate":{"indices":[`+
			itoa(i)+`],"steps":[`+string(s)+`],"totalLength":`+itoa(len(steps))+`}}}}`))
	}
	seeds = append(seeds, append(append([]byte(`{"steps":[`), bytes.Join(steps, []byte(","))...), "]}"...))
	for _, s := range decodeEdgeSeeds {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

func itoa(i int) string { return string(must(json.Marshal(i))) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// sameDecode decodes data into a T with encoding/json and with json v2 as
// Stream.Next and Client.Call do, and fails unless both fail or both give
// equal values. It returns v1's value and whether it decoded.
func sameDecode[T any](t *testing.T, data []byte) (T, bool) {
	t.Helper()
	var v1, v2 T
	err1 := json.Unmarshal(data, &v1)
	err2 := wire.Unmarshal(data, &v2)
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("%T from %q: encoding/json says %v, json v2 says %v", v1, data, err1, err2)
	}
	if err1 != nil {
		return v1, false
	}
	require.Equal(t, v1, v2, "%T from %q", v1, data)
	return v1, true
}

// FuzzDecodeV1V2 is the differential test of the switch to json v2: for any
// input, a Step, a StreamFrame and a steps answer decode with json v2 (and
// with decodeStepsReusing, reusing nothing, everything, or an unrelated
// previous read) exactly as they did with encoding/json, or both fail.
//
// Differences found and how each was resolved (all in v1's favour, through
// decodeOptions, so nothing agy may send reads differently):
//   - v2 matches names case-insensitively only when told, and then also
//     ignores '_' and '-' ("step_index" set stepIndex): MatchCaseInsensitiveNames
//     with v1's MatchCaseSensitiveDelimiter.
//   - v2 rejects invalid UTF-8 and repeated names: AllowInvalidUTF8,
//     AllowDuplicateNames.
//   - v2 zeroes a struct or string on a later null of a repeated name where
//     v1 keeps it: MergeWithLegacySemantics.
func FuzzDecodeV1V2(f *testing.F) {
	for _, seed := range decodeSeeds(f) {
		f.Add(seed)
	}
	var unrelated []wire.Step
	data, err := os.ReadFile("../testdata/agy-steps/run_command_done.json")
	if err != nil {
		f.Fatal(err)
	}
	unrelated = must(wire.DecodeStepsReusing(bytes.NewReader(append(append([]byte(`{"steps":[{"type":"A"},`), data...), "]}"...)), nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, ok := sameDecode[wire.Step](t, data); ok {
			require.True(t, json.Valid(s.Raw) || !json.Valid(data), "Raw %q", s.Raw)
		}
		sameDecode[StreamFrame](t, data)
		want, ok := sameDecode[StepsResponse](t, data)
		for _, prev := range [][]wire.Step{nil, want.Steps, unrelated} {
			got, err := wire.DecodeStepsReusing(bytes.NewReader(data), prev)
			if !ok {
				require.Error(t, err, "decodeStepsReusing accepted what encoding/json refused: %q", data)
				continue
			}
			require.NoError(t, err)
			require.Equal(t, want.Steps, got)
		}
	})
}

// rawData is the address of a step's raw bytes: equal for a reused step.
func rawData(s wire.Step) *byte { return unsafe.SliceData(s.Raw) }

func TestDecodeStepsReusing(t *testing.T) {
	step := func(i int, text string) string {
		return `{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":` +
			itoa(i) + `}},"plannerResponse":{"response":` + string(must(json.Marshal(text))) + `}}`
	}
	body := func(steps ...string) []byte {
		return []byte(`{"steps":[` + string(bytes.Join(func() [][]byte {
			out := make([][]byte, len(steps))
			for i, s := range steps {
				out[i] = []byte(s)
			}
			return out
		}(), []byte(","))) + `]}`)
	}
	first := body(step(0, "a"), step(1, "b"), step(2, "c"))
	prev, err := wire.DecodeStepsReusing(bytes.NewReader(first), nil)
	require.NoError(t, err)
	require.Len(t, prev, 3)

	tests := []struct {
		name   string
		body   []byte
		reused []bool // per step of the answer: prev[i] taken as it is
		texts  []string
	}{
		{"unchanged", first, []bool{true, true, true}, []string{"a", "b", "c"}},
		{"one changed", body(step(0, "a"), step(1, "b, longer"), step(2, "c")), []bool{true, false, true}, []string{"a", "b, longer", "c"}},
		{"last shrank", body(step(0, "a"), step(1, "b"), step(2, "")), []bool{true, true, false}, []string{"a", "b", ""}},
		{"grew by one", body(step(0, "a"), step(1, "b"), step(2, "c"), step(3, "d")), []bool{true, true, true, false}, []string{"a", "b", "c", "d"}},
		{"got shorter", body(step(0, "a"), step(1, "b")), []bool{true, true}, []string{"a", "b"}},
		{"history rewritten", body(step(0, "a"), step(1, "c"), step(2, "b")), []bool{true, false, false}, []string{"a", "c", "b"}},
		{"spacing differs", body(step(0, "a"), " "+step(1, "b"), step(2, "c")), []bool{true, true, true}, []string{"a", "b", "c"}},
		{"reformatted", body(step(0, "a"), step(1, "b")[:1]+" "+step(1, "b")[1:], step(2, "c")), []bool{true, false, true}, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.DecodeStepsReusing(bytes.NewReader(tt.body), prev)
			require.NoError(t, err)
			require.Len(t, got, len(tt.reused))
			var want StepsResponse
			require.NoError(t, json.Unmarshal(tt.body, &want))
			require.Equal(t, want.Steps, got, "the same steps as a decode from scratch")
			for i, reused := range tt.reused {
				require.Equal(t, tt.texts[i], got[i].PlannerResponse.Response)
				require.Equal(t, i, got[i].Index())
				if reused {
					require.Same(t, rawData(prev[i]), rawData(got[i]), "step %d reused", i)
					require.Same(t, prev[i].PlannerResponse, got[i].PlannerResponse, "step %d reused", i)
				} else {
					require.NotSame(t, prev[i%len(prev)].PlannerResponse, got[i].PlannerResponse, "step %d decoded", i)
				}
			}
		})
	}
}

func TestDecodeStepsReusingEmptyAndMalformed(t *testing.T) {
	prev, err := wire.DecodeStepsReusing(bytes.NewReader([]byte(`{"steps":[{"type":"A"},{"type":"B"}]}`)), nil)
	require.NoError(t, err)

	got, err := wire.DecodeStepsReusing(bytes.NewReader([]byte(`{}`)), prev)
	require.NoError(t, err)
	require.Nil(t, got, "no steps member: nil, as a plain decode")
	got, err = wire.DecodeStepsReusing(bytes.NewReader([]byte(`{"steps":[]}`)), prev)
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Empty(t, got)

	for _, bad := range []string{
		`{"steps":[{"type":"A"},{"type":7}]}`,
		`{"steps":[{"type":"A"},{"type":"B"]}`,
		`{"steps":[{"type":"A"},{"metadata":{"sourceTrajectoryStepInfo":{"stepIndex":"x"}}}]}`,
		`{"steps":{"type":"A"}}`,
		`{"steps":[{"type":"A"}]} trailing`,
	} {
		_, err := wire.DecodeStepsReusing(bytes.NewReader([]byte(bad)), prev)
		require.Error(t, err, bad)
	}
}

// Frames and answers are read into buffers of their own, so a decoded
// step's Raw is a slice of that buffer, not a copy (one 4 KiB copy less per
// frame), capped so that appending to it cannot write over the next bytes.
func TestDecodedStepsKeepTheirBytesInPlace(t *testing.T) {
	step := `{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_GENERATING","plannerResponse":{"modifiedResponse":"Hello"}}`
	frame := []byte(`{"update":{"mainTrajectoryUpdate":{"stepsUpdate":{"indices":[0,1],"steps":[` + step + `,` + step + `]}}}}`)
	f, err := DecodeFrame(frame)
	require.NoError(t, err)
	steps := f.Update.MainTrajectoryUpdate.StepsUpdate.Steps
	require.Len(t, steps, 2)
	for _, s := range steps {
		require.Equal(t, step, string(s.Raw))
		require.True(t, within(s.Raw, frame), "Raw is a slice of the frame")
		require.Equal(t, len(s.Raw), cap(s.Raw), "Raw is capped")
	}
	grown := append(steps[0].Raw, '!')
	require.Equal(t, step, string(steps[1].Raw), "an append to one Raw leaves the next step alone")
	require.NotEqual(t, string(grown), string(frame))

	answer := []byte(`{"steps":[` + step + `]}`)
	var resp StepsResponse
	require.NoError(t, wire.Unmarshal(answer, &resp))
	require.True(t, within(resp.Steps[0].Raw, answer), "an answer's steps too")
	changed := []byte(`{"steps":[` + step + `,` + step + `]}`)
	got, err := wire.DecodeStepsReusing(bytes.NewReader(changed), resp.Steps)
	require.NoError(t, err)
	require.Equal(t, step, string(got[1].Raw))
	require.False(t, within(got[1].Raw, changed), "a step decoded while reusing a read has bytes of its own (the answer is read as a stream)")
	require.Same(t, rawData(resp.Steps[0]), rawData(got[0]), "and the unchanged one is reused")
}

// within says whether b lies in buf.
func within(b, buf []byte) bool {
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(buf))
}

// TestDecodeStepsReusingReadsAsItGoes decodes an unchanged trajectory of
// 1 MiB from a reader that hands out 16 KiB at a time, as an HTTP/2 body
// does: the decoder holds a step or so at a time, never the answer.
func TestDecodeStepsReusingReadsAsItGoes(t *testing.T) {
	data := []byte(PlannerAnswer(100, strings.Repeat("z", 10<<10)))
	prev, err := wire.DecodeStepsReusing(bytes.NewReader(data), nil)
	require.NoError(t, err)
	require.Len(t, prev, 100)
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.DecodeStepsReusing(iotest.HalfReader(&chunks{r: bytes.NewReader(data), n: 16 << 10}), prev); err != nil {
				b.Fatal(err)
			}
		}
	})
	t.Logf("%d bytes allocated per read of an answer of %d", res.AllocedBytesPerOp(), len(data))
	assert.Less(t, res.AllocedBytesPerOp(), int64(len(data)/8))
}

// chunks reads r at most n bytes at a time.
type chunks struct {
	r io.Reader
	n int
}

func (c *chunks) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }
