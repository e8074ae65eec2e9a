// Package flowconn batches the WINDOW_UPDATE frames of x/net's HTTP/2
// transport: a Conn, between the transport and its TLS connection, takes
// them out of what the transport writes and writes the credit back merged.
//
// Why: x/net returns flow-control credit every 4 KiB the caller reads (its
// inflowMinRefresh is a constant), so a stream of ~4 KiB frames costs one
// TLS record and one write syscall per frame for the update alone
// (BenchmarkStreamTransport in package rpc, with and without;
// docs/PERFORMANCE.md).
//
// It relies on two things x/net does, which TestXNetWritesAsFlowconnExpects
// checks against the x/net in go.mod: its receive windows are far larger
// than Batch, and it writes an update every few KiB read.
package flowconn

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// Batch is how much flow-control credit (per stream, and for the
// connection) a Conn holds back before it writes a WINDOW_UPDATE on its own.
// It must stay well under the receive windows the transport announces
// (x/net: 4 MiB per stream, 1 GiB for the connection), so that the server
// always has credit left while an update is held.
const Batch = 512 << 10

// Conn is the TLS connection as the HTTP/2 transport sees it. It follows the
// frame boundaries of what the transport writes and takes the WINDOW_UPDATE
// frames out, adding their increments up per stream. It writes them back,
// merged, in front of the next other frame the transport writes (a request,
// a ping's answer, a reset), or on their own once one stream's (or the
// connection's) held credit reaches Batch. Credit is cumulative and may come
// late, so the server sees the same total, sooner or later, and is never
// short of window: it always has at least its window minus Batch.
type Conn struct {
	*tls.Conn
	closeNet func() error // the socket under the TLS connection

	mu  sync.Mutex
	f   filter
	out []byte // the bytes to write, kept for the next Write
}

// New wraps c, the transport's TLS connection.
func New(c *tls.Conn) *Conn {
	w := &Conn{Conn: c, closeNet: c.NetConn().Close}
	w.f.init()
	return w
}

// Write passes p through to the connection without its WINDOW_UPDATE
// frames, writing held updates back where allowed. It reports len(p) when
// the bytes it had to write were written.
func (w *Conn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.f.filter(w.out[:0], p)
	w.out = out[:0]
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := w.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close closes the TLS connection, and the socket under it if that takes
// more than 250ms (a peer that does not read blocks the close_notify
// alert), as the transport does itself for a bare *tls.Conn.
func (w *Conn) Close() error {
	t := time.AfterFunc(250*time.Millisecond, func() { _ = w.closeNet() })
	defer t.Stop()
	return w.Conn.Close()
}

var _ net.Conn = (*Conn)(nil)

// filter is a Conn's bookkeeping: the transport's bytes in, the bytes to
// write out.
type filter struct {
	preface int               // bytes of the client preface still to pass through
	head    []byte            // a frame header being gathered (split across writes)
	rest    int               // payload bytes of the current frame still to come
	update  bool              // the current frame is a WINDOW_UPDATE being taken out
	stream  uint32            // its stream
	incr    []byte            // its payload gathered so far
	held    map[uint32]uint32 // credit held back, by stream (0: the connection)
	headBuf [frameHeaderLen]byte
	incrBuf [4]byte
}

const (
	frameHeaderLen = 9
	windowUpdate   = byte(http2.FrameWindowUpdate)
)

func (w *filter) init() {
	w.preface = len(http2.ClientPreface)
	w.head = w.headBuf[:0]
	w.incr = w.incrBuf[:0]
}

// filter appends to out what of p goes to the connection: p's bytes in
// order without its WINDOW_UPDATE frames, and held updates merged, in front
// of the next other frame or once they reach Batch, never inside a frame.
func (w *filter) filter(out, p []byte) []byte {
	for q := p; len(q) > 0; {
		switch {
		case w.preface > 0:
			n := min(w.preface, len(q))
			out = append(out, q[:n]...)
			w.preface -= n
			q = q[n:]
		case w.rest > 0:
			n := min(w.rest, len(q))
			if w.update {
				w.incr = append(w.incr, q[:n]...)
			} else {
				out = append(out, q[:n]...)
			}
			w.rest -= n
			q = q[n:]
			if w.rest == 0 && w.update {
				w.hold(w.stream, binary.BigEndian.Uint32(w.incr)&(1<<31-1))
				w.update = false
			}
		default: // a frame header begins or goes on
			n := min(frameHeaderLen-len(w.head), len(q))
			w.head = append(w.head, q[:n]...)
			q = q[n:]
			if len(w.head) < frameHeaderLen {
				continue
			}
			h := w.head
			w.head = w.head[:0]
			length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
			if h[3] == windowUpdate && length == 4 {
				w.update = true
				w.stream = binary.BigEndian.Uint32(h[5:]) & (1<<31 - 1)
				w.incr = w.incr[:0]
				w.rest = 4
				continue
			}
			// Held credit goes out in front of any other frame.
			out = w.release(out, 0)
			out = append(out, h...)
			w.rest = length
		}
	}
	// Credit that reached Batch goes out now. (Inside a frame passed
	// through, nothing is held: it all went out in front of the frame.)
	return w.release(out, Batch)
}

// hold adds n to the credit held for stream (0: the connection).
func (w *filter) hold(stream, n uint32) {
	if n == 0 {
		return
	}
	if w.held == nil {
		w.held = make(map[uint32]uint32)
	}
	// Credit never exceeds 2^31-1 in all (RFC 9113 §6.9.1), so the sum fits.
	w.held[stream] += n
}

// release appends a WINDOW_UPDATE for every stream holding at least min
// bytes of credit, and forgets them.
func (w *filter) release(out []byte, min uint32) []byte {
	for stream, n := range w.held {
		if n < min {
			continue
		}
		var f [frameHeaderLen + 4]byte
		f[2] = 4
		f[3] = windowUpdate
		binary.BigEndian.PutUint32(f[5:], stream)
		binary.BigEndian.PutUint32(f[9:], n)
		out = append(out, f[:]...)
		delete(w.held, stream)
	}
	return out
}
