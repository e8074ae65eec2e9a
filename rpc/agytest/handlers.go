package agytest

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
	"github.com/agyharness/agyharness/wire"
)

var servicePrefix = "/" + rpc.Service + "/"

// knownMethods are the methods the fake serves; any other path is 404, as
// agy answers GetCascadeId and friends.
var knownMethods = []string{
	rpc.MethodHeartbeat, rpc.MethodGetConversationMetadata, rpc.MethodGetCascadeTrajectorySteps,
	rpc.MethodStreamAgentStateUpdates, rpc.MethodStreamCascadeReactiveUpdates,
	rpc.MethodHandleCascadeUserInteraction, rpc.MethodSendUserCascadeMessage, rpc.MethodSendAgentMessage,
	rpc.MethodCancelCascadeSteps, rpc.MethodCancelCascadeInvocation, rpc.MethodForceStopCascadeTree,
	rpc.MethodGetAllCascadeTrajectories, rpc.MethodGetAvailableModels, rpc.MethodStartCascade,
	rpc.MethodRevertToCascadeStep,
}

var timeoutHeader = regexp.MustCompile(`^[0-9]{1,10}$`)

// ServeHTTP serves the Connect protocol for LanguageServerService.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.spawn() {
		writeUnaryError(w, errorf(rpc.CodeUnavailable, "server closed"))
		return
	}
	defer s.wg.Done()
	method, ok := strings.CutPrefix(r.URL.Path, servicePrefix)
	if !ok || !slices.Contains(knownMethods, method) {
		s.count(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
		http.NotFound(w, r)
		return
	}
	s.count(method)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	streaming := method == rpc.MethodStreamAgentStateUpdates || method == rpc.MethodStreamCascadeReactiveUpdates
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	want := "application/json"
	if streaming {
		want = "application/connect+json"
	}
	if ct != want && method != rpc.MethodStreamCascadeReactiveUpdates {
		w.Header().Set("Accept-Post", want)
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	ctx := r.Context()
	var pre *connectError
	if v := r.Header.Get("Connect-Timeout-Ms"); v != "" {
		if !timeoutHeader.MatchString(v) {
			pre = errorf(rpc.CodeInvalidArgument, "protocol error: invalid timeout %q", v)
		} else {
			ms, _ := strconv.ParseInt(v, 10, 64)
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
			defer cancel()
		}
	}
	if pre == nil && s.opts.CSRFToken != "" && r.Header.Get("x-codeium-csrf-token") != s.opts.CSRFToken {
		pre = errorf(rpc.CodeUnauthenticated, "missing or invalid CSRF token")
	}
	if pre == nil {
		delay, err := s.callFaults(method)
		if delay > 0 {
			if werr := s.sleep(ctx, delay); werr != nil {
				err = errorf(rpc.CodeDeadlineExceeded, "the operation timed out")
			}
		}
		pre = err
	}
	switch method {
	case rpc.MethodStreamAgentStateUpdates:
		s.serveStream(ctx, w, r, pre)
		return
	case rpc.MethodStreamCascadeReactiveUpdates:
		s.serveDeprecated(w, ct)
		return
	}
	if pre != nil {
		writeUnaryError(w, pre)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxUnaryBody+1))
	switch {
	case err != nil:
		writeUnaryError(w, errorf(rpc.CodeInvalidArgument, "read request: %v", err))
		return
	case len(body) > maxUnaryBody:
		writeUnaryError(w, errorf(rpc.CodeResourceExhausted, "message is larger than configured max %d", maxUnaryBody))
		return
	case len(body) == 0:
		// connect-go rejects an empty unary JSON body: "{}" is the empty message.
		writeUnaryError(w, errorf(rpc.CodeInvalidArgument, "unmarshal into %s request: %v", method, errNoBody))
		return
	}
	resp, cerr := s.unary(ctx, method, body)
	if d := s.replyDelay(method); d > 0 {
		_ = s.sleep(ctx, d)
	}
	if cerr != nil {
		s.log.Debug("call failed", "method", method, "code", cerr.code, "msg", cerr.msg)
		writeUnaryError(w, cerr)
		return
	}
	writeUnaryJSON(w, resp)
}

func (s *Server) count(method string) {
	s.mu.Lock()
	s.calls[method]++
	s.mu.Unlock()
}

func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// serveDeprecated answers the retired reactive stream as agy does.
func (s *Server) serveDeprecated(w http.ResponseWriter, ct string) {
	msg := []byte(`{"error":{"message":"reactive state is deprecated"}}`)
	if ct == "application/connect+json" {
		w.Header().Set("Content-Type", "application/connect+json")
		w.WriteHeader(http.StatusOK)
		_ = connectserver.WriteEnvelope(w, rpc.FlagEndStream, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(msg)
}

func decode(method string, body []byte, v any) *connectError {
	if err := json.Unmarshal(body, v); err != nil {
		return errorf(rpc.CodeInvalidArgument, "unmarshal into %s request: %v", method, err)
	}
	return nil
}

func errNotFound() *connectError { return errorf(rpc.CodeUnknown, "trajectory not found") }

// agentMessageRequest is SendAgentMessage's body (its shape is not
// recorded; the fake takes a message or items).
type agentMessageRequest struct {
	CascadeID string          `json:"cascadeId"`
	Message   string          `json:"message"`
	Items     []wire.TextItem `json:"items"`
}

func (s *Server) unary(ctx context.Context, method string, body []byte) (any, *connectError) {
	switch method {
	case rpc.MethodHeartbeat:
		var req map[string]any
		if err := decode(method, body, &req); err != nil {
			return nil, err
		}
		return rpc.Empty{}, nil

	case rpc.MethodGetConversationMetadata:
		_, c, cerr := target(s, method, body, func(r *rpc.ConversationRequest) string { return r.ConversationID })
		if cerr != nil {
			return nil, cerr
		}
		var resp rpc.ConversationMetadataResponse
		resp.Metadata.RootConversationID = c.rootID
		return resp, nil

	case rpc.MethodGetCascadeTrajectorySteps:
		req, c, cerr := target(s, method, body, func(r *rpc.StepsRequest) string { return r.CascadeID })
		if cerr != nil {
			return nil, cerr
		}
		if req.StepOffset < 0 {
			return nil, errorf(rpc.CodeInvalidArgument, "invalid step offset %d", req.StepOffset)
		}
		var resp struct {
			Steps []json.RawMessage `json:"steps,omitempty"`
		}
		for _, b := range c.wireSteps(req.StepOffset, s.opts.MaxStepsPerRead) {
			resp.Steps = append(resp.Steps, b)
		}
		s.timing.stepsRead.Add(int64(len(resp.Steps)))
		return resp, nil

	case rpc.MethodHandleCascadeUserInteraction:
		req, c, cerr := target(s, method, body, func(r *rpc.InteractionRequest) string { return r.CascadeID })
		if cerr != nil {
			return nil, cerr
		}
		if err := c.answer(req.Interaction, false); err != nil {
			return nil, err
		}
		return rpc.Empty{}, nil

	case rpc.MethodSendUserCascadeMessage:
		req, c, cerr := target(s, method, body, func(r *rpc.SendMessageRequest) string { return r.CascadeID })
		if cerr != nil {
			return nil, cerr
		}
		var model string
		if req.CascadeConfig != nil {
			model = req.CascadeConfig.PlannerConfig.Model()
		}
		if model == "" {
			// Choice: agy's turn ends in ERROR; the fake answers the call
			// with that error and records no turn, so the caller learns at
			// once and the trajectory stays clean.
			return nil, errorf(rpc.CodeUnknown, "neither PlanModel nor RequestedModel specified")
		}
		if !strings.HasPrefix(model, "MODEL_") {
			return nil, errorf(rpc.CodeInvalidArgument, "unmarshal into %s request: invalid value for enum field planModel: %q", method, model)
		}
		var text strings.Builder
		for _, it := range req.Items {
			text.WriteString(it.Text)
		}
		if len(req.Items) == 0 {
			return nil, errorf(rpc.CodeInvalidArgument, "no items in message")
		}
		if err := c.enqueue(&turnRequest{text: text.String(), model: model, source: wire.SourceUserExplicit}); err != nil {
			return nil, errorf(rpc.CodeUnavailable, "%v", err)
		}
		return rpc.Empty{}, nil

	case rpc.MethodRevertToCascadeStep:
		req, c, cerr := target(s, method, body, func(r *rpc.RevertRequest) string { return r.CascadeID })
		if cerr != nil {
			return nil, cerr
		}
		if err := c.rewind(int(req.StepIndex)); err != nil {
			return nil, errorf(rpc.CodeFailedPrecondition, "%v", err)
		}
		return map[string]any{"metadata": map[string]any{}}, nil

	case rpc.MethodSendAgentMessage:
		req, c, cerr := target(s, method, body, func(r *agentMessageRequest) string { return r.CascadeID })
		if cerr != nil {
			return nil, cerr
		}
		text := req.Message
		for _, it := range req.Items {
			text += it.Text
		}
		c.recordSystemMessage(text)
		return rpc.Empty{}, nil

	case rpc.MethodCancelCascadeSteps, rpc.MethodCancelCascadeInvocation, rpc.MethodForceStopCascadeTree:
		_, c, cerr := target(s, method, body, func(r *rpc.CascadeRequest) string { return r.CascadeID })
		if cerr != nil {
			return nil, cerr
		}
		if slices.Contains(s.opts.CancelNoop, method) {
			return rpc.Empty{}, nil
		}
		if err := c.cancel(ctx, !s.opts.CancelStopsPrompts); err != nil {
			return nil, errorf(rpc.CodeDeadlineExceeded, "cancel: %v", err)
		}
		return rpc.Empty{}, nil

	case rpc.MethodGetAllCascadeTrajectories:
		var req map[string]any
		if err := decode(method, body, &req); err != nil {
			return nil, err
		}
		resp := rpc.TrajectoriesResponse{TrajectorySummaries: map[string]rpc.TrajectorySummary{}}
		for _, id := range s.Conversations() {
			resp.TrajectorySummaries[id] = s.lookup(id).summary()
		}
		return resp, nil

	case rpc.MethodGetAvailableModels:
		var req map[string]any
		if err := decode(method, body, &req); err != nil {
			return nil, err
		}
		var resp rpc.ModelsResponse
		resp.Response.Models = map[string]wire.ModelInfo{}
		for _, m := range s.opts.Models {
			resp.Response.Models[modelKey(m)] = m
		}
		return resp, nil

	case rpc.MethodStartCascade:
		var req rpc.StartCascadeRequest
		if err := decode(method, body, &req); err != nil {
			return nil, err
		}
		if req.Source == "" {
			// agy requires a trajectory source (a CLI client names
			// CORTEX_TRAJECTORY_SOURCE_CLI); the cascade id is optional.
			return nil, errorf(rpc.CodeInvalidArgument, "validation error: source: value is required")
		}
		id, err := s.startCascade(req.CascadeID)
		if err != nil {
			return nil, errorf(rpc.CodeAlreadyExists, "%v", err)
		}
		return map[string]string{"cascadeId": id}, nil
	}
	return nil, errorf(rpc.CodeUnimplemented, "%s is not implemented", method)
}

// target decodes a request that names a conversation and finds it; a
// conversation the server does not host is agy's "trajectory not found".
func target[T any](s *Server, method string, body []byte, id func(*T) string) (*T, *conversation, *connectError) {
	req := new(T)
	if err := decode(method, body, req); err != nil {
		return nil, nil, err
	}
	c := s.lookup(id(req))
	if c == nil {
		return nil, nil, errNotFound()
	}
	return req, c, nil
}

// modelKey is the catalog key of a model: a slug of its display name (agy's
// keys are not the enum, so consumers must read .model).
func modelKey(m wire.ModelInfo) string {
	name := m.DisplayName
	if name == "" {
		name = m.Model
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// recordSystemMessage is what SendAgentMessage does: a SYSTEM_MESSAGE step,
// not a user turn.
func (c *conversation) recordSystemMessage(text string) {
	raw, _ := json.Marshal(map[string]string{"message": text})
	f := &fakeStep{step: wire.Step{
		Type:   wire.StepSystemMessage,
		Status: wire.StatusDone,
		Metadata: wire.StepMetadata{
			Source:    wire.SourceSystem,
			CreatedAt: timestamp(time.Now()),
		},
		SystemMessage: raw,
	}}
	c.add(f)
}
