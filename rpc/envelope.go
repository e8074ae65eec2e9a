package rpc

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
)

// Envelope flags of the Connect streaming protocol. A data envelope has
// flags 0.
const (
	// FlagCompressed marks a compressed payload. This client never
	// negotiates compression, so receiving it is a protocol error.
	FlagCompressed byte = 0x01
	// FlagEndStream marks the final envelope, whose JSON is
	// {"error":{...},"metadata":{...}} or {}.
	FlagEndStream byte = 0x02
)

// envelopeHeaderLen is the flag byte plus the big-endian uint32 length.
const envelopeHeaderLen = 5

// DefaultMaxMessageSize bounds one stream envelope unless
// Config.MaxMessageSize says otherwise.
const DefaultMaxMessageSize = 16 << 20

// writeEnvelope writes one Connect envelope: [flags][uint32 BE len][payload]
// (the client's stream request; the server half is rpc/internal/connectserver).
func writeEnvelope(w io.Writer, flags byte, payload []byte) error {
	if uint64(len(payload)) > math.MaxUint32 {
		return fmt.Errorf("%w: payload of %d bytes does not fit an envelope", ErrMessageTooLarge, len(payload))
	}
	var hdr [envelopeHeaderLen]byte
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

// EnvelopeReader decodes Connect envelopes from a byte stream one at a
// time, never reading ahead of the envelope it returns.
type EnvelopeReader struct {
	r   io.Reader
	max int
	// skip is the payload of an envelope refused as too large, still to
	// be read through before the next envelope.
	skip int64
}

// NewEnvelopeReader reads envelopes from r, refusing any payload longer than
// max bytes (DefaultMaxMessageSize when max <= 0).
func NewEnvelopeReader(r io.Reader, max int) *EnvelopeReader {
	if max <= 0 {
		max = DefaultMaxMessageSize
	}
	return &EnvelopeReader{r: r, max: max}
}

// Next returns the next envelope's flags and payload. At a clean end of
// input (between envelopes) it returns io.EOF. It fails with ErrProtocol for
// a compressed envelope or unknown flag bits, with ErrMessageTooLarge (before
// allocating) for an oversized one (the next call reads its payload
// through, unkept, and goes on with the envelope after it), and with an error wrapping both
// ErrProtocol and io.ErrUnexpectedEOF when the input ends inside an
// envelope. Read errors of the underlying reader are returned unchanged.
func (er *EnvelopeReader) Next() (flags byte, payload []byte, err error) {
	return er.NextInto(nil)
}

// NextInto is Next reading the payload into buf when it fits (cap(buf) is
// at least the payload's size). When it does not, a payload of up to 32 KiB
// goes into a new buffer with room to grow (its size rounded up to a power
// of two: agy's frames grow a little at a time, and the buffer is meant to
// be passed again), a larger one into a new buffer as Next does. A nil buf
// is Next.
func (er *EnvelopeReader) NextInto(buf []byte) (flags byte, payload []byte, err error) {
	if er.skip > 0 {
		n, err := io.CopyN(io.Discard, er.r, er.skip)
		er.skip -= n
		switch {
		case err == io.EOF:
			return 0, nil, fmt.Errorf("%w: truncated envelope (skipping one over the limit): %w", ErrProtocol, io.ErrUnexpectedEOF)
		case err != nil:
			return 0, nil, err
		}
	}
	var hdr [envelopeHeaderLen]byte
	n, err := readFull(er.r, hdr[:])
	switch {
	case err == io.EOF && n == 0:
		return 0, nil, io.EOF
	case err == io.EOF:
		return 0, nil, fmt.Errorf("%w: truncated envelope header (%d of %d bytes): %w", ErrProtocol, n, envelopeHeaderLen, io.ErrUnexpectedEOF)
	case err != nil:
		return 0, nil, err
	}
	flags = hdr[0]
	if flags&FlagCompressed != 0 {
		return flags, nil, fmt.Errorf("%w: compressed envelope (flags %#02x) but no compression was negotiated", ErrProtocol, flags)
	}
	if flags&^FlagEndStream != 0 {
		return flags, nil, fmt.Errorf("%w: unknown envelope flags %#02x", ErrProtocol, flags)
	}
	size := binary.BigEndian.Uint32(hdr[1:])
	if uint64(size) > uint64(er.max) {
		er.skip = int64(size)
		return flags, nil, fmt.Errorf("%w: envelope of %d bytes exceeds the limit of %d", ErrMessageTooLarge, size, er.max)
	}
	if buf != nil && int(size) > cap(buf) && size <= payloadChunk {
		buf = make([]byte, 0, 1<<bits.Len32(size-1))
	}
	if int(size) <= cap(buf) {
		payload = buf[:size]
		var n int
		n, err = readFull(er.r, payload)
		payload = payload[:n]
	} else {
		payload, err = readPayload(er.r, int(size))
	}
	switch {
	case err == io.EOF:
		return flags, nil, fmt.Errorf("%w: truncated envelope (%d of %d bytes): %w", ErrProtocol, len(payload), size, io.ErrUnexpectedEOF)
	case err != nil:
		return flags, nil, err
	}
	return flags, payload, nil
}

// payloadChunk is the first allocation for a payload; larger ones grow by
// doubling as bytes arrive, so a header that promises megabytes and then
// stops costs only what was actually sent.
const payloadChunk = 32 << 10

// readPayload reads exactly size bytes, returning what it got and the
// reader's error (io.EOF when the input ended early).
func readPayload(r io.Reader, size int) ([]byte, error) {
	buf := make([]byte, 0, min(size, payloadChunk))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(size-len(buf), len(buf)))
		}
		// slices.Grow may round the capacity past size: never read beyond it.
		n, err := readFull(r, buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+n]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// readFull is io.ReadFull except that it reports the reader's own error:
// io.EOF means the input ended (after n bytes), anything else is a read
// failure such as a dropped connection, which the caller classifies apart.
func readFull(r io.Reader, buf []byte) (int, error) {
	n, empty := 0, 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if n == len(buf) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if m > 0 {
			empty = 0
		} else if empty++; empty >= 100 {
			// A reader that never progresses must not spin us forever.
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}
