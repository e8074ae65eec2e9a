package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agyharness/agyharness/messages"
	sdk "github.com/coder/acp-go-sdk"
)

// Permission option ids offered for agy's permission prompts. agy's RPC
// has no persistent grant, so there is no allow_always.
const (
	optionAllow  sdk.PermissionOptionId = "allow"
	optionReject sdk.PermissionOptionId = "reject"
	// optionSkip declines a question asked as a permission request; agy's
	// option ids are "1".."N", so it cannot clash.
	optionSkip sdk.PermissionOptionId = "skip"
)

// elicit puts one of agy's prompts to the client, on a goroutine of its own
// so the pump keeps going (agy may withdraw the prompt meanwhile). The
// question is asked with the running prompt's context, so session/cancel
// cancels it.
func (s *session) elicit(ev *messages.Event) {
	callID := ev.CallID
	if callID == "" && len(s.openCalls) > 0 {
		// The prompt belongs to the tool step that opened last.
		callID = s.openCalls[len(s.openCalls)-1]
	}
	if callID == "" {
		callID = ev.ElicitationID
	}
	if !s.calls[callID] {
		s.calls[callID] = true
		s.update(sdk.StartToolCall(sdk.ToolCallId(callID), promptTitle(ev), sdk.WithStartKind(sdk.ToolKindOther), sdk.WithStartStatus(sdk.ToolCallStatusPending)))
	}
	if ev.Kind == messages.KindOther {
		// Its answer is not known: say what agy asks, and leave it to agy's
		// terminal (agy withdraws it when it moves on).
		s.update(sdk.UpdateAgentMessageText(fmt.Sprintf("\n\n_agy asks %s (%s), which only agy's own terminal can answer: answer it there._\n\n",
			inlineCode(ev.Interaction), promptTitle(ev))))
		return
	}

	s.mu.Lock()
	base := s.ctx
	var t *turn
	if s.turn != nil {
		t = s.turn
		base = s.turn.ctx
	}
	if _, dup := s.pending[ev.ElicitationID]; dup {
		s.mu.Unlock()
		return // re-sent on resubscription: already asked
	}
	ctx, cancel := context.WithCancel(base)
	// A question asked for a prompt also ends when the session closes.
	stopOnClose := context.AfterFunc(s.ctx, cancel)
	s.pending[ev.ElicitationID] = cancel
	s.mu.Unlock()

	forms := s.a.elicitationForms()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.pending, ev.ElicitationID)
			s.mu.Unlock()
			stopOnClose()
			cancel()
		}()
		r, err := s.ask(ctx, ev, callID, forms)
		if ctx.Err() != nil {
			// Withdrawn by agy, or the prompt was cancelled (the interrupt
			// ends agy's question), or the session closed.
			return
		}
		if err != nil {
			s.log.Warn("asking the client", "elicitation", ev.ElicitationID, "err", err)
			r = messages.Resolve{Action: messages.ActionDecline}
		}
		s.mu.Lock()
		cancelled := t != nil && t.cancelled
		s.mu.Unlock()
		if cancelled {
			return
		}
		if ev.Kind == messages.KindQuestion && r.Action != messages.ActionAccept {
			// Stop the turn at the question (the interrupt declines it in
			// agy), so the user can answer in the next message.
			s.stopForQuestion(t)
			return
		}
		r.ElicitationID = ev.ElicitationID
		rctx, rcancel := context.WithTimeout(s.ctx, s.a.opts.RequestTimeout)
		defer rcancel()
		if err := s.hs.Resolve(rctx, r); err != nil {
			s.log.Warn("answer refused", "elicitation", ev.ElicitationID, "err", err)
		}
	}()
}

// resolved withdraws the client's copy of a prompt that was answered
// elsewhere (agy's own terminal) or expired.
func (s *session) resolved(ev *messages.Event) {
	if ev.By == messages.ByHarness {
		return
	}
	s.mu.Lock()
	cancel := s.pending[ev.ElicitationID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// ask puts the prompt to the client and returns agy's answer.
func (s *session) ask(ctx context.Context, ev *messages.Event, callID string, forms bool) (messages.Resolve, error) {
	if ev.Kind == messages.KindPermission {
		return s.askPermission(ctx, ev, callID)
	}
	if ev.Kind == messages.KindElicitation {
		return s.askMCP(ctx, ev, callID, forms)
	}
	if forms {
		r, err := s.askForm(ctx, ev)
		if err == nil || ctx.Err() != nil {
			return r, err
		}
		// A client that advertises forms but rejects ours: try the fallback.
		s.log.Warn("elicitation form refused; falling back", "err", err)
	}
	if len(ev.Questions) == 1 && !ev.Questions[0].MultiSelect && len(ev.Questions[0].Options) > 0 {
		return s.askChoice(ctx, ev, callID)
	}
	what := "a multi-select question"
	if len(ev.Questions) != 1 {
		what = fmt.Sprintf("%d questions at once", len(ev.Questions))
	} else if len(ev.Questions[0].Options) == 0 {
		what = "a question without options"
	}
	s.update(sdk.UpdateAgentMessageText(fmt.Sprintf(
		"\n\n_agy asked %s, which this client cannot show (it has no elicitation forms), so the question was declined:_\n\n%s\n_Answer in your next message, or in agy's own terminal._\n\n",
		what, questionList(ev.Questions))))
	return messages.Resolve{Action: messages.ActionDecline}, nil
}

// stopForQuestion ends the running turn (if the client started it) after
// a question was declined: agy would otherwise wait for an answer.
func (s *session) stopForQuestion(t *turn) {
	if t == nil {
		return // a turn typed in agy's terminal: its user can answer there
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, s.a.opts.CancelDeadline)
	defer cancel()
	if err := s.hs.Interrupt(ctx); err != nil {
		s.log.Warn("interrupt after a declined question", "err", err)
	}
}

// questionList lists questions and their options as Markdown.
func questionList(qs []messages.Question) string {
	var b strings.Builder
	for _, q := range qs {
		kind := ""
		if q.MultiSelect {
			kind = " (choose any)"
		}
		fmt.Fprintf(&b, "- **%s**%s\n", q.Question, kind)
		for _, o := range q.Options {
			fmt.Fprintf(&b, "  %s. %s\n", o.ID, o.Text)
		}
	}
	return b.String()
}

func (s *session) askPermission(ctx context.Context, ev *messages.Event, callID string) (messages.Resolve, error) {
	title := promptTitle(ev)
	var raw any
	switch {
	case ev.Command != nil:
		raw = map[string]any{"command": ev.Command.Line, "cwd": ev.Command.Cwd}
	case ev.Resource != nil:
		raw = map[string]any{"action": ev.Resource.Action, "target": ev.Resource.Target}
	}
	res, err := s.a.connection().RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(s.id),
		ToolCall: sdk.ToolCallUpdate{
			ToolCallId: sdk.ToolCallId(callID),
			Title:      &title,
			Status:     sdk.Ptr(sdk.ToolCallStatusPending),
			RawInput:   raw,
			// What an edit would change, and the files the tool would touch.
			Content:   diffContent(ev.Diffs),
			Locations: locations(ev.Locations),
		},
		Options: []sdk.PermissionOption{
			{OptionId: optionAllow, Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: optionReject, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		return messages.Resolve{}, err
	}
	if sel := res.Outcome.Selected; sel != nil && sel.OptionId == optionAllow {
		return messages.Resolve{Action: messages.ActionAccept}, nil
	}
	return messages.Resolve{Action: messages.ActionDecline}, nil
}

// askMCP puts an MCP server's elicitation to the client: as a form with the
// server's schema when the client takes forms and the schema is an object
// one, else as a permission request (allow accepts with no content).
func (s *session) askMCP(ctx context.Context, ev *messages.Event, callID string, forms bool) (messages.Resolve, error) {
	el := ev.Elicitation
	if el == nil {
		el = &messages.MCPElicitation{}
	}
	var schema sdk.UnstableElicitationSchema
	if forms && len(el.RequestedSchema) > 0 && json.Unmarshal(el.RequestedSchema, &schema) == nil && schema.Type == "object" {
		if schema.Properties == nil {
			schema.Properties = map[string]any{}
		}
		res, err := s.a.connection().UnstableCreateElicitation(ctx, sdk.UnstableCreateElicitationRequest{Form: &sdk.UnstableCreateElicitationForm{
			Message:         mcpMessage(el),
			Meta:            map[string]any{"sessionId": s.id},
			RequestedSchema: schema,
		}})
		if err == nil {
			if res.Accept == nil {
				return messages.Resolve{Action: messages.ActionDecline}, nil
			}
			content, err := json.Marshal(res.Accept.Content)
			if err != nil {
				return messages.Resolve{}, err
			}
			return messages.Resolve{Action: messages.ActionAccept, Content: content}, nil
		}
		if ctx.Err() != nil {
			return messages.Resolve{}, err
		}
		s.log.Warn("elicitation form refused; falling back", "err", err)
	}
	title := mcpMessage(el)
	res, err := s.a.connection().RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(s.id),
		ToolCall:  sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(callID), Title: &title, Status: sdk.Ptr(sdk.ToolCallStatusPending), RawInput: ev.Raw},
		Options: []sdk.PermissionOption{
			{OptionId: optionAllow, Name: "Accept", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: optionReject, Name: "Decline", Kind: sdk.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		return messages.Resolve{}, err
	}
	if sel := res.Outcome.Selected; sel != nil && sel.OptionId == optionAllow {
		return messages.Resolve{Action: messages.ActionAccept}, nil
	}
	return messages.Resolve{Action: messages.ActionDecline}, nil
}

// mcpMessage is what an MCP elicitation asks, in a line.
func mcpMessage(el *messages.MCPElicitation) string {
	msg := el.Message
	if el.URL != "" {
		msg = strings.TrimSpace(msg + " " + el.URL)
	}
	if el.Server != "" {
		return el.Server + " asks: " + msg
	}
	return "An MCP server asks: " + msg
}

// inlineCode quotes a name as Markdown code (backticks in it dropped).
func inlineCode(s string) string { return "`" + strings.ReplaceAll(s, "`", "") + "`" }

// askChoice asks a single-select question as a permission request whose
// options are the question's options.
func (s *session) askChoice(ctx context.Context, ev *messages.Event, callID string) (messages.Resolve, error) {
	q := ev.Questions[0]
	opts := make([]sdk.PermissionOption, 0, len(q.Options)+1)
	for _, o := range q.Options {
		opts = append(opts, sdk.PermissionOption{OptionId: sdk.PermissionOptionId(o.ID), Name: o.Text, Kind: sdk.PermissionOptionKindAllowOnce})
	}
	opts = append(opts, sdk.PermissionOption{OptionId: optionSkip, Name: "Skip the question", Kind: sdk.PermissionOptionKindRejectOnce})
	title := q.Question
	res, err := s.a.connection().RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(s.id),
		ToolCall:  sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(callID), Title: &title, Status: sdk.Ptr(sdk.ToolCallStatusPending)},
		Options:   opts,
	})
	if err != nil {
		return messages.Resolve{}, err
	}
	sel := res.Outcome.Selected
	if sel == nil || sel.OptionId == optionSkip {
		return messages.Resolve{Action: messages.ActionDecline}, nil
	}
	for _, o := range q.Options {
		if sdk.PermissionOptionId(o.ID) == sel.OptionId {
			return messages.Resolve{Action: messages.ActionAccept, Answers: []messages.Answer{{Question: q.Question, SelectedOptionIDs: []string{o.ID}}}}, nil
		}
	}
	return messages.Resolve{}, fmt.Errorf("the client chose option %q, which the question does not have", sel.OptionId)
}

// askForm asks agy's questions as one elicitation form: a property per
// question ("q1", "q2", ...), a single choice as a string enum, a
// multi-select as an array of enums.
func (s *session) askForm(ctx context.Context, ev *messages.Event) (messages.Resolve, error) {
	props := make(map[string]any, len(ev.Questions))
	var required []string
	for i, q := range ev.Questions {
		choices := make([]any, 0, len(q.Options))
		for _, o := range q.Options {
			choices = append(choices, map[string]any{"const": o.ID, "title": o.Text})
		}
		key := fmt.Sprintf("q%d", i+1)
		switch {
		case len(q.Options) == 0:
			props[key] = map[string]any{"type": "string", "title": q.Question}
		case q.MultiSelect:
			props[key] = map[string]any{"type": "array", "title": q.Question, "items": map[string]any{"anyOf": choices}}
		default:
			props[key] = map[string]any{"type": "string", "title": q.Question, "oneOf": choices}
		}
		required = append(required, key)
	}
	res, err := s.a.connection().UnstableCreateElicitation(ctx, sdk.UnstableCreateElicitationRequest{Form: &sdk.UnstableCreateElicitationForm{
		Message:         "agy asks: " + questionSummary(ev.Questions),
		Meta:            map[string]any{"sessionId": s.id},
		RequestedSchema: sdk.UnstableElicitationSchema{Type: "object", Properties: props, Required: required},
	}})
	if err != nil {
		return messages.Resolve{}, err
	}
	if res.Accept == nil {
		return messages.Resolve{Action: messages.ActionDecline}, nil
	}
	answers := make([]messages.Answer, 0, len(ev.Questions))
	for i, q := range ev.Questions {
		v := res.Accept.Content[fmt.Sprintf("q%d", i+1)]
		a := messages.Answer{Question: q.Question}
		switch v := v.(type) {
		case string:
			if optionID(q, v) != "" {
				a.SelectedOptionIDs = []string{optionID(q, v)}
			} else {
				a.WriteIn = v
			}
		case []any:
			for _, x := range v {
				if str, ok := x.(string); ok && optionID(q, str) != "" {
					a.SelectedOptionIDs = append(a.SelectedOptionIDs, optionID(q, str))
				}
			}
		}
		if len(a.SelectedOptionIDs) == 0 && a.WriteIn == "" {
			return messages.Resolve{}, errors.New("the form answer left question " + fmt.Sprint(i+1) + " unanswered")
		}
		answers = append(answers, a)
	}
	return messages.Resolve{Action: messages.ActionAccept, Answers: answers}, nil
}

// optionID maps an answer (an option id, or its text) to the option id.
func optionID(q messages.Question, v string) string {
	for _, o := range q.Options {
		if o.ID == v || o.Text == v {
			return o.ID
		}
	}
	return ""
}

// promptTitle is what a prompt asks, in a line.
func promptTitle(ev *messages.Event) string {
	switch {
	case ev.Command != nil && ev.Command.Line != "" && ev.Resource != nil && ev.Resource.Target != "" && ev.Resource.Target != ev.Command.Line:
		// One segment of a compound command, asked on its own.
		return ev.Resource.Target + " (in: " + ev.Command.Line + ")"
	case ev.Command != nil && ev.Command.Line != "":
		return ev.Command.Line
	case ev.Resource != nil:
		return strings.TrimSpace(ev.Resource.Action + " " + ev.Resource.Target)
	case len(ev.Questions) > 0:
		return questionSummary(ev.Questions)
	case ev.Elicitation != nil:
		return mcpMessage(ev.Elicitation)
	case ev.Text != "":
		return ev.Text
	case ev.Interaction != "":
		return "agy asks: " + ev.Interaction
	}
	return "agy asks for permission"
}

func questionSummary(qs []messages.Question) string {
	parts := make([]string, 0, len(qs))
	for _, q := range qs {
		parts = append(parts, q.Question)
	}
	return strings.Join(parts, " / ")
}
