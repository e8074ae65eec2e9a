package hostcluster

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
)

// Codes of an Error: stable words a client can act on.
const (
	CodeNodeLost   = "node_lost"   // the session's node left the cluster or cannot be reached
	CodeNoNode     = "no_node"     // no node of that name is a member
	CodeNotFound   = "not_found"   // no such session (or elicitation)
	CodeConflict   = "conflict"    // the session exists
	CodeVersion    = "version"     // the nodes speak different protocol versions
	CodeBadRequest = "bad_request" // the request does not fit
	CodeTimeout    = "timeout"     // the owner did not answer in time
	CodeFailed     = "failed"      // the owner tried and failed
)

// Error is a refusal that crossed nodes, or a node that could not be asked:
// Status is the HTTP status the owning node's API answers for it (503 for a
// lost node), so any node answers a request as the owner would.
type Error struct {
	Status  int
	Code    string
	Message string // the HTTP API's error text, without the package's prefix
}

func (e *Error) Error() string { return "hostcluster: " + e.Message }

// HTTPStatus is the status an HTTP API answers with.
func (e *Error) HTTPStatus() int { return e.Status }

// ErrNodeLost matches (errors.Is) every Error of code node_lost.
var ErrNodeLost = &Error{Status: http.StatusServiceUnavailable, Code: CodeNodeLost, Message: "node lost"}

// Is makes errors.Is(err, ErrNodeLost) match any node_lost Error.
func (e *Error) Is(target error) bool {
	return target == ErrNodeLost && e.Code == CodeNodeLost
}

func nodeLost(node, why string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeNodeLost, Message: fmt.Sprintf("node_lost: node %q %s", node, why)}
}

// failure is err as it crosses nodes.
func failure(err error) *clusterpb.Failure {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return &clusterpb.Failure{Status: int32(e.Status), Code: e.Code, Message: e.Message}
	}
	return &clusterpb.Failure{Status: http.StatusBadGateway, Code: CodeFailed, Message: err.Error()}
}

// fromFailure is the error a Failure stands for (nil for none).
func fromFailure(f *clusterpb.Failure) error {
	if f == nil {
		return nil
	}
	status := int(f.Status)
	if status < 400 || status > 599 {
		status = http.StatusBadGateway
	}
	return &Error{Status: status, Code: f.Code, Message: f.Message}
}

func versionFailure(got uint32) *clusterpb.Failure {
	return &clusterpb.Failure{Status: http.StatusNotImplemented, Code: CodeVersion,
		Message: fmt.Sprintf("cluster protocol version %d: this node speaks %d", got, ProtocolVersion)}
}
