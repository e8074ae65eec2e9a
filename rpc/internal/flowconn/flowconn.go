// Package flowconn saves x/net's HTTP/2 transport write syscalls: a Conn,
// between the transport and its TLS connection, batches the WINDOW_UPDATE
// frames the transport writes, and writes a request's HEADERS and its body
// together.
//
// Why: x/net returns flow-control credit every 4 KiB the caller reads (its
// inflowMinRefresh is a constant), so a stream of ~4 KiB frames costs one
// TLS record and one write syscall per frame for the update alone
// (BenchmarkStreamTransport in package rpc, with and without); and it
// flushes a request's HEADERS before writing its body, two records and two
// syscalls for every call, most of what an idle session costs (agyharness
// bench --idle-sessions 1000, idle CPU per session, with and without;
// docs/PERFORMANCE.md).
//
// It relies on three things x/net does, which TestXNetWritesAsFlowconnExpects
// checks against the x/net in go.mod: its receive windows are far larger
// than Batch, it writes an update every few KiB read, and it writes a
// request's body right after its HEADERS.
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
//
// When what the transport wrote ends with the HEADERS of a request whose
// body is to come, Conn holds them and writes them in front of the next
// bytes, the body's, which the transport writes at once on the same
// goroutine; if none come within HeldHeadersDelay, a timer writes them
// alone.
type Conn struct {
	*tls.Conn
	closeNet func() error // the socket under the TLS connection
	timer    *time.Timer  // writes held HEADERS that waited HeldHeadersDelay

	mu   sync.Mutex
	f    filter
	out  []byte // the bytes to write, kept for the next Write; while held, a request's HEADERS
	held bool
	err  error // of writing held bytes on the timer, for the next Write
}

// HeldHeadersDelay is how long a Conn holds a request's HEADERS for its
// body: it bounds what a body that never comes (or a writer descheduled in
// between) costs the request.
const HeldHeadersDelay = time.Millisecond

// New wraps c, the transport's TLS connection.
func New(c *tls.Conn) *Conn {
	w := &Conn{Conn: c, closeNet: c.NetConn().Close}
	w.f.init()
	w.timer = time.AfterFunc(time.Hour, w.writeHeld)
	w.timer.Stop()
	return w
}

// Write passes p through to the connection without its WINDOW_UPDATE
// frames, writing held updates back where allowed, and holding a request's
// HEADERS for its body. It reports len(p) when the bytes it had to write
// were written or are held.
func (w *Conn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	out := w.f.filter(w.out, p) // after the held HEADERS, if any
	if w.f.bodyNext() {
		w.out, w.held = out, true
		w.timer.Reset(HeldHeadersDelay)
		return len(p), nil
	}
	if w.held {
		w.timer.Stop()
		w.held = false
	}
	w.out = out[:0]
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := w.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeHeld writes HEADERS held for a body that did not come in time.
func (w *Conn) writeHeld() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.held || w.err != nil {
		return
	}
	w.held = false
	out := w.out
	w.out = out[:0]
	if _, err := w.Conn.Write(out); err != nil {
		w.err = err
	}
}

// Close closes the TLS connection, and the socket under it if that takes
// more than 250ms (a peer that does not read blocks the close_notify
// alert), as the transport does itself for a bare *tls.Conn.
func (w *Conn) Close() error {
	w.timer.Stop() // held HEADERS, if any, belong to a request closed with the connection
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

	lastType  byte // type and flags of the last frame passed through
	lastFlags byte
}

const (
	frameHeaderLen = 9
	windowUpdate   = byte(http2.FrameWindowUpdate)
	headers        = byte(http2.FrameHeaders)
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
			w.lastType, w.lastFlags = h[3], h[4]
		}
	}
	// Credit that reached Batch goes out now. (Inside a frame passed
	// through, nothing is held: it all went out in front of the frame.)
	return w.release(out, Batch)
}

// bodyNext says whether what was filtered so far ends with the whole
// HEADERS of a request whose body is to come (END_HEADERS without
// END_STREAM; held WINDOW_UPDATEs after it do not count).
func (w *filter) bodyNext() bool {
	return w.preface == 0 && w.rest == 0 && !w.update && len(w.head) == 0 &&
		w.lastType == headers &&
		http2.Flags(w.lastFlags)&(http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream) == http2.FlagHeadersEndHeaders
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
