package agytest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// A fake agy that answers a turn with streamed text; the client sends the
// turn and reads the committed steps.
func ExampleNewServer() {
	srv, err := agytest.NewServer(agytest.Options{
		Conversation: true,
		ChunkDelay:   time.Millisecond,
		Scenario: &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
			agytest.Think("A greeting."),
			agytest.Say("Hello! How can I help?", 4),
		}}}},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	conv := srv.ConversationID()
	if err := c.SendUserCascadeMessage(ctx, conv, "hi", "MODEL_PLACEHOLDER_M20"); err != nil {
		panic(err)
	}
	if err := srv.WaitIdle(ctx, conv); err != nil {
		panic(err)
	}
	steps, err := c.GetCascadeTrajectorySteps(ctx, conv)
	if err != nil {
		panic(err)
	}
	for _, s := range steps {
		fmt.Println(s.Index(), s.Type, s.Status)
	}
	fmt.Println(steps[2].PlannerResponse.Response)
	// Output:
	// 0 CORTEX_STEP_TYPE_USER_INPUT CORTEX_STEP_STATUS_DONE
	// 1 CORTEX_STEP_TYPE_CONVERSATION_HISTORY CORTEX_STEP_STATUS_DONE
	// 2 CORTEX_STEP_TYPE_PLANNER_RESPONSE CORTEX_STEP_STATUS_DONE
	// 3 CORTEX_STEP_TYPE_CHECKPOINT CORTEX_STEP_STATUS_DONE
	// Hello! How can I help?
}
