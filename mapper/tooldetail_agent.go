package mapper

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/wire"
)

// The detail of the tools that are neither commands, files nor the web:
// an MCP server's tools and resources, subagents, the task agy reports, its
// notes and questions to the user, and images.

type mcpToolBody struct {
	ServerName string `json:"serverName"`
	ToolCall   *struct {
		Name          string `json:"name"`
		ArgumentsJSON string `json:"argumentsJson"`
	} `json:"toolCall"`
	ResultString string `json:"resultString"`
	ResultURI    string `json:"resultUri"`
	Rejected     bool   `json:"userRejected"`
	RenderInfo   *struct {
		Title string `json:"title"`
	} `json:"renderInfo"`
}

// mcpToolCall names the call by the body's tool, unless metadata.toolCall
// names it, and takes its arguments from the body.
func mcpToolCall(v stepView, d *callDetail) {
	b, ok := decodeBody[mcpToolBody](v)
	if !ok {
		return
	}
	tool := ""
	if b.ToolCall != nil {
		tool = b.ToolCall.Name
		if tc := v.s.Metadata.ToolCall; tc == nil || tc.Name == "" {
			d.name = tool
		}
		if b.ToolCall.ArgumentsJSON != "" && json.Valid([]byte(b.ToolCall.ArgumentsJSON)) {
			d.arguments = compact(json.RawMessage(b.ToolCall.ArgumentsJSON))
		}
	}
	d.title = strings.TrimPrefix(b.ServerName+": "+tool, ": ")
}

var mcpToolResult = fromBody(func(b *mcpToolBody, d *resultDetail) {
	if b.Rejected {
		d.say("the user declined the call")
		return
	}
	if out := firstNonEmpty(b.ResultString, b.ResultURI); out != "" {
		d.say(out)
	}
})

type mcpServerBody struct {
	ServerName string `json:"serverName"`
}

var listResourcesCall = fromBody(func(b *mcpServerBody, d *callDetail) {
	d.title = "List the resources of " + b.ServerName
})

type resourceListBody struct {
	Resources []struct {
		URI  string `json:"uri"`
		Name string `json:"name"`
	} `json:"resources"`
}

var listResourcesResult = fromBody(func(b *resourceListBody, d *resultDetail) {
	var lines []string
	for _, r := range b.Resources {
		lines = append(lines, strings.TrimSpace(r.Name+" "+r.URI))
	}
	d.say(strings.Join(lines, "\n"))
})

type readResourceBody struct {
	ServerName string `json:"serverName"`
	URI        string `json:"uri"`
	Contents   []struct {
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
	} `json:"contents"`
}

var readResourceCall = fromBody(func(b *readResourceBody, d *callDetail) {
	d.title = "Read " + b.URI + " from " + b.ServerName
})

var readResourceResult = fromBody(func(b *readResourceBody, d *resultDetail) {
	var parts []string
	for _, c := range b.Contents {
		if c.Text != nil {
			parts = append(parts, c.Text.Text)
		}
	}
	d.say(strings.Join(parts, "\n"))
})

type invokeSubagentBody struct {
	SubagentName string `json:"subagentName"`
	Prompt       string `json:"prompt"`
	Result       string `json:"result"`
}

func invokeSubagentCall(v stepView, d *callDetail) {
	b, ok := decodeBody[invokeSubagentBody](v)
	if !ok {
		return
	}
	switch {
	case b.SubagentName != "":
		d.title = "Subagent " + b.SubagentName
	case b.Prompt != "":
		d.title = "Subagent: " + oneLine(b.Prompt)
	default:
		d.title = subagentsTitle(v.s) // agy 1.1.9's list of subagents
	}
}

// invokeSubagentResult is the subagent's result and its child
// conversations.
func invokeSubagentResult(v stepView, d *resultDetail) {
	b, ok := decodeBody[invokeSubagentBody](v)
	if !ok {
		return
	}
	out := b.Result
	if ids := ChildConversations(v.s); len(ids) > 0 {
		if out != "" {
			out += "\n"
		}
		titles := childTitles(v.s)
		for i, id := range ids {
			if t := titles[id]; t != "" {
				ids[i] = id + " (" + oneLine(t) + ")"
			}
		}
		out += "subagents: " + strings.Join(ids, ", ")
	}
	if out != "" {
		d.say(out)
	}
}

type browserSubagentBody struct {
	Task        string `json:"task"`
	TaskName    string `json:"taskName"`
	TaskSummary string `json:"taskSummary"`
	Result      string `json:"result"`
}

var browserSubagentCall = fromBody(func(b *browserSubagentBody, d *callDetail) {
	d.title = "Browse: " + oneLine(firstNonEmpty(b.TaskName, b.Task))
})

var browserSubagentResult = fromBody(func(b *browserSubagentBody, d *resultDetail) {
	if out := firstNonEmpty(b.Result, b.TaskSummary); out != "" {
		d.say(out)
	}
})

type taskBoundaryBody struct {
	TaskName    string `json:"taskName"`
	TaskStatus  string `json:"taskStatus"`
	TaskSummary string `json:"taskSummary"`
}

var taskBoundaryCall = fromBody(func(b *taskBoundaryBody, d *callDetail) {
	d.title = "Task: " + b.TaskName
	if b.TaskStatus != "" {
		d.title += " — " + b.TaskStatus
	}
})

var taskBoundaryResult = fromBody(func(b *taskBoundaryBody, d *resultDetail) {
	if out := firstNonEmpty(b.TaskSummary, b.TaskStatus); out != "" {
		d.say(out)
	}
})

type notifyUserBody struct {
	Content string   `json:"notificationContent"`
	Review  []string `json:"reviewAbsoluteUris"`
}

var notifyUserCall = fromBody(func(b *notifyUserBody, d *callDetail) {
	d.title = "Notify the user"
	for _, u := range b.Review {
		d.locations = append(d.locations, locate(filePath(u), 0)...)
	}
})

var notifyUserResult = fromBody(func(b *notifyUserBody, d *resultDetail) {
	if b.Content != "" {
		d.say(b.Content)
	}
})

type generateImageBody struct {
	Prompt     string   `json:"prompt"`
	ImagePaths []string `json:"imagePaths"`
	ImageName  string   `json:"imageName"`
}

var generateImageCall = fromBody(func(b *generateImageBody, d *callDetail) {
	d.title = "Generate an image: " + oneLine(firstNonEmpty(b.ImageName, b.Prompt))
})

var generateImageResult = fromBody(func(b *generateImageBody, d *resultDetail) {
	for _, p := range b.ImagePaths {
		d.locations = append(d.locations, locate(filePath(p), 0)...)
	}
	if len(b.ImagePaths) > 0 {
		d.say(strings.Join(b.ImagePaths, "\n"))
	}
})

// askQuestionCall and askQuestionResult read the typed step (askQuestion,
// else the question asked in requestedInteraction), not a body.

func askQuestionCall(v stepView, d *callDetail) {
	if qs := askedQuestions(v.s); len(qs) > 0 {
		d.title = "Question: " + qs[0].Question
	}
}

func askQuestionResult(v stepView, d *resultDetail) { d.say(answersSummary(v.s)) }

// askedQuestions is an ask_question step's questions: its own, else those
// its prompt asks.
func askedQuestions(s *wire.Step) []wire.Question {
	var qs []wire.Question
	if s.AskQuestion != nil {
		qs = s.AskQuestion.Questions
	}
	if ri := s.RequestedInteraction; len(qs) == 0 && ri != nil && ri.AskQuestion != nil {
		qs = ri.AskQuestion.Questions
	}
	return qs
}

// answersSummary tells the chosen answers of an ask_question step, one line
// per question: "question: option text; option text" (write-ins quoted).
func answersSummary(s *wire.Step) string {
	chosen := map[string]wire.QuestionResponse{}
	for _, ci := range s.CompletedInteractions {
		if ci.Response != nil && ci.Response.AskQuestion != nil {
			for _, qr := range ci.Response.AskQuestion.Responses {
				chosen[qr.Question] = qr
			}
		}
	}
	var lines []string
	for _, q := range askedQuestions(s) {
		ids, writeIn := q.SelectedOptionIDs, q.WriteInResponse
		if qr, ok := chosen[q.Question]; ok {
			ids, writeIn = qr.SelectedOptionIDs, qr.WriteInResponse
		}
		var picks []string
		for _, id := range ids {
			text := id
			for _, o := range q.Options {
				if o.ID == id {
					text = o.Text
				}
			}
			picks = append(picks, text)
		}
		if writeIn != "" {
			picks = append(picks, strconv.Quote(writeIn))
		}
		lines = append(lines, q.Question+": "+strings.Join(picks, "; "))
	}
	return strings.Join(lines, "\n")
}
