package agytest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agyharness/agyharness/wire"
)

// turnRequest is a turn waiting to run: a user turn (over RPC or typed in
// the terminal) or a subagent child's task.
type turnRequest struct {
	text   string
	model  string
	source string
	script *TurnScript // nil: picked from the scenario when the turn is queued
	wake   bool        // a background task's notification: a SYSTEM_MESSAGE, no user turn
}

var errClosed = errors.New("agytest: server closed")

// enqueue records the turn (its USER_INPUT step) and runs it, or queues it
// behind the running turn, as agy queues a message typed while it works.
func (c *conversation) enqueue(req *turnRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.script == nil {
		sc, matched := c.srv.opts.Scenario.pick(req.text, c.fallthroughTurns)
		if !matched {
			c.fallthroughTurns++
		}
		req.script = &sc
	}
	if req.model == "" {
		req.model = req.script.Model
	}
	if req.model == "" {
		req.model = c.lastModel
	}
	if req.model == "" {
		req.model = c.srv.recommendedModel()
	}
	if c.running {
		c.queue = append(c.queue, req)
		return nil
	}
	ctx, cancel := context.WithCancel(c.srv.ctx)
	done := make(chan struct{})
	if !c.srv.spawn() {
		cancel()
		return errClosed
	}
	c.running = true
	c.cancelTurn = cancel
	c.turnDone = done
	t := c.beginTurnLocked(ctx, req)
	go c.work(ctx, cancel, t, done)
	return nil
}

// beginTurnLocked records the USER_INPUT step of a turn and marks the
// cascade RUNNING.
func (c *conversation) beginTurnLocked(ctx context.Context, req *turnRequest) *turnRun {
	c.turns++
	rng := rngFor(c.srv.opts.Seed, c.id, "turn", strconv.Itoa(c.turns))
	t := &turnRun{
		srv:    c.srv,
		c:      c,
		ctx:    ctx,
		rng:    rng,
		req:    req,
		turnNo: c.turns,
		execID: uuidFrom(rng),
	}
	clear(c.lag)
	now := time.Now()
	if req.wake {
		f := &fakeStep{step: wire.Step{
			Type:     wire.StepSystemMessage,
			Status:   wire.StatusDone,
			Metadata: wire.StepMetadata{Source: wire.SourceSystem, ExecutionID: t.execID, CreatedAt: timestamp(now), CompletedAt: timestamp(now)},
		}}
		f.setExtra("systemMessage", map[string]any{"message": req.text, "type": "task_notification"})
		t.userInputIdx = c.appendLocked(f)
		c.setStatusLocked(wire.RunRunning)
		return t
	}
	f := &fakeStep{step: wire.Step{
		Type:   wire.StepUserInput,
		Status: wire.StatusDone,
		Metadata: wire.StepMetadata{
			Source:      req.source,
			ExecutionID: t.execID,
			CreatedAt:   timestamp(now),
		},
		UserInput: &wire.UserInput{
			Items:        []wire.TextItem{{Text: req.text}},
			UserResponse: req.text,
			UserConfig: &wire.UserConfig{PlannerConfig: &wire.PlannerConfig{
				PlanModel:      req.model,
				RequestedModel: &wire.ModelRef{Model: req.model},
			}},
		},
	}}
	f.setExtra("userInput.activeUserState", map[string]any{})
	t.userInputIdx = c.appendLocked(f)
	c.lastInput = now
	c.lastInputI = t.userInputIdx
	c.lastModel = req.model
	c.setStatusLocked(wire.RunRunning)
	return t
}

// work runs turns until the queue is empty or the turn is canceled; it is
// the conversation's only writer of steps while it runs.
func (c *conversation) work(ctx context.Context, cancel context.CancelFunc, t *turnRun, done chan struct{}) {
	defer c.srv.wg.Done()
	defer close(done)
	defer cancel()
	for {
		lag, err := t.run()
		c.mu.Lock()
		t.flushLocked()
		if err != nil {
			c.cancelLiveLocked()
			c.queue = nil
		} else if n := len(c.steps); n > 0 && lag != lagNone {
			c.lag[n-1] = lag
		}
		if len(c.queue) > 0 && ctx.Err() == nil {
			next := c.queue[0]
			c.queue = c.queue[1:]
			t = c.beginTurnLocked(ctx, next)
			c.mu.Unlock()
			continue
		}
		c.running = false
		c.prompt = nil
		c.setStatusLocked(wire.RunIdle)
		wakes := c.wakes
		c.wakes = nil
		if err == nil {
			// Counted before the lock is let go: the conversation is never
			// seen at rest between the run's end and its wakes' scheduling.
			c.wakesPending += len(wakes)
		}
		c.mu.Unlock()
		if err == nil {
			c.scheduleWakes(wakes)
		}
		return
	}
}

// cancelLiveLocked turns every live step CANCELED (an interrupt).
func (c *conversation) cancelLiveLocked() {
	c.prompt = nil
	for i, f := range c.steps {
		if f != nil && !f.step.Status.Terminal() {
			f.step.Status = wire.StatusCanceled
			c.touchLocked(i)
		}
	}
}

// cancel interrupts the running turn (and the turns of its subagents) and
// waits until the cascade is idle. Nothing to cancel is not an error. With
// sparePrompts, a conversation parked on a WAITING prompt is left as it is,
// as agy leaves it: the call succeeds and changes nothing.
func (c *conversation) cancel(ctx context.Context, sparePrompts bool) error {
	c.mu.Lock()
	children := append([]*conversation(nil), c.children...)
	if sparePrompts && c.prompt != nil {
		c.mu.Unlock()
		c.srv.log.Debug("cancel: a prompt is WAITING; nothing changes", "conversation", c.id)
		return nil
	}
	if !c.running {
		c.mu.Unlock()
		for _, ch := range children {
			if err := ch.cancel(ctx, sparePrompts); err != nil {
				return err
			}
		}
		return nil
	}
	c.setStatusLocked(wire.RunCanceling)
	c.queue = nil
	stop, done := c.cancelTurn, c.turnDone
	c.mu.Unlock()
	stop()
	for _, ch := range children {
		if err := ch.cancel(ctx, sparePrompts); err != nil {
			return err
		}
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// turnRun executes one turn script. Its last commit is held back (pending)
// so that work applies it under the same lock as the IDLE status: that is
// what lets a stream see IDLE before the last step's DONE, as agy's does.
type turnRun struct {
	srv          *Server
	c            *conversation
	ctx          context.Context
	rng          *rand.Rand
	req          *turnRequest
	turnNo       int
	execID       string
	userInputIdx int
	thinking     string

	pendingIdx int
	pendingFn  func(*fakeStep)
}

func (t *turnRun) run() (lagMode, error) {
	if t.turnNo == 1 {
		f := t.newStep(wire.StepConversationHistory, wire.StatusDone, wire.SourceSystem)
		f.step.Metadata.CompletedAt = f.step.Metadata.CreatedAt
		f.setExtra("conversationHistory", map[string]any{})
		t.add(f)
	}
	for _, a := range t.req.script.Actions {
		var err error
		switch {
		case a.Think != "":
			if t.thinking != "" {
				t.thinking += "\n\n"
			}
			t.thinking += a.Think
		case a.Say != "":
			err = t.plan(strings.Repeat(a.Say, max(1, a.Repeat)), a.Chunks, nil)
		case a.RunCommand != nil:
			err = t.runCommand(*a.RunCommand)
		case a.Ask != nil:
			err = t.ask(*a.Ask)
		case a.Tool != nil:
			err = t.tool(*a.Tool)
		case a.Edit != nil:
			err = t.edit(*a.Edit)
		case a.Search != nil:
			err = t.search(*a.Search)
		case a.Fetch != nil:
			err = t.fetch(*a.Fetch)
		case a.MCP != nil:
			err = t.mcp(*a.MCP)
		case a.Step != nil:
			err = t.anyStep(*a.Step)
		case a.Subagent != nil:
			err = t.subagent(*a.Subagent)
		case a.Interact != nil:
			err = t.interact(*a.Interact)
		case a.Fail != "":
			return t.lag(), t.fail(a.Fail)
		case a.ProviderError != "":
			return t.lag(), t.providerError(a.ProviderError)
		case a.Task != nil:
			err = t.task(*a.Task)
		}
		if err != nil {
			return lagNone, err
		}
	}
	if t.thinking != "" {
		if err := t.plan("", 0, nil); err != nil {
			return lagNone, err
		}
	}
	if t.turnNo == 1 || t.rng.IntN(2) == 0 {
		if err := t.checkpoint(); err != nil {
			return lagNone, err
		}
	}
	return t.lag(), nil
}

func (t *turnRun) lag() lagMode {
	if t.rng.Float64() >= t.srv.opts.IdleBeforeFlush {
		return lagNone
	}
	if t.rng.IntN(2) == 0 {
		return lagLater
	}
	return lagNever
}

// --- step plumbing ---

func (t *turnRun) newStep(typ wire.StepType, status wire.StepStatus, source string) *fakeStep {
	f := &fakeStep{step: wire.Step{
		Type:   typ,
		Status: status,
		Metadata: wire.StepMetadata{
			Source:      source,
			ExecutionID: t.execID,
			CreatedAt:   timestamp(time.Now()),
		},
	}}
	if source == wire.SourceModel {
		f.step.Metadata.GeneratorModel = t.req.model
		f.step.Metadata.RequestedModel = &wire.ModelRef{Model: t.req.model}
	}
	return f
}

func (t *turnRun) flush() {
	if t.pendingFn != nil {
		t.c.update(t.pendingIdx, t.pendingFn)
		t.pendingFn = nil
	}
}

func (t *turnRun) flushLocked() {
	if t.pendingFn != nil {
		t.pendingFn(t.c.steps[t.pendingIdx])
		t.c.touchLocked(t.pendingIdx)
		t.pendingFn = nil
	}
}

func (t *turnRun) add(f *fakeStep) int {
	t.flush()
	return t.c.add(f)
}

func (t *turnRun) update(idx int, fn func(*fakeStep)) {
	t.flush()
	t.c.update(idx, fn)
}

// commit holds a step's final change back until the next step or pause.
func (t *turnRun) commit(idx int, fn func(*fakeStep)) {
	t.flush()
	t.pendingIdx, t.pendingFn = idx, fn
}

// pause waits ChunkDelay between streamed changes; it ends early when the
// turn is canceled.
func (t *turnRun) pause() error {
	t.flush()
	d := t.srv.opts.ChunkDelay
	if d <= 0 {
		return t.ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
}

func tokens(s string) int {
	n := utf8.RuneCountInString(s)
	if n == 0 {
		return 0
	}
	return n/4 + 1
}

// --- actions ---

// plan streams a PLANNER_RESPONSE: thinking first, then modifiedResponse in
// chunks; response, usage and the tool call only at DONE.
func (t *turnRun) plan(text string, chunks int, call *wire.ToolCall) error {
	f := t.newStep(wire.StepPlannerResponse, wire.StatusGenerating, wire.SourceModel)
	f.step.PlannerResponse = &wire.PlannerResponse{MessageID: "bot-" + uuidFrom(t.rng)}
	idx := t.add(f)
	thinking := t.thinking
	t.thinking = ""
	if err := t.stream(idx, thinking, 0, func(pr *wire.PlannerResponse, s string) { pr.Thinking += s }); err != nil {
		return err
	}
	if err := t.stream(idx, text, chunks, func(pr *wire.PlannerResponse, s string) { pr.ModifiedResponse += s }); err != nil {
		return err
	}
	if err := t.pause(); err != nil {
		return err
	}
	respTokens := tokens(text)
	if call != nil {
		respTokens += tokens(call.ArgumentsJSON)
	}
	// The model thinks on every call, shown or not (tool-call planner steps
	// carry thinking tokens without thinking text).
	usage := t.usage(tokens(thinking)+50+t.rng.IntN(300), respTokens)
	omit := t.rng.IntN(3) == 0
	signature := thinkingSignature(t.rng)
	t.commit(idx, func(f *fakeStep) {
		now := timestamp(time.Now())
		f.step.Status = wire.StatusDone
		pr := f.step.PlannerResponse
		pr.Response = pr.ModifiedResponse
		pr.StopReason = "STOP_REASON_STOP_PATTERN"
		if call != nil {
			pr.ToolCalls = []wire.ToolCall{*call}
		}
		f.step.Metadata.ModelUsage = usage
		f.step.Metadata.CompletedAt = now
		f.setExtra("metadata.modelUsage.apiProvider", "API_PROVIDER_GOOGLE_GEMINI")
		f.setExtra("metadata.modelUsage.responseId", shortID(t.rng)+shortID(t.rng))
		f.setExtra("metadata.stepGenerationVersion", 1)
		f.setExtra("metadata.finishedGeneratingAt", now)
		if pr.Thinking != "" {
			f.setExtra("plannerResponse.thinkingSignature", signature)
		}
		f.streamOmitsResponse = omit && text != ""
	})
	return nil
}

func (t *turnRun) stream(idx int, text string, chunks int, grow func(*wire.PlannerResponse, string)) error {
	for _, piece := range chunk(text, chunks) {
		if err := t.pause(); err != nil {
			return err
		}
		t.update(idx, func(f *fakeStep) { grow(f.step.PlannerResponse, piece) })
	}
	return nil
}

func (t *turnRun) usage(thinking, response int) *wire.ModelUsage {
	// The prompt cache is cold on a conversation's first model call only.
	cache := 0
	if t.c.calls > 0 {
		cache = 8000 + t.rng.IntN(12000)
	}
	t.c.calls++ // only this conversation's worker touches calls
	return &wire.ModelUsage{
		Model:                t.req.model,
		InputTokens:          wire.Int64(1000 + t.rng.IntN(20000)),
		OutputTokens:         wire.Int64(thinking + response),
		ThinkingOutputTokens: wire.Int64(thinking),
		ResponseOutputTokens: wire.Int64(response),
		CacheReadTokens:      wire.Int64(cache),
	}
}

// toolCall builds a tool call; argumentsJson has sorted keys, as agy's has.
func (t *turnRun) toolCall(name string, args map[string]any) (wire.ToolCall, []string) {
	b, err := json.Marshal(args)
	if err != nil {
		panic("agytest: tool arguments: " + err.Error())
	}
	order := make([]string, 0, len(args))
	for k := range args {
		order = append(order, k)
	}
	sortArgs(order)
	return wire.ToolCall{ID: shortID(t.rng), Name: name, ArgumentsJSON: string(b)}, order
}

// sortArgs orders argument names as agy lists them: the tool's own
// (capitalised) arguments first, then toolAction and toolSummary.
func sortArgs(names []string) {
	rank := func(s string) string {
		if s == "toolAction" || s == "toolSummary" {
			return "~" + s
		}
		return s
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(rank(a), rank(b)) })
}

// toolStep builds a tool step in PENDING carrying its tool call.
func (t *turnRun) toolStep(typ wire.StepType, call wire.ToolCall, order []string, summary, action string) *fakeStep {
	f := t.newStep(typ, wire.StatusPending, wire.SourceModel)
	tc := call
	f.step.Metadata.ToolCall = &tc
	f.step.Metadata.ToolSummary = summary
	f.step.Metadata.ToolAction = action
	f.setExtra("metadata.argumentsOrder", toAny(order))
	f.setExtra("metadata.stepGenerationVersion", 1)
	f.setExtra("metadata.toolCallOutputTokens", tokens(call.ArgumentsJSON))
	return f
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

func (t *turnRun) runCommand(cmd CommandAction) error {
	cwd := cmd.Cwd
	if cwd == "" {
		cwd = "/workspace"
	}
	action := "Running " + cmd.Line
	summary := "Run " + firstWord(cmd.Line) + " command"
	call, order := t.toolCall("run_command", map[string]any{
		"CommandLine": cmd.Line, "Cwd": cwd, "WaitMsBeforeAsync": 2000,
		"toolAction": action, "toolSummary": summary,
	})
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(wire.StepRunCommand, call, order, summary, action)
	f.step.RunCommand = &wire.RunCommand{CommandLine: cmd.Line, ProposedCommandLine: cmd.Line, Cwd: cwd}
	f.setExtra("runCommand.waitMsBeforeAsync", "2000")
	f.setExtra("runCommand.blocking", true)
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	resource := wire.Resource{Action: "command", Target: cmd.Line}
	ask := permissionAsk{resource: resource, description: action, grant: true, extra: map[string]any{
		"requestedInteraction.permission.persistSuggestionType":   "PERSIST_SUGGESTION_TYPE_SUGGESTED",
		"requestedInteraction.permission.suggestedPersistPattern": firstWord(cmd.Line),
	}}
	if segs := segments(cmd.Line); len(segs) > 1 && !t.srv.opts.NoReask {
		// agy 1.1.7 on asks for each segment of a compound command in turn.
		ask.resource.Target = segs[0]
		for _, s := range segs[1:] {
			ask.then = append(ask.then, wire.Resource{Action: "command", Target: s})
		}
		ask.extra["requestedInteraction.permission.suggestedPersistPattern"] = firstWord(segs[0])
	}
	allowed, at, err := t.permission(idx, cmd.NeedsApproval, ask)
	if err != nil || !allowed {
		return err
	}
	return t.finishCommand(at, cmd)
}

// segments splits a command line at its top-level "&&" (outside quotes),
// the segments agy asks for one at a time. Only "&&" is known to be split
// (docs/DECISIONS.md).
func segments(line string) []string {
	var out []string
	var quote byte
	start := 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == '&' && i+1 < len(line) && line[i+1] == '&':
			if s := strings.TrimSpace(line[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 2
			i++
		}
	}
	if s := strings.TrimSpace(line[min(start, len(line)):]); s != "" {
		out = append(out, s)
	}
	return out
}

func (t *turnRun) ask(a AskAction) error {
	var argQs []any
	qs := make([]wire.Question, len(a.Questions))
	for i, q := range a.Questions {
		argQs = append(argQs, map[string]any{"is_multi_select": q.MultiSelect, "allow_write_in": q.AllowWriteIn, "options": toAny(q.Options), "question": q.Question})
		qs[i].Question = q.Question
		for j, o := range q.Options {
			qs[i].Options = append(qs[i].Options, wire.Option{ID: strconv.Itoa(j + 1), Text: o})
		}
	}
	action, summary := "Asking the user a question", "Question for the user"
	call, order := t.toolCall("ask_question", map[string]any{"questions": argQs, "toolAction": action, "toolSummary": summary})
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(wire.StepAskQuestion, call, order, summary, action)
	f.step.AskQuestion = &wire.AskQuestion{Questions: qs}
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	t.update(idx, func(f *fakeStep) { f.step.Status = wire.StatusRunning })
	req := &wire.Interaction{AskQuestion: &wire.AskQuestion{Questions: cloneQuestions(qs)}}
	ans, idx, err := t.prompt(idx, req, nil, a.Questions)
	if err != nil {
		return err
	}
	if err := t.pause(); err != nil {
		return err
	}
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		complete(f, req, nil, ans)
		for _, r := range ans.AskQuestion.Responses {
			for i := range f.step.AskQuestion.Questions {
				q := &f.step.AskQuestion.Questions[i]
				if q.Question == r.Question {
					q.SelectedOptionIDs = r.SelectedOptionIDs
					q.WriteInResponse = r.WriteInResponse
				}
			}
		}
	})
	return nil
}

func cloneQuestions(qs []wire.Question) []wire.Question {
	out := make([]wire.Question, len(qs))
	for i, q := range qs {
		out[i] = wire.Question{Question: q.Question, Options: append([]wire.Option(nil), q.Options...)}
	}
	return out
}

func (t *turnRun) tool(a ToolAction) error {
	var (
		typ     wire.StepType
		args    = map[string]any{}
		action  = "Reading " + a.Target
		summary = "Read " + a.Target
	)
	switch a.Name {
	case "view_file":
		typ = wire.StepViewFile
		args["AbsolutePath"] = a.Target
	case "list_dir":
		typ = wire.StepListDirectory
		args["DirectoryPath"] = a.Target
		action, summary = "Listing "+a.Target, "List directory "+a.Target
	default:
		typ = wire.StepGeneric
		args["AbsolutePath"] = a.Target
	}
	args["toolAction"], args["toolSummary"] = action, summary
	call, order := t.toolCall(a.Name, args)
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	f := t.toolStep(typ, call, order, summary, action)
	if typ == wire.StepGeneric {
		raw, _ := json.Marshal(map[string]any{"AbsolutePath": a.Target})
		f.step.Generic = &wire.Generic{Args: raw}
	}
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	allowed, at, err := t.permission(idx, a.NeedsApproval, permissionAsk{resource: wire.Resource{Action: "read_file", Target: a.Target}, description: action})
	if err != nil || !allowed {
		return err
	}
	idx = at
	if err := t.pause(); err != nil {
		return err
	}
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		switch typ {
		case wire.StepViewFile:
			lines := strings.Count(a.Result, "\n")
			body := map[string]any{"absolutePathUri": "file://" + a.Target, "numLines": lines, "numBytes": len(a.Result), "lineRangeBytes": len(a.Result)}
			if lines > 1 {
				body["endLine"] = lines - 1
			}
			f.step.ViewFile, _ = json.Marshal(body)
		case wire.StepListDirectory:
			var results []any
			for _, name := range strings.Split(strings.TrimSpace(a.Result), "\n") {
				if name == "" {
					continue
				}
				if dir, ok := strings.CutSuffix(name, "/"); ok {
					results = append(results, map[string]any{"name": dir, "isDir": true})
				} else {
					results = append(results, map[string]any{"name": name, "sizeBytes": strconv.Itoa(64 + len(name)*10)})
				}
			}
			f.step.ListDirectory, _ = json.Marshal(map[string]any{"directoryPathUri": "file://" + a.Target, "results": results})
		default:
			f.step.Generic.Result = &wire.GenericResult{Result: a.Result}
			f.setExtra("generic.result.stepRenderInfo", map[string]any{
				"title": a.Target, "titlePrefix": "Used " + a.Name, "markdown": a.Result,
				"icon": "description", "aggregationKey": a.Name,
			})
		}
	})
	return nil
}

// subagent spawns child conversations and waits for them; the parent step
// names them from the start, so a reader can follow them while they run.
func (t *turnRun) subagent(a SubagentAction) error {
	action, summary := "Delegating to subagents", "Invoke "+strconv.Itoa(a.Count)+" subagents"
	call, order := t.toolCall("invoke_subagent", map[string]any{"Count": a.Count, "Task": a.Task, "toolAction": action, "toolSummary": summary})
	if err := t.plan("", 0, &call); err != nil {
		return err
	}
	ids := make([]string, a.Count)
	for i := range ids {
		ids[i] = uuidFrom(t.rng)
	}
	children, err := t.srv.spawnChildren(t.c, ids, a, t.req.model)
	if err != nil {
		return err
	}
	legacy := t.srv.opts.LegacySubagents
	f := t.toolStep(wire.StepInvokeSubagent, call, order, summary, action)
	f.step.Status = wire.StatusRunning
	f.step.InvokeSubagent = &wire.InvokeSubagent{}
	for i, id := range ids {
		f.step.InvokeSubagent.Results = append(f.step.InvokeSubagent.Results, wire.SubagentResult{ConversationID: id})
		if !legacy {
			f.step.InvokeSubagent.Subagents = append(f.step.InvokeSubagent.Subagents, subagentSpec(a, i))
		}
	}
	idx := t.add(f)
	done := func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
	}
	if !legacy {
		// Fire and forget: DONE at spawn, the children run on.
		if err := t.pause(); err != nil {
			return err
		}
		t.update(idx, done)
	}
	for _, ch := range children {
		if err := ch.waitIdle(t.ctx); err != nil {
			return err
		}
	}
	if legacy {
		t.commit(idx, done)
	}
	return nil
}

// fail ends the turn with an ERROR planner step.
func (t *turnRun) fail(msg string) error {
	f := t.newStep(wire.StepPlannerResponse, wire.StatusGenerating, wire.SourceModel)
	f.step.PlannerResponse = &wire.PlannerResponse{MessageID: "bot-" + uuidFrom(t.rng)}
	idx := t.add(f)
	thinking := t.thinking
	t.thinking = ""
	if err := t.stream(idx, thinking, 0, func(pr *wire.PlannerResponse, s string) { pr.Thinking += s }); err != nil {
		return err
	}
	if err := t.pause(); err != nil {
		return err
	}
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusError
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		f.setExtra("error", map[string]any{"userErrorMessage": msg, "shortError": msg})
	})
	return nil
}

// checkpoint adds agy's CHECKPOINT system step (a cheap model summarising
// the user's intent).
func (t *turnRun) checkpoint() error {
	f := t.newStep(wire.StepCheckpoint, wire.StatusRunning, wire.SourceSystem)
	idx := t.add(f)
	if err := t.pause(); err != nil {
		return err
	}
	userIdx := t.userInputIdx
	text := t.req.text
	responseID := shortID(t.rng) + shortID(t.rng)
	t.commit(idx, func(f *fakeStep) {
		f.step.Status = wire.StatusDone
		f.step.Metadata.CompletedAt = timestamp(time.Now())
		f.step.Metadata.ModelUsage = &wire.ModelUsage{Model: "MODEL_PLACEHOLDER_M50", InputTokens: 35, OutputTokens: 3, ResponseOutputTokens: 3}
		f.setExtra("metadata.modelUsage.apiProvider", "API_PROVIDER_GOOGLE_GEMINI")
		f.setExtra("metadata.modelUsage.responseId", responseID)
		f.step.Checkpoint, _ = json.Marshal(map[string]any{
			"intentOnly":                 true,
			"includedStepIndexEnd":       idx,
			"userIntent":                 "User request",
			"userRequests":               []string{text},
			"renderLatestCheckpoint":     true,
			"renderUserMessageStepIndex": strconv.Itoa(userIdx),
		})
	})
	return nil
}

// complete records an answered interaction in completedInteractions: the
// request as asked (with its extra fields, as agy echoes them) and the
// response as delivered.
func complete(f *fakeStep, req *wire.Interaction, reqExtra map[string]any, ans wire.InteractionResponse) {
	f.step.CompletedInteractions = append(f.step.CompletedInteractions, wire.CompletedInteraction{Request: req, Response: &ans})
	if len(reqExtra) == 0 {
		return
	}
	b, err := json.Marshal(f.step.CompletedInteractions)
	if err != nil {
		panic("agytest: completed interactions: " + err.Error())
	}
	var list []any
	if err := json.Unmarshal(b, &list); err != nil {
		panic("agytest: completed interactions: " + err.Error())
	}
	for _, item := range list {
		wrapped := map[string]any{"request": map[string]any{}}
		for k, v := range reqExtra {
			if rest, ok := strings.CutPrefix(k, "requestedInteraction."); ok {
				setPath(wrapped["request"].(map[string]any), rest, v)
			}
		}
		mergeJSON(item.(map[string]any), wrapped)
	}
	f.setExtra("completedInteractions", list)
}

// thinkingSignature is an opaque blob like the one agy attaches to thinking.
func thinkingSignature(r *rand.Rand) string {
	b := make([]byte, 48)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return base64.StdEncoding.EncodeToString(b)
}
