package agytest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/wire"
)

func TestProbesAndMetadata(t *testing.T) {
	srv, c, _ := start(t, fast(nil))
	ctx := testCtx(t)
	require.NoError(t, c.Heartbeat(ctx))
	assert.Equal(t, 1, srv.Calls(rpc.MethodHeartbeat))

	conv := srv.ConversationID()
	md, err := c.GetConversationMetadata(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, conv, md.Metadata.RootConversationID)
	ok, err := c.ConversationMatches(ctx, conv)
	require.NoError(t, err)
	assert.True(t, ok)

	_, err = c.GetConversationMetadata(ctx, "0000-not-hosted")
	require.ErrorIs(t, err, rpc.ErrTrajectoryNotFound)
	_, err = c.GetCascadeTrajectorySteps(ctx, "0000-not-hosted")
	require.ErrorIs(t, err, rpc.ErrTrajectoryNotFound)
}

func TestListensOnHTTPSAndNextPortHTTP(t *testing.T) {
	srv := agytest.Start(t, fast(nil))
	assert.NotZero(t, srv.Port())
	assert.NotEqual(t, srv.Port(), srv.HTTPPort())

	r := post(t, rawHTTPS(t), srv.Port(), rpc.MethodHeartbeat, "application/json", []byte("{}"))
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, 2, r.proto, "HTTPS speaks HTTP/2")

	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/%s/%s", srv.HTTPPort(), rpc.Service, rpc.MethodHeartbeat), "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	http.DefaultClient.CloseIdleConnections()
}

func TestWireErrorsAsConnectGoWritesThem(t *testing.T) {
	srv := agytest.Start(t, fast(nil))
	hc := rawHTTPS(t)
	conv := srv.ConversationID()

	r := post(t, hc, srv.Port(), "GetCascadeId", "application/json", []byte("{}"))
	assert.Equal(t, http.StatusNotFound, r.status, "unknown methods are 404")

	r = post(t, hc, srv.Port(), rpc.MethodGetCascadeTrajectorySteps, "application/json", []byte(`{"cascadeId":"nope"}`))
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.JSONEq(t, `{"code":"unknown","message":"trajectory not found"}`, string(r.body))

	r = post(t, hc, srv.Port(), rpc.MethodHeartbeat, "application/json", nil)
	assert.Equal(t, http.StatusBadRequest, r.status, "an empty unary body is rejected")
	assert.Contains(t, string(r.body), `"code":"invalid_argument"`)

	r = post(t, hc, srv.Port(), rpc.MethodHeartbeat, "application/json", []byte("{not json"))
	assert.Equal(t, http.StatusBadRequest, r.status)

	r = post(t, hc, srv.Port(), rpc.MethodHeartbeat, "application/json", []byte("{}"), "Connect-Timeout-Ms", "12345678901")
	assert.Equal(t, http.StatusBadRequest, r.status, "Connect-Timeout-Ms has at most 10 digits")

	r = post(t, hc, srv.Port(), rpc.MethodHeartbeat, "application/proto", []byte("{}"))
	assert.Equal(t, http.StatusUnsupportedMediaType, r.status)

	r = post(t, hc, srv.Port(), rpc.MethodHandleCascadeUserInteraction, "application/json",
		[]byte(`{"cascadeId":"`+conv+`","trajectoryId":"t","stepIndex":14,"interaction":{"permission":{"allow":true}}}`))
	assert.Equal(t, http.StatusInternalServerError, r.status, "ids outside interaction are dropped")
	assert.JSONEq(t, `{"code":"unknown","message":"input not registered for step 0"}`, string(r.body))

	r = post(t, hc, srv.Port(), rpc.MethodSendUserCascadeMessage, "application/json",
		[]byte(`{"cascadeId":"`+conv+`","items":[{"text":"hi"}]}`))
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.JSONEq(t, `{"code":"unknown","message":"neither PlanModel nor RequestedModel specified"}`, string(r.body))
	assert.Empty(t, srv.Steps(conv), "a turn without a model records nothing")

	r = post(t, hc, srv.Port(), rpc.MethodStreamCascadeReactiveUpdates, "application/connect+json", envelopeJSON(`{"conversationId":"`+conv+`"}`))
	assert.Equal(t, http.StatusOK, r.status)
	require.GreaterOrEqual(t, len(r.body), 5)
	assert.Equal(t, rpc.FlagEndStream, r.body[0])
	assert.JSONEq(t, `{"error":{"message":"reactive state is deprecated"}}`, string(r.body[5:]))
}

func envelopeJSON(s string) []byte {
	b := []byte{0, 0, 0, 0, byte(len(s))}
	return append(b, s...)
}

func TestCSRFTokenEnforced(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, CSRFToken: "s3cret"})
	hc := rawHTTPS(t)
	r := post(t, hc, srv.Port(), rpc.MethodHeartbeat, "application/json", []byte("{}"))
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Contains(t, string(r.body), `"code":"unauthenticated"`)
	r = post(t, hc, srv.Port(), rpc.MethodHeartbeat, "application/json", []byte("{}"), "x-codeium-csrf-token", "s3cret")
	assert.Equal(t, http.StatusOK, r.status)

	ctx := testCtx(t)
	bad := client(t, srv)
	require.Error(t, bad.Heartbeat(ctx))
	st, err := bad.StreamAgentStateUpdates(ctx, srv.ConversationID(), "")
	if err == nil {
		_, err = st.Next()
		st.Close()
	}
	var rerr *rpc.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, rpc.CodeUnauthenticated, rerr.Code)

	good, err := rpc.NewClient(rpc.Config{Port: srv.Port(), CSRFToken: "s3cret"})
	require.NoError(t, err)
	defer good.Close()
	require.NoError(t, good.Heartbeat(ctx))
}

func TestModelsAndTrajectorySummaries(t *testing.T) {
	srv, c, _ := start(t, fast(script(agytest.Say("Hi.", 2))))
	ctx := testCtx(t)

	models, err := c.GetAvailableModels(ctx)
	require.NoError(t, err)
	require.Len(t, models.Response.Models, len(agytest.DefaultModels()))
	recommended := 0
	for key, m := range models.Response.Models {
		assert.NotEqual(t, key, m.Model, "keys are not the enum: consumers read .model")
		assert.True(t, strings.HasPrefix(m.Model, "MODEL_"))
		assert.NotEmpty(t, m.DisplayName)
		if m.Recommended {
			recommended++
		}
	}
	assert.Equal(t, 1, recommended)

	conv := srv.ConversationID()
	all, err := c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	fresh := all.TrajectorySummaries[conv]
	assert.Equal(t, wire.RunIdle, fresh.Status)
	assert.Empty(t, fresh.LastUserInputTime, "a just-minted conversation has null times")
	assert.Empty(t, fresh.LastModifiedTime)
	assert.NotEmpty(t, fresh.TrajectoryID)
	assert.NotEmpty(t, fresh.TrajectoryType)
	assert.Equal(t, conv, fresh.TrajectoryMetadata.RootConversationID)
	assert.Empty(t, fresh.TrajectoryMetadata.ParentConversationID)

	send(t, c, conv, "hello")
	waitIdle(t, srv, conv)
	send(t, c, conv, "again")
	waitIdle(t, srv, conv)
	all, err = c.GetAllCascadeTrajectories(ctx)
	require.NoError(t, err)
	s := all.TrajectorySummaries[conv]
	steps := srv.Steps(conv)
	assert.Equal(t, len(steps), int(s.StepCount))
	assert.NotEmpty(t, s.LastUserInputTime)
	assert.NotEmpty(t, s.LastModifiedTime)
	lastInput := -1
	for i, st := range steps {
		if st.Type == wire.StepUserInput {
			lastInput = i
		}
	}
	assert.Equal(t, lastInput, int(s.LastUserInputStepIndex))
}

func TestStartCascadeMintsARootConversation(t *testing.T) {
	srv, c, _ := start(t, fast(nil))
	raw, err := c.StartCascade(testCtx(t))
	require.NoError(t, err)
	var resp struct {
		CascadeID string `json:"cascadeId"`
	}
	require.NoError(t, json.Unmarshal(raw, &resp))
	assert.Contains(t, srv.Conversations(), resp.CascadeID)
	assert.NotEqual(t, srv.ConversationID(), resp.CascadeID, "StartCascade does not switch agy's terminal")
}

func TestSendAgentMessageRecordsSystemMessage(t *testing.T) {
	srv, c, conv := start(t, fast(nil))
	require.NoError(t, c.SendAgentMessage(testCtx(t), conv, "hello from the side"))
	steps := srv.Steps(conv)
	require.Len(t, steps, 1)
	assert.Equal(t, wire.StepSystemMessage, steps[0].Type)
	assert.Nil(t, steps[0].UserInput, "never a user turn")
	assert.Equal(t, wire.RunIdle, srv.RunStatus(conv), "no turn runs")
}

func TestUserInputShape(t *testing.T) {
	srv, c, conv := start(t, fast(script(agytest.Say("ok", 1))))
	send(t, c, conv, "Say hello in one short sentence.")
	steps, err := c.GetCascadeTrajectorySteps(testCtx(t), conv)
	require.NoError(t, err)
	require.NotEmpty(t, steps, "the USER_INPUT is recorded before the call returns")
	ui := steps[0]
	assert.Equal(t, wire.StepUserInput, ui.Type)
	assert.Equal(t, wire.SourceUserExplicit, ui.Metadata.Source)
	assert.NotEmpty(t, ui.Metadata.ExecutionID)
	assert.Equal(t, "Say hello in one short sentence.", ui.UserInput.UserResponse)
	assert.Equal(t, "Say hello in one short sentence.", ui.UserInput.Items[0].Text)
	assert.Equal(t, model, ui.UserInput.UserConfig.PlannerConfig.PlanModel)
	assert.Equal(t, model, ui.UserInput.UserConfig.PlannerConfig.Model())
	assert.NotContains(t, string(ui.Raw), `"stepIndex"`, "stepIndex 0 is omitted, as proto3 does")
	waitIdle(t, srv, conv)
}

func TestSendValidation(t *testing.T) {
	srv, c, _ := start(t, fast(nil))
	ctx := testCtx(t)
	conv := srv.ConversationID()
	err := c.SendUserCascadeMessage(ctx, conv, "hi", "")
	if !errors.Is(err, rpc.ErrModelRequired) {
		// The client may refuse locally; the server's answer is checked raw in
		// TestWireErrorsAsConnectGoWritesThem.
		require.Error(t, err)
	}
	err = c.Call(ctx, rpc.MethodSendUserCascadeMessage, rpc.SendMessageRequest{
		CascadeID:     conv,
		Items:         []wire.TextItem{{Text: "hi"}},
		CascadeConfig: &rpc.CascadeConfig{PlannerConfig: &wire.PlannerConfig{PlanModel: "gpt"}},
	}, &rpc.Empty{})
	var rerr *rpc.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, rpc.CodeInvalidArgument, rerr.Code)
	assert.Empty(t, srv.Steps(conv))
}
