package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
)

// A minimal stand-in for agy's language server; rpc/agytest is the full one.
func exampleServer() *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/" + rpc.Service + "/" + rpc.MethodHeartbeat:
			_, _ = io.WriteString(w, `{}`)
		case "/" + rpc.Service + "/" + rpc.MethodGetConversationMetadata:
			_, _ = io.WriteString(w, `{"metadata":{"rootConversationId":"conv-1"}}`)
		case "/" + rpc.Service + "/" + rpc.MethodStreamAgentStateUpdates:
			w.Header().Set("Content-Type", "application/connect+json")
			_ = connectserver.WriteEnvelope(w, 0, []byte(`{"update":{"conversationId":"conv-1","status":"CASCADE_RUN_STATUS_RUNNING",
				"mainTrajectoryUpdate":{"stepsUpdate":{"indices":[1],"steps":[{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE",
				"status":"CORTEX_STEP_STATUS_GENERATING","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":1}},
				"plannerResponse":{"modifiedResponse":"Hello"}}]}}}}`))
			_ = connectserver.WriteEndStream(w, "", "")
		case "/" + rpc.Service + "/" + rpc.MethodSendUserCascadeMessage:
			connectserver.WriteError(w, rpc.CodeUnknown, "neither PlanModel nor RequestedModel specified")
		default:
			http.NotFound(w, r)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	return srv
}

func Example() {
	srv := exampleServer()
	defer srv.Close()
	ctx := context.Background()

	c, err := rpc.NewClient(rpc.Config{Port: srv.Listener.Addr().(*net.TCPAddr).Port})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// Bind only a port that serves our conversation.
	ok, err := c.ConversationMatches(ctx, "conv-1")
	fmt.Println("serves conv-1:", ok, err)

	// Follow the conversation: each frame carries cumulative step snapshots.
	s, err := c.StreamAgentStateUpdates(ctx, "conv-1", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for {
		f, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		su := f.Update.MainTrajectoryUpdate.StepsUpdate
		for i, step := range su.Steps {
			fmt.Printf("step %d %s: %q\n", su.Indices[i], step.Status, step.PlannerResponse.ModifiedResponse)
		}
	}

	// Failures are classified with errors.Is, never by their text.
	err = c.SendUserCascadeMessage(ctx, "conv-1", "hi", "MODEL_X")
	fmt.Println("model required:", errors.Is(err, rpc.ErrModelRequired), "transient:", rpc.IsTransient(err))
	// Output:
	// serves conv-1: true <nil>
	// step 1 CORTEX_STEP_STATUS_GENERATING: "Hello"
	// model required: true transient: false
}
