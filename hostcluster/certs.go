package hostcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// The files WriteCerts writes in its directory: the CA's certificate and
// key, and for each node NAME.pem and NAME-key.pem.
const (
	CAFile    = "ca.pem"
	CAKeyFile = "ca-key.pem"
)

// maxPEMFile bounds a certificate, key or CA file read by LoadTLS.
const maxPEMFile = 1 << 20

// CertNode names a node whose certificate WriteCerts writes: Hosts are the
// names and IP addresses the others dial it by (the host of its advertise
// address), each written in the certificate as a DNS or IP name.
type CertNode struct {
	Name  string
	Hosts []string
}

// dnsName is a host name a certificate may name (no wildcards).
var dnsName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// ValidCertHost reports whether host can be named in a node's certificate:
// an IP address or a DNS name.
func ValidCertHost(host string) bool {
	return net.ParseIP(host) != nil || len(host) <= 253 && dnsName.MatchString(host)
}

// CertFiles are the paths of one node's certificate and key.
type CertFiles struct {
	Node, Cert, Key string
}

// WriteCerts writes, in dir (made 0700 when missing), a certificate
// authority and for each node a certificate it signs, valid for validFor,
// usable to serve and to dial remote: the mutual TLS of every node's
// remote endpoint. Keys are ECDSA P-256, written 0600. It refuses to
// replace a file that exists unless overwrite; a CA already in dir
// (ca.pem and ca-key.pem) is used, not replaced, unless overwrite, so that
// a node can be added to a cluster. It checks every file before writing
// any.
func WriteCerts(dir string, nodes []CertNode, validFor time.Duration, overwrite bool) (ca string, files []CertFiles, err error) {
	if len(nodes) == 0 {
		return "", nil, errors.New("hostcluster: certs: no node")
	}
	if validFor <= 0 {
		return "", nil, errors.New("hostcluster: certs: validity must be positive")
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		if !ValidNodeName(n.Name) {
			return "", nil, fmt.Errorf("hostcluster: certs: node name %q: 1 to 64 of A-Z a-z 0-9 . _ -", n.Name)
		}
		if n.Name == "ca" || seen[n.Name] {
			return "", nil, fmt.Errorf("hostcluster: certs: node name %q: used twice (or \"ca\")", n.Name)
		}
		seen[n.Name] = true
		if len(n.Hosts) == 0 {
			return "", nil, fmt.Errorf("hostcluster: certs: node %s: no host", n.Name)
		}
		for _, h := range n.Hosts {
			if !ValidCertHost(h) {
				return "", nil, fmt.Errorf("hostcluster: certs: node %s: host %q: want an IP address or a DNS name", n.Name, h)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("hostcluster: certs: %w", err)
	}
	ca = filepath.Join(dir, CAFile)
	caKeyPath := filepath.Join(dir, CAKeyFile)
	reuseCA := false
	if !overwrite {
		_, certErr := os.Lstat(ca)
		_, keyErr := os.Lstat(caKeyPath)
		if certErr == nil && keyErr == nil {
			reuseCA = true
		} else if certErr == nil || keyErr == nil {
			return "", nil, fmt.Errorf("hostcluster: certs: %s: one of %s and %s exists without the other", dir, CAFile, CAKeyFile)
		}
	}
	var targets []string
	if !reuseCA {
		targets = append(targets, ca, caKeyPath)
	}
	for _, n := range nodes {
		f := CertFiles{Node: n.Name, Cert: filepath.Join(dir, n.Name+".pem"), Key: filepath.Join(dir, n.Name+"-key.pem")}
		files = append(files, f)
		targets = append(targets, f.Cert, f.Key)
	}
	if !overwrite {
		for _, p := range targets {
			if _, err := os.Lstat(p); err == nil {
				return "", nil, fmt.Errorf("hostcluster: certs: %s exists (give overwrite to replace it)", p)
			}
		}
	}

	now := time.Now()
	var caCert *x509.Certificate
	var caKey *ecdsa.PrivateKey
	if reuseCA {
		if caCert, caKey, err = loadCA(ca, caKeyPath); err != nil {
			return "", nil, err
		}
	} else {
		caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", nil, fmt.Errorf("hostcluster: certs: %w", err)
		}
		tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "agyharness cluster CA"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validFor), IsCA: true, BasicConstraintsValid: true,
			MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
		if err != nil {
			return "", nil, fmt.Errorf("hostcluster: certs: %w", err)
		}
		if caCert, err = x509.ParseCertificate(der); err != nil {
			return "", nil, fmt.Errorf("hostcluster: certs: %w", err)
		}
		if err := writePEM(ca, "CERTIFICATE", der, 0o644, overwrite); err != nil {
			return "", nil, err
		}
		if err := writeKey(caKeyPath, caKey, overwrite); err != nil {
			return "", nil, err
		}
	}
	for i, n := range nodes {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", nil, fmt.Errorf("hostcluster: certs: %w", err)
		}
		tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: n.Name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validFor), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		for _, h := range n.Hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		if tmpl.NotAfter.After(caCert.NotAfter) {
			tmpl.NotAfter = caCert.NotAfter
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return "", nil, fmt.Errorf("hostcluster: certs: node %s: %w", n.Name, err)
		}
		if err := writePEM(files[i].Cert, "CERTIFICATE", der, 0o644, overwrite); err != nil {
			return "", nil, err
		}
		if err := writeKey(files[i].Key, key, overwrite); err != nil {
			return "", nil, err
		}
	}
	return ca, files, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n.Add(n, big.NewInt(1))
}

func writeKey(path string, key *ecdsa.PrivateKey, overwrite bool) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("hostcluster: certs: %w", err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600, overwrite)
}

// writePEM creates path exclusively (a file in the way is removed first
// when overwrite: never written through a link).
func writePEM(path, kind string, der []byte, mode os.FileMode, overwrite bool) error {
	if overwrite {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("hostcluster: certs: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("hostcluster: certs: %w", err)
	}
	if err := f.Chmod(mode); err != nil { // the umask may have narrowed it: keys stay 0600 either way
		f.Close()
		return fmt.Errorf("hostcluster: certs: %w", err)
	}
	if err := pem.Encode(f, &pem.Block{Type: kind, Bytes: der}); err != nil {
		f.Close()
		return fmt.Errorf("hostcluster: certs: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("hostcluster: certs: %s: %w", path, err)
	}
	return nil
}

func loadCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := loadKeyPair(certPath, keyPath)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || !cert.IsCA {
		return nil, nil, fmt.Errorf("hostcluster: certs: %s: not a CA certificate", certPath)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("hostcluster: certs: %s: not an ECDSA key", keyPath)
	}
	return cert, key, nil
}

// readPEMFile reads a certificate or key file of at most maxPEMFile bytes.
func readPEMFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPEMFile {
		return nil, fmt.Errorf("%s: over %d bytes: not a certificate or key file", path, maxPEMFile)
	}
	return b, nil
}

func loadKeyPair(certPath, keyPath string) (tls.Certificate, error) {
	certPEM, err := readPEMFile(certPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := readPEMFile(keyPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s, %s: %w", certPath, keyPath, err)
	}
	return pair, nil
}

// LoadCertPool reads a PEM file of one or more CA certificates.
func LoadCertPool(path string) (*x509.CertPool, error) {
	pool, err := loadCertPool(path)
	if err != nil {
		return nil, fmt.Errorf("hostcluster: %w", err)
	}
	return pool, nil
}

func loadCertPool(path string) (*x509.CertPool, error) {
	b, err := readPEMFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}

// LoadKeyPair reads a PEM certificate (chain) and its private key.
func LoadKeyPair(certPath, keyPath string) (tls.Certificate, error) {
	pair, err := loadKeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("hostcluster: %w", err)
	}
	return pair, nil
}

// MutualTLS is the remote configuration of a node holding cert, whose
// peers' certificates caPool signs: its endpoint requires and verifies a
// client certificate, and it verifies the certificate of each node it
// dials against the host it dials.
func MutualTLS(cert tls.Certificate, caPool *x509.CertPool) (server, client *tls.Config) {
	server = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: caPool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	client = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: caPool, MinVersion: tls.VersionTLS12}
	return server, client
}

// LoadMutualTLS is MutualTLS from files: a node's certificate and key and
// the CA certificate(s), as WriteCerts writes them.
func LoadMutualTLS(certPath, keyPath, caPath string) (server, client *tls.Config, err error) {
	cert, err := loadKeyPair(certPath, keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("hostcluster: remote TLS: %w", err)
	}
	pool, err := loadCertPool(caPath)
	if err != nil {
		return nil, nil, fmt.Errorf("hostcluster: remote TLS: %w", err)
	}
	if err := verifies(cert, pool); err != nil {
		return nil, nil, fmt.Errorf("hostcluster: remote TLS: %s does not verify against %s: %w", certPath, caPath, err)
	}
	server, client = MutualTLS(cert, pool)
	return server, client, nil
}

// verifies checks that cert chains to pool for both uses remote makes of
// it, so that a wrong file is refused at start, not at the first peer.
func verifies(cert tls.Certificate, pool *x509.CertPool) error {
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
			return err
		}
	}
	return nil
}
