package bench

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// frameCostSizes are the trajectory lengths frame cost is measured at.
var frameCostSizes = []int{10, 100, 1000}

const frameCostConv = "c0ffee00-0000-4000-8000-000000000000"

// frameCost measures what one stream frame carrying one changed step costs
// the harness's read path — decoding the frame's JSON into rpc.StreamFrame as the stream does (rpc.DecodeFrame)
// and running it through a conversation's mapper.Reconciler — when the
// trajectory already holds n-1 finished steps. It returns nanoseconds per
// frame by trajectory length: the best of rounds (the least disturbed by
// other work on the machine). The session's publish is the same for every
// length and is measured by actors' BenchmarkSessionFrame.
func frameCost(framesPerRound, rounds int) (map[int]float64, error) {
	out := map[int]float64{}
	for _, n := range frameCostSizes {
		best := 0.0
		for range rounds {
			ns, err := frameCostRound(n, framesPerRound)
			if err != nil {
				return nil, err
			}
			if best == 0 || ns < best {
				best = ns
			}
		}
		out[n] = best
	}
	return out, nil
}

// frameCostVersions is how many versions of the live step one reconciler
// sees before a fresh one starts (texts stay a realistic size).
const frameCostVersions = 256

func frameCostRound(n, frames int) (float64, error) {
	hist, err := costHistory(n - 1)
	if err != nil {
		return 0, err
	}
	wires := make([][]byte, frameCostVersions)
	text := ""
	for v := range wires {
		text += "A streamed chunk of text. "
		if wires[v], err = costFrame(n-1, text); err != nil {
			return 0, err
		}
	}
	var spent time.Duration
	done := 0
	for done < frames {
		r := mapper.NewReconciler(mapper.Config{ConversationID: frameCostConv})
		r.Apply(mapper.FromSnapshot(hist, wire.RunRunning, time.Now()))
		start := time.Now()
		for _, w := range wires {
			f, err := rpc.DecodeFrame(w)
			if err != nil {
				return 0, fmt.Errorf("bench: frame cost: %w", err)
			}
			if evs := r.Apply(mapper.FromFrame(f, start)); len(evs) == 0 {
				return 0, fmt.Errorf("bench: frame cost: a frame at %d steps yielded no event", n)
			}
		}
		spent += time.Since(start)
		done += len(wires)
	}
	return float64(spent.Nanoseconds()) / float64(done), nil
}

// costHistory is a finished trajectory of n steps, as a snapshot read
// decodes it: turns, answers, commands and checkpoints in turn.
func costHistory(n int) ([]wire.Step, error) {
	var b strings.Builder
	b.WriteString(`[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		meta := `"metadata":{"sourceTrajectoryStepInfo":{"stepIndex":` + strconv.Itoa(i) + `,"trajectoryId":"t","cascadeId":"` + frameCostConv + `"}}`
		switch i % 4 {
		case 0:
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE",` + meta + `,"userInput":{"userResponse":"turn ` + strconv.Itoa(i) + `"}}`)
		case 1:
			text := strings.Repeat("An answer. ", 20)
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE",` + meta + `,"plannerResponse":{"thinking":"Thinking.","modifiedResponse":"` + text + `","response":"` + text + `"}}`)
		case 2:
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_RUN_COMMAND","status":"CORTEX_STEP_STATUS_DONE",` + meta + `,"runCommand":{"commandLine":"ls","cwd":"/w","combinedOutput":{"full":"a\nb\n"}}}`)
		default:
			b.WriteString(`{"type":"CORTEX_STEP_TYPE_CHECKPOINT","status":"CORTEX_STEP_STATUS_DONE",` + meta + `}`)
		}
	}
	b.WriteString(`]`)
	var steps []wire.Step
	if err := json.Unmarshal([]byte(b.String()), &steps); err != nil {
		return nil, fmt.Errorf("bench: frame cost history: %w", err)
	}
	return steps, nil
}

// costFrame is a stream frame carrying one live planner step at index.
func costFrame(index int, text string) ([]byte, error) {
	step := map[string]any{
		"type":   "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
		"status": "CORTEX_STEP_STATUS_GENERATING",
		"metadata": map[string]any{"sourceTrajectoryStepInfo": map[string]any{
			"stepIndex": index, "trajectoryId": "t", "cascadeId": frameCostConv}},
		"plannerResponse": map[string]any{"thinking": "Thinking.", "modifiedResponse": text},
	}
	return json.Marshal(map[string]any{"update": map[string]any{
		"conversationId": frameCostConv, "trajectoryId": "t", "status": "CASCADE_RUN_STATUS_RUNNING",
		"mainTrajectoryUpdate": map[string]any{"stepsUpdate": map[string]any{
			"indices": []int{index}, "steps": []any{step}, "totalLength": index + 1}},
	}})
}
