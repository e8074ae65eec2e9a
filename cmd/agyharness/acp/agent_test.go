package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testClient is the editor side of the tests: it records every
// session/update and answers permission requests through a hook.
type testClient struct {
	mu      sync.Mutex
	updates []sdk.SessionNotification
	changed chan struct{} // poked on every update

	permission  func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
	permissions []sdk.RequestPermissionRequest
	elicit      func(ctx context.Context, p sdk.UnstableCreateElicitationRequest) (sdk.UnstableCreateElicitationResponse, error)
}

func newTestClient() *testClient { return &testClient{changed: make(chan struct{}, 1)} }

func (c *testClient) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return nil
}

func (c *testClient) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.permissions = append(c.permissions, p)
	hook := c.permission
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	if hook == nil {
		return sdk.RequestPermissionResponse{}, errors.New("test client: no permission hook")
	}
	return hook(ctx, p)
}

func (c *testClient) UnstableCreateElicitation(ctx context.Context, p sdk.UnstableCreateElicitationRequest) (sdk.UnstableCreateElicitationResponse, error) {
	if c.elicit == nil {
		return sdk.UnstableCreateElicitationResponse{}, sdk.NewMethodNotFound("elicitation/create")
	}
	return c.elicit(ctx, p)
}

func (c *testClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errors.New("not supported")
}
func (c *testClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errors.New("not supported")
}
func (c *testClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errors.New("not supported")
}
func (c *testClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errors.New("not supported")
}
func (c *testClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errors.New("not supported")
}
func (c *testClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errors.New("not supported")
}
func (c *testClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errors.New("not supported")
}

func (c *testClient) snapshot() []sdk.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionNotification(nil), c.updates...)
}

func (c *testClient) reset() {
	c.mu.Lock()
	c.updates = nil
	c.permissions = nil
	c.mu.Unlock()
}

// waitFor polls the recorded updates (on every change) until cond holds.
func (c *testClient) waitFor(t *testing.T, what string, cond func([]sdk.SessionNotification) bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for !cond(c.snapshot()) {
		select {
		case <-c.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; updates: %s", what, dump(c.snapshot()))
		}
	}
}

func dump(us []sdk.SessionNotification) string {
	var b strings.Builder
	for _, u := range us {
		j, _ := json.Marshal(u.Update)
		b.WriteString("\n  ")
		b.Write(j)
	}
	return b.String()
}

// texts concatenates the agent message and thought chunks.
func texts(us []sdk.SessionNotification) (message, thought string) {
	var m, th strings.Builder
	for _, u := range us {
		if c := u.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
			m.WriteString(c.Content.Text.Text)
		}
		if c := u.Update.AgentThoughtChunk; c != nil && c.Content.Text != nil {
			th.WriteString(c.Content.Text.Text)
		}
	}
	return m.String(), th.String()
}

func fastHost() actors.Config {
	return actors.Config{
		PollFast:            20 * time.Millisecond,
		PollSlow:            300 * time.Millisecond,
		RotationInterval:    40 * time.Millisecond,
		SubagentPoll:        20 * time.Millisecond,
		DiscoveryBackoffMin: 10 * time.Millisecond,
		DiscoveryBackoffMax: 100 * time.Millisecond,
		LostAfter:           time.Second,
		GiveUpAfter:         5 * time.Second,
		RestartBackoffMin:   10 * time.Millisecond,
		RestartBackoffMax:   100 * time.Millisecond,
		InterruptDeadline:   5 * time.Second,
		TurnTakenTimeout:    300 * time.Millisecond,
	}
}

// rig is an agent on a fake agy, driven by an in-process SDK client over
// pipes.
type rig struct {
	srv    *agytest.Server
	client *testClient
	conn   *sdk.ClientSideConnection
	agent  *Agent
}

func startRig(t *testing.T, fake agytest.Options, tune func(*Options)) *rig {
	t.Helper()
	return startRigOn(t, fake, func(_ *agytest.Server, o *Options) {
		if tune != nil {
			tune(o)
		}
	})
}

// startRigOn is startRig with options that depend on the fake agy.
func startRigOn(t *testing.T, fake agytest.Options, tune func(*agytest.Server, *Options)) *rig {
	t.Helper()
	srv := agytest.Start(t, fake)
	host := actors.NewHost(fastHost())
	opts := Options{Host: host, AttachPort: srv.Port(), HistoryTimeout: 5 * time.Second, CancelDeadline: 5 * time.Second, RequestTimeout: 5 * time.Second, AttachTimeout: 5 * time.Second}
	tune(srv, &opts)
	agent, err := NewAgent(opts)
	require.NoError(t, err)

	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- agent.Serve(context.Background(), toAgentR, toClientW) }()
	client := newTestClient()
	gate := &gatedReader{r: toClientR, open: make(chan struct{})}
	conn := sdk.NewClientSideConnection(client, toAgentW, gate)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	close(gate.open)
	t.Cleanup(func() {
		_ = toAgentW.Close() // the agent sees EOF: Serve closes every session
		select {
		case err := <-served:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after the client disconnected")
		}
		_ = toClientW.Close()
		<-conn.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, host.Shutdown(ctx))
	})
	return &rig{srv: srv, client: client, conn: conn, agent: agent}
}

func (r *rig) init(t *testing.T, caps sdk.ClientCapabilities) sdk.InitializeResponse {
	t.Helper()
	res, err := r.conn.Initialize(ctx(t), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps})
	require.NoError(t, err)
	return res
}

func (r *rig) newSession(t *testing.T) sdk.NewSessionResponse {
	t.Helper()
	r.init(t, sdk.ClientCapabilities{})
	res, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	require.NoError(t, err)
	return res
}

func (r *rig) prompt(t *testing.T, id sdk.SessionId, text string) (sdk.PromptResponse, error) {
	t.Helper()
	return r.conn.Prompt(ctx(t), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func scenario(actions ...agytest.Action) *agytest.Scenario {
	return &agytest.Scenario{Name: "test", Turns: []agytest.TurnScript{{Actions: actions}}}
}

func fake(sc *agytest.Scenario) agytest.Options {
	return agytest.Options{Conversation: true, Scenario: sc, ChunkDelay: time.Millisecond, PromptTimeout: -1}
}

func TestInitializeAdvertisesLoadAndClose(t *testing.T) {
	r := startRig(t, fake(scenario(agytest.Say("hi", 1))), nil)
	res := r.init(t, sdk.ClientCapabilities{})
	assert.Equal(t, sdk.ProtocolVersion(sdk.ProtocolVersionNumber), res.ProtocolVersion)
	assert.True(t, res.AgentCapabilities.LoadSession)
	assert.NotNil(t, res.AgentCapabilities.SessionCapabilities.Close)
	require.NotNil(t, res.AgentInfo)
	assert.Equal(t, "agyharness", res.AgentInfo.Name)
}

func TestPromptStreamsThoughtsAndTextThenEndsTurn(t *testing.T) {
	const think = "The user greets me; I should greet back."
	const say = "Hello there, how can I help with the workspace today?"
	r := startRig(t, fake(scenario(agytest.Think(think), agytest.Say(say, 6))), nil)
	sess := r.newSession(t)
	assert.Equal(t, r.srv.ConversationID(), string(sess.SessionId), "the session id is agy's conversation id")

	res, err := r.prompt(t, sess.SessionId, "hello")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	require.NotNil(t, res.Usage, "the turn's usage is on the response")
	assert.Positive(t, res.Usage.OutputTokens)

	us := r.client.snapshot()
	message, thought := texts(us)
	assert.Equal(t, say, message, "the message chunks add up to agy's reply")
	assert.Equal(t, think, thought)
	var chunks, usage int
	for _, u := range us {
		assert.Equal(t, sess.SessionId, u.SessionId)
		if u.Update.AgentMessageChunk != nil {
			chunks++
		}
		if uu := u.Update.UsageUpdate; uu != nil {
			usage++
			assert.Positive(t, uu.Used)
			assert.GreaterOrEqual(t, uu.Size, uu.Used)
		}
		assert.Nil(t, u.Update.UserMessageChunk, "the client's own prompt is not echoed")
	}
	assert.Greater(t, chunks, 1, "the reply streams in chunks")
	assert.Equal(t, 1, usage)
}

func TestPermissionAllowedRunsTheCommand(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Run(agytest.CommandAction{Line: "ls -la", Cwd: "/workspace", Output: "main.go\n", NeedsApproval: true}),
		agytest.Say("Listed.", 1),
	)), nil)
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow")}, nil
	}
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "list the files")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)

	require.Len(t, r.client.permissions, 1)
	p := r.client.permissions[0]
	require.NotNil(t, p.ToolCall.Title)
	assert.Equal(t, "ls -la", *p.ToolCall.Title)
	var kinds []sdk.PermissionOptionKind
	for _, o := range p.Options {
		kinds = append(kinds, o.Kind)
	}
	assert.Equal(t, []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindRejectOnce}, kinds, "no allow_always without agy's pane: agy's RPC cannot persist a grant")

	var start *sdk.SessionUpdateToolCall
	var done *sdk.SessionToolCallUpdate
	for _, u := range r.client.snapshot() {
		if tc := u.Update.ToolCall; tc != nil {
			start = tc
		}
		if tu := u.Update.ToolCallUpdate; tu != nil && tu.Status != nil {
			done = tu
		}
	}
	require.NotNil(t, start, "a tool_call announced the command")
	assert.Equal(t, "ls -la", start.Title)
	assert.Equal(t, sdk.ToolKindExecute, start.Kind)
	assert.Equal(t, start.ToolCallId, p.ToolCall.ToolCallId, "the permission request names the tool call")
	require.NotNil(t, done)
	assert.Equal(t, start.ToolCallId, done.ToolCallId)
	assert.Equal(t, sdk.ToolCallStatusCompleted, *done.Status)
	require.Len(t, done.Content, 1)
	assert.Equal(t, "main.go\n", done.Content[0].Content.Content.Text.Text)
}

func TestPermissionRejectedSkipsTheCommand(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Run(agytest.CommandAction{Line: "rm -rf build", Output: "removed\n", NeedsApproval: true}),
		agytest.Say("Not removed.", 1),
	)), nil)
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("reject")}, nil
	}
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "clean up")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	for _, u := range r.client.snapshot() {
		if tu := u.Update.ToolCallUpdate; tu != nil {
			for _, c := range tu.Content {
				assert.NotContains(t, c.Content.Content.Text.Text, "removed", "the rejected command never ran")
			}
		}
	}
	steps := r.srv.Steps(r.srv.ConversationID())
	var denied bool
	for _, s := range steps {
		if s.RunCommand != nil && s.RunCommand.CommandLine == "rm -rf build" {
			denied = s.RunCommand.CombinedOutput == nil
		}
	}
	assert.True(t, denied, "agy recorded the command as not run")
}

func TestCancelEndsThePromptWithCancelled(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Run(agytest.CommandAction{Line: "make deploy", NeedsApproval: true}),
		agytest.Say("Deployed.", 1),
	)), nil)
	asked := make(chan struct{})
	withdrawn := make(chan struct{})
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		close(asked)
		<-ctx.Done() // the user never answers: the agent withdraws the question
		close(withdrawn)
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	sess := r.newSession(t)
	type result struct {
		res sdk.PromptResponse
		err error
	}
	got := make(chan result, 1)
	go func() {
		res, err := r.prompt(t, sess.SessionId, "deploy")
		got <- result{res, err}
	}()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no permission request")
	}
	require.NoError(t, r.conn.Cancel(ctx(t), sdk.CancelNotification{SessionId: sess.SessionId}))
	select {
	case g := <-got:
		require.NoError(t, g.err)
		assert.Equal(t, sdk.StopReasonCancelled, g.res.StopReason)
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt did not return after session/cancel")
	}
	select {
	case <-withdrawn:
	case <-time.After(5 * time.Second):
		t.Fatal("the pending permission request was not withdrawn")
	}
	message, _ := texts(r.client.snapshot())
	assert.NotContains(t, message, "Deployed.")
}

func TestSingleChoiceQuestionBecomesAPermissionRequest(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Ask(agytest.QuestionSpec{Question: "Which part?", Options: []string{"Code", "Build", "Tests"}}),
		agytest.Say("Looking at the build.", 1),
	)), nil)
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("2")}, nil
	}
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "look around")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	require.Len(t, r.client.permissions, 1)
	p := r.client.permissions[0]
	assert.Equal(t, "Which part?", *p.ToolCall.Title)
	var names []string
	for _, o := range p.Options {
		names = append(names, string(o.OptionId)+"="+o.Name)
	}
	assert.Equal(t, []string{"1=Code", "2=Build", "3=Tests", "skip=Skip the question"}, names)
	var answered bool
	for _, s := range r.srv.Steps(r.srv.ConversationID()) {
		for _, ci := range s.CompletedInteractions {
			b, _ := json.Marshal(ci)
			answered = answered || strings.Contains(string(b), `"selectedOptionIds":["2"]`)
		}
	}
	assert.True(t, answered, "agy got option 2")
}

func TestMultiQuestionPromptIsDeclinedWithANote(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Ask(
			agytest.QuestionSpec{Question: "Which files?", Options: []string{"a", "b"}, MultiSelect: true},
		),
		agytest.Say("Fine.", 1),
	)), nil)
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "go")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	assert.Empty(t, r.client.permissions, "a multi-select question is not squeezed into a permission request")
	message, _ := texts(r.client.snapshot())
	assert.Contains(t, message, "multi-select question")
	assert.Contains(t, message, "declined")
	assert.Contains(t, message, "1. a")
	assert.NotContains(t, message, "Fine.", "the turn stopped at the question")
}

func TestQuestionsAsElicitationFormWhenAdvertised(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Ask(
			agytest.QuestionSpec{Question: "Which files?", Options: []string{"a", "b", "c"}, MultiSelect: true},
			agytest.QuestionSpec{Question: "Why?", Options: []string{"speed", "safety"}},
		),
		agytest.Say("Fine.", 1),
	)), nil)
	var form *sdk.UnstableCreateElicitationForm
	r.client.elicit = func(ctx context.Context, p sdk.UnstableCreateElicitationRequest) (sdk.UnstableCreateElicitationResponse, error) {
		form = p.Form
		res := sdk.NewUnstableCreateElicitationResponseAccept()
		res.Accept.Content = map[string]any{"q1": []any{"1", "3"}, "q2": "2"}
		return res, nil
	}
	r.init(t, sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.ElicitationFormCapabilities{}}})
	sess, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	require.NoError(t, err)
	res, err := r.prompt(t, sess.SessionId, "go")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	require.NotNil(t, form)
	assert.Equal(t, []string{"q1", "q2"}, form.RequestedSchema.Required)
	var got string
	for _, s := range r.srv.Steps(r.srv.ConversationID()) {
		for _, ci := range s.CompletedInteractions {
			b, _ := json.Marshal(ci)
			got += string(b)
		}
	}
	assert.Contains(t, got, `"selectedOptionIds":["1","3"]`)
	assert.Contains(t, got, `"selectedOptionIds":["2"]`)
}

func TestLoadReplaysHistoryBeforeAnswering(t *testing.T) {
	r := startRig(t, fake(scenario(agytest.Say("An earlier answer.", 3))), nil)
	require.NoError(t, r.srv.TypeTurn("an earlier question"))
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, r.srv.WaitIdle(wctx, r.srv.ConversationID()))

	r.init(t, sdk.ClientCapabilities{})
	_, err := r.conn.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: sdk.SessionId(r.srv.ConversationID()), Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	require.NoError(t, err)
	// The SDK delivers the notifications sent before a response before the
	// response itself.
	us := r.client.snapshot()
	var user string
	for _, u := range us {
		if c := u.Update.UserMessageChunk; c != nil {
			user += c.Content.Text.Text
		}
	}
	assert.Equal(t, "an earlier question", user)
	message, _ := texts(us)
	assert.Equal(t, "An earlier answer.", message)
}

func TestNewSessionSkipsHistory(t *testing.T) {
	r := startRig(t, fake(scenario(agytest.Say("An earlier answer.", 3))), nil)
	require.NoError(t, r.srv.TypeTurn("an earlier question"))
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, r.srv.WaitIdle(wctx, r.srv.ConversationID()))
	r.newSession(t)
	assert.Empty(t, r.client.snapshot(), "session/new starts without agy's history")
}

func TestModelOptionAndItsChoiceReachAgy(t *testing.T) {
	r := startRig(t, fake(scenario(agytest.Say("ok", 1))), nil)
	sess := r.newSession(t)
	require.Len(t, sess.ConfigOptions, 1)
	sel := sess.ConfigOptions[0].Select
	require.NotNil(t, sel)
	assert.Equal(t, modelConfigID, sel.Id)
	assert.Equal(t, sdk.SessionConfigValueId("MODEL_PLACEHOLDER_M20"), sel.CurrentValue, "the recommended model by default")
	require.NotNil(t, sel.Options.Ungrouped)
	assert.Len(t, *sel.Options.Ungrouped, len(agytest.DefaultModels()))
	require.NotNil(t, sess.Models)
	assert.Len(t, sess.Models.AvailableModels, len(agytest.DefaultModels()))

	_, err := r.conn.SetSessionConfigOption(ctx(t), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: sess.SessionId, ConfigId: modelConfigID, Value: "NO_SUCH_MODEL"}})
	require.Error(t, err, "an unknown model is refused")
	set, err := r.conn.SetSessionConfigOption(ctx(t), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: sess.SessionId, ConfigId: modelConfigID, Value: "MODEL_PLACEHOLDER_M132"}})
	require.NoError(t, err)
	assert.Equal(t, sdk.SessionConfigValueId("MODEL_PLACEHOLDER_M132"), set.ConfigOptions[0].Select.CurrentValue)

	_, err = r.prompt(t, sess.SessionId, "hi")
	require.NoError(t, err)
	var model string
	for _, s := range r.srv.Steps(r.srv.ConversationID()) {
		if s.UserInput != nil && s.UserInput.UserConfig != nil {
			model = s.UserInput.UserConfig.PlannerConfig.Model()
		}
	}
	assert.Equal(t, "MODEL_PLACEHOLDER_M132", model, "the turn ran on the chosen model")
}

func TestModelChangedInAgysTerminalIsAConfigUpdate(t *testing.T) {
	sc := &agytest.Scenario{Name: "models", Turns: []agytest.TurnScript{
		{Match: "terminal", Model: "MODEL_PLACEHOLDER_M26", Actions: []agytest.Action{agytest.Say("from the terminal", 1)}},
		{Actions: []agytest.Action{agytest.Say("ok", 1)}},
	}}
	r := startRig(t, fake(sc), nil)
	sess := r.newSession(t)
	_, err := r.prompt(t, sess.SessionId, "first")
	require.NoError(t, err)
	require.NoError(t, r.srv.TypeTurn("typed in the terminal"))
	r.client.waitFor(t, "a config_option_update naming the terminal's model", func(us []sdk.SessionNotification) bool {
		for _, u := range us {
			if c := u.Update.ConfigOptionUpdate; c != nil && len(c.ConfigOptions) == 1 && c.ConfigOptions[0].Select.CurrentValue == "MODEL_PLACEHOLDER_M26" {
				return true
			}
		}
		return false
	})
	// The terminal's turn is shown as the user's.
	r.client.waitFor(t, "the terminal's turn as a user message", func(us []sdk.SessionNotification) bool {
		for _, u := range us {
			if c := u.Update.UserMessageChunk; c != nil && c.Content.Text.Text == "typed in the terminal" {
				return true
			}
		}
		return false
	})
}

func TestPromptOnUnknownSessionIsAnError(t *testing.T) {
	r := startRig(t, fake(scenario(agytest.Say("ok", 1))), nil)
	r.init(t, sdk.ClientCapabilities{})
	_, err := r.prompt(t, "nope", "hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown session")
}

// launcherFunc adapts a function to Launcher.
type launcherFunc func(ctx context.Context, cwd, conversation string) (*Launched, error)

func (f launcherFunc) Launch(ctx context.Context, cwd, conversation string) (*Launched, error) {
	return f(ctx, cwd, conversation)
}

// launches records what a test launcher was asked to launch.
type launches struct {
	mu            sync.Mutex
	cwds          []string
	conversations []string
	stopped       int
}

// fakeLauncher "launches" the in-process fake agy: discovery by this
// process's PID finds its port among our listeners.
func fakeLauncher(srv *agytest.Server, term actors.Terminal, l *launches) Launcher {
	return launcherFunc(func(ctx context.Context, cwd, conversation string) (*Launched, error) {
		l.mu.Lock()
		l.cwds = append(l.cwds, cwd)
		l.conversations = append(l.conversations, conversation)
		l.mu.Unlock()
		return &Launched{PID: os.Getpid(), Name: "test", Terminal: term, Stop: func(context.Context) error {
			l.mu.Lock()
			l.stopped++
			l.mu.Unlock()
			return nil
		}}, nil
	})
}

func TestNewSessionLaunchesAgyAndStopsItOnClose(t *testing.T) {
	var l launches
	r := startRigOn(t, fake(scenario(agytest.Say("ok", 1))), func(srv *agytest.Server, o *Options) {
		o.AttachPort, o.Launcher = 0, fakeLauncher(srv, nil, &l)
	})
	r.init(t, sdk.ClientCapabilities{})
	cwd := t.TempDir()
	sess, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	require.NoError(t, err)
	_, err = r.conn.CloseSession(ctx(t), sdk.CloseSessionRequest{SessionId: sess.SessionId})
	require.NoError(t, err)
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Equal(t, []string{cwd}, l.cwds)
	assert.Equal(t, []string{""}, l.conversations, "a new session launches a fresh agy")
	assert.Equal(t, 1, l.stopped, "the launched agy is stopped when its session closes")
}

// A new session on the fresh agy it launched (no conversation; earlier
// runs listed) types its first prompt into agy's terminal and follows the
// conversation agy mints for it; later prompts go over RPC; session/load
// of the session launches agy on that conversation.
func TestNewSessionOnAFreshAgyTypesItsFirstPrompt(t *testing.T) {
	var l launches
	opts := fake(&agytest.Scenario{Turns: []agytest.TurnScript{
		{Match: "hello", Actions: []agytest.Action{agytest.Say("Hello, person.", 2)}},
		{Actions: []agytest.Action{agytest.Say("Again.", 1)}},
	}})
	opts.Conversation, opts.EarlierRuns = false, 2
	var term *agytest.Terminal
	r := startRigOn(t, opts, func(srv *agytest.Server, o *Options) {
		term = srv.Terminal()
		o.AttachPort, o.Launcher = 0, fakeLauncher(srv, term, &l)
	})
	earlier := r.srv.Conversations()

	sess := r.newSession(t)
	assert.NotContains(t, earlier, string(sess.SessionId), "no conversation yet: an id of its own")
	res, err := r.prompt(t, sess.SessionId, "hello")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	message, _ := texts(r.client.snapshot())
	assert.Contains(t, message, "Hello, person.")
	assert.Equal(t, []string{"hello"}, term.Typed(), "the first prompt typed into agy's terminal")
	minted := r.srv.ConversationID()
	require.NotEmpty(t, minted)
	assert.NotContains(t, earlier, minted)
	conv, ok := r.agent.store.conversation(string(sess.SessionId))
	require.True(t, ok, "the session's conversation is remembered")
	assert.Equal(t, minted, conv, "the conversation agy minted, never an earlier one")

	res, err = r.prompt(t, sess.SessionId, "once more")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	assert.Equal(t, []string{"hello"}, term.Typed(), "later prompts go over RPC")
	assert.Equal(t, 1, r.srv.Calls("SendUserCascadeMessage"))

	_, err = r.conn.CloseSession(ctx(t), sdk.CloseSessionRequest{SessionId: sess.SessionId})
	require.NoError(t, err)
	r.client.reset()
	_, err = r.conn.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: sess.SessionId, Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	require.NoError(t, err)
	l.mu.Lock()
	assert.Equal(t, []string{"", minted}, l.conversations, "session/load launches agy on the session's conversation")
	l.mu.Unlock()
	r.client.waitFor(t, "the history replayed", func(us []sdk.SessionNotification) bool {
		for _, u := range us {
			if c := u.Update.UserMessageChunk; c != nil && c.Content.Text.Text == "hello" {
				return true
			}
		}
		return false
	})
}

// With --turns tui every prompt is typed into agy's terminal.
func TestTurnsTUITypesEveryPrompt(t *testing.T) {
	var l launches
	opts := fake(scenario(agytest.Say("Typed.", 1)))
	opts.Conversation = false
	var term *agytest.Terminal
	r := startRigOn(t, opts, func(srv *agytest.Server, o *Options) {
		term = srv.Terminal()
		o.Turns, o.AttachPort, o.Launcher = actors.TurnsTUI, 0, fakeLauncher(srv, term, &l)
	})
	sess := r.newSession(t)
	for _, text := range []string{"one", "two"} {
		res, err := r.prompt(t, sess.SessionId, text)
		require.NoError(t, err)
		assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	}
	assert.Equal(t, []string{"one", "two"}, term.Typed())
	assert.Zero(t, r.srv.Calls("SendUserCascadeMessage"))
}

// An attached agy with no conversation (and no terminal of ours to type
// into) tells the user to start in agy's own terminal, and the session
// follows the conversation agy starts then.
func TestAttachedAgyWithoutAConversationSaysHowToStart(t *testing.T) {
	opts := fake(scenario(agytest.Say("Started.", 1)))
	opts.Conversation = false
	r := startRig(t, opts, nil)
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "hello")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	message, _ := texts(r.client.snapshot())
	assert.Contains(t, message, "type your first message in agy's own terminal")
	require.NoError(t, r.srv.TypeTurn("typed in agy"))
	r.client.waitFor(t, "agy's first turn and its answer", func(us []sdk.SessionNotification) bool {
		m, _ := texts(us)
		for _, u := range us {
			if c := u.Update.UserMessageChunk; c != nil && c.Content.Text.Text == "typed in agy" {
				return strings.Contains(m, "Started.")
			}
		}
		return false
	})
}

func TestTurnModeIsChecked(t *testing.T) {
	_, err := NewAgent(Options{Host: &actors.Host{}, AttachPort: 1, Turns: actors.TurnsTUI})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "need an agy the adapter launches")
	_, err = NewAgent(Options{Host: &actors.Host{}, Turns: "telepathy"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want rpc or tui")
}

func TestLaunchFailureIsAClearError(t *testing.T) {
	r := startRig(t, fake(scenario(agytest.Say("ok", 1))), func(o *Options) {
		o.AttachPort = 0
		o.Launcher = launcherFunc(func(ctx context.Context, cwd, conversation string) (*Launched, error) {
			return nil, fmt.Errorf("launch: tmux not found")
		})
	})
	r.init(t, sdk.ClientCapabilities{})
	_, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tmux not found")
}

func TestFailedTurnIsAnError(t *testing.T) {
	// A PLANNER_RESPONSE that ends ERROR is an error event (mapper); the
	// adapter turns an error event during a turn into a failed prompt.
	r := startRig(t, fake(scenario(
		agytest.Think("Trying."),
		agytest.Fail("model provider unavailable: quota exceeded"),
	)), nil)
	sess := r.newSession(t)
	_, err := r.prompt(t, sess.SessionId, "go")
	require.Error(t, err, "a failed turn is a JSON-RPC error, not end_turn")
	assert.Contains(t, err.Error(), "quota exceeded")
}

func TestPromptAnsweredInAgysTerminalIsWithdrawn(t *testing.T) {
	r := startRig(t, fake(scenario(
		agytest.Run(agytest.CommandAction{Line: "make test", Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Tested.", 1),
	)), nil)
	asked := make(chan struct{})
	withdrawn := make(chan struct{})
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		close(asked)
		<-ctx.Done()
		close(withdrawn)
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	sess := r.newSession(t)
	got := make(chan error, 1)
	go func() {
		res, err := r.prompt(t, sess.SessionId, "test it")
		if err == nil && res.StopReason != sdk.StopReasonEndTurn {
			err = fmt.Errorf("stop reason %s", res.StopReason)
		}
		got <- err
	}()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no permission request")
	}
	require.NoError(t, r.srv.AnswerFromTerminal(r.srv.ConversationID(), wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}}))
	select {
	case <-withdrawn:
	case <-time.After(10 * time.Second):
		t.Fatal("the permission request answered in agy's terminal was not withdrawn")
	}
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt did not end")
	}
	message, _ := texts(r.client.snapshot())
	assert.Contains(t, message, "Tested.")
}

// A cwd that is not an absolute path to an existing directory is refused
// by session/new and session/load with Invalid params naming the problem,
// and no agy is launched (it would run in the adapter's own directory).
func TestOpenRefusesACwdThatIsNoAbsoluteDirectory(t *testing.T) {
	var l launches
	r := startRigOn(t, fake(scenario(agytest.Say("ok", 1))), func(srv *agytest.Server, o *Options) {
		o.AttachPort, o.Launcher = 0, fakeLauncher(srv, nil, &l)
	})
	r.init(t, sdk.ClientCapabilities{})
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, tc := range []struct{ cwd, want string }{
		{"", "Invalid params"}, // the SDK refuses it before the agent sees it
		{"relative/dir", `cwd "relative/dir" is not an absolute path (ACP requires one)`},
		{".", `cwd "." is not an absolute path`},
		{filepath.Join(t.TempDir(), "missing"), "does not exist"},
		{file, "is not a directory"},
	} {
		_, err := r.conn.NewSession(ctx(t), sdk.NewSessionRequest{Cwd: tc.cwd, McpServers: []sdk.McpServer{}})
		var re *sdk.RequestError
		require.ErrorAs(t, err, &re, "session/new with cwd %q", tc.cwd)
		assert.Equal(t, -32602, re.Code, "Invalid params")
		assert.Contains(t, re.Message, tc.want, "session/new with cwd %q", tc.cwd)
		_, err = r.conn.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: "conv-1", Cwd: tc.cwd, McpServers: []sdk.McpServer{}})
		require.ErrorAs(t, err, &re, "session/load with cwd %q", tc.cwd)
		assert.Equal(t, -32602, re.Code, "Invalid params")
		assert.Contains(t, re.Message, tc.want, "session/load with cwd %q", tc.cwd)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.cwds, "no agy was launched")
}

// dialogTerm is agy's terminal with its permission dialog: rows 2 and 3
// ("always") allow the open prompt, as agy's dialog does.
type dialogTerm struct {
	*agytest.Terminal
	srv *agytest.Server
}

func (d *dialogTerm) Press(ctx context.Context, keys ...string) error {
	if len(keys) > 0 && (keys[0] == "2" || keys[0] == "3") {
		_ = d.srv.AnswerFromTerminal(d.srv.ConversationID(), wire.InteractionResponse{Permission: &wire.PermissionAnswer{Allow: true}})
	}
	return d.Terminal.Press(ctx, keys...)
}

// Where the agent launched agy (it owns agy's pane), a permission request
// offers agy's two "always" rows as allow_always options, the narrower
// first; choosing one gives it with agy's keys in the pane, not over RPC.
func TestPermissionAllowAlwaysIsGivenInAgysPane(t *testing.T) {
	var l launches
	opts := fake(scenario(
		agytest.Run(agytest.CommandAction{Line: "make test", Output: "ok\n", NeedsApproval: true}),
		agytest.Say("Tested.", 1),
	))
	opts.Conversation = false
	var term *dialogTerm
	r := startRigOn(t, opts, func(srv *agytest.Server, o *Options) {
		term = &dialogTerm{Terminal: srv.Terminal(), srv: srv}
		o.AttachPort, o.Launcher = 0, fakeLauncher(srv, term, &l)
	})
	r.client.permission = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(messages.ChoiceAllowAlwaysConversation))}, nil
	}
	sess := r.newSession(t)
	res, err := r.prompt(t, sess.SessionId, "run the tests")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	require.Len(t, r.client.permissions, 1)
	var kinds []sdk.PermissionOptionKind
	var ids []sdk.PermissionOptionId
	for _, o := range r.client.permissions[0].Options {
		kinds, ids = append(kinds, o.Kind), append(ids, o.OptionId)
	}
	assert.Equal(t, []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways,
		sdk.PermissionOptionKindAllowAlways, sdk.PermissionOptionKindRejectOnce}, kinds)
	assert.Equal(t, sdk.PermissionOptionId(messages.ChoiceAllowAlwaysConversation), ids[1], "the narrower always first")
	assert.Contains(t, r.client.permissions[0].Options[1].Name, "in this conversation for commands that start with 'make'")
	assert.Equal(t, [][]string{{"2", "Enter"}}, term.Pressed(), "agy's row 2, pressed in its pane")
	assert.Zero(t, r.srv.Calls("HandleCascadeUserInteraction"), "no RPC answer")
}

// busyWithAPersonsTurn starts a rig and a session whose agy runs a turn a
// person typed in its terminal: an answer in chunks chunks, chunkDelay
// apart, already streaming to the thread.
func busyWithAPersonsTurn(t *testing.T, chunkDelay time.Duration, chunks int) (*rig, sdk.NewSessionResponse) {
	t.Helper()
	r := startRig(t, agytest.Options{Conversation: true, PromptTimeout: -1, ChunkDelay: chunkDelay,
		Scenario: scenario(agytest.Say("A long answer that streams for a while, chunk after chunk after chunk.", chunks))}, nil)
	sess := r.newSession(t)
	require.NoError(t, r.srv.TypeTurn("a person's turn"))
	r.client.waitFor(t, "the person's run streams", func(us []sdk.SessionNotification) bool {
		message, _ := texts(us)
		return message != ""
	})
	return r, sess
}

// A prompt sent while agy runs a turn typed in its terminal waits in agy's
// queue behind it; the person's interrupt drops the queue. The prompt fails
// with the session's turn_not_taken error instead of waiting for good, and
// the thread says what happened.
func TestAPromptAgyDroppedFailsWithTheReason(t *testing.T) {
	r, sess := busyWithAPersonsTurn(t, 25*time.Millisecond, 40)
	sends := r.srv.Calls(rpc.MethodSendUserCascadeMessage)
	type result struct {
		res sdk.PromptResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := r.conn.Prompt(ctx(t), sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("the client's turn")}})
		done <- result{res, err}
	}()
	require.Eventually(t, func() bool { return r.srv.Calls(rpc.MethodSendUserCascadeMessage) > sends }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, wire.RunRunning, r.srv.RunStatus(r.srv.ConversationID()), "queued behind the person's turn")
	client, err := rpc.NewClient(rpc.Config{Port: r.srv.Port()})
	require.NoError(t, err)
	defer client.Close()
	require.NoError(t, client.Cancel(ctx(t), rpc.MethodCancelCascadeSteps, r.srv.ConversationID())) // the person's Esc
	var got result
	select {
	case got = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the prompt agy dropped never ended")
	}
	require.Error(t, got.err, "not end_turn: agy never took it")
	assert.Contains(t, got.err.Error(), "did not take it")
	r.client.waitFor(t, "the thread says so", func(us []sdk.SessionNotification) bool {
		message, _ := texts(us)
		return strings.Contains(message, "did not take it")
	})
}

// A prompt queued behind a person's run that agy then takes ends with its
// own run, not sooner and not never.
func TestAPromptQueuedBehindAPersonsTurnEndsWithItsOwnRun(t *testing.T) {
	r, sess := busyWithAPersonsTurn(t, 10*time.Millisecond, 20)
	res, err := r.prompt(t, sess.SessionId, "the client's turn")
	require.NoError(t, err)
	assert.Equal(t, sdk.StopReasonEndTurn, res.StopReason)
	inputs := 0
	for _, st := range r.srv.GroundTruth(r.srv.ConversationID()) {
		if st.Type == wire.StepUserInput {
			inputs++
		}
	}
	assert.Equal(t, 2, inputs, "agy took both turns")
	assert.Equal(t, wire.RunIdle, r.srv.RunStatus(r.srv.ConversationID()), "the prompt ended with its own run")
}
