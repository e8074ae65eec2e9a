package httphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/hostcluster"
	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/prometheus/client_golang/prometheus"
)

// The HTTP host in a cluster (serve --cluster): any node's API lists every
// node's sessions, creates one on a named node, and serves a session of
// another node through the same handlers as a local one, its commands and
// events carried by hostcluster.

// Session states in a cluster listing.
const (
	SessionLive     = "live"
	SessionNodeLost = "node_lost"
)

// clusterAPI is what the HTTP host needs of a *hostcluster.Node.
type clusterAPI interface {
	Name() string
	Nodes() []hostcluster.NodeStatus
	Figures() map[string]hostcluster.NodeFigures
	Sessions(ctx context.Context) []hostcluster.ClusterSession
	Create(ctx context.Context, node string, req *clusterpb.CreateSession) (*clusterpb.SessionInfo, error)
	Locate(ctx context.Context, id string) (*clusterpb.SessionInfo, error)
	Do(ctx context.Context, node, sessionID string, c messages.Command) error
	Subscribe(ctx context.Context, node, sessionID string, afterSeq uint64) (*hostcluster.Stream, error)
	SubscribeRaw(ctx context.Context, node, sessionID string, afterSeq uint64) (*hostcluster.Stream, error)
	Read(ctx context.Context, node, sessionID, what string) ([]byte, error)
}

// fromClusterKey marks a request another node sent through this node's own
// handlers: it is answered from this node's sessions alone.
type fromClusterKey struct{}

func fromCluster(r *http.Request) bool { return r.Context().Value(fromClusterKey{}) != nil }

// clusterError writes a refusal of the cluster: its status, its message,
// and its code.
func clusterError(w http.ResponseWriter, err error) {
	var e *hostcluster.Error
	if errors.As(err, &e) {
		writeJSON(w, e.Status, map[string]string{"error": e.Message, "code": e.Code})
		return
	}
	writeError(w, http.StatusBadGateway, err.Error())
}

// nodes is GET /v1/nodes: every node this one knows, with its state.
func (s *server) nodes(w http.ResponseWriter, r *http.Request) {
	type nodeView struct {
		hostcluster.NodeStatus
		Sessions int `json:"sessions"`
	}
	figures := s.cluster.Figures()
	var out []nodeView
	for _, st := range s.cluster.Nodes() {
		v := nodeView{NodeStatus: st, Sessions: figures[st.Name].Sessions}
		if st.Self {
			v.Sessions = len(attachedSessions(s.cfg.host))
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": out})
}

// listClusterSessions is GET /v1/sessions in a cluster: every node's
// sessions, each with its node, and "state": "node_lost" for those of a
// node that does not answer now.
func (s *server) listClusterSessions(w http.ResponseWriter, r *http.Request) {
	all := s.cluster.Sessions(r.Context())
	views := make([]SessionView, 0, len(all))
	for _, cs := range all {
		v := viewOfInfo(cs.Info)
		v.State = SessionLive
		if cs.Lost {
			v.State = SessionNodeLost
		}
		views = append(views, v)
	}
	slices.SortFunc(views, func(a, b SessionView) int { return strings.Compare(a.ID, b.ID) })
	writeJSON(w, http.StatusOK, map[string]any{"sessions": views})
}

// createOnNode creates a session on another node (POST /v1/sessions with
// "node"). It reports whether it answered the request.
func (s *server) createOnNode(w http.ResponseWriter, r *http.Request, req createRequest) bool {
	if s.cluster == nil {
		writeError(w, http.StatusUnprocessableEntity, `"node": this host is not in a cluster (serve --cluster)`)
		return true
	}
	if req.Node == s.cluster.Name() || fromCluster(r) {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.attachTimeout)
	defer cancel()
	info, err := s.cluster.Create(ctx, req.Node, &clusterpb.CreateSession{Pid: int32(req.PID), Port: int32(req.Port),
		ConversationId: req.ConversationID, CsrfToken: req.CSRFToken, ReadMode: req.ReadMode, SessionId: req.SessionID})
	if err != nil {
		clusterError(w, err)
		return true
	}
	v := viewOfInfo(info)
	v.State = SessionLive
	w.Header().Set("Location", "/v1/sessions/"+url.PathEscape(info.Id))
	writeJSON(w, http.StatusCreated, v)
	return true
}

// remoteSession serves a request for a session this node does not have:
// it finds the session's node and runs the same handler on a proxy of it.
func (s *server) remoteSession(w http.ResponseWriter, r *http.Request, id string, h sessionHandler) {
	info, err := s.cluster.Locate(r.Context(), id)
	if err != nil {
		clusterError(w, err)
		return
	}
	if r.Method == http.MethodGet && r.Pattern == "GET /v1/sessions/{id}" {
		v := viewOfInfo(info)
		v.State = SessionLive
		writeJSON(w, http.StatusOK, v)
		return
	}
	h(w, r, &proxySession{node: s.cluster, info: info})
}

// withNode adds this node and "live" to a local session's view, in a
// cluster.
func (s *server) withNode(v SessionView) SessionView {
	if s.cluster != nil {
		v.Node, v.State = s.cluster.Name(), SessionLive
	}
	return v
}

func viewOfInfo(info *clusterpb.SessionInfo) SessionView {
	restarts := make(map[string]int, len(info.Restarts))
	for k, v := range info.Restarts {
		restarts[k] = int(v)
	}
	open := append([]string{}, info.OpenElicitations...)
	sort.Strings(open)
	return SessionView{ID: info.Id, ConversationID: info.ConversationId, Port: int(info.Port),
		Created: time.Unix(0, info.CreatedUnixNano).UTC(), Events: info.Events, Rebinds: int(info.Rebinds),
		Restarts: restarts, OpenPrompts: open, Node: info.Node}
}

func infoOfView(v SessionView) *clusterpb.SessionInfo {
	restarts := make(map[string]int32, len(v.Restarts))
	for k, n := range v.Restarts {
		restarts[k] = int32(n)
	}
	return &clusterpb.SessionInfo{Id: v.ID, ConversationId: v.ConversationID, Port: int32(v.Port),
		CreatedUnixNano: v.Created.UnixNano(), Events: v.Events, Rebinds: int32(v.Rebinds),
		Restarts: restarts, OpenElicitations: v.OpenPrompts}
}

// proxySession is a session of another node, as the handlers see it: its
// commands and its event stream go to its node.
type proxySession struct {
	node      clusterAPI
	info      *clusterpb.SessionInfo
	published uint64 // when its stream opened
}

func (p *proxySession) ID() string                     { return p.info.Id }
func (p *proxySession) ConversationID() string         { return p.info.ConversationId }
func (p *proxySession) Port() int                      { return int(p.info.Port) }
func (p *proxySession) Events() <-chan *messages.Event { return nil }
func (p *proxySession) Err() error                     { return nil }
func (p *proxySession) Done() <-chan struct{}          { return nil }
func (p *proxySession) Stats() actors.Stats            { return actors.Stats{Events: p.published} }
func (p *proxySession) Attached() time.Time            { return time.Unix(0, p.info.CreatedUnixNano) }
func (p *proxySession) OpenElicitations() []string     { return p.info.OpenElicitations }
func (p *proxySession) Detach(ctx context.Context) error {
	return p.Do(ctx, messages.Command{Type: messages.CommandDetach})
}

func (p *proxySession) Do(ctx context.Context, c messages.Command) error {
	return p.node.Do(ctx, p.info.Node, p.info.Id, c)
}

func (p *proxySession) Subscribe(ctx context.Context, afterSeq uint64) (eventStream, error) {
	// Raw: the SSE stream writes the owner's JSON of each event on
	// (rawEventStream), never decoding and encoding it again here.
	st, err := p.node.SubscribeRaw(ctx, p.info.Node, p.info.Id, afterSeq)
	if err != nil {
		return nil, err
	}
	p.published = st.Published()
	return st, nil
}

// clusterLocal serves this host's sessions to the other nodes
// (hostcluster.Local). A create or a command from another node runs
// through this node's own handlers, so it is checked and answered exactly
// as the same request made here.
type clusterLocal struct {
	s     *server
	ready <-chan struct{} // closed once s.cluster is set

	once    sync.Once
	handler http.Handler // s.handler(), built once ready
}

// wait waits until the server knows its node.
func (l *clusterLocal) wait(ctx context.Context) error {
	select {
	case <-l.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *clusterLocal) Sessions() []*clusterpb.SessionInfo {
	select {
	case <-l.ready:
	default:
		return nil // starting: none yet
	}
	all := attachedSessions(l.s.cfg.host)
	out := make([]*clusterpb.SessionInfo, 0, len(all))
	for _, sess := range all {
		info := infoOfView(view(sess))
		if row, ok := l.s.board.row(sess.ID()); ok {
			info.State, info.Model, info.Title = row.State, row.Model, row.Title
			info.LastActivityUnixNano = row.LastActivity.UnixNano()
		}
		out = append(out, info)
	}
	return out
}

// Read is a session's transcript or models, as this node's API answers
// them.
func (l *clusterLocal) Read(ctx context.Context, id, what string) ([]byte, error) {
	path := "/v1/sessions/" + url.PathEscape(id) + "/"
	switch what {
	case hostcluster.ReadTranscript, hostcluster.ReadModels:
		path += what
	default:
		return nil, &hostcluster.Error{Status: http.StatusUnprocessableEntity, Code: hostcluster.CodeBadRequest,
			Message: fmt.Sprintf("unknown document %q (want transcript or models)", what)}
	}
	return l.callRaw(ctx, http.MethodGet, path, nil)
}

func (l *clusterLocal) Attach(ctx context.Context, req *clusterpb.CreateSession) (*clusterpb.SessionInfo, error) {
	body := createRequest{PID: int(req.Pid), Port: int(req.Port), ConversationID: req.ConversationId,
		CSRFToken: req.CsrfToken, ReadMode: req.ReadMode, SessionID: req.SessionId}
	var v SessionView
	if err := l.call(ctx, http.MethodPost, "/v1/sessions", body, &v); err != nil {
		return nil, err
	}
	return infoOfView(v), nil
}

func (l *clusterLocal) Do(ctx context.Context, id string, c messages.Command) error {
	path := "/v1/sessions/" + url.PathEscape(id)
	switch c.Type {
	case messages.CommandTurn:
		return l.call(ctx, http.MethodPost, path+"/turns", turnRequest{Text: c.Text, Model: c.Model}, nil)
	case messages.CommandResolve:
		return l.call(ctx, http.MethodPost, path+"/elicitations/"+url.PathEscape(c.ElicitationID)+"/resolve",
			resolveRequest{Action: c.Action, Answers: c.Answers, Choice: c.Choice}, nil)
	case messages.CommandInterrupt:
		return l.call(ctx, http.MethodPost, path+"/interrupt", nil, nil)
	case messages.CommandDetach:
		return l.call(ctx, http.MethodDelete, path, nil, nil)
	}
	return &hostcluster.Error{Status: http.StatusUnprocessableEntity, Code: hostcluster.CodeBadRequest,
		Message: fmt.Sprintf("unknown command type %q (want turn, resolve, interrupt or detach)", c.Type)}
}

func (l *clusterLocal) Subscribe(ctx context.Context, id string, afterSeq uint64) (hostcluster.LocalStream, uint64, error) {
	if err := l.wait(ctx); err != nil {
		return nil, 0, err
	}
	sess, ok := l.s.cfg.host.Session(id)
	if !ok || sess.Attached().IsZero() {
		return nil, 0, &hostcluster.Error{Status: http.StatusNotFound, Code: hostcluster.CodeNotFound, Message: fmt.Sprintf("no session %q", id)}
	}
	sub, err := sess.Subscribe(ctx, afterSeq)
	if err != nil {
		return nil, 0, &hostcluster.Error{Status: commandStatus(err), Code: hostcluster.CodeFailed, Message: err.Error()}
	}
	// Every event the reader saw was published before Subscribe returned.
	n := sess.Stats().Events
	if afterSeq > n {
		sub.Close()
		return nil, 0, &hostcluster.Error{Status: http.StatusBadRequest, Code: hostcluster.CodeBadRequest,
			Message: fmt.Sprintf("Last-Event-ID %d is beyond the session's last event (%d): reconnect without it", afterSeq, n)}
	}
	return sub, n, nil
}

// call runs a request through this node's own handler and decodes its
// answer into out; a refusal becomes a *hostcluster.Error with its status.
func (l *clusterLocal) call(ctx context.Context, method, path string, body, out any) error {
	raw, err := l.callRaw(ctx, method, path, body)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// callRaw is call, answering the body as it is.
func (l *clusterLocal) callRaw(ctx context.Context, method, path string, body any) ([]byte, error) {
	if err := l.wait(ctx); err != nil {
		return nil, err
	}
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	req := httptest.NewRequestWithContext(context.WithValue(ctx, fromClusterKey{}, true), method, path, bytes.NewReader(raw))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+l.s.cfg.token)
	rec := httptest.NewRecorder()
	l.once.Do(func() { l.handler = l.s.handler() })
	l.handler.ServeHTTP(rec, req)
	if rec.Code >= 400 {
		var e apiError
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		if e.Error == "" {
			e.Error = http.StatusText(rec.Code)
		}
		code := codeOfStatus(rec.Code)
		if e.Code != "" {
			code = e.Code // no_transcript
		}
		return nil, &hostcluster.Error{Status: rec.Code, Code: code, Message: e.Error}
	}
	return rec.Body.Bytes(), nil
}

func codeOfStatus(status int) string {
	switch status {
	case http.StatusNotFound:
		return hostcluster.CodeNotFound
	case http.StatusConflict:
		return hostcluster.CodeConflict
	case http.StatusGatewayTimeout:
		return hostcluster.CodeTimeout
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
		return hostcluster.CodeBadRequest
	}
	return hostcluster.CodeFailed
}

// clusterFigures collects the per-node figures at scrape time
// (registered in /metrics when the host joins a cluster).
type clusterFigures struct{ node clusterAPI }

var (
	nodeUpDesc = prometheus.NewDesc("agyharness_cluster_node_up",
		"Whether a node of the cluster is alive (1), or unreachable or lost (0).", []string{"node", "state"}, nil)
	nodeSessionsDesc = prometheus.NewDesc("agyharness_cluster_node_sessions",
		"Sessions another node listed last.", []string{"node"}, nil)
	nodeRequestsDesc = prometheus.NewDesc("agyharness_cluster_requests_total",
		"Requests this node sent to another, by node and outcome.", []string{"node", "outcome"}, nil)
	nodeRequestSecondsDesc = prometheus.NewDesc("agyharness_cluster_request_seconds_total",
		"Round trips of the answered requests to another node, summed.", []string{"node"}, nil)
	nodeStreamsDesc = prometheus.NewDesc("agyharness_cluster_streams_total",
		"Event streams this node read from another.", []string{"node"}, nil)
)

func (c clusterFigures) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeUpDesc, nodeSessionsDesc, nodeRequestsDesc, nodeRequestSecondsDesc, nodeStreamsDesc} {
		ch <- d
	}
}

func (c clusterFigures) Collect(ch chan<- prometheus.Metric) {
	figures := c.node.Figures()
	for _, n := range c.node.Nodes() {
		up := 0.0
		if n.State == hostcluster.StateAlive {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(nodeUpDesc, prometheus.GaugeValue, up, n.Name, n.State)
		f, ok := figures[n.Name]
		if n.Self || !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(nodeSessionsDesc, prometheus.GaugeValue, float64(f.Sessions), n.Name)
		ch <- prometheus.MustNewConstMetric(nodeRequestsDesc, prometheus.CounterValue, float64(f.Answered), n.Name, "answered")
		ch <- prometheus.MustNewConstMetric(nodeRequestsDesc, prometheus.CounterValue, float64(f.Failures), n.Name, "failed")
		ch <- prometheus.MustNewConstMetric(nodeRequestSecondsDesc, prometheus.CounterValue, f.Latency.Seconds(), n.Name)
		ch <- prometheus.MustNewConstMetric(nodeStreamsDesc, prometheus.CounterValue, float64(f.StreamsIn), n.Name)
	}
}
