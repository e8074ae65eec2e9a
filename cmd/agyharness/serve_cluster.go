package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
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
	insecure  bool

	etcdCert, etcdKey, etcdCA string
	etcdUser, etcdPassFile    string
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "cluster", "", "join the cluster of this name: any node's API reaches every node's sessions (needs --remote-tls-*)")
	fs.StringVar(&c.provider, "cluster-provider", "etcd", "how members find each other: etcd (give it --etcd-tls-* beyond one machine), or automanaged (Proto.Actor's membership over plain HTTP, which cannot be authenticated: one trusted machine only)")
	fs.StringVar(&c.etcd, "etcd-endpoints", "127.0.0.1:2379", "etcd's client endpoints, host:port,... (--cluster-provider etcd)")
	fs.StringVar(&c.etcdCert, "etcd-tls-cert", "", "PEM client certificate for etcd's client endpoints (with --etcd-tls-key)")
	fs.StringVar(&c.etcdKey, "etcd-tls-key", "", "the PEM private key of --etcd-tls-cert")
	fs.StringVar(&c.etcdCA, "etcd-tls-ca", "", "PEM certificate(s) of the authority that signs etcd's server certificate: talk to etcd over TLS")
	fs.StringVar(&c.etcdUser, "etcd-user", "", "etcd user name, when etcd's auth is enabled (with --etcd-password-file)")
	fs.StringVar(&c.etcdPassFile, "etcd-password-file", "", "file holding the password of --etcd-user")
	fs.StringVar(&c.peers, "peers", "", "every node's automanaged provider address, host:port,... this node's included (--cluster-provider automanaged)")
	fs.IntVar(&c.port, "provider-port", 6330, "this node's automanaged provider port, served on the --advertise host, unauthenticated")
	fs.StringVar(&c.node, "node", "", "this node's name (default: the host name)")
	fs.StringVar(&c.advertise, "advertise", "127.0.0.1:0", "HOST:PORT of this node's remote endpoint, which the other nodes dial (port 0: a free one)")
	fs.StringVar(&c.allow, "allow-peers", "", "more hosts allowed to connect to the remote endpoint besides the members, host,...")
	fs.StringVar(&c.tlsCert, "remote-tls-cert", "", "this node's PEM certificate for remote's mutual TLS (with --remote-tls-key and --remote-tls-ca; made by agyharness cluster certs)")
	fs.StringVar(&c.tlsKey, "remote-tls-key", "", "the PEM private key of --remote-tls-cert")
	fs.StringVar(&c.tlsCA, "remote-tls-ca", "", "PEM certificate(s) of the authority that signs every node's certificate")
	fs.BoolVar(&c.insecure, "insecure-cluster-no-auth", false, "run remote without TLS or authentication: any process that reaches --advertise drives this node's sessions (a throwaway test only)")
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
		etcd, err := c.etcdProvider()
		if err != nil {
			return cfg, false, err
		}
		cfg.Provider = etcd
	case "automanaged":
		if c.etcdCert != "" || c.etcdKey != "" || c.etcdCA != "" || c.etcdUser != "" || c.etcdPassFile != "" {
			return cfg, false, usagef("serve: --etcd-* flags need --cluster-provider etcd")
		}
		peers := splitList(c.peers)
		if len(peers) == 0 {
			return cfg, false, usagef("serve: --cluster-provider automanaged needs --peers")
		}
		cfg.Provider = hostcluster.Automanaged{Port: c.port, Peers: peers}
	default:
		return cfg, false, usagef("serve: --cluster-provider %q: want etcd or automanaged", c.provider)
	}
	if c.insecure {
		if c.tlsCert != "" || c.tlsKey != "" || c.tlsCA != "" {
			return cfg, false, usagef("serve: --insecure-cluster-no-auth with --remote-tls-*: choose one")
		}
		cfg.InsecureNoAuth = true
		return cfg, true, nil
	}
	if c.tlsCert == "" || c.tlsKey == "" || c.tlsCA == "" {
		return cfg, false, usagef("serve: --cluster needs mutual TLS between the nodes: give --remote-tls-cert, --remote-tls-key and --remote-tls-ca " +
			"(agyharness cluster certs makes them), or --insecure-cluster-no-auth for a throwaway test where any process that reaches --advertise drives this node")
	}
	cfg.ServerTLS, cfg.ClientTLS, err = hostcluster.LoadMutualTLS(c.tlsCert, c.tlsKey, c.tlsCA)
	if err != nil {
		return cfg, false, usagef("serve: --remote-tls-*: %v", err)
	}
	return cfg, true, nil
}

// maxPasswordFile bounds --etcd-password-file.
const maxPasswordFile = 4096

// etcdProvider is the etcd provider of the flags: TLS when a CA or a
// client certificate is given, a user when --etcd-user is.
func (c *clusterFlags) etcdProvider() (hostcluster.Etcd, error) {
	e := hostcluster.Etcd{Endpoints: splitList(c.etcd)}
	if len(e.Endpoints) == 0 {
		return e, usagef("serve: --etcd-endpoints: give etcd's client endpoints")
	}
	if (c.etcdCert == "") != (c.etcdKey == "") {
		return e, usagef("serve: give both --etcd-tls-cert and --etcd-tls-key")
	}
	if c.etcdCert != "" || c.etcdCA != "" {
		e.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if c.etcdCA != "" {
			pool, err := hostcluster.LoadCertPool(c.etcdCA)
			if err != nil {
				return e, usagef("serve: --etcd-tls-ca: %v", err)
			}
			e.TLS.RootCAs = pool
		}
		if c.etcdCert != "" {
			cert, err := hostcluster.LoadKeyPair(c.etcdCert, c.etcdKey)
			if err != nil {
				return e, usagef("serve: --etcd-tls-cert/--etcd-tls-key: %v", err)
			}
			e.TLS.Certificates = []tls.Certificate{cert}
		}
	}
	if (c.etcdUser == "") != (c.etcdPassFile == "") {
		return e, usagef("serve: give both --etcd-user and --etcd-password-file")
	}
	if c.etcdUser != "" {
		pass, err := readSecretFile(c.etcdPassFile, maxPasswordFile)
		if err != nil {
			return e, usagef("serve: --etcd-password-file: %v", err)
		}
		e.Username, e.Password = c.etcdUser, pass
	}
	return e, nil
}

// readSecretFile reads a one-line secret of at most limit bytes; the
// trailing newline is not part of it.
func readSecretFile(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > limit {
		return "", fmt.Errorf("%s: over %d bytes", path, limit)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%s: empty", path)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("%s: more than one line", path)
	}
	return s, nil
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
