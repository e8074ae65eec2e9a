package hostcluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartRefusesARemoteWithoutMutualTLS(t *testing.T) {
	server, client := testCerts(t, "A")
	base := Config{Cluster: "c", Node: "A", Advertise: "127.0.0.1:0", Local: newFakeLocal(),
		Provider: Automanaged{Port: 1, Peers: []string{"127.0.0.1:1"}}}
	tlsOf := func(mutate func(s, c *tls.Config)) Config {
		cfg := base
		cfg.ServerTLS, cfg.ClientTLS = server["A"].Clone(), client["A"].Clone()
		if mutate != nil {
			mutate(cfg.ServerTLS, cfg.ClientTLS)
		}
		return cfg
	}
	refused := map[string]Config{
		"no TLS":                    base,
		"a client TLS only":         func() Config { c := base; c.ClientTLS = client["A"]; return c }(),
		"no client certificate ask": tlsOf(func(s, _ *tls.Config) { s.ClientAuth = tls.RequestClientCert }),
		"no client CA":              tlsOf(func(s, _ *tls.Config) { s.ClientCAs = nil }),
		"nothing to present":        tlsOf(func(_, c *tls.Config) { c.Certificates = nil }),
		"no server verification":    tlsOf(func(_, c *tls.Config) { c.InsecureSkipVerify = true }),
		"both insecure and TLS":     func() Config { c := tlsOf(nil); c.InsecureNoAuth = true; return c }(),
	}
	for name, cfg := range refused {
		_, err := cfg.withDefaults()
		assert.Error(t, err, name)
	}
	_, err := tlsOf(nil).withDefaults()
	assert.NoError(t, err, "mutual TLS")
	insecure := base
	insecure.InsecureNoAuth = true
	_, err = insecure.withDefaults()
	assert.NoError(t, err, "an explicitly unauthenticated cluster")
}

func TestWriteCertsMakesACAAndANodeCertificatePerHost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	ca, files, err := WriteCerts(dir, []CertNode{
		{Name: "a", Hosts: []string{"10.0.0.5"}},
		{Name: "b", Hosts: []string{"node-b.example", "::1"}},
	}, 24*time.Hour, false)
	require.NoError(t, err)
	require.Len(t, files, 2)

	mode := func(p string) os.FileMode {
		st, err := os.Stat(p)
		require.NoError(t, err)
		return st.Mode().Perm()
	}
	assert.Equal(t, os.FileMode(0o700), mode(dir))
	assert.Equal(t, os.FileMode(0o600), mode(filepath.Join(dir, CAKeyFile)), "the CA key")
	assert.Equal(t, os.FileMode(0o644), mode(ca))
	for _, f := range files {
		assert.Equal(t, os.FileMode(0o600), mode(f.Key), f.Node)
		assert.Equal(t, os.FileMode(0o644), mode(f.Cert), f.Node)
	}

	pool, err := LoadCertPool(ca)
	require.NoError(t, err)
	leaf := func(f CertFiles) *x509.Certificate {
		b, err := os.ReadFile(f.Cert)
		require.NoError(t, err)
		block, _ := pem.Decode(b)
		require.NotNil(t, block)
		c, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		return c
	}
	a, b := leaf(files[0]), leaf(files[1])
	assert.Equal(t, "a", a.Subject.CommonName)
	require.Len(t, a.IPAddresses, 1)
	assert.True(t, a.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")))
	assert.Empty(t, a.DNSNames)
	assert.Equal(t, []string{"node-b.example"}, b.DNSNames)
	require.Len(t, b.IPAddresses, 1)
	assert.True(t, b.IPAddresses[0].Equal(net.ParseIP("::1")))
	for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err = a.Verify(x509.VerifyOptions{Roots: pool, DNSName: "10.0.0.5", KeyUsages: []x509.ExtKeyUsage{use}})
		assert.NoError(t, err, "a's certificate verifies against the CA for its host")
		_, err = b.Verify(x509.VerifyOptions{Roots: pool, DNSName: "node-b.example", KeyUsages: []x509.ExtKeyUsage{use}})
		assert.NoError(t, err)
	}
	_, err = a.Verify(x509.VerifyOptions{Roots: pool, DNSName: "10.0.0.6"})
	assert.Error(t, err, "a's certificate names its host only")
	_, _, err = LoadMutualTLS(files[0].Cert, files[0].Key, ca)
	require.NoError(t, err)
	_, _, err = LoadMutualTLS(files[0].Cert, files[1].Key, ca)
	assert.Error(t, err, "a key that is not the certificate's")

	// Existing files stay unless overwrite; a CA already there signs a
	// node added later.
	caBefore, err := os.ReadFile(ca)
	require.NoError(t, err)
	_, _, err = WriteCerts(dir, []CertNode{{Name: "a", Hosts: []string{"10.0.0.5"}}}, time.Hour, false)
	assert.ErrorContains(t, err, "exists")
	_, added, err := WriteCerts(dir, []CertNode{{Name: "c", Hosts: []string{"10.0.0.7"}}}, time.Hour, false)
	require.NoError(t, err)
	caAfter, err := os.ReadFile(ca)
	require.NoError(t, err)
	assert.Equal(t, caBefore, caAfter, "the CA is kept")
	_, _, err = LoadMutualTLS(added[0].Cert, added[0].Key, ca)
	assert.NoError(t, err, "c verifies against the same CA")
	_, _, err = WriteCerts(dir, []CertNode{{Name: "a", Hosts: []string{"10.0.0.5"}}}, time.Hour, true)
	require.NoError(t, err)
	caAfter, err = os.ReadFile(ca)
	require.NoError(t, err)
	assert.NotEqual(t, caBefore, caAfter, "overwrite makes a new CA")
	assert.Equal(t, os.FileMode(0o600), mode(filepath.Join(dir, CAKeyFile)))

	for name, nodes := range map[string][]CertNode{
		"a bad node name": {{Name: "a/b", Hosts: []string{"h"}}},
		"no host":         {{Name: "a"}},
		"a bad host":      {{Name: "a", Hosts: []string{"*.example"}}},
		"a node twice":    {{Name: "a", Hosts: []string{"h"}}, {Name: "a", Hosts: []string{"h"}}},
		"none":            nil,
	} {
		_, _, err := WriteCerts(t.TempDir(), nodes, time.Hour, false)
		assert.Error(t, err, name)
	}
}
