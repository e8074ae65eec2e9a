package mapper_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agyharness/agyharness/mapper"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// A session feeds its reconciler everything it reads, from the stream and
// the poller alike; each event comes out once.
func ExampleReconciler() {
	r := mapper.NewReconciler(mapper.Config{ConversationID: "c1"})
	r.ExpectTurn("Say hello")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	var frame rpc.StreamFrame
	_ = json.Unmarshal([]byte(`{"update":{"conversationId":"c1","status":"CASCADE_RUN_STATUS_RUNNING",
		"mainTrajectoryUpdate":{"stepsUpdate":{"indices":[0,1],"totalLength":2,"steps":[
		{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE","userInput":{"userResponse":"Say hello"}},
		{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_GENERATING","plannerResponse":{"modifiedResponse":"Hel"}}]}}}}`), &frame)
	printEvents(r.Apply(mapper.FromFrame(&frame, now)))

	var steps rpc.StepsResponse
	_ = json.Unmarshal([]byte(`{"steps":[
		{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE","userInput":{"userResponse":"Say hello"}},
		{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE","plannerResponse":{"modifiedResponse":"Hello!","response":"Hello!"}}]}`), &steps)
	printEvents(r.Apply(mapper.FromSnapshot(steps.Steps, wire.RunIdle, now.Add(time.Second))))
	printEvents(r.Apply(mapper.FromSnapshot(steps.Steps, wire.RunIdle, now.Add(2*time.Second)))) // a replay: nothing

	// Output:
	// user_message c1/0/user harness "Say hello"
	// status c1/status/0/running running
	// output_text_delta c1/1/text@0 "Hel"
	// output_text_delta c1/1/text@3 "lo!"
	// message c1/1/message "Hello!"
	// status c1/status/2/idle idle
}

func printEvents(evs []messages.Event) {
	for _, e := range evs {
		switch e.Type {
		case messages.EventStatus:
			fmt.Println(e.Type, e.ID, e.State)
		case messages.EventUserMessage:
			fmt.Printf("%s %s %s %q\n", e.Type, e.ID, e.Origin, e.Text)
		case messages.EventOutputTextDelta:
			fmt.Printf("%s %s %q\n", e.Type, e.ID, e.Delta)
		default:
			fmt.Printf("%s %s %q\n", e.Type, e.ID, e.Text)
		}
	}
}

// A resolve command becomes the interaction payload for the freshest
// WAITING step of the prompt.
func ExampleBuildInteraction() {
	var step wire.Step
	_ = json.Unmarshal([]byte(`{"type":"CORTEX_STEP_TYPE_ASK_QUESTION","status":"CORTEX_STEP_STATUS_WAITING",
		"metadata":{"sourceTrajectoryStepInfo":{"trajectoryId":"t1","stepIndex":12}},
		"requestedInteraction":{"askQuestion":{"questions":[{"question":"Which language?",
		"options":[{"id":"1","text":"Go"},{"id":"2","text":"Rust"}]}]}}}`), &step)
	p, _ := mapper.PendingInteraction(&step, 12)
	payload, err := mapper.BuildInteraction(p, messages.Resolve{
		Action:  messages.ActionAccept,
		Answers: []messages.Answer{{SelectedOptionIDs: []string{"1"}}},
	}, p.TrajectoryID, p.StepIndex)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(payload)
	fmt.Println(string(b))

	_, err = mapper.BuildInteraction(p, messages.Resolve{
		Action:  messages.ActionAccept,
		Answers: []messages.Answer{{SelectedOptionIDs: []string{"Go"}}},
	}, p.TrajectoryID, p.StepIndex)
	fmt.Println(err)
	// Output:
	// {"trajectoryId":"t1","stepIndex":12,"askQuestion":{"responses":[{"question":"Which language?","selectedOptionIds":["1"]}]}}
	// mapper: invalid resolve: question "Which language?" has no option id "Go" (option ids are 1, 2)
}
