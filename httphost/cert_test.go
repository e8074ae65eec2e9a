package httphost

import (
	"crypto/x509"
	"testing"

	"github.com/agyharness/agyharness/internal/testcert"
)

// selfSignedCert writes a certificate for 127.0.0.1 and its key as PEM
// files, and returns their paths and a pool that trusts the certificate.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	return testcert.Files(t)
}
