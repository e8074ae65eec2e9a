package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// Sentinel errors. A *Error matches them with errors.Is; callers classify
// failures with these and never parse messages.
var (
	// ErrPortGone: nothing (or something else) answers on the port any more:
	// connection refused or reset, the connection dropped, EOF during the
	// handshake, or a changed certificate. The session should rediscover.
	ErrPortGone = errors.New("rpc: language server port gone")

	// ErrCertificateChanged: the port presented a certificate different from
	// the one this client first saw there, so another process may be
	// listening. It also matches ErrPortGone.
	ErrCertificateChanged error = &subError{msg: "rpc: certificate changed on port", parent: ErrPortGone}

	// ErrInputNotRegistered: agy's 500 "input not registered for step N",
	// which means either a missing trajectoryId or a WAITING step that has
	// already timed out; check the step's status before calling it a shape
	// error. (*Error).StepIndex returns N.
	ErrInputNotRegistered = errors.New("rpc: input not registered for step")

	// ErrTrajectoryNotFound: the server does not host that conversation.
	ErrTrajectoryNotFound = errors.New("rpc: trajectory not found")

	// ErrUnimplemented: the method does not exist on this agy build (404).
	ErrUnimplemented = errors.New("rpc: method not implemented")

	// ErrModelRequired: a turn was sent without a model ("neither PlanModel
	// nor RequestedModel specified").
	ErrModelRequired = errors.New("rpc: a model is required for the turn")

	// ErrDeprecated: the server refuses a deprecated method ("reactive state
	// is deprecated").
	ErrDeprecated = errors.New("rpc: method deprecated")

	// ErrNotLoopback: the configured host is not a loopback address.
	ErrNotLoopback = errors.New("rpc: host is not loopback")

	// ErrProtocol: the server's answer does not follow the Connect protocol
	// (bad framing, compressed envelope, undecodable JSON).
	ErrProtocol = errors.New("rpc: protocol error")

	// ErrMessageTooLarge: a stream envelope is larger than
	// Config.MaxMessageSize.
	ErrMessageTooLarge = errors.New("rpc: message too large")

	// ErrFrameSkipped: a stream's data envelope was larger than
	// Config.MaxMessageSize and was read through without being kept; the
	// stream goes on (Stream.Next). It also matches ErrMessageTooLarge.
	ErrFrameSkipped error = &subError{msg: "rpc: stream frame over the limit skipped", parent: ErrMessageTooLarge}
)

// subError is a sentinel that also matches a broader sentinel.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string        { return e.msg }
func (e *subError) Is(target error) bool { return target == e.parent }

// Error is every failure the client returns: a Connect error from the server
// (HTTPStatus set for unary calls, 0 for an end-stream error), or a local or
// transport failure (Err set, HTTPStatus 0).
type Error struct {
	// Method is the RPC that failed.
	Method string
	// HTTPStatus is the response status, or 0 when no response was read or
	// the error came in a stream's end-stream envelope.
	HTTPStatus int
	// Code is the Connect code: the server's, inferred from HTTPStatus when
	// the body is not Connect JSON, or chosen locally for transport failures.
	Code Code
	// Message is the server's message, or a description of the local failure.
	Message string
	// Details are the Connect error details, undecoded.
	Details []json.RawMessage
	// Err is the underlying cause for local and transport failures.
	Err error
}

// Error renders "rpc Method: code (HTTP n): message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("rpc")
	if e.Method != "" {
		b.WriteString(" ")
		b.WriteString(e.Method)
	}
	b.WriteString(": ")
	b.WriteString(string(e.Code))
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Server messages that identify an error class. agy reports these with
// generic codes, so the message is the only discriminator; matching it here,
// once, keeps string parsing out of every caller.
const (
	msgInputNotRegistered = "input not registered for step"
	msgTrajectoryNotFound = "trajectory not found"
	msgModelRequired      = "neither planmodel nor requestedmodel specified"
	msgDeprecated         = "reactive state is deprecated"
)

// Is matches the message- and code-defined sentinels; the transport ones
// (ErrPortGone, ErrProtocol, ...) are found through Unwrap.
func (e *Error) Is(target error) bool {
	msg := strings.ToLower(e.Message)
	switch target {
	case ErrUnimplemented:
		return e.Code == CodeUnimplemented
	case ErrInputNotRegistered:
		return strings.Contains(msg, msgInputNotRegistered)
	case ErrTrajectoryNotFound:
		return strings.Contains(msg, msgTrajectoryNotFound)
	case ErrModelRequired:
		return strings.Contains(msg, msgModelRequired)
	case ErrDeprecated:
		return strings.Contains(msg, msgDeprecated)
	}
	return false
}

var stepIndexPattern = regexp.MustCompile(`(?i)input not registered for step (\d+)`)

// StepIndex returns N of "input not registered for step N".
func (e *Error) StepIndex() (int, bool) {
	m := stepIndexPattern.FindStringSubmatch(e.Message)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false
	}
	return n, true
}

// IsTransient reports whether retrying the same call on the same port may
// succeed: 5xx answers other than the classified ones, 429, timeouts and
// deadlines, and unavailable. A gone port (rediscover instead), a
// cancellation, and shape errors (bad request, protocol, unimplemented,
// model required, input not registered, ...) are not transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	for _, permanent := range []error{
		ErrPortGone, ErrProtocol, ErrMessageTooLarge, ErrNotLoopback, ErrInputNotRegistered,
		ErrTrajectoryNotFound, ErrUnimplemented, ErrModelRequired, ErrDeprecated,
	} {
		if errors.Is(err, permanent) {
			return false
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case CodeUnavailable, CodeDeadlineExceeded, CodeResourceExhausted:
		return true
	case CodeCanceled:
		return false
	}
	status := e.HTTPStatus
	if status == 0 && e.Err == nil {
		// An end-stream error has no status of its own.
		status = HTTPStatusFromCode(e.Code)
	}
	return status == http.StatusTooManyRequests || (status >= 500 && status != http.StatusNotImplemented)
}

// invalidArgument is a request refused before it was sent.
func invalidArgument(method, format string, args ...any) *Error {
	return &Error{Method: method, Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// errorFromStatus builds the error of a non-200 answer. body is what was
// read of it; a Connect JSON body gives the code and message, otherwise the
// code comes from the status.
func errorFromStatus(method string, status int, body []byte) *Error {
	e := &Error{Method: method, HTTPStatus: status, Code: CodeFromHTTPStatus(status)}
	var answer struct {
		ErrorBody
		// Some agy answers wrap the error like an end-stream message.
		Error *ErrorBody `json:"error"`
	}
	if json.Unmarshal(body, &answer) == nil {
		eb := answer.ErrorBody
		if answer.Error != nil && eb.Code == "" && eb.Message == "" {
			eb = *answer.Error
		}
		if c := Code(eb.Code); c.Valid() {
			e.Code = c
		}
		e.Message = eb.Message
		e.Details = eb.Details
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > maxErrorText {
			e.Message = e.Message[:maxErrorText] + "..."
		}
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// maxErrorText bounds how much of a non-Connect error body goes into Message.
const maxErrorText = 512

// errorFromEndStream builds the error of an end-stream envelope's "error".
func errorFromEndStream(method string, eb *ErrorBody) *Error {
	c := Code(eb.Code)
	if !c.Valid() {
		c = CodeUnknown
	}
	return &Error{Method: method, Code: c, Message: eb.Message, Details: eb.Details}
}

// transportError classifies a failure to exchange a request or read a body.
func transportError(ctx context.Context, method string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	// The context decides first: a cancelled call fails with whatever error
	// the transport happened to see, which says nothing about the port.
	ctxErr := ctx.Err()
	switch {
	case errors.Is(ctxErr, context.Canceled), ctxErr == nil && errors.Is(err, context.Canceled):
		return &Error{Method: method, Code: CodeCanceled, Err: context.Canceled}
	case ctxErr != nil, errors.Is(err, context.DeadlineExceeded):
		return &Error{Method: method, Code: CodeDeadlineExceeded, Err: context.DeadlineExceeded}
	case errors.Is(err, ErrProtocol):
		return &Error{Method: method, Code: CodeInternal, Err: err}
	case errors.Is(err, ErrMessageTooLarge):
		return &Error{Method: method, Code: CodeResourceExhausted, Err: err}
	case errors.Is(err, ErrPortGone):
		return &Error{Method: method, Code: CodeUnavailable, Err: err}
	case portGone(err):
		return &Error{Method: method, Code: CodeUnavailable, Err: fmt.Errorf("%w: %w", ErrPortGone, err)}
	}
	return &Error{Method: method, Code: CodeUnavailable, Err: err}
}

// portGone recognises a dead listener or a dropped connection. On loopback a
// reset or an EOF means the process went away, not a flaky network.
func portGone(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// ErrorClass names the class of an RPC error, for metrics: "port_gone",
// "input_not_registered", "trajectory_not_found", "unimplemented",
// "model_required", "deprecated", "protocol", "too_large", "transient",
// "canceled", or "other" ("" for nil).
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrPortGone):
		return "port_gone"
	case errors.Is(err, ErrInputNotRegistered):
		return "input_not_registered"
	case errors.Is(err, ErrTrajectoryNotFound):
		return "trajectory_not_found"
	case errors.Is(err, ErrUnimplemented):
		return "unimplemented"
	case errors.Is(err, ErrModelRequired):
		return "model_required"
	case errors.Is(err, ErrDeprecated):
		return "deprecated"
	case errors.Is(err, ErrMessageTooLarge):
		return "too_large"
	case errors.Is(err, ErrProtocol):
		return "protocol"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case IsTransient(err):
		return "transient"
	}
	return "other"
}

// NotDelivered reports whether a failed call certainly never reached the
// server — the connection was refused, the certificate on the port changed,
// or writing the request failed (a connection the server had already
// closed) — so that sending it again cannot do it twice. A failure while
// reading the answer is not proof: the server may have acted on the call.
func NotDelivered(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "write") {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, ErrCertificateChanged)
}
