package agytest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

const scenarioDir = "../../testdata/scenarios"

func TestScenarioFilesLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.json"))
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range files {
		sc, err := agytest.LoadScenario(f)
		require.NoError(t, err, f)
		names[strings.TrimSuffix(filepath.Base(f), ".json")] = true
		assert.NotEmpty(t, sc.Turns)
	}
	for _, want := range []string{"text", "approval", "question", "long", "subagent", "failing", "tools", "default"} {
		assert.True(t, names[want], "testdata/scenarios/%s.json", want)
	}
}

func TestDefaultJSONIsDefaultScenario(t *testing.T) {
	sc, err := agytest.LoadScenario(filepath.Join(scenarioDir, "default.json"))
	require.NoError(t, err)
	assert.Equal(t, agytest.DefaultScenario(), sc)
}

func TestScenarioValidation(t *testing.T) {
	bad := map[string]string{
		"no turns":         `{"turns":[]}`,
		"unknown field":    `{"turns":[{"actions":[{"say":"x","colour":"red"}]}]}`,
		"two kinds":        `{"turns":[{"actions":[{"say":"x","think":"y"}]}]}`,
		"empty action":     `{"turns":[{"actions":[{}]}]}`,
		"chunks on think":  `{"turns":[{"actions":[{"think":"y","chunks":3}]}]}`,
		"command no line":  `{"turns":[{"actions":[{"run_command":{"cwd":"/"}}]}]}`,
		"question no opts": `{"turns":[{"actions":[{"ask":{"questions":[{"question":"q"}]}}]}]}`,
		"dup question":     `{"turns":[{"actions":[{"ask":{"questions":[{"question":"q","options":["a"]},{"question":"q","options":["b"]}]}}]}]}`,
		"tool no target":   `{"turns":[{"actions":[{"tool":{"name":"view_file"}}]}]}`,
		"nested subagent":  `{"turns":[{"actions":[{"subagent":{"count":1,"actions":[{"subagent":{"count":1,"actions":[{"say":"x"}]}}]}}]}]}`,
		"zero subagents":   `{"turns":[{"actions":[{"subagent":{"count":0,"actions":[{"say":"x"}]}}]}]}`,
		"not json":         `{`,
	}
	for name, doc := range bad {
		_, err := agytest.ParseScenario([]byte(doc))
		assert.ErrorContains(t, err, "agytest: scenario: ", name)
	}
	_, err := agytest.LoadScenario(filepath.Join(t.TempDir(), "missing.json"))
	assert.Error(t, err)
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"turns":[{"actions":[{}]}]}`), 0o600))
	_, err = agytest.LoadScenario(path)
	assert.EqualError(t, err, "agytest: scenario "+path+": turn 1: action 1: exactly one of think, say, run_command, ask, tool, edit, search, fetch, mcp, step, subagent, interact, fail, provider_error, task must be set (found 0)")
	_, err = agytest.NewServer(agytest.Options{Conversation: true, Scenario: &agytest.Scenario{}})
	assert.Error(t, err, "a server refuses a bad scenario")
	_, err = agytest.NewServer(agytest.Options{Conversation: true, Host: "10.1.2.3"})
	assert.Error(t, err, "loopback only")
	_, err = agytest.NewServer(agytest.Options{Conversation: true, Models: []wire.ModelInfo{{Model: "gemini"}}})
	assert.Error(t, err, "models are enum names")
}

func TestTurnsMatchThenCycle(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{
		{Match: "weather", Actions: []agytest.Action{agytest.Say("Sunny.", 1)}},
		{Actions: []agytest.Action{agytest.Say("First.", 1)}},
		{Actions: []agytest.Action{agytest.Say("Second.", 1)}},
	}}
	srv, c, conv := start(t, fast(sc))
	for _, text := range []string{"hi", "What's the WEATHER?", "hi", "hi"} {
		send(t, c, conv, text)
		waitIdle(t, srv, conv)
	}
	var said []string
	for _, s := range srv.Steps(conv) {
		if s.Type == wire.StepPlannerResponse {
			said = append(said, s.PlannerResponse.Response)
		}
	}
	assert.Equal(t, []string{"First.", "Sunny.", "Second.", "First."}, said)
}

func TestTerminalTurnUsesTheScriptModel(t *testing.T) {
	sc := &agytest.Scenario{Turns: []agytest.TurnScript{
		{Match: "opus", Model: "MODEL_PLACEHOLDER_M26", Actions: []agytest.Action{agytest.Say("Opus here.", 1)}},
		{Actions: []agytest.Action{agytest.Say("Default.", 1)}},
	}}
	srv := agytest.Start(t, fast(sc))
	conv := srv.ConversationID()
	require.NoError(t, srv.TypeTurn("hello"))
	waitIdle(t, srv, conv)
	require.NoError(t, srv.TypeTurn("switch to opus"))
	waitIdle(t, srv, conv)
	require.NoError(t, srv.TypeTurn("and now?"))
	waitIdle(t, srv, conv)
	var models []string
	for _, s := range srv.Steps(conv) {
		if s.Type == wire.StepUserInput {
			models = append(models, s.UserInput.UserConfig.PlannerConfig.Model())
		}
		if s.Type == wire.StepPlannerResponse {
			assert.Equal(t, models[len(models)-1], s.Metadata.GeneratorModel)
		}
	}
	assert.Equal(t, []string{"MODEL_PLACEHOLDER_M20", "MODEL_PLACEHOLDER_M26", "MODEL_PLACEHOLDER_M26"}, models, "recommended, then the /model switch sticks")
}

// fingerprint is what a seed decides: ids, usage numbers, step kinds.
func fingerprint(t *testing.T, seed int64) []string {
	opts := fast(agytest.DefaultScenario())
	opts.Seed = seed
	srv, c, _ := start(t, opts)
	out := []string{srv.ConversationID()}
	for _, text := range []string{"please read the readme", "spawn a subagent"} {
		conv := srv.ConversationID()
		send(t, c, conv, text)
		for {
			p, ok := srv.OpenPrompt(conv)
			if ok {
				require.NoError(t, srv.AnswerFromTerminal(conv, allow(p, true)))
				continue
			}
			if srv.RunStatus(conv) == wire.RunIdle {
				break
			}
			waitPromptOrIdle(t, srv, conv)
		}
		waitIdle(t, srv, conv)
	}
	for _, conv := range srv.Conversations() {
		for _, s := range srv.GroundTruth(conv) {
			fp := conv + " " + string(s.Type) + " " + string(s.Status) + " " + s.Metadata.ExecutionID
			if s.Metadata.ToolCall != nil {
				fp += " " + s.Metadata.ToolCall.ID
			}
			if s.PlannerResponse != nil {
				fp += " " + s.PlannerResponse.MessageID
			}
			if u := s.Metadata.ModelUsage; u != nil {
				fp += " " + canon(t, wire.Step{Metadata: wire.StepMetadata{ModelUsage: u}})
			}
			out = append(out, fp)
		}
	}
	return out
}

func TestSameSeedSameTrajectory(t *testing.T) {
	a := fingerprint(t, 99)
	b := fingerprint(t, 99)
	assert.Equal(t, a, b)
	c := fingerprint(t, 100)
	assert.NotEqual(t, a[0], c[0], "another seed, other ids")
}

func TestLongAnswerStreamsThousandsOfChunks(t *testing.T) {
	sc, err := agytest.LoadScenario(filepath.Join(scenarioDir, "long.json"))
	require.NoError(t, err)
	opts := fast(sc)
	opts.ChunkDelay = -1 // as fast as the stream drains
	opts.IdleBeforeFlush = -1
	srv, c, conv := start(t, opts)
	st, err := c.StreamAgentStateUpdates(testCtx(t), conv, "")
	require.NoError(t, err)
	defer st.Close()
	r := newReader()
	r.readUntil(t, st, func(*rpc.StreamFrame) bool { return true })
	send(t, c, conv, "tell me everything")
	r.readUntil(t, st, idleFrame)
	want := strings.Repeat(sc.Turns[0].Actions[1].Say, sc.Turns[0].Actions[1].Repeat)
	var got string
	for _, s := range srv.GroundTruth(conv) {
		if s.Type == wire.StepPlannerResponse {
			got = s.PlannerResponse.Response
		}
	}
	assert.Equal(t, want, got)
	assert.Greater(t, len(r.frames), 2, "the answer streamed over several frames (coalesced while the reader was busy)")
	prev := ""
	for _, f := range r.frames {
		for _, s := range f.Update.MainTrajectoryUpdate.StepsUpdate.Steps {
			if s.Type == wire.StepPlannerResponse && s.PlannerResponse.ModifiedResponse != "" {
				require.True(t, strings.HasPrefix(s.PlannerResponse.ModifiedResponse, prev))
				prev = s.PlannerResponse.ModifiedResponse
			}
		}
	}
	assert.Equal(t, want, prev)
}
