package agytest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/agyharness/agyharness/wire"
)

// stepErrorMessage is agy's ERROR_MESSAGE step type.
const stepErrorMessage wire.StepType = "CORTEX_STEP_TYPE_ERROR_MESSAGE"

// overloadedNotice is the text agy writes on the ERROR_MESSAGE steps of the
// attempts it retries (agy-acp's tests record it; docs/DECISIONS.md).
const overloadedNotice = "The model API is currently overloaded and may experience intermittent errors."

// providerAttempt is what one ERROR_MESSAGE step of a provider failure says.
type providerAttempt struct {
	short, full, details, model string
}

// providerAttempts are the ERROR_MESSAGE steps agy writes for kind, the
// last one final: quota and rate limits and provider failures are retried
// twice (the overloaded notice), a usage limit is not.
func providerAttempts(kind string) []providerAttempt {
	retried := func(short, full, details string) []providerAttempt {
		return []providerAttempt{
			{short, full, details, overloadedNotice},
			{short, full, details, overloadedNotice},
			{short, full, details, short},
		}
	}
	switch kind {
	case ProviderQuota:
		out := make([]providerAttempt, 3)
		for i, rest := range []string{"3h35m25s", "3h35m21s", "3h35m17s"} {
			short := "RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in " + rest + "."
			out[i] = providerAttempt{short, "HTTP 429 Too Many Requests",
				`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"reason":"QUOTA_EXHAUSTED"}]}}`, overloadedNotice}
		}
		out[2].model = out[2].short
		return out
	case ProviderUsageLimit:
		detail := "You've reached your 5-hour standard usage limit (resets in 3h 21min)."
		return []providerAttempt{{"Payment Required", "HTTP 402 Payment Required",
			`402 {"detail":"` + detail + `","status":402,"title":"Payment Required","displayToUser":true}`,
			"Payment Required: " + detail}}
	case ProviderRateLimit:
		return retried("RESOURCE_EXHAUSTED (code 429): Too many requests, try again shortly.", "HTTP 429 Too Many Requests",
			`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`)
	default:
		return retried("INTERNAL (code 500): The model provider failed to answer.", "HTTP 500 Internal Server Error",
			`{"error":{"code":500,"status":"INTERNAL"}}`)
	}
}

// providerError ends the turn as agy does when the model provider fails:
// one ERROR_MESSAGE step per attempt, an ephemeral note between them.
func (t *turnRun) providerError(kind string) error {
	attempts := providerAttempts(kind)
	for i, a := range attempts {
		if i > 0 {
			f := t.newStep("CORTEX_STEP_TYPE_EPHEMERAL_MESSAGE", wire.StatusDone, wire.SourceSystem)
			f.setExtra("ephemeralMessage", map[string]any{"content": "Retrying the model call (attempt " + strconv.Itoa(i+1) + ")."})
			t.add(f)
		}
		if err := t.pause(); err != nil {
			return err
		}
		final := i == len(attempts)-1
		f := t.newStep(stepErrorMessage, wire.StatusDone, wire.SourceSystem)
		f.step.Metadata.CompletedAt = f.step.Metadata.CreatedAt
		f.setExtra("errorMessage", map[string]any{
			"error": map[string]any{
				"shortError": a.short, "fullError": a.full, "details": a.details, "modelErrorMessage": a.model,
			},
			"shouldShowUser": final,
		})
		t.add(f)
	}
	return nil
}

// task sends a command to the background: a RUN_COMMAND step that ends at
// once with task_details and no exit code. The task's notification wakes
// agy after the turn (wake).
func (t *turnRun) task(a TaskAction) error {
	action := "Running " + a.Line + " in the background"
	summary := "Run " + firstWord(a.Line) + " in the background"
	call, order := t.toolCall("run_command", map[string]any{
		"CommandLine": a.Line, "Cwd": "/workspace", "WaitMsBeforeAsync": 0,
		"toolAction": action, "toolSummary": summary,
	})
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(wire.StepRunCommand, call, order, summary, action)
	f.step.RunCommand = &wire.RunCommand{CommandLine: a.Line, ProposedCommandLine: a.Line, Cwd: "/workspace"}
	f.setExtra("runCommand.blocking", false)
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	t.c.mu.Lock()
	t.c.tasks++
	id := "task-" + strconv.Itoa(t.c.tasks)
	t.c.mu.Unlock()
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		f.step.RunCommand.CombinedOutput = &wire.CombinedOutput{Full: "Started task " + id + ".\n"}
		f.setExtra("taskDetails", map[string]any{"id": id, "logUri": "file:///tmp/agy-tasks/" + id + ".log"})
	})
	if t.srv.opts.NoBackgroundWakes {
		return nil
	}
	after := time.Duration(a.After) * time.Millisecond
	if a.After == 0 {
		after = 200 * time.Millisecond
	}
	reply := a.Reply
	if reply == "" {
		reply = "The background task " + id + " finished."
	}
	t.c.mu.Lock()
	t.c.wakes = append(t.c.wakes, wake{after: after, taskID: id, reply: reply})
	t.c.mu.Unlock()
	return nil
}

// wake is a background task's notification, due after the turn that
// started the task.
type wake struct {
	after  time.Duration
	taskID string
	reply  string
}

// taskNotification is the SYSTEM_MESSAGE text agy appends when a task
// finishes (agy-acp's fixtures; docs/DECISIONS.md, "Runs nobody typed").
func taskNotification(taskID string, at time.Time) string {
	return fmt.Sprintf("[Message] timestamp=%s sender=%s content=Task id %q finished", at.UTC().Format(time.RFC3339), taskID, taskID)
}

// scheduleWakes runs each wake after its delay, as a turn with no user
// input: a SYSTEM_MESSAGE step, then the reply. The goroutines are the
// server's (spawn), and end with it. The caller has counted them in
// wakesPending already; each is uncounted once run, or not started.
func (c *conversation) scheduleWakes(wakes []wake) {
	for i, w := range wakes {
		if !c.srv.spawn() {
			c.mu.Lock()
			c.wakesPending -= len(wakes) - i
			c.mu.Unlock()
			return
		}
		go func() {
			defer c.srv.wg.Done()
			defer func() {
				c.mu.Lock()
				c.wakesPending--
				c.mu.Unlock()
			}()
			timer := time.NewTimer(w.after)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-c.srv.ctx.Done():
				return
			}
			script := &TurnScript{Actions: []Action{Say(w.reply, 0)}}
			if err := c.enqueue(&turnRequest{text: taskNotification(w.taskID, time.Now()), source: wire.SourceSystem, script: script, wake: true}); err != nil {
				c.srv.log.Debug("wake not run", "conversation", c.id, "err", err)
			}
		}()
	}
}

// Rewind is agy's /rewind on a conversation: the steps from index on are
// cut off, and the next turn's steps take their indices (with
// Options.RewindMarksCleared they stay, CLEARED, and new steps follow). A
// conversation that is running cannot be rewound.
func (s *Server) Rewind(conversationID string, index int) error {
	c := s.lookup(conversationID)
	if c == nil {
		return fmt.Errorf("agytest: no conversation %s", conversationID)
	}
	return c.rewind(index)
}

func (c *conversation) rewind(index int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return fmt.Errorf("conversation %s is running: interrupt it first", c.id)
	}
	if index < 0 || index >= len(c.steps) {
		return fmt.Errorf("step %d out of range 0..%d", index, len(c.steps)-1)
	}
	clear(c.lag)
	c.prompt = nil
	c.wakes = nil
	if c.srv.opts.RewindMarksCleared {
		for i := index; i < len(c.steps); i++ {
			c.steps[i].step.Status = wire.StatusCleared
			c.touchLocked(i)
		}
		return nil
	}
	c.steps = c.steps[:index]
	if c.lastInputI >= index {
		c.lastInputI = 0
		for i := index - 1; i >= 0; i-- {
			if c.stepLocked(i).step.Type == wire.StepUserInput {
				c.lastInputI = i
				break
			}
		}
	}
	for sub := range c.subs {
		sub.markStatus() // a frame with the shorter totalLength
	}
	c.broadcastLocked()
	return nil
}

// subagentSpec is the i-th child's entry in invokeSubagent.subagents.
func subagentSpec(a SubagentAction, i int) wire.SubagentSpec {
	role, typ := a.Role, a.TypeName
	if role == "" {
		role = "Subagent"
	}
	if a.Count > 1 {
		role += " " + strconv.Itoa(i+1)
	}
	if typ == "" {
		typ = "general"
	}
	return wire.SubagentSpec{Role: role, TypeName: typ}
}
