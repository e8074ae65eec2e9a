package agytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
)

// Connect protocol pieces of the server side, written as connect-go writes
// them (agy's language server is a connect-go server). The envelope codec
// and the error body come from the rpc package, so client and fake agree.

const (
	// maxFrame is the largest envelope a Connect peer reads by default.
	maxFrame = rpc.DefaultMaxMessageSize
	// maxUnaryBody bounds a request the fake reads.
	maxUnaryBody = 4 << 20
)

// connectError is a Connect error the fake answers with.
type connectError struct {
	code rpc.Code
	msg  string
}

func (e *connectError) Error() string { return string(e.code) + ": " + e.msg }

func errorf(code rpc.Code, format string, args ...any) *connectError {
	return &connectError{code: code, msg: sprintf(format, args...)}
}

// writeUnaryError writes a unary Connect error: the status connect-go maps
// the code to, and {"code","message"}.
func writeUnaryError(w http.ResponseWriter, e *connectError) {
	connectserver.WriteError(w, e.code, e.msg)
}

func writeUnaryJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeUnaryError(w, errorf(rpc.CodeInternal, "marshal response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writeEndStream writes the final 0x02 envelope: {} on success.
func writeEndStream(w io.Writer, e *connectError) {
	if e == nil {
		_ = connectserver.WriteEndStream(w, "", "")
		return
	}
	_ = connectserver.WriteEndStream(w, e.code, e.msg)
}

// readRequestEnvelope reads the single enveloped message of a server-stream
// request.
func readRequestEnvelope(r io.Reader) ([]byte, *connectError) {
	flags, payload, err := rpc.NewEnvelopeReader(r, maxUnaryBody).Next()
	switch {
	case errors.Is(err, rpc.ErrMessageTooLarge):
		return nil, errorf(rpc.CodeResourceExhausted, "request: %v", err)
	case err != nil:
		return nil, errorf(rpc.CodeInvalidArgument, "protocol error: request envelope: %v", err)
	case flags != 0:
		return nil, errorf(rpc.CodeInvalidArgument, "protocol error: unexpected envelope flags %#02x in request", flags)
	}
	return payload, nil
}

var errNoBody = errors.New("unexpected end of JSON input")

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
