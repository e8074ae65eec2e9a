package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawResponse is a JSON-RPC response as the client reads it.
type rawResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// initializeLine is an initialize request of exactly size bytes, its
// newline included, padded in params._meta; idFirst puts "id" before
// "params", else after it.
func initializeLine(t *testing.T, id string, size int, idFirst bool) string {
	t.Helper()
	head, tail := `{"jsonrpc":"2.0","id":`+id+`,"method":"initialize","params":{"protocolVersion":1,"_meta":{"pad":"`, `"}}}`+"\n"
	if !idFirst {
		head, tail = `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1,"_meta":{"pad":"`, `"}},"id":`+id+`}`+"\n"
	}
	pad := size - len(head) - len(tail)
	require.Positive(t, pad)
	return head + strings.Repeat("a", pad) + tail
}

func TestServeAnswersAnOverlongLineAndGoesOn(t *testing.T) {
	toAgentW, responses, served := serveAgent(t)

	written := make(chan error, 1)
	go func() {
		var err error
		for _, line := range []string{
			initializeLine(t, "7", maxMessageLine+1, true),  // one byte too long: an error for id 7
			initializeLine(t, "8", maxMessageLine, true),    // exactly the limit: answered
			initializeLine(t, "9", 2*maxMessageLine, false), // too long, the id out of reach: an error for id null
			`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":1}}` + "\n",
		} {
			if _, err = io.WriteString(toAgentW, line); err != nil {
				break
			}
		}
		written <- err
	}()
	select {
	case err := <-written:
		require.NoError(t, err, "the agent read every line")
	case <-time.After(30 * time.Second):
		t.Fatal("the agent stopped reading its input")
	}

	got := map[string]rawResponse{}
	deadline := time.After(20 * time.Second)
	for len(got) < 4 {
		select {
		case r, ok := <-responses:
			require.True(t, ok, "the agent closed its output; got %v", got)
			got[string(r.ID)] = r
		case <-deadline:
			t.Fatalf("missing responses; got %v", got)
		}
	}
	for _, id := range []string{"7", "null"} {
		require.NotNil(t, got[id].Error, "id %s is refused", id)
		assert.Equal(t, -32600, got[id].Error.Code, "Invalid request")
		assert.Contains(t, got[id].Error.Message, "10485760")
	}
	for _, id := range []string{"8", "10"} {
		assert.Nil(t, got[id].Error, "id %s is answered", id)
		assert.NotEmpty(t, got[id].Result, "id %s is answered", id)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned on an overlong line: %v", err)
	default:
	}
	require.NoError(t, toAgentW.Close())
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return at EOF")
	}
	for range responses {
	}
}

func TestLeadingID(t *testing.T) {
	for _, tc := range []struct {
		head     string
		id       string
		response bool
	}{
		{`{"jsonrpc":"2.0","id":"abc","method":"session/prompt","params":{"prompt":[{"text":"xxxx`, `"abc"`, false},
		{`{"jsonrpc":"2.0","method":"session/prompt","params":{"prompt":[{"text":"xxxx`, ``, false},
		{`{"id":{"no":"objects"},"method":"x"}`, ``, false},
		{`{"jsonrpc":"2.0","id":3,"result":{"outcome":"xxxx`, `3`, true},
		{`[1,2`, ``, false},
		{`not json`, ``, false},
	} {
		id, response := leadingID([]byte(tc.head))
		assert.Equal(t, tc.id, string(id), tc.head)
		assert.Equal(t, tc.response, response, tc.head)
	}
}

// serveLines writes lines to a served agent's stdin and returns the first
// want lines it writes back, in order.
func serveLines(t *testing.T, lines []string, want int) []rawResponse {
	t.Helper()
	toAgentW, responses, served := serveAgent(t)
	go func() {
		for _, line := range lines {
			if _, err := io.WriteString(toAgentW, line); err != nil {
				return
			}
		}
	}()
	var got []rawResponse
	deadline := time.After(20 * time.Second)
	for len(got) < want {
		select {
		case r, ok := <-responses:
			require.True(t, ok, "the agent closed its output; got %v", got)
			got = append(got, r)
		case <-deadline:
			t.Fatalf("missing responses; got %+v", got)
		}
	}
	require.NoError(t, toAgentW.Close())
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return at EOF")
	}
	for r := range responses {
		t.Errorf("an answer too many: %+v", r)
	}
	return got
}

// A line that is not JSON gets -32700 Parse error with id null, a batch
// and JSON that is no object -32600 with id null, an object the SDK cannot
// decode -32600 with its id, a malformed response nothing; the agent goes
// on reading (the last request is answered).
func TestServeAnswersMalformedLines(t *testing.T) {
	got := serveLines(t, []string{
		"not json\n",
		`{"jsonrpc":"2.0","id":1,"method":"initialize"` + "\n",
		"\n",
		`[{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}]` + "\n",
		"42\n",
		`{"jsonrpc":"2.0","id":3,"method":7}` + "\n",
		`{"jsonrpc":"2.0","id":4,"error":"not an object"}` + "\n",
		`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":1}}` + "\n",
	}, 6)
	type answer struct {
		id   string
		code int
	}
	var answers []answer
	for _, r := range got {
		a := answer{id: string(r.ID)}
		if r.Error != nil {
			a.code = r.Error.Code
		}
		answers = append(answers, a)
	}
	assert.Equal(t, []answer{{"null", -32700}, {"null", -32700}, {"null", -32600}, {"null", -32600}, {"3", -32600}, {"10", 0}}, answers)
	assert.Equal(t, "Parse error", got[0].Error.Message)
	assert.NotEmpty(t, got[5].Result, "the request after them is answered")
}

// serveAgent serves an agent attached to nothing on pipes: what it is sent
// is written to toAgent, each JSON line it writes back arrives on
// responses, and served has Serve's result once it ends.
func serveAgent(t *testing.T) (toAgent *io.PipeWriter, responses <-chan rawResponse, served <-chan error) {
	t.Helper()
	host := actors.NewHost(fastHost())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, host.Shutdown(ctx))
	})
	agent, err := NewAgent(Options{Host: host, AttachPort: 1})
	require.NoError(t, err)
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- agent.Serve(context.Background(), toAgentR, toClientW)
		_ = toAgentR.Close()
		_ = toClientW.Close()
	}()
	out := make(chan rawResponse, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(toClientR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var r rawResponse
			if assert.NoError(t, json.Unmarshal(sc.Bytes(), &r), "the agent writes JSON: %q", sc.Text()) {
				out <- r
			}
		}
	}()
	return toAgentW, out, done
}
