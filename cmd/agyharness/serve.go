package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/cmd/agyharness/internal/tokenfile"
	"github.com/agyharness/agyharness/httphost"
)

func serveCommand() *command {
	c := &command{
		name:     "serve",
		synopsis: "serve [--listen 127.0.0.1:7420] [--token-file F] [--tls-cert F --tls-key F] [--allow-remote [--insecure-remote]] [--max-connections N] [--cluster NAME --cluster-provider etcd|automanaged [--etcd-endpoints H:P,...] [--peers H:P,... --provider-port N] [--node NAME] [--advertise HOST:PORT] --remote-tls-cert F --remote-tls-key F --remote-tls-ca F]",
		summary:  "run the multi-session host: HTTP + SSE, loopback and a bearer token by default",
		example: `agyharness serve --token-file ~/.config/agyharness/token &
TOKEN=$(cat ~/.config/agyharness/token)
curl -s -H "Authorization: Bearer $TOKEN" -d '{"port":41237}' http://127.0.0.1:7420/v1/sessions
curl -N -H "Authorization: Bearer $TOKEN" http://127.0.0.1:7420/v1/sessions/SESSION/events`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		fs := newFlagSet(e, c)
		listen := fs.String("listen", "127.0.0.1:7420", "address to listen on (port 0 picks a free one)")
		tokenFile := fs.String("token-file", "", "file holding the bearer token, mode 0600: at least 16 characters of at least 4 different ones (default: a random token, printed to stderr)")
		allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback --listen address (requires --token-file, and --tls-cert/--tls-key or --insecure-remote)")
		tlsCert := fs.String("tls-cert", "", "serve HTTPS with this PEM certificate (chain) file (with --tls-key)")
		tlsKey := fs.String("tls-key", "", "the PEM private key of --tls-cert")
		insecureRemote := fs.Bool("insecure-remote", false, "with --allow-remote, serve plain HTTP: the token and the turns cross the network in clear")
		maxConns := fs.Int("max-connections", 512, "connections served at once (SSE streams included); a connection without the token is closed after 5s, or sooner when every slot is taken; more with the token wait to be accepted")
		heartbeat := fs.Duration("heartbeat", 15*time.Second, "interval of SSE heartbeat comments")
		attachTimeout := fs.Duration("attach-timeout", 30*time.Second, "how long POST /v1/sessions looks for agy")
		cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the whole run to this file (for measuring; bench --cluster-profile uses it)")
		traceFile := fs.String("trace", "", "write a Go execution trace of the whole run to this file (go tool trace; large: for measuring)")
		var cluster clusterFlags
		cluster.register(fs)
		pos, err := parseFlags(fs, args)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usagef("serve: unexpected argument %q", pos[0])
		}
		host, _, err := net.SplitHostPort(*listen)
		if err != nil {
			return usagef("serve: --listen %q: %v", *listen, err)
		}
		if (*tlsCert == "") != (*tlsKey == "") {
			return usagef("serve: give both --tls-cert and --tls-key")
		}
		if !isLoopbackListen(host) {
			if !*allowRemote || *tokenFile == "" {
				return usagef("serve: --listen %s is not loopback: it needs --allow-remote and --token-file", *listen)
			}
			if *tlsCert == "" && !*insecureRemote {
				return usagef("serve: --listen %s is not loopback: give --tls-cert and --tls-key, or --insecure-remote to send the token in clear", *listen)
			}
		}
		if *maxConns < 1 {
			return usagef("serve: --max-connections must be at least 1")
		}
		var tlsConfig *tls.Config
		if *tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
			if err != nil {
				return usagef("serve: --tls-cert/--tls-key: %v", err)
			}
			tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		}
		if *heartbeat <= 0 || *attachTimeout <= 0 {
			return usagef("serve: --heartbeat and --attach-timeout must be positive")
		}
		token, generated, err := loadToken(*tokenFile, e.stderr)
		if err != nil {
			return err
		}
		if *cpuProfile != "" {
			stop, err := startCPUProfile(*cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
		}
		if *traceFile != "" {
			stop, err := startTrace(*traceFile)
			if err != nil {
				return err
			}
			defer stop()
		}
		log := newLogger(e)
		clusterCfg, clustered, err := cluster.config(log)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		h := actors.NewHost(actors.Config{Logger: log})
		s := httphost.New(httphost.Config{
			Host: h, Token: token, Log: log,
			Heartbeat: *heartbeat, AttachTimeout: *attachTimeout,
			MaxConns: *maxConns, TLS: tlsConfig,
		})
		shutdown := func(sctx context.Context) error { return h.Shutdown(sctx) }
		if clustered {
			node, err := s.JoinCluster(clusterCfg)
			if err != nil {
				_ = ln.Close()
				_ = h.Shutdown(context.Background())
				return err
			}
			fmt.Fprintf(e.stderr, "agyharness serve: node %s of cluster %s at %s\n", node.Name(), clusterCfg.Cluster, node.Address())
			shutdown = func(sctx context.Context) error {
				// Streams other nodes read end first; then the sessions.
				if err := node.Shutdown(sctx); err != nil {
					log.Warn("cluster shutdown", "err", err)
				}
				return h.Shutdown(sctx)
			}
		}
		scheme := "http"
		if tlsConfig != nil {
			scheme = "https"
		}
		fmt.Fprintf(e.stderr, "agyharness serve: listening on %s://%s\n", scheme, ln.Addr())
		if generated {
			// The one place a token is ever printed: the operator needs it.
			fmt.Fprintf(e.stderr, "agyharness serve: token: %s\n", token)
		}
		return s.Serve(ctx, ln, e.signals, shutdown)
	}
	return c
}

// isLoopbackListen: "" and 0.0.0.0 listen on every interface, so they are
// not loopback.
func isLoopbackListen(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loadToken reads the bearer token from path (at most tokenfile.MaxSize;
// surrounding white space dropped; a file open to group or others is
// warned about on warn), or makes a random one. A token tokenfile.CheckBearer
// refuses is a usage error with its reason.
func loadToken(path string, warn io.Writer) (token string, generated bool, err error) {
	if path == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", false, fmt.Errorf("serve: token: %w", err)
		}
		return hex.EncodeToString(b), true, nil
	}
	t, err := tokenfile.Read(path, func(line string) { fmt.Fprintf(warn, "agyharness serve: warning: %s\n", line) })
	if err != nil {
		return "", false, usagef("serve: --token-file: %v", err)
	}
	token = strings.TrimSpace(t)
	if err := tokenfile.CheckBearer(token); err != nil {
		return "", false, usagef("serve: token file %q: %v", path, err)
	}
	return token, false, nil
}
