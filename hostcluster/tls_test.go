//go:build !race

package hostcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// testCA makes a CA and a certificate it signs for 127.0.0.1, usable by a
// node as server and as client.
func testCA(t *testing.T) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// stranger is what any process on a member's machine can run: a
// Proto.Actor remote of its own on 127.0.0.1:0, no member of the cluster,
// speaking TLS when given a configuration.
type stranger struct {
	system *actor.ActorSystem

	mu         sync.Mutex
	terminated map[string]int // EndpointTerminatedEvents by address
}

func startStranger(t *testing.T, serverTLS, clientTLS *tls.Config) *stranger {
	t.Helper()
	s := &stranger{terminated: map[string]int{}}
	s.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	var opts []remote.ConfigOption
	if clientTLS != nil {
		opts = append(opts, remote.WithServerOptions(grpc.Creds(credentials.NewTLS(serverTLS))),
			remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(clientTLS))))
	}
	rc := remote.Configure("127.0.0.1", 0, opts...)
	rc.MaxRetryCount = 1
	r := remote.NewRemote(s.system, rc)
	sub := s.system.EventStream.Subscribe(func(ev any) {
		if e, ok := ev.(*remote.EndpointTerminatedEvent); ok {
			s.mu.Lock()
			s.terminated[e.Address]++
			s.mu.Unlock()
		}
	})
	r.Start()
	t.Cleanup(func() {
		s.system.EventStream.Unsubscribe(sub)
		r.Shutdown(false)
	})
	return s
}

func (s *stranger) terminations(addr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.terminated[addr]
}

// reach is what a stranger managed on a node.
type reach struct {
	Listed, Created, Subscribed, Turned, Rejoined bool
}

// drive sends a node's node actor what a member would to list its
// sessions, create one, subscribe to session "s" and send it a turn, and
// make the node leave and join again (the member id given, as the node's
// automanaged answer shows it to anyone).
func (s *stranger) drive(t *testing.T, n *Node, local *fakeLocal) reach {
	t.Helper()
	var got reach
	addr := n.Address()
	pid := actor.NewPID(addr, nodeActorName)
	ask := func(msg any) any {
		res, err := s.system.Root.RequestFuture(pid, msg, 3*time.Second).Result()
		if err != nil {
			return nil
		}
		return res
	}
	deadline := time.Now().Add(3 * time.Second)
	var (
		wg         sync.WaitGroup
		list, subs any
	)
	wg.Add(4)
	go func() { defer wg.Done(); list = ask(&clusterpb.ListSessions{Version: ProtocolVersion}) }()
	go func() {
		defer wg.Done()
		ask(&clusterpb.CreateSession{Version: ProtocolVersion, Port: 4242, SessionId: "stranger-made", DeadlineUnixNano: deadline.UnixNano()})
	}()
	go func() {
		defer wg.Done()
		// A reader actor, as a member's stream actor: the feeder watches
		// it and sends it Subscribed, then batches.
		opened := make(chan *clusterpb.Subscribed, 1)
		reader := s.system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if m, ok := c.Message().(*clusterpb.Subscribed); ok {
				select {
				case opened <- m:
				default:
				}
			}
		}))
		defer s.system.Root.Stop(reader)
		s.system.Root.RequestWithCustomSender(pid, &clusterpb.Subscribe{Version: ProtocolVersion, SessionId: "s", Window: 8}, reader)
		select {
		case m := <-opened:
			subs = m
		case <-time.After(3 * time.Second):
		}
	}()
	go func() {
		defer wg.Done()
		ask(commandMessage("s", messages.Command{Type: messages.CommandTurn, Text: "from a stranger"}, deadline))
	}()
	wg.Wait()
	if l, ok := list.(*clusterpb.SessionList); ok && len(l.Sessions) > 0 {
		got.Listed = true
	}
	if sub, ok := subs.(*clusterpb.Subscribed); ok && sub.Failure == nil {
		got.Subscribed = true
	}
	local.mu.Lock()
	_, got.Created = local.sessions["stranger-made"]
	for _, ev := range local.sessions["s"].events {
		if ev.Text == "from a stranger" {
			got.Turned = true
		}
	}
	local.mu.Unlock()

	member := n.current().system.ID
	before := s.terminations(addr)
	s.system.Root.Send(pid, &clusterpb.Rejoin{Version: ProtocolVersion, MemberId: member, Reason: "a stranger asks"})
	rejoined := func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.rejoining || n.gen.system.ID != member
	}
	// Either the node leaves, or the stranger's connection that carried
	// the request fails (and the request with it).
	waitFor(t, 15*time.Second, func() bool { return rejoined() || s.terminations(addr) > before },
		"the stranger's rejoin lands or its connection fails")
	got.Rejoined = rejoined()
	return got
}

func TestNonMemberWithoutAClusterCertificateDrivesNothing(t *testing.T) {
	nodes, locals := testNodes(t, "A")
	locals[0].add("s")
	otherPool, otherCert := testCA(t)

	t.Run("no certificate", func(t *testing.T) {
		got := startStranger(t, nil, nil).drive(t, nodes[0], locals[0])
		assert.Equal(t, reach{}, got)
	})
	t.Run("a certificate from another CA", func(t *testing.T) {
		// It trusts the node's certificate; the node does not trust its own.
		clientTLS := nodes[0].cfg.ClientTLS.Clone()
		clientTLS.Certificates = []tls.Certificate{otherCert}
		serverTLS := &tls.Config{Certificates: []tls.Certificate{otherCert}, ClientCAs: otherPool, ClientAuth: tls.RequireAndVerifyClientCert}
		got := startStranger(t, serverTLS, clientTLS).drive(t, nodes[0], locals[0])
		assert.Equal(t, reach{}, got)
	})
	// The same requests from a holder of a cluster certificate do it all:
	// what the two above were refused is what they asked.
	t.Run("a cluster certificate", func(t *testing.T) {
		got := startStranger(t, nodes[0].cfg.ServerTLS, nodes[0].cfg.ClientTLS).drive(t, nodes[0], locals[0])
		assert.Equal(t, reach{Listed: true, Created: true, Subscribed: true, Turned: true, Rejoined: true}, got)
	})
}

func TestNodesWithGeneratedCertsFormAClusterOnlyWithTheirCA(t *testing.T) {
	// testNodes starts its nodes with WriteCerts' files.
	nodes, locals := testNodes(t, "A", "B")
	locals[1].add("b1")
	waitFor(t, 15*time.Second, func() bool {
		got := nodes[0].Sessions(context.Background())
		return len(got) == 1 && !got[0].Lost
	}, "A lists B's session over mutual TLS")

	// A node whose certificate another CA signed is no member: it sees
	// none of theirs, they see none of its.
	pool, cert := testCA(t)
	peers := nodes[0].cfg.Provider.(Automanaged).Peers
	local := newFakeLocal()
	local.add("c1")
	port := freePort(t)
	serverTLS, clientTLS := MutualTLS(cert, pool)
	c, err := Start(Config{Cluster: "test", Node: "C", Advertise: "127.0.0.1:0", Local: local,
		Provider:  Automanaged{Port: port, Peers: append(append([]string{}, peers...), net.JoinHostPort("127.0.0.1", strconv.Itoa(port))), Refresh: 100 * time.Millisecond},
		ServerTLS: serverTLS, ClientTLS: clientTLS})
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, c.Shutdown(ctx))
	}()
	// C lists A and B as members (the automanaged HTTP is no proof of
	// anything) but gets no answer from either.
	waitFor(t, 15*time.Second, func() bool { return len(c.Nodes()) == 3 }, "C's provider lists A and B")
	for _, s := range c.Sessions(context.Background()) {
		assert.Equal(t, "c1", s.Info.Id, "C reads no session of A or B")
	}
}

func TestAutomanagedProviderListensOnTheAdvertiseHostOnly(t *testing.T) {
	nodes, _ := testNodes(t, "A")
	port := strconv.Itoa(nodes[0].cfg.Provider.(Automanaged).Port)
	res, err := http.Get("http://127.0.0.1:" + port + "/_health")
	require.NoError(t, err)
	var node struct{ ID string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&node))
	res.Body.Close()
	assert.Equal(t, nodes[0].current().system.ID, node.ID, "the provider's answer, on the advertise host")
	// Another address of this machine (every 127/8 address is loopback on
	// Linux) reaches nothing: the port is not taken on every interface.
	c, err := net.DialTimeout("tcp", "127.0.0.2:"+port, 2*time.Second)
	if err == nil {
		c.Close()
	}
	assert.Error(t, err, "the provider port from 127.0.0.2")
}
