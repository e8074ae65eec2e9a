package hostcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/labstack/echo"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ProtocolVersion is the version every cross-node message carries.
const ProtocolVersion = 1

// Config configures a node. Zero durations take the defaults written beside
// them.
type Config struct {
	// Cluster names the cluster: nodes join the members of the same name.
	Cluster string
	// Node names this node (1 to 64 of A-Z a-z 0-9 . _ -); unique in the
	// cluster.
	Node string
	// Advertise is the host:port of this node's remote endpoint: it
	// listens there and the other nodes dial it. Port 0 picks a free port
	// (for tests: the advertised address is then the one bound).
	Advertise string
	// Provider finds the members: Etcd or Automanaged.
	Provider Provider
	// AllowPeers are hosts (names or IPs) whose connections the remote
	// endpoint accepts besides the members' own hosts and this node's.
	AllowPeers []string
	// ServerTLS and ClientTLS run remote over mutual TLS (MutualTLS or
	// LoadMutualTLS makes them; see docs/SCALING.md): the endpoint requires
	// and verifies each caller's certificate (ClientAuth
	// tls.RequireAndVerifyClientCert with ClientCAs), so that only a holder
	// of a certificate the cluster's CA signed reaches the node actor. Both
	// are required unless InsecureNoAuth.
	ServerTLS, ClientTLS *tls.Config
	// InsecureNoAuth runs remote in plaintext with no authentication, for a
	// throwaway test: any process that reaches the advertise address from
	// an admitted host (every process on a member's machine) can list,
	// create and drive this node's sessions and make it rejoin. Start logs
	// a warning.
	InsecureNoAuth bool
	// Local serves this node's own sessions to the others.
	Local Local
	// Logger receives the cluster's logs (default: discarded).
	Logger *slog.Logger
	// AskTimeout bounds a short question to another node (a listing): 1s.
	AskTimeout time.Duration
	// Window is how many events a stream's owner sends ahead of the
	// reader's consumption: 256.
	Window int
	// ForgetLost is how long the sessions of a lost node stay listed, as
	// node_lost, and the node probed for its return: 10m.
	ForgetLost time.Duration
}

// Provider is a membership provider of Proto.Actor's cluster.
type Provider interface {
	// build returns the provider for a generation of a node; stop
	// releases what build made (nil: nothing).
	build(c Config, me self) (p cluster.ClusterProvider, stop func(), err error)
	// hosts are the hosts of the members it names in advance.
	hosts() []string
}

// Etcd finds members in etcd: each node keeps a key under a lease, which
// expires about 3 s after its node stops renewing it.
type Etcd struct {
	Endpoints []string      // host:port of etcd's client endpoints
	Prefix    string        // key prefix (default /agyharness)
	Dial      time.Duration // how long joining waits for etcd (5s)
	TLS       *tls.Config   // for etcd's client endpoints (nil: plaintext)
	// Username and Password authenticate to etcd when its auth is enabled
	// (empty: none).
	Username, Password string
}

func (e Etcd) build(Config, self) (cluster.ClusterProvider, func(), error) {
	if len(e.Endpoints) == 0 {
		return nil, nil, errors.New("hostcluster: etcd: no endpoints")
	}
	prefix := e.Prefix
	if prefix == "" {
		prefix = "/agyharness"
	}
	dial := e.Dial
	if dial <= 0 {
		dial = 5 * time.Second
	}
	// The provider never closes its client: cancelling the client's
	// context at least stops its lease and watch loops.
	ctx, cancel := context.WithCancel(context.Background())
	p, err := etcd.NewWithConfig(prefix, clientv3.Config{Endpoints: e.Endpoints, DialTimeout: dial, TLS: e.TLS,
		Username: e.Username, Password: e.Password, Context: ctx, DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("hostcluster: etcd %s: %w", strings.Join(e.Endpoints, ","), err)
	}
	return p, cancel, nil
}

func (e Etcd) hosts() []string { return nil }

// self is the member a provider announces.
type self struct {
	id   string // the generation's member id
	host string // of the remote endpoint
	port int
}

// Automanaged finds members by asking each of a fixed list of peers over
// HTTP (Proto.Actor's automanaged provider: no other service). Each node
// serves its answer on Port, on the host of its advertise address (the
// provider itself would take every interface). That HTTP carries no
// authentication, and Proto.Actor's provider has no way to add it: any
// process that reaches the port reads the member's id and address, and
// one that answers in a peer's place can add or drop members of this
// node's view. Mutual TLS on remote still keeps a non-member from reaching
// a node actor; beyond one trusted machine, use Etcd with TLS.
type Automanaged struct {
	Port    int           // this node's provider port
	Peers   []string      // host:port of every node's provider port, this one's included
	Refresh time.Duration // how often peers are asked (500ms)
}

func (a Automanaged) build(c Config, me self) (cluster.ClusterProvider, func(), error) {
	if a.Port <= 0 || a.Port > 65535 {
		return nil, nil, fmt.Errorf("hostcluster: automanaged: port %d", a.Port)
	}
	if len(a.Peers) == 0 {
		return nil, nil, errors.New("hostcluster: automanaged: no peers")
	}
	for _, p := range a.Peers {
		if _, _, err := net.SplitHostPort(p); err != nil {
			return nil, nil, fmt.Errorf("hostcluster: automanaged: peer %q: %w", p, err)
		}
	}
	refresh := a.Refresh
	if refresh <= 0 {
		refresh = 500 * time.Millisecond
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(me.host, strconv.Itoa(a.Port)))
	if err != nil {
		return nil, nil, fmt.Errorf("hostcluster: automanaged: %w", err)
	}
	// What Proto.Actor's provider would serve on 0.0.0.0, served on ln:
	// given a server (its testing hook), the provider starts it as it is.
	node := automanaged.NewNode(c.Cluster, me.id, me.host, me.port, a.Port, []string{})
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Listener = ln
	e.GET("/_health", func(ctx echo.Context) error { return ctx.JSON(http.StatusOK, node) })
	stop := func() {
		_ = e.Close()
		_ = ln.Close()
	}
	return automanaged.NewWithTesting(refresh, a.Port, e, a.Peers...), stop, nil
}

func (a Automanaged) hosts() []string {
	var out []string
	for _, p := range a.Peers {
		if h, _, err := net.SplitHostPort(p); err == nil {
			out = append(out, h)
		}
	}
	return out
}

var nodeName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidNodeName reports whether name can name a node.
func ValidNodeName(name string) bool { return nodeName.MatchString(name) }

func (c Config) withDefaults() (Config, error) {
	if c.Cluster == "" || !nodeName.MatchString(c.Cluster) {
		return c, fmt.Errorf("hostcluster: cluster name %q: 1 to 64 of A-Z a-z 0-9 . _ -", c.Cluster)
	}
	if !nodeName.MatchString(c.Node) {
		return c, fmt.Errorf("hostcluster: node name %q: 1 to 64 of A-Z a-z 0-9 . _ -", c.Node)
	}
	host, port, err := net.SplitHostPort(c.Advertise)
	if err != nil {
		return c, fmt.Errorf("hostcluster: advertise address %q: %w", c.Advertise, err)
	}
	if host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		return c, fmt.Errorf("hostcluster: advertise address %q: name the host other nodes dial", c.Advertise)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return c, fmt.Errorf("hostcluster: advertise address %q: bad port", c.Advertise)
	}
	if c.Provider == nil {
		return c, errors.New("hostcluster: no membership provider")
	}
	if err := c.checkAuth(); err != nil {
		return c, err
	}
	if c.Local == nil {
		return c, errors.New("hostcluster: no Local")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.AskTimeout <= 0 {
		c.AskTimeout = time.Second
	}
	if c.Window <= 0 {
		c.Window = 256
	}
	if c.ForgetLost <= 0 {
		c.ForgetLost = 10 * time.Minute
	}
	return c, nil
}

// checkAuth refuses a remote that would obey any caller.
func (c Config) checkAuth() error {
	if c.InsecureNoAuth {
		if c.ServerTLS != nil || c.ClientTLS != nil {
			return errors.New("hostcluster: InsecureNoAuth with remote TLS: choose one")
		}
		return nil
	}
	switch {
	case c.ServerTLS == nil || c.ClientTLS == nil:
		return errors.New("hostcluster: remote needs mutual TLS (ServerTLS and ClientTLS, see MutualTLS), or InsecureNoAuth for an unauthenticated test cluster")
	case c.ServerTLS.ClientAuth != tls.RequireAndVerifyClientCert || c.ServerTLS.ClientCAs == nil:
		return errors.New("hostcluster: ServerTLS must require and verify client certificates (ClientAuth tls.RequireAndVerifyClientCert, ClientCAs set)")
	case len(c.ServerTLS.Certificates) == 0 && c.ServerTLS.GetCertificate == nil:
		return errors.New("hostcluster: ServerTLS has no certificate")
	case len(c.ClientTLS.Certificates) == 0 && c.ClientTLS.GetClientCertificate == nil:
		return errors.New("hostcluster: ClientTLS has no certificate to present")
	case c.ClientTLS.InsecureSkipVerify:
		return errors.New("hostcluster: ClientTLS must verify the nodes it dials (InsecureSkipVerify set)")
	}
	return nil
}
