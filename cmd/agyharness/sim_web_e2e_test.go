package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sim --web serves the console on the fake with one session, and prints a
// one-time sign-in link whose code (in the fragment) buys the token once.
func TestSimWebServesTheConsoleWithAOneTimeLink(t *testing.T) {
	cmd := exec.Command(harness(t), "sim", "--web")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := reap(t, cmd)
	out := lines(stdout)
	link := regexp.MustCompile(`(http://127\.0\.0\.1:\d+/)#code=([0-9a-f]+)`)
	var base, code string
	deadline := time.After(30 * time.Second)
	for base == "" {
		select {
		case l, ok := <-out:
			require.True(t, ok, "sim --web ended before printing its link")
			if m := link.FindStringSubmatch(l); m != nil {
				base, code = m[1], m[2]
			}
		case <-deadline:
			t.Fatal("no sign-in link")
		}
	}
	res, err := http.Get(base)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'")

	signin := func() (*http.Response, string) {
		res, err := http.Post(base+"v1/signin", "application/json", strings.NewReader(`{"code":"`+code+`"}`))
		require.NoError(t, err)
		defer res.Body.Close()
		var body struct{ Token string }
		_ = json.NewDecoder(res.Body).Decode(&body)
		return res, body.Token
	}
	res, token := signin()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotEmpty(t, token)
	res, _ = signin()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "the code is good once")

	req, _ := http.NewRequest("GET", base+"v1/sessions/sim", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "the fake's session is served")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-done:
		done <- err
		assert.NoError(t, err, "sim --web stops cleanly on SIGINT")
	case <-time.After(30 * time.Second):
		t.Fatal("sim --web did not stop")
	}
}
