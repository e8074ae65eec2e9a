package mapper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// Prompt is one logical prompt agy waits on: a question, a permission, an
// MCP elicitation, or another interaction the harness can only show.
type Prompt struct {
	ElicitationID string                // deterministic, stable across timeout-retries of the same logical prompt
	Key           string                // logical prompt key (PromptKey): survives a retry at a higher stepIndex
	Kind          string                // messages.KindQuestion / KindPermission / KindElicitation / KindOther
	Interaction   string                // agy's name for it, beyond permission and askQuestion ("filePermission", ...)
	FileURI       string                // a filePermission's absolutePathUri, echoed in its answer
	Answered      int                   // decisions of its step agy showed answered when it was asked (see AskedSince)
	TrajectoryID  string                // the trajectory of its steps, for the interaction payload
	StepIndex     int                   // the freshest WAITING step index seen for this prompt
	Created       string                // metadata.createdAt of that step: its identity at that index ("" when agy gives none)
	Questions     []messages.Question   // question prompts
	Command       *messages.CommandLine // run_command permission prompts
	Resource      *messages.Resource    // permission prompts: requestedInteraction.permission.resource
	Pattern       string                // permission prompts: suggestedPersistPattern, the prefix agy offers to allow always
	Request       messages.Event        // the elicitation_request event
}

// MaxElicitationContent bounds the content of an MCP elicitation's answer.
const MaxElicitationContent = 64 << 10

// ErrInvalidResolve is wrapped by every error of BuildInteraction: the
// resolve command cannot be turned into an answer for the prompt.
var ErrInvalidResolve = errors.New("mapper: invalid resolve")

// PendingInteraction reads the prompt of a WAITING step with a
// requestedInteraction at index. ElicitationID is left for the reconciler to
// assign, as is the header of Request (id, conversation, time).
func PendingInteraction(step *wire.Step, index int) (*Prompt, bool) {
	if step == nil || step.Status != wire.StatusWaiting {
		return nil, false
	}
	return promptOf(step, index)
}

// promptOf reads the prompt of a step whatever its status.
func promptOf(step *wire.Step, index int) (*Prompt, bool) {
	ri := step.RequestedInteraction
	if ri == nil {
		return nil, false
	}
	p := &Prompt{
		TrajectoryID: step.TrajectoryID(),
		StepIndex:    index,
		Created:      step.Metadata.CreatedAt,
	}
	if ri.AskQuestion == nil && ri.Permission == nil {
		if !otherPrompt(step, p) {
			return nil, false
		}
		p.Key = PromptKey(step)
		return p, true
	}
	p.Key = PromptKey(step)
	if ri.AskQuestion != nil {
		p.Kind = messages.KindQuestion
		p.Questions = questionsOf(step)
	} else {
		p.Kind = messages.KindPermission
		if res := ri.Permission.Resource; res != nil {
			p.Resource = &messages.Resource{Action: res.Action, Target: res.Target}
		}
		p.Pattern = ri.Permission.SuggestedPersistPattern
		if rc := step.RunCommand; rc != nil {
			line := rc.CommandLine
			if line == "" {
				line = rc.ProposedCommandLine
			}
			p.Command = &messages.CommandLine{Line: line, Cwd: rc.Cwd}
		} else if step.Type == wire.StepRunCommand && p.Resource != nil {
			p.Command = &messages.CommandLine{Line: p.Resource.Target}
		}
	}
	p.Request = messages.Event{
		Type:      messages.EventElicitationRequest,
		Kind:      p.Kind,
		Questions: p.Questions,
		Command:   p.Command,
		Resource:  p.Resource,
	}
	return p, true
}

// toolQuestion is one question of ask_question's argumentsJson, the only place
// agy says whether it is multi-select.
type toolQuestion struct {
	Question      string `json:"question"`
	IsMultiSelect bool   `json:"is_multi_select"`
	AllowWriteIn  *bool  `json:"allow_write_in"`
	AllowWriteIn2 *bool  `json:"allowWriteIn"`
}

// allowsWriteIn: agy's ask_question takes a free-text answer
// (writeInResponse) and no recorded step flags it, so a write-in is allowed
// unless argumentsJson says otherwise.
func (q *toolQuestion) allowsWriteIn() bool {
	switch {
	case q == nil:
		return true
	case q.AllowWriteIn != nil:
		return *q.AllowWriteIn
	case q.AllowWriteIn2 != nil:
		return *q.AllowWriteIn2
	}
	return true
}

func questionsOf(step *wire.Step) []messages.Question {
	var args struct {
		Questions []toolQuestion `json:"questions"`
	}
	if tc := step.Metadata.ToolCall; tc != nil && tc.ArgumentsJSON != "" {
		// A malformed argumentsJson only loses the multi-select flags.
		_ = json.Unmarshal([]byte(tc.ArgumentsJSON), &args)
	}
	qs := step.RequestedInteraction.AskQuestion.Questions
	out := make([]messages.Question, 0, len(qs))
	for i, q := range qs {
		mq := messages.Question{Question: q.Question, Options: make([]messages.Option, 0, len(q.Options)), AllowWriteIn: true}
		for _, o := range q.Options {
			mq.Options = append(mq.Options, messages.Option{ID: o.ID, Text: o.Text})
		}
		var tq *toolQuestion
		for j := range args.Questions {
			if args.Questions[j].Question == q.Question {
				tq = &args.Questions[j]
				break
			}
		}
		if tq == nil && len(args.Questions) == len(qs) {
			tq = &args.Questions[i]
		}
		if tq != nil {
			mq.MultiSelect = tq.IsMultiSelect
			mq.AllowWriteIn = tq.allowsWriteIn()
		}
		out = append(out, mq)
	}
	return out
}

// PromptKey is the logical key of a step's requested interaction: its kind
// and content (question texts and options; or resource and command line). A
// timeout-retry asks the same thing at a higher index, so it has the same
// key. "" when the step requests nothing.
func PromptKey(step *wire.Step) string {
	if step == nil || step.RequestedInteraction == nil {
		return ""
	}
	ri := step.RequestedInteraction
	var b strings.Builder
	switch {
	case ri.AskQuestion != nil:
		b.WriteString(messages.KindQuestion)
		for _, q := range ri.AskQuestion.Questions {
			b.WriteString("\x1e")
			b.WriteString(q.Question)
			for _, o := range q.Options {
				b.WriteString("\x1f")
				b.WriteString(o.ID)
				b.WriteString("=")
				b.WriteString(o.Text)
			}
		}
	case ri.Permission != nil:
		b.WriteString(messages.KindPermission)
		b.WriteString("\x1e")
		b.WriteString(string(step.Type))
		if res := ri.Permission.Resource; res != nil {
			b.WriteString("\x1e")
			b.WriteString(res.Action)
			b.WriteString("\x1f")
			b.WriteString(res.Target)
		}
		if rc := step.RunCommand; rc != nil {
			line := rc.CommandLine
			if line == "" {
				line = rc.ProposedCommandLine
			}
			b.WriteString("\x1e")
			b.WriteString(line)
			b.WriteString("\x1f")
			b.WriteString(rc.Cwd)
		}
	default:
		name, raw := interactionOf(step)
		if name == "" {
			return ""
		}
		b.WriteString(messages.KindOther)
		b.WriteString("\x1e")
		b.WriteString(string(step.Type))
		b.WriteString("\x1e")
		b.WriteString(name)
		b.WriteString("\x1e")
		b.Write(raw)
	}
	return b.String()
}

// FreshestWaiting finds the highest-index WAITING step whose PromptKey is
// key, in a window of steps read from trajectory index offset, and returns
// its trajectory index (see Indexer). Used at delivery time: a prompt may
// have timed out and been asked again since it was detected.
func FreshestWaiting(steps []wire.Step, offset int, key string) (index int, step *wire.Step, ok bool) {
	at := Indexer(steps, offset)
	for i := len(steps) - 1; i >= 0; i-- {
		s := &steps[i]
		if s.Status == wire.StatusWaiting && s.RequestedInteraction != nil && PromptKey(s) == key {
			return at(i), s, true
		}
	}
	return -1, nil, false
}

// NoLongerAsked reports whether p's own step, in a window of steps read
// from trajectory index offset, no longer asks p, and what agy recorded as
// its answer then ("" when none: cancelled, or the step is gone). It asks
// p while WAITING on p's ask, and after timing out (ERROR: agy asks again
// at a higher index, which FreshestWaiting finds). Any other status, a
// WAITING step asking a later ask, a different step at p's index (a rewind
// reused it) or none there: p was answered, by anyone, or went away, and an
// answer to p must go nowhere: FreshestWaiting would find a later ask of
// the same key (the next turn's same command) and answer it.
func NoLongerAsked(p *Prompt, steps []wire.Step, offset int) (answer string, gone bool) {
	if p == nil {
		return "", false
	}
	at := Indexer(steps, offset)
	for i := range steps {
		if at(i) != p.StepIndex {
			continue
		}
		s := &steps[i]
		if p.Created != "" && s.Metadata.CreatedAt != "" && s.Metadata.CreatedAt != p.Created {
			return "", true
		}
		if (s.Status == wire.StatusWaiting && !AskedSince(p, p.StepIndex, s)) || s.Status == wire.StatusError {
			return "", false
		}
		return answeredAs(s, p.Kind, p.Answered), true
	}
	if len(steps) == 0 {
		return "", false // nothing read: not known to be gone
	}
	return "", true
}

// answeredAs is the action of the n-th (from 0) decision agy recorded on
// step s, a prompt of kind: "" when it recorded none (a step that went on
// to run, or ran to DONE, with no echo of its only decision was answered as
// answeredAction reads it).
func answeredAs(s *wire.Step, kind string, n int) string {
	switch {
	case n < len(s.CompletedInteractions):
		upTo := *s
		upTo.CompletedInteractions = s.CompletedInteractions[:n+1]
		return answeredAction(&upTo, kind)
	case n == 0 && (s.Status == wire.StatusDone || s.Status == wire.StatusRunning):
		return answeredAction(s, kind)
	}
	return ""
}

// BuildInteraction turns a resolve command into the interaction payload of
// HandleCascadeUserInteraction for the step at (trajectoryID, stepIndex),
// which the caller has re-read as the freshest WAITING step of p.
//
// Permission: accept -> allow true; decline and cancel -> allow false.
// Question: decline and cancel -> no responses at all ({"responses":[]},
// which agy takes as a declined question; answers must be absent). Accept:
// each question gets one answer, matched by verbatim
// question text, or by order when no answer names its question and the counts
// match (a single question takes a single unnamed answer); option ids, not
// texts; a write-in where the question allows it. Anything else is an error
// wrapping ErrInvalidResolve, and no payload.
func BuildInteraction(p *Prompt, res messages.Resolve, trajectoryID string, stepIndex int) (wire.InteractionResponse, error) {
	var none wire.InteractionResponse
	if p == nil {
		return none, fmt.Errorf("%w: no prompt", ErrInvalidResolve)
	}
	if trajectoryID == "" {
		return none, fmt.Errorf("%w: no trajectory id for step %d", ErrInvalidResolve, stepIndex)
	}
	if stepIndex < 0 {
		return none, fmt.Errorf("%w: negative step index %d", ErrInvalidResolve, stepIndex)
	}
	switch res.Action {
	case messages.ActionAccept, messages.ActionDecline, messages.ActionCancel:
	default:
		return none, fmt.Errorf("%w: unknown action %q (want accept, decline or cancel)", ErrInvalidResolve, res.Action)
	}
	out := wire.InteractionResponse{TrajectoryID: trajectoryID, StepIndex: wire.Int(stepIndex)}
	if len(res.Content) > 0 && p.Kind != messages.KindElicitation {
		return none, fmt.Errorf("%w: content is for an MCP elicitation, not a %s prompt", ErrInvalidResolve, p.Kind)
	}
	switch p.Kind {
	case messages.KindPermission:
		if len(res.Answers) > 0 {
			return none, fmt.Errorf("%w: answers given for a permission prompt", ErrInvalidResolve)
		}
		if p.Interaction == "filePermission" {
			// agy's schema's shape; never recorded live.
			out.FilePermission = &wire.FilePermissionAnswer{Allow: res.Action == messages.ActionAccept, Scope: wire.PermissionScopeOnce, AbsolutePathURI: p.FileURI}
			return out, nil
		}
		out.Permission = &wire.PermissionAnswer{Allow: res.Action == messages.ActionAccept}
		return out, nil
	case messages.KindElicitation:
		if len(res.Answers) > 0 {
			return none, fmt.Errorf("%w: answers given for an MCP elicitation (give its form's content as content)", ErrInvalidResolve)
		}
		a := &wire.ElicitationAnswer{Action: res.Action}
		if len(res.Content) > 0 {
			if res.Action != messages.ActionAccept {
				return none, fmt.Errorf("%w: content given to %s an MCP elicitation", ErrInvalidResolve, res.Action)
			}
			if len(res.Content) > MaxElicitationContent {
				return none, fmt.Errorf("%w: content of %d bytes (at most %d)", ErrInvalidResolve, len(res.Content), MaxElicitationContent)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(res.Content, &obj); err != nil || obj == nil {
				return none, fmt.Errorf("%w: content must be a JSON object", ErrInvalidResolve)
			}
			var b bytes.Buffer
			_ = json.Compact(&b, res.Content)
			a.ContentJSON = b.String()
		}
		out.Elicitation = a
		return out, nil
	case messages.KindOther:
		return none, fmt.Errorf("%w: agy's answer to a %q prompt is not known: %s", ErrInvalidResolve, p.Interaction, OtherKindHint)
	case messages.KindQuestion:
		if res.Action != messages.ActionAccept {
			if len(res.Answers) > 0 {
				return none, fmt.Errorf("%w: answers given to %s a question", ErrInvalidResolve, res.Action)
			}
			out.AskQuestion = &wire.QuestionResponses{Responses: []wire.QuestionResponse{}}
			return out, nil
		}
		rs, err := questionResponses(p.Questions, res.Answers)
		if err != nil {
			return none, err
		}
		out.AskQuestion = &wire.QuestionResponses{Responses: rs}
		return out, nil
	}
	return none, fmt.Errorf("%w: unknown prompt kind %q", ErrInvalidResolve, p.Kind)
}

func questionResponses(qs []messages.Question, answers []messages.Answer) ([]wire.QuestionResponse, error) {
	if len(qs) == 0 {
		return nil, fmt.Errorf("%w: the prompt has no questions", ErrInvalidResolve)
	}
	matched := make([]*messages.Answer, len(qs))
	unnamed := 0
	for i := range answers {
		if answers[i].Question == "" {
			unnamed++
		}
	}
	switch {
	case unnamed > 0 && unnamed == len(answers) && len(answers) == len(qs):
		for i := range answers {
			matched[i] = &answers[i]
		}
	case unnamed > 0:
		return nil, fmt.Errorf("%w: %d answer(s) do not name their question; name each, or give one per question in order", ErrInvalidResolve, unnamed)
	default:
		for i := range answers {
			a := &answers[i]
			found := false
			for j := range qs {
				if qs[j].Question == a.Question {
					if matched[j] != nil {
						return nil, fmt.Errorf("%w: two answers to question %q", ErrInvalidResolve, a.Question)
					}
					matched[j] = a
					found = true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("%w: no question %q in this prompt", ErrInvalidResolve, a.Question)
			}
		}
	}
	out := make([]wire.QuestionResponse, 0, len(qs))
	for j, q := range qs {
		a := matched[j]
		if a == nil || (len(a.SelectedOptionIDs) == 0 && a.WriteIn == "") {
			return nil, fmt.Errorf("%w: missing answer for question %q", ErrInvalidResolve, q.Question)
		}
		if len(a.SelectedOptionIDs) > 1 && !q.MultiSelect {
			return nil, fmt.Errorf("%w: question %q is single-select, got %d options", ErrInvalidResolve, q.Question, len(a.SelectedOptionIDs))
		}
		for _, id := range a.SelectedOptionIDs {
			if !hasOption(q.Options, id) {
				return nil, fmt.Errorf("%w: question %q has no option id %q (option ids are %s)", ErrInvalidResolve, q.Question, id, optionIDs(q.Options))
			}
		}
		if a.WriteIn != "" && !q.AllowWriteIn {
			return nil, fmt.Errorf("%w: question %q does not allow a write-in", ErrInvalidResolve, q.Question)
		}
		out = append(out, wire.QuestionResponse{
			Question:          q.Question,
			SelectedOptionIDs: append([]string(nil), a.SelectedOptionIDs...),
			WriteInResponse:   a.WriteIn,
		})
	}
	return out, nil
}

func hasOption(opts []messages.Option, id string) bool {
	for _, o := range opts {
		if o.ID == id {
			return true
		}
	}
	return false
}

func optionIDs(opts []messages.Option) string {
	ids := make([]string, len(opts))
	for i, o := range opts {
		ids[i] = o.ID
	}
	return strings.Join(ids, ", ")
}
