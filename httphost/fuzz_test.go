package httphost

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/messages"
)

// FuzzHostRequestBodies: any body on any command endpoint gets a documented
// status, and every refusal is a JSON {"error": "..."}; nothing panics.
func FuzzHostRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"port":4242}`, `{"pid":1}`, `{"port":4242,"pid":1}`, `{"port":-1}`, `{"port":70000}`, `{"port":5,"read_mode":"x"}`,
		`{"text":"hi"}`, `{"text":""}`, `{"action":"accept"}`, `{"action":"accept","answers":[{"selected_option_ids":["1"]}]}`,
		`{}`, ``, `null`, `[1]`, `{"unknown":1}`, `{"text":"a"}{"text":"b"}`, strings.Repeat("x", 2<<20),
	} {
		for ep := byte(0); ep < 4; ep++ {
			f.Add(ep, []byte(seed))
		}
	}
	// One session on port 4242 that refuses resolves for unknown prompts and
	// takes the rest; no agy anywhere else.
	host := oneSession(&feedSession{do: func(c messages.Command) error {
		if c.Type == messages.CommandResolve {
			return actors.ErrUnknownElicitation
		}
		return nil
	}})
	host.refuse = func(spec actors.Spec) error {
		if spec.Port != 4242 {
			return errors.New("no agy there")
		}
		return nil
	}
	srv := newServer(serverConfig{host: host, token: "0123456789abcdef-token"})
	h := srv.handler()
	do := func(method, path string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer 0123456789abcdef-token")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := do("POST", "/v1/sessions", []byte(`{"port":4242}`)); rec.Code != http.StatusCreated {
		f.Fatalf("setup: %d %s", rec.Code, rec.Body)
	}
	f.Cleanup(func() {
		host.shutdown()
		srv.stop()
		srv.wait()
	})
	paths := []string{"/v1/sessions", "/v1/sessions/s1/turns", "/v1/sessions/s1/elicitations/e1/resolve", "/v1/sessions/s1/interrupt"}
	allowed := map[int]bool{200: true, 201: true, 202: true, 400: true, 404: true, 409: true, 413: true, 422: true, 502: true}
	f.Fuzz(func(t *testing.T, ep byte, body []byte) {
		rec := do("POST", paths[int(ep)%len(paths)], body)
		if !allowed[rec.Code] {
			t.Fatalf("status %d for %q on %s: %s", rec.Code, body, paths[int(ep)%len(paths)], rec.Body)
		}
		if rec.Code >= 400 {
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("refusal %d is not {\"error\":...}: %s", rec.Code, rec.Body)
			}
		}
	})
}
