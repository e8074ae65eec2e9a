package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cluster flags refused before serve starts (so in the test's
// process: none of these serves).
func TestServeClusterFlagValidation(t *testing.T) {
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	code, stdout, stderr := runInProcess("cluster", "certs", "--out", certs, "--node", "a=127.0.0.1", "--node", "b=127.0.0.1")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "--remote-tls-cert "+filepath.Join(certs, "a.pem"))
	tlsA := []string{"--remote-tls-cert", filepath.Join(certs, "a.pem"), "--remote-tls-key", filepath.Join(certs, "a-key.pem"),
		"--remote-tls-ca", filepath.Join(certs, "ca.pem")}
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", 5000)), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	two := filepath.Join(dir, "two")
	require.NoError(t, os.WriteFile(two, []byte("a\nb\n"), 0o600))
	etcd := []string{"serve", "--cluster", "c", "--node", "a", "--cluster-provider", "etcd"}
	auto := []string{"serve", "--cluster", "c", "--node", "a", "--cluster-provider", "automanaged", "--peers", "127.0.0.1:1"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{auto, "--cluster needs mutual TLS"},
		{cat(auto, tlsA[:4]), "--cluster needs mutual TLS"},
		{cat(auto, tlsA, []string{"--insecure-cluster-no-auth"}), "choose one"},
		{cat(auto, []string{"--remote-tls-cert", filepath.Join(certs, "a.pem"), "--remote-tls-key", filepath.Join(certs, "b-key.pem"),
			"--remote-tls-ca", filepath.Join(certs, "ca.pem")}), "private key does not match"},
		{cat(auto, tlsA, []string{"--etcd-user", "u", "--etcd-password-file", empty}), "need --cluster-provider etcd"},
		{cat(etcd, tlsA, []string{"--etcd-user", "u"}), "give both --etcd-user and --etcd-password-file"},
		{cat(etcd, tlsA, []string{"--etcd-user", "u", "--etcd-password-file", "/dev/zero"}), "over 4096 bytes"},
		{cat(etcd, tlsA, []string{"--etcd-user", "u", "--etcd-password-file", big}), "over 4096 bytes"},
		{cat(etcd, tlsA, []string{"--etcd-user", "u", "--etcd-password-file", empty}), "empty"},
		{cat(etcd, tlsA, []string{"--etcd-user", "u", "--etcd-password-file", two}), "more than one line"},
		{cat(etcd, tlsA, []string{"--etcd-tls-cert", filepath.Join(certs, "a.pem")}), "give both --etcd-tls-cert and --etcd-tls-key"},
		{cat(etcd, tlsA, []string{"--etcd-tls-ca", big}), "no PEM certificate"},
	} {
		code, _, stderr := runInProcess(tc.args...)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}

	_, stdout, _ = runInProcess("serve", "--help")
	assert.Contains(t, stdout, "-insecure-cluster-no-auth")
	assert.Contains(t, stdout, "made by agyharness cluster certs")
	assert.Contains(t, stdout, "plain HTTP, which cannot be authenticated", "the help says the automanaged provider is unauthenticated")
}

func TestClusterCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	code, stdout, stderr := runInProcess("cluster", "certs", "--out", dir, "--node", "a=10.0.0.5", "--node", "b=node-b.example,10.0.0.6")
	require.Equal(t, exitOK, code, stderr)
	for _, f := range []string{"ca.pem", "ca-key.pem", "a.pem", "a-key.pem", "b.pem", "b-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		if strings.HasSuffix(f, "-key.pem") {
			assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), f)
		}
	}
	assert.Contains(t, stdout, "node b: --remote-tls-cert "+filepath.Join(dir, "b.pem"))

	code, _, stderr = runInProcess("cluster", "certs", "--out", dir, "--node", "a=10.0.0.5")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "exists")
	code, _, stderr = runInProcess("cluster", "certs", "--out", dir, "--node", "a=10.0.0.5", "--force")
	assert.Equal(t, exitOK, code, stderr)

	for _, args := range [][]string{
		{"cluster"},
		{"cluster", "keys", "--out", dir, "--node", "a=h"},
		{"cluster", "certs", "--node", "a=h"},
		{"cluster", "certs", "--out", dir},
		{"cluster", "certs", "--out", dir, "--node", "a"},
		{"cluster", "certs", "--out", dir, "--node", "a=h", "--days", "0"},
	} {
		code, _, stderr := runInProcess(args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
	}
	code, _, _ = runInProcess("cluster", "certs", "--out", t.TempDir(), "--node", "../x=h")
	assert.NotEqual(t, exitOK, code, "a node name is a file name: no path")
}
