package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/wire"
)

const (
	benchConv = "2399249c-4a48-40f1-bf3b-4c6e5d3a5a0e"
	benchTraj = "efb134b2-d69f-43de-bb54-c9ece346d8a3"
)

// benchMarkdown is n bytes or a little more of what a planner writes:
// headings, lists, code, quotes, a non-ASCII character now and then.
func benchMarkdown(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "### Step %d: check the \"%s\" module\n", i, []string{"session", "poller", "mapper"}[i%3])
		b.WriteString("- Run `go test ./...` and read the output; a failure prints \"FAIL\" with the test's name.\n")
		b.WriteString("- If the build says `undefined: x`, the import is missing → add it.\n\n")
		fmt.Fprintf(&b, "```go\nfunc f%d(s string) error { return fmt.Errorf(\"bad %%q\", s) }\n```\n\n", i)
	}
	return b.String()
}

// benchPlannerStep is a PLANNER_RESPONSE step as agy streams it while it
// generates, compact, with the metadata a streamed copy carries.
func benchPlannerStep(index int, status wire.StepStatus, text string) map[string]any {
	return map[string]any{
		"type":   wire.StepPlannerResponse,
		"status": status,
		"metadata": map[string]any{
			"stepGenerationVersion": 1,
			"createdAt":             "2026-08-02T04:49:11.356933257Z",
			"viewableAt":            "2026-08-02T04:49:12.421632134Z",
			"source":                wire.SourceModel,
			"generatorModel":        "MODEL_PLACEHOLDER_M71",
			"requestedModel":        map[string]any{"model": "MODEL_PLACEHOLDER_M71"},
			"executionId":           "99875cd6-e73c-4e0f-8f1f-eb7505a88330",
			"sourceTrajectoryStepInfo": map[string]any{
				"trajectoryId": benchTraj, "stepIndex": index, "metadataIndex": 5, "cascadeId": benchConv,
			},
		},
		"plannerResponse": map[string]any{
			"thinking":         "**Assessing the request**\n\nThe user wants a status summary; I will read the \"git log\" first, then the tests.",
			"modifiedResponse": text,
			"messageId":        "bot-6f3c1a2e-0d4b-4f6a-9c59-1b2f0e3d4c5a",
		},
	}
}

// benchFrames are the StreamAgentStateUpdates frames of a live planner
// step at index 41 of 42 as it streams: markdown growing by a chunk of
// 50 bytes a frame, from 1.8 KB to 5 KB (frames of 4.6 KB on average).
func benchFrames(tb testing.TB) [][]byte {
	tb.Helper()
	const versions = 64
	text := benchMarkdown(1800)
	chunk := benchMarkdown(versions * 50)
	frames := make([][]byte, versions)
	for v := range frames {
		frame := map[string]any{"update": map[string]any{
			"conversationId": benchConv,
			"trajectoryId":   benchTraj,
			"status":         wire.RunRunning,
			"mainTrajectoryUpdate": map[string]any{"stepsUpdate": map[string]any{
				"indices":     []int{41},
				"steps":       []any{benchPlannerStep(41, wire.StatusGenerating, text+chunk[:v*50])},
				"totalLength": 42,
			}},
		}}
		b, err := json.Marshal(frame)
		if err != nil {
			tb.Fatal(err)
		}
		frames[v] = b
	}
	return frames
}

// benchSnapshot is a GetCascadeTrajectorySteps answer of n finished steps
// (a turn, a planner answer, a command, a checkpoint, over and over), the
// last one live with text.
func benchSnapshot(tb testing.TB, n int, text string) []byte {
	tb.Helper()
	steps := make([]any, n)
	for i := range steps {
		info := map[string]any{"trajectoryId": benchTraj, "stepIndex": i, "cascadeId": benchConv}
		switch {
		case i == n-1:
			steps[i] = benchPlannerStep(i, wire.StatusGenerating, text)
		case i%4 == 0:
			steps[i] = map[string]any{"type": wire.StepUserInput, "status": wire.StatusDone,
				"metadata":  map[string]any{"source": wire.SourceUserExplicit, "createdAt": "2026-08-02T04:49:11Z", "sourceTrajectoryStepInfo": info},
				"userInput": map[string]any{"items": []any{map[string]any{"text": fmt.Sprintf("turn %d: what changed?", i)}}, "userResponse": fmt.Sprintf("turn %d: what changed?", i)}}
		case i%4 == 1:
			steps[i] = benchPlannerStep(i, wire.StatusDone, benchMarkdown(1200))
		case i%4 == 2:
			steps[i] = map[string]any{"type": wire.StepRunCommand, "status": wire.StatusDone,
				"metadata":   map[string]any{"source": wire.SourceModel, "toolCall": map[string]any{"id": fmt.Sprintf("call-%d", i), "name": "run_command", "argumentsJson": `{"CommandLine":"git status"}`}, "sourceTrajectoryStepInfo": info},
				"runCommand": map[string]any{"commandLine": "git status", "cwd": "/work", "combinedOutput": map[string]any{"full": "On branch main\nnothing to commit, working tree clean\n"}}}
		default:
			steps[i] = map[string]any{"type": wire.StepCheckpoint, "status": wire.StatusDone,
				"metadata":   map[string]any{"source": wire.SourceSystem, "modelUsage": map[string]any{"model": "MODEL_PLACEHOLDER_M71", "inputTokens": "13614", "outputTokens": "472"}, "sourceTrajectoryStepInfo": info},
				"checkpoint": map[string]any{"intentOnly": true}}
		}
	}
	b, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkDecodeFrame decodes the frames of a streaming planner step
// (benchFrames) in turn: v1 with encoding/json (the reference), v2 as
// DecodeFrame does, and stream as Stream.Next does (v2, the texts through
// the stream's textcache.Cache: each frame unquotes only the chunk it adds;
// the first frame of each cycle of 64 decodes whole, as a new answer does).
// stream against v2 is the text cache's gain.
func BenchmarkDecodeFrame(b *testing.B) {
	frames := benchFrames(b)
	var size int
	for _, f := range frames {
		size += len(f)
	}
	decoders := []struct {
		name   string
		decode func() func([]byte) (*StreamFrame, error)
	}{
		{"v1", func() func([]byte) (*StreamFrame, error) {
			return func(payload []byte) (*StreamFrame, error) {
				f := new(StreamFrame)
				return f, json.Unmarshal(payload, f)
			}
		}},
		{"v2", func() func([]byte) (*StreamFrame, error) { return DecodeFrame }},
		{"stream", func() func([]byte) (*StreamFrame, error) { return new(frameDecoder).decode }},
	}
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			decode := d.decode()
			b.SetBytes(int64(size / len(frames)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f, err := decode(frames[i%len(frames)])
				if err != nil {
					b.Fatal(err)
				}
				if len(f.Update.MainTrajectoryUpdate.StepsUpdate.Steps) != 1 {
					b.Fatal("no step decoded")
				}
				i++
			}
		})
	}
}

// BenchmarkDecodeSnapshot decodes a GetCascadeTrajectorySteps answer of
// 1,000 steps: v1 with encoding/json (the reference), v2 whole
// (GetCascadeTrajectorySteps), and v2 reusing the previous read
// (GetCascadeTrajectoryStepsReusing, through the steps filter) when nothing
// changed and when the live last step grew. v2-reuse-* against v2 is the
// reuse's gain.
func BenchmarkDecodeSnapshot(b *testing.B) {
	const n = 1000
	text := benchMarkdown(3000)
	body := benchSnapshot(b, n, text)
	grown := benchSnapshot(b, n, text+"One more sentence.")
	prev, err := wire.DecodeStepsReusing(bytes.NewReader(body), nil)
	if err != nil || len(prev) != n {
		b.Fatalf("snapshot: %d steps, %v", len(prev), err)
	}
	cases := []struct {
		name   string
		body   []byte
		decode func([]byte) ([]wire.Step, error)
	}{
		{"v1", body, func(data []byte) ([]wire.Step, error) {
			var resp StepsResponse
			err := json.Unmarshal(data, &resp)
			return resp.Steps, err
		}},
		{"v2", body, func(data []byte) ([]wire.Step, error) { return wire.DecodeStepsReusing(bytes.NewReader(data), nil) }},
		{"v2-reuse-unchanged", body, func(data []byte) ([]wire.Step, error) { return wire.DecodeStepsReusing(bytes.NewReader(data), prev) }},
		{"v2-reuse-last-grew", grown, func(data []byte) ([]wire.Step, error) { return wire.DecodeStepsReusing(bytes.NewReader(data), prev) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				steps, err := c.decode(c.body)
				if err != nil || len(steps) != n {
					b.Fatalf("%d steps, %v", len(steps), err)
				}
			}
		})
	}
}
