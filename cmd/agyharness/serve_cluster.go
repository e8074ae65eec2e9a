package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"

	"github.com/agyharness/agyharness/hostcluster"
)

// clusterFlags are serve's flags for joining a cluster.
type clusterFlags struct {
	name      string
	provider  string
	etcd      string
	peers     string
	port      int
	node      string
	advertise string
	allow     string
	tlsCert   string
	tlsKey    string
	tlsCA     string
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "cluster", "", "join the cluster of this name: any node's API reaches every node's sessions")
	fs.StringVar(&c.provider, "cluster-provider", "etcd", "how members find each other: etcd or automanaged")
	fs.StringVar(&c.etcd, "etcd-endpoints", "127.0.0.1:2379", "etcd's client endpoints, host:port,... (--cluster-provider etcd)")
	fs.StringVar(&c.peers, "peers", "", "every node's automanaged provider address, host:port,... this node's included (--cluster-provider automanaged)")
	fs.IntVar(&c.port, "provider-port", 6330, "this node's automanaged provider port (served on every interface)")
	fs.StringVar(&c.node, "node", "", "this node's name (default: the host name)")
	fs.StringVar(&c.advertise, "advertise", "127.0.0.1:0", "HOST:PORT of this node's remote endpoint, which the other nodes dial (port 0: a free one)")
	fs.StringVar(&c.allow, "allow-peers", "", "more hosts allowed to connect to the remote endpoint besides the members, host,...")
	fs.StringVar(&c.tlsCert, "remote-tls-cert", "", "run remote over mutual TLS: this node's PEM certificate (with --remote-tls-key and --remote-tls-ca)")
	fs.StringVar(&c.tlsKey, "remote-tls-key", "", "the PEM private key of --remote-tls-cert")
	fs.StringVar(&c.tlsCA, "remote-tls-ca", "", "PEM certificate(s) of the authority that signs every node's certificate")
}

var unsafeNodeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// config is the node's configuration; ok false without --cluster.
func (c *clusterFlags) config(log *slog.Logger) (cfg hostcluster.Config, ok bool, err error) {
	if c.name == "" {
		return cfg, false, nil
	}
	node := c.node
	if node == "" {
		h, err := os.Hostname()
		if err != nil {
			return cfg, false, usagef("serve: --node: the host name: %v (name the node)", err)
		}
		node = unsafeNodeChars.ReplaceAllString(h, "-")
		if len(node) > 64 {
			node = node[:64]
		}
	}
	if !hostcluster.ValidNodeName(node) {
		return cfg, false, usagef("serve: --node %q: 1 to 64 of A-Z a-z 0-9 . _ -", node)
	}
	if !hostcluster.ValidNodeName(c.name) {
		return cfg, false, usagef("serve: --cluster %q: 1 to 64 of A-Z a-z 0-9 . _ -", c.name)
	}
	cfg = hostcluster.Config{Cluster: c.name, Node: node, Advertise: c.advertise, Logger: log, AllowPeers: splitList(c.allow)}
	switch c.provider {
	case "etcd":
		if len(splitList(c.etcd)) == 0 {
			return cfg, false, usagef("serve: --etcd-endpoints: give etcd's client endpoints")
		}
		cfg.Provider = hostcluster.Etcd{Endpoints: splitList(c.etcd)}
	case "automanaged":
		peers := splitList(c.peers)
		if len(peers) == 0 {
			return cfg, false, usagef("serve: --cluster-provider automanaged needs --peers")
		}
		cfg.Provider = hostcluster.Automanaged{Port: c.port, Peers: peers}
	default:
		return cfg, false, usagef("serve: --cluster-provider %q: want etcd or automanaged", c.provider)
	}
	if c.tlsCert != "" || c.tlsKey != "" || c.tlsCA != "" {
		if c.tlsCert == "" || c.tlsKey == "" || c.tlsCA == "" {
			return cfg, false, usagef("serve: remote TLS needs --remote-tls-cert, --remote-tls-key and --remote-tls-ca")
		}
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return cfg, false, usagef("serve: --remote-tls-cert/--remote-tls-key: %v", err)
		}
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return cfg, false, usagef("serve: --remote-tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return cfg, false, usagef("serve: --remote-tls-ca %s: no PEM certificate", c.tlsCA)
		}
		cfg.ServerTLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
		cfg.ClientTLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return cfg, true, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
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
