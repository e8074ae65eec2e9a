package rpc

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// windowBatch is how much flow-control credit (per stream, and for the
// connection) windowConn holds back before it writes a WINDOW_UPDATE on its
// own. It must stay well under the receive windows the transport announces
// (x/net: 4 MiB per stream, 1 GiB for the connection), so that the server
// always has credit left while an update is held.
const windowBatch = 512 << 10

// windowConn is the TLS connection as the HTTP/2 transport sees it, batching
// the transport's WINDOW_UPDATE frames.
//
// x/net's transport returns credit to the server every 4 KiB the caller
// reads (its inflowMinRefresh is a constant), so a stream of ~4 KiB frames
// costs one TLS record and one write syscall per frame for the update alone:
// on a host streaming thousands of frames a second, a tenth of the harness's
// CPU (docs/PERFORMANCE.md, change 8). windowConn follows the frame boundaries of what
// the transport writes and takes the WINDOW_UPDATE frames out, adding their
// increments up per stream. It writes them back, merged, in front of the next
// other frame the transport writes (a request, a ping's answer, a reset), or
// on their own once one stream's (or the connection's) held credit reaches
// windowBatch. Credit is cumulative and may come late, so the server sees the
// same total, sooner or later, and is never short of window: it always has
// at least its window minus windowBatch.
//
// It also writes a request in one piece. The transport flushes a request's
// HEADERS on their own, then writes its body: two TLS records and two write
// syscalls for every call, which is most of what an idle session costs
// (docs/PERFORMANCE.md, change 23). When what the transport wrote ends with
// the HEADERS of a request whose body is to come, windowConn holds them and
// writes them in front of the next bytes, the body's; if no bytes come
// within heldHeadersDelay, a timer writes them alone.
type windowConn struct {
	*tls.Conn
	closeNet func() error // the socket under the TLS connection
	timer    *time.Timer  // writes held HEADERS that waited heldHeadersDelay

	mu   sync.Mutex
	f    windowFilter
	out  []byte // the bytes to write; while held, a request's HEADERS
	held bool
	err  error // of writing held bytes on the timer, for the next Write
}

// heldHeadersDelay is how long windowConn holds a request's HEADERS for its
// body: the transport writes the body right after them, on the same
// goroutine, so the delay only bounds what a body that never comes (or a
// writer descheduled in between) costs.
const heldHeadersDelay = time.Millisecond

// windowFilter is windowConn's bookkeeping: the transport's bytes in, the
// bytes to write out.
type windowFilter struct {
	preface int               // bytes of the client preface still to pass through
	head    []byte            // a frame header being gathered (split across writes)
	rest    int               // payload bytes of the current frame still to come
	update  bool              // the current frame is a WINDOW_UPDATE being taken out
	stream  uint32            // its stream
	incr    []byte            // its payload gathered so far
	held    map[uint32]uint32 // credit held back, by stream (0: the connection)
	headBuf [http2FrameHeaderLen]byte
	incrBuf [4]byte

	lastType  byte // type and flags of the last frame passed through
	lastFlags byte
}

const (
	http2FrameHeaderLen = 9
	http2WindowUpdate   = byte(http2.FrameWindowUpdate)
	http2Headers        = byte(http2.FrameHeaders)
)

func newWindowConn(c *tls.Conn) *windowConn {
	w := &windowConn{Conn: c, closeNet: c.NetConn().Close}
	w.f.init()
	w.timer = time.AfterFunc(time.Hour, w.writeHeld)
	w.timer.Stop()
	return w
}

// Write passes p through to the connection without its WINDOW_UPDATE frames,
// writing held updates back where allowed, and holding a request's HEADERS
// for its body (see windowConn). It reports len(p) when the bytes it had to
// write were written or are held.
func (w *windowConn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	out := w.f.filter(w.out, p) // after the held HEADERS, if any
	if w.f.bodyNext() {
		w.out, w.held = out, true
		w.timer.Reset(heldHeadersDelay)
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
func (w *windowConn) writeHeld() {
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

func (w *windowFilter) init() {
	w.preface = len(http2.ClientPreface)
	w.head = w.headBuf[:0]
	w.incr = w.incrBuf[:0]
}

// filter appends to out what of p goes to the connection: p's bytes in
// order without its WINDOW_UPDATE frames, and held updates merged, in front
// of the next other frame or once they reach windowBatch, never inside a
// frame.
func (w *windowFilter) filter(out, p []byte) []byte {
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
			n := min(http2FrameHeaderLen-len(w.head), len(q))
			w.head = append(w.head, q[:n]...)
			q = q[n:]
			if len(w.head) < http2FrameHeaderLen {
				continue
			}
			h := w.head
			w.head = w.head[:0]
			length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
			if h[3] == http2WindowUpdate && length == 4 {
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
	// Credit that reached windowBatch goes out now. (Inside a frame passed
	// through, nothing is held: it all went out in front of the frame.)
	return w.release(out, windowBatch)
}

// bodyNext says whether what was filtered so far ends with the whole
// HEADERS of a request whose body is to come (END_HEADERS without
// END_STREAM; held WINDOW_UPDATEs after it do not count).
func (w *windowFilter) bodyNext() bool {
	return w.preface == 0 && w.rest == 0 && !w.update && len(w.head) == 0 &&
		w.lastType == http2Headers &&
		http2.Flags(w.lastFlags)&(http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream) == http2.FlagHeadersEndHeaders
}

// hold adds n to the credit held for stream (0: the connection).
func (w *windowFilter) hold(stream, n uint32) {
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
func (w *windowFilter) release(out []byte, min uint32) []byte {
	for stream, n := range w.held {
		if n < min {
			continue
		}
		var f [http2FrameHeaderLen + 4]byte
		f[2] = 4
		f[3] = http2WindowUpdate
		binary.BigEndian.PutUint32(f[5:], stream)
		binary.BigEndian.PutUint32(f[9:], n)
		out = append(out, f[:]...)
		delete(w.held, stream)
	}
	return out
}

// Close closes the TLS connection, and the socket under it if that takes
// more than 250ms (a peer that does not read blocks the close_notify
// alert), as the transport does itself for a bare *tls.Conn.
func (w *windowConn) Close() error {
	w.timer.Stop() // held HEADERS, if any, belong to a request closed with the connection
	t := time.AfterFunc(250*time.Millisecond, func() { _ = w.closeNet() })
	defer t.Stop()
	return w.Conn.Close()
}

var _ net.Conn = (*windowConn)(nil)
