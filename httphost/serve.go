package httphost

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/hostcluster"
)

// Config configures a Server. Zero durations take the defaults written
// beside them.
type Config struct {
	// Host is the registry of sessions the server serves (required).
	Host *actors.Host
	// Token is the bearer token every request but GET /healthz must show
	// (required).
	Token string
	// Log receives the server's log (default: discarded).
	Log *slog.Logger
	// Heartbeat is the interval of SSE heartbeat comments (15s).
	Heartbeat time.Duration
	// AttachTimeout bounds how long POST /v1/sessions looks for agy (30s).
	AttachTimeout time.Duration
	// MaxConns caps the connections Serve serves at once (0: no cap); a
	// connection without the token is closed after AuthGrace (5s).
	MaxConns  int
	AuthGrace time.Duration
	// TLS, when set, makes Serve serve HTTPS.
	TLS *tls.Config
	// NoConsole leaves the web console (GET /, docs/CONSOLE.md) out.
	NoConsole bool
}

// Server is the multi-session HTTP host (docs/HTTP.md): the API, its SSE
// streams, /metrics and the web console. It is an http.Handler, so a program embeds it in
// its own server; Serve runs it on a listener of its own, with the
// host's connection slots and timeouts.
type Server struct {
	s *server
}

// New makes a server of cfg.Host's sessions.
func New(cfg Config) *Server {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.AttachTimeout <= 0 {
		cfg.AttachTimeout = 30 * time.Second
	}
	s := newServer(serverConfig{
		host: actorsHost{cfg.Host}, token: cfg.Token, log: cfg.Log,
		heartbeat: cfg.Heartbeat, attachTimeout: cfg.AttachTimeout,
		maxConns: cfg.MaxConns, authGrace: cfg.AuthGrace, tls: cfg.TLS, noConsole: cfg.NoConsole,
	})
	return &Server{s: s}
}

// ServeHTTP serves one request of the API.
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	srv.s.once.Do(func() { srv.s.mux = srv.s.handler() })
	srv.s.mux.ServeHTTP(w, r)
}

// Stop ends every SSE stream and request context (an embedding program
// calls it before shutting its own server down).
func (srv *Server) Stop() { srv.s.stop() }

// Wait waits for the session watchers, which end when their sessions do.
func (srv *Server) Wait() { srv.s.wait() }

// Serve runs the server on ln until ctx ends or a signal arrives, then
// stops in order (see serve below); shutdownHost detaches the sessions.
func (srv *Server) Serve(ctx context.Context, ln net.Listener, signals <-chan os.Signal, shutdownHost func(context.Context) error) error {
	return srv.s.serve(ctx, ln, signals, shutdownHost)
}

// JoinCluster starts this host's node of a cluster, so that the API
// reaches every node's sessions; the caller shuts the node down. Call it
// before serving. Requests from other nodes wait until the server knows
// its node.
func (srv *Server) JoinCluster(cfg hostcluster.Config) (*hostcluster.Node, error) {
	return joinCluster(cfg, srv.s)
}

// joinCluster starts this host's node; the caller shuts it down. Requests
// from other nodes wait until the server knows its node.
func joinCluster(cfg hostcluster.Config, s *server) (*hostcluster.Node, error) {
	ready := make(chan struct{})
	cfg.Local = &clusterLocal{s: s, ready: ready}
	n, err := hostcluster.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s.cluster = n
	s.metrics.registry.MustRegister(clusterFigures{n})
	close(ready)
	return n, nil
}

// serve runs the HTTP server on ln until ctx ends or a signal arrives,
// then stops in order: SSE streams end (each has sseEndGrace to take its
// "event: end"), requests in flight finish (httpShutdown at most, then
// their connections are closed), every session detaches (hostShutdown of
// its own), session watchers stop.
func (s *server) serve(ctx context.Context, ln net.Listener, signals <-chan os.Signal, shutdownHost func(context.Context) error) error {
	ln = newSlotListener(ln, s.cfg.maxConns, s.cfg.authGrace)
	if s.cfg.tls != nil {
		ln = tls.NewListener(ln, s.cfg.tls)
	}
	// HTTP/1.1 only (the TLS configuration offers no other protocol): a
	// 401's "Connection: close" then closes the connection.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	hs := &http.Server{
		Handler:           s.handler(),
		Protocols:         &protocols,
		ConnContext:       withSlotConn,
		ConnState:         trackSlotConn,
		ReadHeaderTimeout: s.cfg.readHeaderTimeout,
		ReadTimeout:       s.cfg.readTimeout,
		IdleTimeout:       s.cfg.idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return s.base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	var serveErr error
	served := false
	select {
	case <-ctx.Done():
	case <-signals:
	case err := <-errc:
		served = true
		if !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serve: %w", err)
		}
	}
	s.log.Info("shutting down")
	s.stop() // ends SSE streams, so Shutdown need not wait for them
	hctx, cancel := context.WithTimeout(context.Background(), s.cfg.httpShutdown)
	defer cancel()
	if err := hs.Shutdown(hctx); err != nil {
		s.log.Warn("http shutdown: closing the connections left", "err", err)
		_ = hs.Close()
	}
	if !served {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serve: %w", err)
		}
	}
	sctx, cancelHost := context.WithTimeout(context.Background(), s.cfg.hostShutdown)
	defer cancelHost()
	if err := shutdownHost(sctx); err != nil {
		s.log.Warn("host shutdown", "err", err)
	}
	s.wait()
	return serveErr
}

// Attach attaches a session as POST /v1/sessions does, for a program that
// starts its sessions itself: the API, the board and the transcript then
// show it like one created over HTTP.
func (srv *Server) Attach(ctx context.Context, spec actors.Spec) (*actors.Session, error) {
	sess, err := srv.s.cfg.host.Attach(ctx, spec)
	if err != nil {
		return nil, err
	}
	srv.s.watch(sess)
	as, ok := sess.(actorsSession)
	if !ok {
		return nil, fmt.Errorf("httphost: Attach needs a Config.Host")
	}
	return as.Session, nil
}
