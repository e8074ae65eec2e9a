package agytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Scenario says what the fake agent does on each turn. It is a list of turn
// scripts: a turn runs the first script whose Match is a substring of the
// turn's text (case-insensitive); otherwise the scripts without a Match are
// used in order, cycling (or all scripts, cycling, when every one has a
// Match). The JSON form (testdata/scenarios/*.json) has the same shape.
type Scenario struct {
	Name  string       `json:"name,omitempty"`
	Turns []TurnScript `json:"turns"`
}

// TurnScript is what the agent does for one turn.
type TurnScript struct {
	// Match selects this script for a turn whose text contains it.
	Match string `json:"match,omitempty"`
	// Model is the model a turn typed in agy's own terminal runs on (the
	// TUI's /model choice); turns sent over RPC carry their own planModel.
	Model   string   `json:"model,omitempty"`
	Actions []Action `json:"actions"`
}

// Action is one thing the agent does. Exactly one of Think, Say, RunCommand,
// Ask, Tool, Edit, Search, Fetch, MCP, Step, Subagent, Task, ProviderError
// and Fail is set.
//
// Think text becomes the thinking of the next planner step. Say streams a
// planner response (Repeat copies of the text, in Chunks chunks). RunCommand,
// Ask, Tool, Edit, Search, Fetch, MCP, Step and Subagent each produce a planner step
// carrying the tool call, then the tool's own step (scenario_tools.go). Fail
// ends the turn with an ERROR planner step. ProviderError ends it with the
// ERROR_MESSAGE steps agy writes for a quota, usage limit or provider
// failure (one per attempt). Task starts a background task whose
// notification wakes agy after the turn (a run nobody typed).
type Action struct {
	Think      string          `json:"think,omitempty"`
	Say        string          `json:"say,omitempty"`
	Repeat     int             `json:"repeat,omitempty"`
	Chunks     int             `json:"chunks,omitempty"`
	RunCommand *CommandAction  `json:"run_command,omitempty"`
	Ask        *AskAction      `json:"ask,omitempty"`
	Tool       *ToolAction     `json:"tool,omitempty"`
	Edit       *EditAction     `json:"edit,omitempty"`
	Search     *SearchAction   `json:"search,omitempty"`
	Fetch      *FetchAction    `json:"fetch,omitempty"`
	MCP        *MCPAction      `json:"mcp,omitempty"`
	Step       *StepAction     `json:"step,omitempty"`
	Subagent   *SubagentAction `json:"subagent,omitempty"`
	Interact   *InteractAction `json:"interact,omitempty"`
	Fail       string          `json:"fail,omitempty"`
	// ProviderError is one of ProviderQuota, ProviderUsageLimit,
	// ProviderRateLimit, ProviderFailure.
	ProviderError string      `json:"provider_error,omitempty"`
	Task          *TaskAction `json:"task,omitempty"`
}

// Provider errors a scenario can ask for (Action.ProviderError).
const (
	ProviderQuota      = "quota"          // 429 RESOURCE_EXHAUSTED, reason QUOTA_EXHAUSTED
	ProviderUsageLimit = "usage_limit"    // 402 Payment Required
	ProviderRateLimit  = "rate_limit"     // 429 without a quota reason
	ProviderFailure    = "provider_error" // 500 from the model provider
)

// TaskAction is a command agy sends to the background (a tool step with
// task_details). After the turn ends and After has passed, the task
// finishes: agy appends a SYSTEM_MESSAGE step (a task_notification), with no
// user turn, and answers it with Reply (Options.NoBackgroundWakes turns the
// wake off).
type TaskAction struct {
	Line  string `json:"line"`
	After int    `json:"after_ms,omitempty"` // 0 means 200ms
	Reply string `json:"reply,omitempty"`    // "" means a line saying the task finished
}

// InteractAction is a tool step that asks an interaction other than agy's
// permission or question (Kind is the requestedInteraction key, shaped as
// agy's schema names it; no live copy of any was recorded):
//   - "filePermission": access to Target, a file outside the workspace
//     (a VIEW_FILE step, or a CODE_ACTION step with Write); answered with
//     {filePermission: {allow, scope, absolutePathUri}}; denied, the tool
//     does not run;
//   - "elicitation": an MCP server's (Server) elicitation with Message and
//     the JSON schema Schema; answered with {elicitation: {action,
//     contentJson}};
//   - any other key ("runCommand", "browserAction", "readUrlContent",
//     "sendCommandInput", "mcp", ...): a GENERIC step asking it with an
//     empty request; over RPC it takes only {<kind>: {confirm}}, and when
//     nobody answers within WaitMs (0: 300) agy moves on: the step is
//     CANCELED and the turn goes on.
type InteractAction struct {
	Kind    string `json:"kind"`
	Target  string `json:"target,omitempty"`
	Write   bool   `json:"write,omitempty"`
	Server  string `json:"server,omitempty"`
	Message string `json:"message,omitempty"`
	Schema  string `json:"schema,omitempty"`
	Summary string `json:"summary,omitempty"`
	WaitMs  int    `json:"wait_ms,omitempty"`
}

// Interact returns an interact action.
func Interact(a InteractAction) Action { return Action{Interact: &a} }

// CommandAction is a run_command tool call. Chunks > 0 streams Output in
// that many pieces while the command runs (combinedOutput grows, as agy's
// does). Background: agy stops waiting after the first line of output (the
// RUN_COMMAND step ends with it) and checks on the command with
// command_status (a COMMAND_STATUS step whose combined output grows to all of
// Output, with the exit code).
type CommandAction struct {
	Line          string `json:"line"`
	Cwd           string `json:"cwd,omitempty"`
	Output        string `json:"output,omitempty"`
	ExitCode      int    `json:"exit_code,omitempty"`
	NeedsApproval bool   `json:"needs_approval,omitempty"`
	Chunks        int    `json:"chunks,omitempty"`
	Background    bool   `json:"background,omitempty"`
}

// AskAction is an ask_question tool call: one or more questions.
type AskAction struct {
	Questions []QuestionSpec `json:"questions"`
}

// QuestionSpec is one question. Option ids on the wire are "1".."N" in this
// order. MultiSelect shows only in the tool call's argumentsJson
// (is_multi_select), as with agy. AllowWriteIn lets an answer carry a
// writeInResponse. No recorded agy step shows a flag for it; the fake writes
// allow_write_in beside is_multi_select in argumentsJson so that clients can
// know (the mapper reads it there, and allows write-ins when it is absent).
type QuestionSpec struct {
	Question     string   `json:"question"`
	Options      []string `json:"options,omitempty"`
	MultiSelect  bool     `json:"multi_select,omitempty"`
	AllowWriteIn bool     `json:"allow_write_in,omitempty"`
}

// ToolAction is a file tool call: view_file (a VIEW_FILE step), list_dir
// (LIST_DIRECTORY) or any other name, such as read_file (a GENERIC step).
// NeedsApproval puts a permission prompt {action:"read_file", target} on it.
type ToolAction struct {
	Name          string `json:"name"`
	Target        string `json:"target"`
	Result        string `json:"result,omitempty"`
	NeedsApproval bool   `json:"needs_approval,omitempty"`
}

// SubagentAction spawns Count child conversations, each running Actions on
// Task. As agy 1.1.9 does, the parent's INVOKE_SUBAGENT step lists them
// (subagents[]{role, typeName}, results[]{conversationId}) and is DONE at
// spawn while the children run on; the parent's turn goes on once they are
// idle. Options.LegacySubagents keeps the older shape (the step RUNNING
// until all are idle, no list, summaries typed SUBAGENT).
type SubagentAction struct {
	Count    int      `json:"count"`
	Task     string   `json:"task,omitempty"`
	Role     string   `json:"role,omitempty"`      // each child's role ("Subagent" by default; numbered when Count > 1)
	TypeName string   `json:"type_name,omitempty"` // the children's agent type ("general" by default)
	Actions  []Action `json:"actions"`
}

// Think returns a think action.
func Think(text string) Action { return Action{Think: text} }

// Say returns a say action streamed in chunks chunks (0: about one per word).
func Say(text string, chunks int) Action { return Action{Say: text, Chunks: chunks} }

// Run returns a run_command action.
func Run(c CommandAction) Action { return Action{RunCommand: &c} }

// Ask returns an ask_question action.
func Ask(questions ...QuestionSpec) Action { return Action{Ask: &AskAction{Questions: questions}} }

// Tool returns a file tool action.
func Tool(t ToolAction) Action { return Action{Tool: &t} }

// Subagents returns an action spawning count children that each run actions.
func Subagents(count int, task string, actions ...Action) Action {
	return Action{Subagent: &SubagentAction{Count: count, Task: task, Actions: actions}}
}

// ProviderErr returns an action that ends the turn with agy's ERROR_MESSAGE
// steps for kind (ProviderQuota, ...).
func ProviderErr(kind string) Action { return Action{ProviderError: kind} }

// Task returns an action that starts a background task.
func Task(t TaskAction) Action { return Action{Task: &t} }

// Fail returns an action that ends the turn with an ERROR planner step.
func Fail(message string) Action { return Action{Fail: message} }

// LoadScenario reads a scenario from a JSON file; unknown fields are errors.
func LoadScenario(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agytest: load scenario: %w", err)
	}
	sc, err := parseScenario(b)
	if err != nil {
		return nil, fmt.Errorf("agytest: scenario %s: %w", path, err)
	}
	return sc, nil
}

// ParseScenario decodes and validates a scenario from JSON.
func ParseScenario(b []byte) (*Scenario, error) {
	sc, err := parseScenario(b)
	if err != nil {
		return nil, fmt.Errorf("agytest: scenario: %w", err)
	}
	return sc, nil
}

func parseScenario(b []byte) (*Scenario, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if err := sc.validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Validate reports the first problem that would stop the scenario running.
func (sc *Scenario) Validate() error {
	if err := sc.validate(); err != nil {
		return fmt.Errorf("agytest: scenario: %w", err)
	}
	return nil
}

func (sc *Scenario) validate() error {
	if sc == nil || len(sc.Turns) == 0 {
		return errors.New("scenario has no turns")
	}
	for i, t := range sc.Turns {
		if len(t.Actions) == 0 {
			return fmt.Errorf("turn %d: no actions", i+1)
		}
		if err := validateActions(t.Actions, 0); err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	return nil
}

func validateActions(actions []Action, depth int) error {
	for i, a := range actions {
		if err := a.validate(depth); err != nil {
			return fmt.Errorf("action %d: %w", i+1, err)
		}
	}
	return nil
}

func (a Action) validate(depth int) error {
	set := 0
	for _, on := range []bool{a.Think != "", a.Say != "", a.RunCommand != nil, a.Ask != nil, a.Tool != nil,
		a.Edit != nil, a.Search != nil, a.Fetch != nil, a.MCP != nil, a.Step != nil, a.Subagent != nil, a.Interact != nil, a.Fail != "",
		a.ProviderError != "", a.Task != nil} {
		if on {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("exactly one of think, say, run_command, ask, tool, edit, search, fetch, mcp, step, subagent, interact, fail, provider_error, task must be set (found %d)", set)
	}
	switch a.ProviderError {
	case "", ProviderQuota, ProviderUsageLimit, ProviderRateLimit, ProviderFailure:
	default:
		return fmt.Errorf("provider_error %q: want quota, usage_limit, rate_limit or provider_error", a.ProviderError)
	}
	if a.Task != nil && (strings.TrimSpace(a.Task.Line) == "" || a.Task.After < 0) {
		return errors.New("task needs a line and a non-negative after_ms")
	}
	if err := a.validateTools(); err != nil {
		return err
	}
	if (a.Chunks != 0 || a.Repeat != 0) && a.Say == "" {
		return errors.New("chunks and repeat apply to say only")
	}
	if a.Chunks < 0 || a.Repeat < 0 {
		return errors.New("chunks and repeat must not be negative")
	}
	switch {
	case a.RunCommand != nil:
		if strings.TrimSpace(a.RunCommand.Line) == "" {
			return errors.New("run_command needs a line")
		}
	case a.Ask != nil:
		if len(a.Ask.Questions) == 0 {
			return errors.New("ask needs at least one question")
		}
		seen := map[string]bool{}
		for j, q := range a.Ask.Questions {
			if q.Question == "" {
				return fmt.Errorf("question %d: empty text", j+1)
			}
			if seen[q.Question] {
				return fmt.Errorf("question %d: duplicate text %q (answers quote questions verbatim)", j+1, q.Question)
			}
			seen[q.Question] = true
			if len(q.Options) == 0 && !q.AllowWriteIn {
				return fmt.Errorf("question %d: needs options or allow_write_in", j+1)
			}
		}
	case a.Interact != nil:
		switch k := a.Interact.Kind; {
		case k == "" || k == "permission" || k == "askQuestion":
			return fmt.Errorf("interact: kind %q: name an interaction other than permission and askQuestion", k)
		case k == "filePermission" && a.Interact.Target == "":
			return errors.New("interact: filePermission needs a target")
		case a.Interact.WaitMs < 0:
			return errors.New("interact: wait_ms must not be negative")
		}
	case a.Tool != nil:
		if a.Tool.Name == "" || a.Tool.Target == "" {
			return errors.New("tool needs a name and a target")
		}
	case a.Subagent != nil:
		if depth > 0 {
			return errors.New("subagents cannot spawn subagents")
		}
		if a.Subagent.Count < 1 || a.Subagent.Count > 16 {
			return fmt.Errorf("subagent count %d out of range 1..16", a.Subagent.Count)
		}
		if len(a.Subagent.Actions) == 0 {
			return errors.New("subagent needs actions")
		}
		if err := validateActions(a.Subagent.Actions, depth+1); err != nil {
			return fmt.Errorf("subagent: %w", err)
		}
	}
	return nil
}

// pick chooses the script for a turn's text; n counts the turns so far that
// fell through to the in-order scripts.
func (sc *Scenario) pick(text string, n int) (TurnScript, bool) {
	lower := strings.ToLower(text)
	var plain []TurnScript
	for _, t := range sc.Turns {
		if t.Match != "" && strings.Contains(lower, strings.ToLower(t.Match)) {
			return t, true
		}
		if t.Match == "" {
			plain = append(plain, t)
		}
	}
	if len(plain) == 0 {
		plain = sc.Turns
	}
	return plain[n%len(plain)], false
}

// DefaultScenario exercises every kind of step agy produces in a turn:
// reasoning and streamed text, a command that needs approval (its output
// streamed), a question, a file read, a search, an edit, usage on every
// planner step. Turns mentioning "subagent",
// "fail" or "read" get scripts of their own. testdata/scenarios/default.json
// holds the same scenario.
func DefaultScenario() *Scenario {
	return &Scenario{
		Name: "default",
		Turns: []TurnScript{
			{
				Match: "subagent",
				Actions: []Action{
					Think("The user wants parallel research; I will delegate to two subagents."),
					Subagents(2, "Summarise one module of the workspace.",
						Think("Looking at the files."),
						Tool(ToolAction{Name: "list_dir", Target: "/workspace", Result: "main.go\ninternal/\n"}),
						Say("The module is small and self-contained.", 4),
					),
					Say("Both subagents finished: the workspace has two small modules.", 8),
				},
			},
			{
				Match: "fail",
				Actions: []Action{
					Think("Trying the build."),
					Run(CommandAction{Line: "make build", Cwd: "/workspace", Output: "make: *** No rule to make target 'build'.  Stop.\n", ExitCode: 2}),
					Fail("model provider unavailable: quota exceeded"),
				},
			},
			{
				Match: "read",
				Actions: []Action{
					Tool(ToolAction{Name: "read_file", Target: "/workspace/README.md", Result: "# workspace\n", NeedsApproval: true}),
					Say("The README has a single heading.", 5),
				},
			},
			{
				Actions: []Action{
					Think("The user wants to know what is in the workspace. I should look before answering, and ask which part matters most."),
					Say("Let me look at the workspace first.", 6),
					Run(CommandAction{Line: "ls -la", Cwd: "/workspace", Output: "total 8\ndrwxr-xr-x 2 agy agy 4096 .\n-rw-r--r-- 1 agy agy  120 main.go\n", NeedsApproval: true, Chunks: 3}),
					Ask(QuestionSpec{
						Question: "Which part should I focus on?",
						Options:  []string{"The Go code", "The build setup", "The tests"},
					}),
					Tool(ToolAction{Name: "view_file", Target: "/workspace/main.go", Result: "package main\n\nfunc main() {}\n"}),
					Search(SearchAction{Tool: "grep_search", Query: "func main", Path: "/workspace", Hits: []SearchHit{
						{Path: "/workspace/main.go", Line: 3, Text: "func main() {}"},
					}}),
					Think("main.go is a stub; a greeting makes it do something."),
					Edit(EditAction{Path: "/workspace/main.go", Chunks: []EditChunk{
						{Old: "package main\n", New: "package main\n\nimport \"fmt\"\n", Line: 1},
						{Old: "func main() {}\n", New: "func main() {\n\tfmt.Println(\"hello\")\n}\n", Line: 3},
					}}),
					Say("The workspace holds a single Go file, `main.go`, whose `main` was empty; it now prints a greeting. There is no build setup and there are no tests yet, so a good next step is a `go.mod` and a first test.", 24),
				},
			},
		},
	}
}
