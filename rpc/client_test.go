package rpc_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
	"github.com/agyharness/agyharness/wire"
)

const (
	conv  = "2399249c-4a48-40f1-bf3b-4c6e5d3a5a0e"
	traj  = "efb134b2-d69f-43de-bb54-c9ece346d8a3"
	model = "MODEL_PLACEHOLDER_M20"
)

func TestUnaryMethods(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		wantBody string
		answer   string
		call     func(t *testing.T, ctx context.Context, c *rpc.Client)
	}{
		{
			name: "Heartbeat", method: "Heartbeat", wantBody: `{}`, answer: `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) { require.NoError(t, c.Heartbeat(ctx)) },
		},
		{
			name: "GetConversationMetadata", method: "GetConversationMetadata",
			wantBody: `{"conversationId":"` + conv + `"}`,
			answer:   `{"metadata":{"rootConversationId":"` + conv + `","unknownField":7}}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				md, err := c.GetConversationMetadata(ctx, conv)
				require.NoError(t, err)
				assert.Equal(t, conv, md.Metadata.RootConversationID)
			},
		},
		{
			name: "GetCascadeTrajectorySteps", method: "GetCascadeTrajectorySteps",
			wantBody: `{"cascadeId":"` + conv + `"}`,
			answer: `{"steps":[
				{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"trajectoryId":"` + traj + `"}},"userInput":{"userResponse":"hi"}},
				{"type":"CORTEX_STEP_TYPE_SOMETHING_NEW","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":1}},"somethingNew":{"x":1}}]}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				steps, err := c.GetCascadeTrajectorySteps(ctx, conv)
				require.NoError(t, err)
				require.Len(t, steps, 2)
				assert.Equal(t, wire.StepUserInput, steps[0].Type)
				assert.Equal(t, 0, steps[0].Index())
				assert.Equal(t, traj, steps[0].TrajectoryID())
				assert.Equal(t, "hi", steps[0].UserInput.UserResponse)
				assert.Equal(t, wire.StepType("CORTEX_STEP_TYPE_SOMETHING_NEW"), steps[1].Type)
				assert.Equal(t, 1, steps[1].Index())
				assert.Contains(t, string(steps[1].Raw), `"somethingNew":{"x":1}`)
			},
		},
		{
			name: "HandleCascadeUserInteraction question", method: "HandleCascadeUserInteraction",
			wantBody: `{"cascadeId":"` + conv + `","interaction":{"trajectoryId":"` + traj + `","stepIndex":12,
				"askQuestion":{"responses":[{"question":"Which?","selectedOptionIds":["2"]}]}}}`,
			answer: `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				require.NoError(t, c.HandleCascadeUserInteraction(ctx, conv, wire.InteractionResponse{
					TrajectoryID: traj, StepIndex: 12,
					AskQuestion: &wire.QuestionResponses{Responses: []wire.QuestionResponse{{Question: "Which?", SelectedOptionIDs: []string{"2"}}}},
				}))
			},
		},
		{
			name: "HandleCascadeUserInteraction deny", method: "HandleCascadeUserInteraction",
			wantBody: `{"cascadeId":"` + conv + `","interaction":{"trajectoryId":"` + traj + `","stepIndex":6,"permission":{}}}`,
			answer:   `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				require.NoError(t, c.HandleCascadeUserInteraction(ctx, conv, wire.InteractionResponse{
					TrajectoryID: traj, StepIndex: 6, Permission: &wire.PermissionAnswer{Allow: false},
				}))
			},
		},
		{
			name: "SendUserCascadeMessage", method: "SendUserCascadeMessage",
			wantBody: `{"cascadeId":"` + conv + `","items":[{"text":"hello"}],"cascadeConfig":{"plannerConfig":{"planModel":"` + model + `"}}}`,
			answer:   `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				require.NoError(t, c.SendUserCascadeMessage(ctx, conv, "hello", model))
			},
		},
		{
			name: "SendAgentMessage", method: "SendAgentMessage",
			wantBody: `{"cascadeId":"` + conv + `","message":"note"}`,
			answer:   `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				require.NoError(t, c.SendAgentMessage(ctx, conv, "note"))
			},
		},
		{
			name: "CancelCascadeSteps", method: "CancelCascadeSteps", wantBody: `{"cascadeId":"` + conv + `"}`, answer: `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				require.NoError(t, c.CancelCascadeSteps(ctx, conv))
			},
		},
		{
			name: "CancelCascadeInvocation", method: "CancelCascadeInvocation", wantBody: `{"cascadeId":"` + conv + `"}`, answer: `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				require.NoError(t, c.CancelCascadeInvocation(ctx, conv))
			},
		},
		{
			name: "ForceStopCascadeTree", method: "ForceStopCascadeTree", wantBody: `{"cascadeId":"` + conv + `"}`, answer: `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				require.NoError(t, c.ForceStopCascadeTree(ctx, conv))
			},
		},
		{
			name: "Cancel generic", method: "ForceStopCascadeTree", wantBody: `{"cascadeId":"` + conv + `"}`, answer: `{}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				require.NoError(t, c.Cancel(ctx, rpc.MethodForceStopCascadeTree, conv))
			},
		},
		{
			name: "GetAllCascadeTrajectories", method: "GetAllCascadeTrajectories", wantBody: `{}`,
			answer: `{"trajectorySummaries":{
				"` + conv + `":{"status":"CASCADE_RUN_STATUS_IDLE","stepCount":14,"trajectoryId":"` + traj + `","lastUserInputTime":"2026-06-22T23:57:36Z","lastUserInputStepIndex":"12"},
				"child":{"status":"CASCADE_RUN_STATUS_RUNNING","trajectoryMetadata":{"parentConversationId":"` + conv + `","rootConversationId":"` + conv + `"},"lastUserInputTime":null}}}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				resp, err := c.GetAllCascadeTrajectories(ctx)
				require.NoError(t, err)
				require.Len(t, resp.TrajectorySummaries, 2)
				root := resp.TrajectorySummaries[conv]
				assert.Equal(t, wire.RunIdle, root.Status)
				assert.Equal(t, wire.Int(14), root.StepCount)
				assert.Equal(t, wire.Int(12), root.LastUserInputStepIndex)
				assert.Equal(t, "2026-06-22T23:57:36Z", root.LastUserInputTime)
				child := resp.TrajectorySummaries["child"]
				assert.Equal(t, conv, child.TrajectoryMetadata.ParentConversationID)
				assert.Empty(t, child.LastUserInputTime)
			},
		},
		{
			name: "GetCascadeTrajectoryStepsFrom", method: "GetCascadeTrajectorySteps", wantBody: `{"cascadeId":"` + conv + `","stepOffset":600}`,
			answer: `{"steps":[{"type":"CORTEX_STEP_TYPE_CHECKPOINT","status":"CORTEX_STEP_STATUS_DONE","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":600}}}]}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				steps, err := c.GetCascadeTrajectoryStepsFrom(ctx, conv, 600, nil)
				require.NoError(t, err)
				require.Len(t, steps, 1)
				assert.Equal(t, 600, steps[0].Index())
			},
		},
		{
			name: "GetAvailableModels", method: "GetAvailableModels", wantBody: `{}`,
			answer: `{"response":{"models":{"m20":{"model":"` + model + `","displayName":"Gemini (Medium)","recommended":true,"supportsThinking":true,"thinkingBudget":"1024"}}}}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				resp, err := c.GetAvailableModels(ctx)
				require.NoError(t, err)
				m := resp.Response.Models["m20"]
				assert.Equal(t, model, m.Model)
				assert.Equal(t, "Gemini (Medium)", m.DisplayName)
				assert.True(t, m.Recommended)
				assert.True(t, m.SupportsThinking)
				assert.Equal(t, wire.Int(1024), m.ThinkingBudget)
			},
		},
		{
			name: "StartCascade", method: "StartCascade", wantBody: `{"source":"CORTEX_TRAJECTORY_SOURCE_CLI"}`, answer: `{"cascadeId":"new"}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				raw, err := c.StartCascade(ctx)
				require.NoError(t, err)
				assert.JSONEq(t, `{"cascadeId":"new"}`, string(raw))
			},
		},
		{
			name: "Call nil request", method: "Heartbeat", wantBody: `{}`, answer: `{"x":1}`,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				var out map[string]int
				require.NoError(t, c.Call(ctx, rpc.MethodHeartbeat, nil, &out))
				assert.Equal(t, map[string]int{"x": 1}, out)
			},
		},
		{
			name: "Call empty answer", method: "CancelCascadeSteps", wantBody: `{}`, answer: ``,
			call: func(t *testing.T, ctx context.Context, c *rpc.Client) {
				var out rpc.Empty
				require.NoError(t, c.Call(ctx, rpc.MethodCancelCascadeSteps, rpc.Empty{}, &out))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newConnectServer(t, reply(http.StatusOK, tt.answer))
			c := srv.client(t, rpc.Config{CSRFToken: "secret-token"})
			tt.call(t, ctxT(t), c)

			got := srv.last(t)
			assert.Equal(t, 2, got.Proto, "HTTP/2")
			assert.Equal(t, http.MethodPost, got.Method)
			assert.Equal(t, "/exa.language_server_pb.LanguageServerService/"+tt.method, got.Path)
			assert.Equal(t, "application/json", got.Header.Get("Content-Type"))
			assert.Equal(t, "1", got.Header.Get("Connect-Protocol-Version"))
			assert.Equal(t, "secret-token", got.Header.Get("x-codeium-csrf-token"))
			ms := got.Header.Get("Connect-Timeout-Ms")
			assert.LessOrEqual(t, len(ms), 10)
			_, err := strconv.ParseInt(ms, 10, 64)
			assert.NoError(t, err, "Connect-Timeout-Ms %q", ms)
			jsonEq(t, tt.wantBody, got.Body)
		})
	}
}

func TestNoCSRFHeaderWithoutToken(t *testing.T) {
	srv := newConnectServer(t, reply(http.StatusOK, `{}`))
	require.NoError(t, srv.client(t, rpc.Config{}).Heartbeat(ctxT(t)))
	_, present := srv.last(t).Header["X-Codeium-Csrf-Token"]
	assert.False(t, present)
}

func TestDefaultTimeouts(t *testing.T) {
	srv := newConnectServer(t, reply(http.StatusOK, `{}`))
	c := srv.client(t, rpc.Config{ProbeTimeout: 1500 * time.Millisecond, UnaryTimeout: 20 * time.Second})
	ctx := context.Background() // no deadline: the client's defaults apply
	require.NoError(t, c.Heartbeat(ctx))
	_, err := c.GetConversationMetadata(ctx, conv)
	require.NoError(t, err)
	require.NoError(t, c.CancelCascadeSteps(ctx, conv))

	reqs := srv.requests()
	require.Len(t, reqs, 3)
	timeout := func(r received) int64 {
		n, err := strconv.ParseInt(r.Header.Get("Connect-Timeout-Ms"), 10, 64)
		require.NoError(t, err)
		return n
	}
	assert.InDelta(t, 1500, timeout(reqs[0]), 500, "Heartbeat uses ProbeTimeout")
	assert.InDelta(t, 1500, timeout(reqs[1]), 500, "GetConversationMetadata uses ProbeTimeout")
	assert.InDelta(t, 20000, timeout(reqs[2]), 5000, "other calls use UnaryTimeout")

	// A caller's deadline wins over the default.
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	require.NoError(t, c.CancelCascadeSteps(ctx, conv))
	assert.LessOrEqual(t, timeout(srv.requests()[3]), int64(400))
}

func TestTimeoutHeaderHasAtMostTenDigits(t *testing.T) {
	srv := newConnectServer(t, reply(http.StatusOK, `{}`))
	c := srv.client(t, rpc.Config{})
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(200*365*24*time.Hour))
	defer cancel()
	require.NoError(t, c.Heartbeat(ctx))
	assert.Equal(t, "9999999999", srv.last(t).Header.Get("Connect-Timeout-Ms"))
}

func TestConversationMatches(t *testing.T) {
	tests := []struct {
		name      string
		metadata  func(w http.ResponseWriter)
		heartbeat int
		want      bool
		wantErr   bool
		wantIs    error // when set, the error must match it
	}{
		{name: "echoed", heartbeat: 200, want: true, metadata: func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"metadata":{"rootConversationId":"` + conv + `"}}`))
		}},
		{name: "other root", heartbeat: 200, want: false, metadata: func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"metadata":{"rootConversationId":"another"}}`))
		}},
		{name: "trajectory not found", heartbeat: 200, want: false, metadata: func(w http.ResponseWriter) {
			connectserver.WriteError(w, rpc.CodeUnknown, "trajectory not found: "+conv)
		}},
		{name: "metadata fails", heartbeat: 200, wantErr: true, wantIs: rpc.ErrUnimplemented, metadata: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
		}},
		{name: "heartbeat fails", heartbeat: 503, wantErr: true, metadata: func(w http.ResponseWriter) {
			t.Error("GetConversationMetadata called after a failed Heartbeat")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newConnectServer(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				if r.URL.Path == "/"+rpc.Service+"/Heartbeat" {
					w.WriteHeader(tt.heartbeat)
					_, _ = w.Write([]byte(`{}`))
					return
				}
				tt.metadata(w)
			})
			ok, err := srv.client(t, rpc.Config{}).ConversationMatches(ctxT(t), conv)
			if tt.wantErr {
				var e *rpc.Error
				require.ErrorAs(t, err, &e)
				if tt.wantIs != nil {
					assert.ErrorIs(t, err, tt.wantIs)
				}
				assert.False(t, ok)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, ok)
		})
	}
}

func TestLocalValidation(t *testing.T) {
	srv := newConnectServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		t.Errorf("unexpected call to %s", r.URL.Path)
	})
	c := srv.client(t, rpc.Config{})
	ctx := ctxT(t)
	perm := &wire.PermissionAnswer{Allow: true}
	cases := map[string]error{
		"metadata empty id":    func() error { _, err := c.GetConversationMetadata(ctx, ""); return err }(),
		"steps empty id":       func() error { _, err := c.GetCascadeTrajectorySteps(ctx, ""); return err }(),
		"interaction no id":    c.HandleCascadeUserInteraction(ctx, "", wire.InteractionResponse{TrajectoryID: traj, Permission: perm}),
		"interaction no traj":  c.HandleCascadeUserInteraction(ctx, conv, wire.InteractionResponse{Permission: perm}),
		"interaction none":     c.HandleCascadeUserInteraction(ctx, conv, wire.InteractionResponse{TrajectoryID: traj}),
		"interaction both":     c.HandleCascadeUserInteraction(ctx, conv, wire.InteractionResponse{TrajectoryID: traj, Permission: perm, AskQuestion: &wire.QuestionResponses{}}),
		"turn no text":         c.SendUserCascadeMessage(ctx, conv, "", model),
		"turn no id":           c.SendUserCascadeMessage(ctx, "", "hi", model),
		"agent message no id":  c.SendAgentMessage(ctx, "", "hi"),
		"cancel bad method":    c.Cancel(ctx, rpc.MethodHeartbeat, conv),
		"cancel no id":         c.CancelCascadeSteps(ctx, ""),
		"call bad method name": c.Call(ctx, "../Heartbeat", nil, nil),
		"stream no id":         func() error { _, err := c.StreamAgentStateUpdates(ctx, "", ""); return err }(),
		"unencodable request":  c.Call(ctx, rpc.MethodHeartbeat, make(chan int), nil),
	}
	for name, err := range cases {
		var e *rpc.Error
		if assert.ErrorAs(t, err, &e, name) {
			assert.Equal(t, rpc.CodeInvalidArgument, e.Code, name)
			assert.False(t, rpc.IsTransient(err), name)
		}
	}
	err := c.SendUserCascadeMessage(ctx, conv, "hi", "")
	assert.ErrorIs(t, err, rpc.ErrModelRequired, "a turn without a model is refused before agy records an ERROR step")
	assert.Empty(t, srv.requests())
}

func TestNewClientConfig(t *testing.T) {
	for _, host := range []string{"", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"} {
		c, err := rpc.NewClient(rpc.Config{Host: host, Port: 1234})
		if assert.NoError(t, err, host) {
			assert.Equal(t, 1234, c.Port())
			c.Close()
		}
	}
	for _, host := range []string{"10.0.0.1", "0.0.0.0", "::", "example.com", "192.168.1.1", "128.0.0.1", "localhost.example.com"} {
		_, err := rpc.NewClient(rpc.Config{Host: host, Port: 1234})
		assert.ErrorIs(t, err, rpc.ErrNotLoopback, host)
	}
	for _, port := range []int{0, -1, 65536} {
		_, err := rpc.NewClient(rpc.Config{Port: port})
		assert.Error(t, err, "port %d", port)
	}
	_, err := rpc.NewClient(rpc.Config{Port: 1, UnaryTimeout: -time.Second})
	assert.Error(t, err)
}

func TestCallDecodeFailureIsProtocolError(t *testing.T) {
	srv := newConnectServer(t, reply(http.StatusOK, `{"steps":"not a list"}`))
	_, err := srv.client(t, rpc.Config{}).GetCascadeTrajectorySteps(ctxT(t), conv)
	assert.ErrorIs(t, err, rpc.ErrProtocol)
	assert.False(t, rpc.IsTransient(err))
}

func TestUnaryResponseLimit(t *testing.T) {
	payload, err := json.Marshal(map[string]string{"x": string(make([]byte, 2048))})
	require.NoError(t, err)
	srv := newConnectServer(t, reply(http.StatusOK, string(payload)))
	c := srv.client(t, rpc.Config{MaxMessageSize: 1024})
	err = c.Call(ctxT(t), rpc.MethodHeartbeat, nil, nil)
	assert.ErrorIs(t, err, rpc.ErrMessageTooLarge)
}

func TestCanceledContext(t *testing.T) {
	srv := newConnectServer(t, reply(http.StatusOK, `{}`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := srv.client(t, rpc.Config{}).Heartbeat(ctx)
	var e *rpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, rpc.CodeCanceled, e.Code)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, rpc.IsTransient(err))
}

func TestDeadlineExceededIsTransient(t *testing.T) {
	release := make(chan struct{})
	srv := newConnectServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := srv.client(t, rpc.Config{ProbeTimeout: 50 * time.Millisecond})
	err := c.Heartbeat(context.Background())
	var e *rpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, rpc.CodeDeadlineExceeded, e.Code)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, rpc.IsTransient(err))
	assert.NotErrorIs(t, err, rpc.ErrPortGone)
}

// A blank 200 answer is {}: no steps, and no error.
func TestBlankAnswerIsEmpty(t *testing.T) {
	for _, body := range []string{"", " \n\t"} {
		c := newConnectServer(t, reply(http.StatusOK, body)).client(t, rpc.Config{})
		steps, err := c.GetCascadeTrajectorySteps(ctxT(t), conv)
		require.NoError(t, err, "%q", body)
		assert.Nil(t, steps, "%q", body)
		all, err := c.GetAllCascadeTrajectories(ctxT(t))
		require.NoError(t, err, "%q", body)
		assert.Empty(t, all.TrajectorySummaries, "%q", body)
	}
}

// An answer the server breaks off (its stream reset half-way) fails as the
// transport failing, transient, not as a malformed answer; one that ends
// cleanly but cut short is malformed.
func TestAnswerBrokenOffIsTransportFailure(t *testing.T) {
	half := `{"steps":[{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","plannerResponse":{"response":"` + strings.Repeat("w", 64<<10)
	broken := newConnectServer(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, half)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // resets the stream
	}).client(t, rpc.Config{})
	_, err := broken.GetCascadeTrajectorySteps(ctxT(t), conv)
	require.Error(t, err)
	assert.NotErrorIs(t, err, rpc.ErrProtocol, "%v", err)
	assert.True(t, rpc.IsTransient(err), "%v", err)
	var all rpc.TrajectoriesResponse
	err = broken.Call(ctxT(t), rpc.MethodGetAllCascadeTrajectories, nil, &all)
	require.Error(t, err)
	assert.NotErrorIs(t, err, rpc.ErrProtocol, "%v", err)

	cut := newConnectServer(t, reply(http.StatusOK, half)).client(t, rpc.Config{})
	_, err = cut.GetCascadeTrajectorySteps(ctxT(t), conv)
	assert.ErrorIs(t, err, rpc.ErrProtocol)
}

// The limit on an answer holds for one read as it goes, too.
func TestStepsAnswerLimit(t *testing.T) {
	payload := `{"steps":[{"type":"` + strings.Repeat("v", 4096) + `"}]}`
	c := newConnectServer(t, reply(http.StatusOK, payload)).client(t, rpc.Config{MaxMessageSize: 1024})
	_, err := c.GetCascadeTrajectorySteps(ctxT(t), conv)
	assert.ErrorIs(t, err, rpc.ErrMessageTooLarge)
	c = newConnectServer(t, reply(http.StatusOK, payload)).client(t, rpc.Config{MaxMessageSize: len(payload)})
	steps, err := c.GetCascadeTrajectorySteps(ctxT(t), conv)
	require.NoError(t, err, "an answer exactly at the limit")
	assert.Len(t, steps, 1)
}

// A client for a few probes (ReadIdleTimeout < 0) is garbage once closed:
// x/net's health-check timer would keep its closed connection, and the
// client, alive for 30 s (an idle session's heap grew by a probe client).
func TestClosedProbeClientIsCollected(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true})
	probe := func(readIdle time.Duration) weak.Pointer[rpc.Client] {
		c, err := rpc.NewClient(rpc.Config{Port: srv.Port(), ReadIdleTimeout: readIdle})
		require.NoError(t, err)
		require.NoError(t, c.Heartbeat(ctxT(t)))
		c.Close()
		return weak.Make(c)
	}
	gone := func(p weak.Pointer[rpc.Client]) func() bool {
		return func() bool { runtime.GC(); return p.Value() == nil }
	}
	require.Eventually(t, gone(probe(-1)), 5*time.Second, 20*time.Millisecond, "the closed client is still referenced")
}

// The fake's list, read twice into a SummaryCache: the second read, with
// nothing changed, derives nothing again (the answer is read entry by
// entry), and the cache holds what GetAllCascadeTrajectories decodes.
func TestSummaryCacheReadsTheFakesListInPlace(t *testing.T) {
	srv := agytest.Start(t, agytest.Options{Conversation: true, EarlierRuns: 40, EarlierSubagents: true})
	c, err := rpc.NewClient(rpc.Config{Port: srv.Port()})
	require.NoError(t, err)
	defer c.Close()
	derived := 0
	keep := func(_ string, s rpc.TrajectorySummary) rpc.TrajectorySummary { derived++; return s }
	var l rpc.SummaryCache[rpc.TrajectorySummary]
	require.NoError(t, rpc.ReadSummaries(ctxT(t), c, &l, keep))
	assert.Equal(t, 41, derived)
	derived = 0
	require.NoError(t, rpc.ReadSummaries(ctxT(t), c, &l, keep))
	assert.Zero(t, derived, "an unchanged entry is not decoded again")
	all, err := c.GetAllCascadeTrajectories(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, len(all.TrajectorySummaries), l.Len())
	for id, s := range all.TrajectorySummaries {
		got, ok := l.Get(id)
		assert.True(t, ok, id)
		assert.Equal(t, s, got, id)
	}
}
