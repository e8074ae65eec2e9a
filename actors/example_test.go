package actors_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc/agytest"
)

// Attach a session to agy, send a turn, and print the conversation as it
// is committed. A fake agy language server stands in for agy here; against a
// real one, attach with actors.Spec{PID: agyPID}.
func ExampleHost_Attach() {
	agy, _ := agytest.NewServer(agytest.Options{
		Conversation: true,
		Scenario:     &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{agytest.Say("Hello! Ready when you are.", 4)}}}},
		ChunkDelay:   time.Millisecond,
	})
	defer agy.Close()

	host := actors.NewHost(actors.Config{})
	defer host.Shutdown(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := host.Attach(ctx, actors.Spec{Port: agy.Port()})
	if err != nil {
		fmt.Println("attach:", err)
		return
	}
	if err := s.SendTurn(ctx, "Say hello", ""); err != nil {
		fmt.Println("turn:", err)
		return
	}
	for ev := range s.Events() {
		switch ev.Type {
		case messages.EventUserMessage:
			fmt.Printf("user (%s): %s\n", ev.Origin, ev.Text)
		case messages.EventMessage:
			fmt.Printf("agy: %s\n", ev.Text)
			_ = s.Detach(ctx)
		}
	}
	// Output:
	// user (harness): Say hello
	// agy: Hello! Ready when you are.
}

// Answer agy's prompts as they come: here every command is allowed.
func ExampleSession_Resolve() {
	agy, _ := agytest.NewServer(agytest.Options{
		Conversation: true,
		Scenario: &agytest.Scenario{Turns: []agytest.TurnScript{{Actions: []agytest.Action{
			agytest.Run(agytest.CommandAction{Line: "go test ./...", Output: "ok\n", NeedsApproval: true}),
			agytest.Say("All green.", 2),
		}}}},
		ChunkDelay: time.Millisecond,
	})
	defer agy.Close()
	host := actors.NewHost(actors.Config{})
	defer host.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := host.Attach(ctx, actors.Spec{Port: agy.Port()})
	if err != nil {
		fmt.Println("attach:", err)
		return
	}
	_ = s.SendTurn(ctx, "run the tests", "")
	for ev := range s.Events() {
		switch ev.Type {
		case messages.EventElicitationRequest:
			fmt.Printf("agy asks to run: %s\n", ev.Command.Line)
			_ = s.Resolve(ctx, messages.Resolve{ElicitationID: ev.ElicitationID, Action: messages.ActionAccept})
		case messages.EventFunctionCallOutput:
			fmt.Printf("output: %q\n", ev.Output)
		case messages.EventMessage:
			fmt.Printf("agy: %s\n", ev.Text)
			_ = s.Detach(ctx)
		}
	}
	// Output:
	// agy asks to run: go test ./...
	// output: "ok\n"
	// agy: All green.
}
