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
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

func TestNodesTalkOverMutualTLS(t *testing.T) {
	pool, cert := testCA(t)
	ports := []int{freePort(t), freePort(t)}
	peers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
	var nodes []*Node
	var locals []*fakeLocal
	for i, name := range []string{"A", "B"} {
		local := newFakeLocal()
		n, err := Start(Config{Cluster: "tls", Node: name, Advertise: "127.0.0.1:0", Local: local,
			Provider:  Automanaged{Port: ports[i], Peers: peers, Refresh: 100 * time.Millisecond},
			ServerTLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert},
			ClientTLS: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}})
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			require.NoError(t, n.Shutdown(ctx))
		})
		nodes, locals = append(nodes, n), append(locals, local)
	}
	locals[1].add("b1")
	waitFor(t, 15*time.Second, func() bool {
		got := nodes[0].Sessions(context.Background())
		return len(got) == 1 && !got[0].Lost
	}, "A lists B's session over TLS")
}
