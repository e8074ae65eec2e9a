package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// maxMessageLine bounds one JSON-RPC message on stdin, its newline
// included: the SDK reads lines with a scanner of that size, and ends the
// connection on a longer one.
const maxMessageLine = 10 << 20

// idReach is how much of an overlong line is searched for its id.
const idReach = 4 << 10

// lineLimiter passes the lines of r on unchanged while they fit in max
// bytes (the newline included). A longer line is read to its end and
// dropped, and onOverlong is called with its first bytes and its size:
// the SDK never sees it. At most one line of max bytes is held. A line
// that fits is handed to onLine first, when set: false drops it.
type lineLimiter struct {
	br         *bufio.Reader
	max        int
	onOverlong func(head []byte, size int64)
	onLine     func(line []byte) bool

	line []byte // the line being handed out
	off  int
	err  error // r's error, returned once the line before it is out
}

func newLineLimiter(r io.Reader, max int, onOverlong func(head []byte, size int64)) *lineLimiter {
	return &lineLimiter{br: bufio.NewReaderSize(r, 64<<10), max: max, onOverlong: onOverlong}
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	for l.off == len(l.line) {
		if l.err != nil {
			return 0, l.err
		}
		l.next()
	}
	n := copy(p, l.line[l.off:])
	l.off += n
	return n, nil
}

// next reads the next line that fits into l.line.
func (l *lineLimiter) next() {
	if cap(l.line) > 1<<20 {
		l.line = nil // one large prompt does not pin 10 MiB for good
	}
	l.line, l.off = l.line[:0], 0
	var head []byte // set once the line is too long
	var size int64
	for {
		frag, err := l.br.ReadSlice('\n')
		size += int64(len(frag))
		switch {
		case head != nil:
		case len(l.line)+len(frag) <= l.max:
			l.line = append(l.line, frag...)
		default:
			head = make([]byte, 0, idReach)
			head = append(head, l.line[:min(len(l.line), idReach)]...)
			head = append(head, frag[:min(len(frag), idReach-len(head))]...)
			l.line = l.line[:0]
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if head != nil {
			l.onOverlong(head, size)
		} else if l.onLine != nil && len(l.line) > 0 && !l.onLine(l.line) {
			l.line = l.line[:0]
		}
		l.err = err
		return
	}
}

// leadingID reads a JSON-RPC message's id from the start of its line,
// when it comes before anything too long to decode ("jsonrpc", "id",
// "method", then "params", as clients write them). It reports whether the
// message is a response (it has "result" or "error" and no "method"),
// which gets no answer.
func leadingID(head []byte) (id json.RawMessage, response bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var method, result bool
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			break
		}
		switch key {
		case "method":
			method = true
		case "result", "error":
			result = true
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		if t := bytes.TrimSpace(v); key == "id" && len(t) > 0 && (t[0] == '"' || t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
			id = v
		}
	}
	return id, result && !method
}

// overlongAnswer is the JSON-RPC error line that answers an overlong
// message.
func overlongAnswer(id json.RawMessage, size int64) []byte {
	e := sdk.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("message of %d bytes is over the limit of %d bytes a line", size, maxMessageLine)})
	e.Message = fmt.Sprintf("Invalid request: message longer than %d bytes", maxMessageLine)
	return errorAnswer(id, e)
}

// sdkMessage has the fields, with their types, that the SDK decodes every
// incoming line into (its anyMessage), but params and result, which any
// JSON fits: a line it does not decode, it drops unanswered.
type sdkMessage struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      *json.RawMessage  `json:"id,omitempty"`
	Method  string            `json:"method,omitempty"`
	Error   *sdk.RequestError `json:"error,omitempty"`
}

// malformed answers a line the SDK would drop unanswered, as JSON-RPC 2.0
// says: one that is not JSON gets -32700 Parse error, and JSON that is no
// message object (a batch, an array, is one) -32600 Invalid Request, both
// with id null, or the message's id when it has one. A malformed response
// gets no answer. It returns nil for a line the SDK takes (or skips: a
// blank one), and why it is refused.
func malformed(line []byte) (answer []byte, why string) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return nil, ""
	}
	var m sdkMessage
	err := json.Unmarshal(t, &m)
	if err == nil {
		return nil, ""
	}
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		why = fmt.Sprintf("the line is not JSON (%v)", err)
		return errorAnswer(nil, sdk.NewParseError(map[string]any{"error": why})), why
	case t[0] == '[':
		why = "a batch (a JSON array): this agent takes one JSON-RPC message a line, batches are not supported"
		return errorAnswer(nil, sdk.NewInvalidRequest(map[string]any{"error": why})), why
	case t[0] != '{':
		why = "a JSON-RPC message is a JSON object"
		return errorAnswer(nil, sdk.NewInvalidRequest(map[string]any{"error": why})), why
	}
	why = fmt.Sprintf("not a JSON-RPC message: %v", err)
	id, response := leadingID(t)
	if response {
		return nil, why
	}
	return errorAnswer(id, sdk.NewInvalidRequest(map[string]any{"error": why})), why
}

// errorAnswer is the JSON-RPC error line for id (nil: null).
func errorAnswer(id json.RawMessage, e *sdk.RequestError) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct { // plain data: cannot fail
		JSONRPC string            `json:"jsonrpc"`
		ID      json.RawMessage   `json:"id"`
		Error   *sdk.RequestError `json:"error"`
	}{"2.0", id, e})
	return append(b, '\n')
}

// lockedWriter serializes whole writes: the SDK writes each message in one
// Write, and the line limiter writes its answers between them.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// limitLines puts a line limiter in front of in that answers an overlong
// request on out (with its id when the line's start holds it, else null),
// and a line the SDK would drop unanswered (malformed), and logs them.
func limitLines(in io.Reader, out *lockedWriter, log *slog.Logger) io.Reader {
	l := newLineLimiter(in, maxMessageLine, func(head []byte, size int64) {
		id, response := leadingID(head)
		log.Warn("a JSON-RPC message over the line limit was dropped", "bytes", size, "limit", maxMessageLine, "id", string(id))
		if response {
			return
		}
		if _, err := out.Write(overlongAnswer(id, size)); err != nil {
			log.Warn("answering an overlong message", "err", err)
		}
	})
	l.onLine = func(line []byte) bool {
		answer, why := malformed(line)
		if why == "" {
			return true
		}
		log.Warn("a malformed JSON-RPC message was dropped", "why", why, "bytes", len(line))
		if answer != nil {
			if _, err := out.Write(answer); err != nil {
				log.Warn("answering a malformed message", "err", err)
			}
		}
		return false
	}
	return l
}
