package bench

import (
	"slices"
	"strings"

	"github.com/agyharness/agyharness/rpc/agytest"
)

// turnKinds are the kinds of turn the driver sends; each matches one script
// of campaignScenario by its keyword, but "rewind": agy's /rewind of the
// last turn (RevertToCascadeStep over RPC), then a text turn in its place;
// "background": a turn whose background task wakes agy after it (a run
// nobody typed), which may come while the next turn runs.
var turnKinds = []string{"text", "long", "approve", "question", "tool", "subagent", "compound", "asks", "quota", "rewind", "background"}

// allTurnKinds are every kind campaignScenario knows: turnKinds and
// "essay", a long answer for throughput runs (--turn-kinds essay).
var allTurnKinds = append(slices.Clone(turnKinds), "essay")

// promptKinds are the turn kinds that open a prompt (where prompt-timeout
// has something to expire).
var promptKinds = []string{"approve", "question", "tool", "compound", "asks"}

// campaignScenario is the agent's behaviour for every kind of turn. It is
// small on purpose: the campaign's cost is in the number of sessions and
// faults, not in the length of each answer.
func campaignScenario() *agytest.Scenario {
	long := strings.Repeat("A long answer streams many cumulative snapshots. ", 40)
	return &agytest.Scenario{Name: "bench", Turns: []agytest.TurnScript{
		{Match: "text", Actions: []agytest.Action{
			agytest.Think("A short question."),
			agytest.Say("A short answer.", 3),
		}},
		{Match: "long", Actions: []agytest.Action{
			agytest.Say(long, 40),
		}},
		{Match: "essay", Actions: []agytest.Action{
			// ~7 KB in 100 chunks: frames average about 4 KiB.
			agytest.Say(strings.Repeat("A long answer streams many cumulative snapshots. ", 140), 100),
		}},
		{Match: "approve", Actions: []agytest.Action{
			agytest.Run(agytest.CommandAction{Line: "make test", Cwd: "/w", Output: "ok  w\nok  w/db\n", NeedsApproval: true, Chunks: 2, Background: true}),
			agytest.Say("Ran it, or not.", 2),
		}},
		{Match: "question", Actions: []agytest.Action{
			agytest.Ask(agytest.QuestionSpec{Question: "Which one?", Options: []string{"red", "green", "blue"}}),
			agytest.Say("Noted.", 2),
		}},
		{Match: "tool", Actions: []agytest.Action{
			agytest.Tool(agytest.ToolAction{Name: "read_file", Target: "/w/README.md", Result: "# w\n", NeedsApproval: true}),
			agytest.Tool(agytest.ToolAction{Name: "list_dir", Target: "/w", Result: "main.go\n"}),
			agytest.Search(agytest.SearchAction{Tool: "grep_search", Query: "TODO", Path: "/w", Hits: []agytest.SearchHit{{Path: "/w/main.go", Line: 3, Text: "// TODO"}}}),
			agytest.Edit(agytest.EditAction{Path: "/w/main.go", Chunks: []agytest.EditChunk{{Old: "// TODO\n", New: "// done\n", Line: 3}}}),
			agytest.Say("Read, listed, searched and edited.", 2),
		}},
		{Match: "quota", Actions: []agytest.Action{
			agytest.Think("Calling the model."),
			agytest.ProviderErr(agytest.ProviderQuota),
		}},
		{Match: "background", Actions: []agytest.Action{
			// Finished a moment after the turn (a real task takes seconds).
			agytest.Task(agytest.TaskAction{Line: "make test", After: 400, Reply: backgroundReply}),
			agytest.Say("Started the tests in the background.", 2),
		}},
		{Match: "compound", Actions: []agytest.Action{
			// Asked segment by segment on the same step (agy 1.1.7 on).
			agytest.Run(agytest.CommandAction{Line: "go vet ./... && go test ./...", Cwd: "/w", Output: "ok  w\n", NeedsApproval: true}),
			agytest.Say("Vetted and tested, or not.", 2),
		}},
		{Match: "asks", Actions: []agytest.Action{
			// Interactions beyond a permission or a question: a file outside
			// the workspace and an MCP elicitation are answered; a browser
			// action only agy's terminal answers, and agy moves on.
			agytest.Interact(agytest.InteractAction{Kind: "filePermission", Target: "/etc/hosts"}),
			agytest.Interact(agytest.InteractAction{Kind: "elicitation", Server: "tracker", Message: "Which project?", Schema: `{"type":"object","properties":{"project":{"type":"string"}}}`}),
			agytest.Interact(agytest.InteractAction{Kind: "browserAction", Summary: "Click the login button", WaitMs: 1500}),
			agytest.Say("Asked around.", 2),
		}},
		{Match: "subagent", Actions: []agytest.Action{
			agytest.Subagents(2, "Look at one module.",
				agytest.Tool(agytest.ToolAction{Name: "list_dir", Target: "/w", Result: "main.go\n"}),
				agytest.Say("Small module.", 2),
			),
			agytest.Say("Both subagents finished.", 2),
		}},
	}}
}
