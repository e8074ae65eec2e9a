// Package connectserver is the server half of the Connect framing that
// package rpc reads: envelopes, a stream's end, a unary error. It is for
// the fake language server (rpc/agytest) and rpc's tests; the client never
// writes a server's answer. Its envelope writer is its own, not the
// client's, so that a framing mistake on one side is not mirrored by the
// other.
package connectserver

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/agyharness/agyharness/rpc"
)

// WriteEnvelope writes one Connect envelope: [flags][uint32 BE len][payload].
func WriteEnvelope(w io.Writer, flags byte, payload []byte) error {
	if uint64(len(payload)) > math.MaxUint32 {
		return fmt.Errorf("%w: payload of %d bytes does not fit an envelope", rpc.ErrMessageTooLarge, len(payload))
	}
	var hdr [5]byte
	hdr[0] = flags
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if len(payload) == 0 {
		return nil
	}
	_, err := w.Write(payload)
	return err
}

// WriteEndStream writes the final envelope of a stream: {} when code is
// empty, else {"error":{"code","message"}}.
func WriteEndStream(w io.Writer, code rpc.Code, msg string) error {
	var end rpc.EndStream
	if code != "" {
		end.Error = &rpc.ErrorBody{Code: string(code), Message: msg}
	}
	payload, err := json.Marshal(end)
	if err != nil {
		return err
	}
	return WriteEnvelope(w, rpc.FlagEndStream, payload)
}

// WriteError writes a Connect unary error as connect-go does: the status
// mapped from code, Content-Type application/json, and
// {"code","message"}.
func WriteError(w http.ResponseWriter, code rpc.Code, msg string) {
	body, _ := json.Marshal(rpc.ErrorBody{Code: string(code), Message: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rpc.HTTPStatusFromCode(code))
	_, _ = w.Write(body)
}
