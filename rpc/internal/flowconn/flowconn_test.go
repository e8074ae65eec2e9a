//lint:file-ignore SA1019 x/net/http2's Transport is the HTTP/2 client this project chose (docs/DECISIONS.md): it runs h2 on a conn we dial and wrap, which net/http's HTTP2 config does not offer.

package flowconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"pgregory.net/rapid"
)

// frameOut is one frame of a filter's output, as read back.
type frameOut struct {
	typ    http2.FrameType
	stream uint32
	raw    []byte // header and payload
}

// parseFrames splits b (after the client preface) into frames, failing the
// test on a frame cut short.
func parseFrames(t require.TestingT, b []byte) []frameOut {
	require.True(t, bytes.HasPrefix(b, []byte(http2.ClientPreface)), "the output starts with the client preface")
	b = b[len(http2.ClientPreface):]
	var out []frameOut
	for len(b) > 0 {
		require.GreaterOrEqual(t, len(b), frameHeaderLen, "a frame header cut short")
		length := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		require.GreaterOrEqual(t, len(b), frameHeaderLen+length, "a frame cut short")
		out = append(out, frameOut{
			typ:    http2.FrameType(b[3]),
			stream: binary.BigEndian.Uint32(b[5:]) & (1<<31 - 1),
			raw:    b[:frameHeaderLen+length],
		})
		b = b[frameHeaderLen+length:]
	}
	return out
}

// credit sums the WINDOW_UPDATE increments of frames by stream, and returns
// the other frames.
func credit(frames []frameOut) (map[uint32]uint64, [][]byte) {
	sums := map[uint32]uint64{}
	var other [][]byte
	for _, f := range frames {
		if f.typ == http2.FrameWindowUpdate {
			sums[f.stream] += uint64(binary.BigEndian.Uint32(f.raw[frameHeaderLen:]) & (1<<31 - 1))
			continue
		}
		other = append(other, f.raw)
	}
	return sums, other
}

// TestFilterKeepsFramesAndCredit: whatever the transport writes and
// however its writes are cut, every other frame comes out whole and in
// order, no update lands inside a frame, the credit held back per stream is
// under Batch whenever a write ends between frames, and the next other
// frame carries all of it: the server gets every byte of credit.
func TestFilterKeepsFramesAndCredit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var in bytes.Buffer
		in.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&in, nil)
		require.NoError(t, fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 4 << 20}))
		streams := []uint32{0, 1, 3, 5}
		// Small increments, as the transport's, and large ones that cross
		// Batch within a few writes.
		incr := rapid.OneOf(rapid.IntRange(1, 8192), rapid.IntRange(Batch/2, 2*Batch))
		n := rapid.IntRange(0, 200).Draw(t, "frames")
		for i := range n {
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0, 1, 2: // updates are most of what the transport writes
				s := rapid.SampledFrom(streams).Draw(t, "stream")
				require.NoError(t, fr.WriteWindowUpdate(s, uint32(incr.Draw(t, "incr"))))
			case 3:
				s := rapid.SampledFrom(streams[1:]).Draw(t, "stream")
				require.NoError(t, fr.WriteData(s, false, bytes.Repeat([]byte{byte(i)}, rapid.IntRange(0, 5000).Draw(t, "data"))))
			case 4:
				require.NoError(t, fr.WritePing(false, [8]byte{byte(i)}))
			case 5:
				s := rapid.SampledFrom(streams[1:]).Draw(t, "stream")
				require.NoError(t, fr.WriteRSTStream(s, http2.ErrCodeCancel))
			}
		}
		require.NoError(t, fr.WritePing(true, [8]byte{'e', 'n', 'd'})) // flushes what is held
		wantCredit, wantOther := credit(parseFrames(t, in.Bytes()))

		var f filter
		f.init()
		var out []byte
		for rest := in.Bytes(); len(rest) > 0; {
			cut := rapid.IntRange(1, min(len(rest), 6000)).Draw(t, "write")
			out = f.filter(out, rest[:cut])
			rest = rest[cut:]
			if f.rest == 0 || f.update {
				for s, held := range f.held {
					require.Less(t, held, uint32(Batch), "credit held for stream %d between frames", s)
				}
			}
		}
		gotCredit, gotOther := credit(parseFrames(t, out))
		require.Equal(t, wantOther, gotOther, "every other frame, whole and in order")
		require.Equal(t, wantCredit, gotCredit, "all credit, once another frame went out")
		require.Empty(t, f.held)
	})
}

// TestFilterBatchesTheStreamsUpdates is the case it is for: the
// transport returning ~4 KiB of credit to the stream and the connection
// after every frame the caller reads. Those 2,000 updates leave as a few
// batches of Batch.
func TestFilterBatchesTheStreamsUpdates(t *testing.T) {
	var f filter
	f.init()
	out := f.filter(nil, []byte(http2.ClientPreface))
	const frames, size = 1000, 4300
	writes := 0
	for range frames {
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		require.NoError(t, fr.WriteWindowUpdate(0, size))
		require.NoError(t, fr.WriteWindowUpdate(1, size))
		before := len(out)
		out = f.filter(out, b.Bytes())
		if len(out) > before {
			writes++
		}
	}
	sums, other := credit(parseFrames(t, out))
	assert.Empty(t, other)
	batches := frames * size / Batch
	assert.Equal(t, batches, writes, "one write per Batch of credit, not one per frame")
	for _, s := range []uint32{0, 1} {
		assert.Equal(t, uint64(frames*size), sums[s]+uint64(f.held[s]), "stream %d: what did not go out is held", s)
		assert.Less(t, f.held[s], uint32(Batch))
	}
}

// tap records what the transport writes, before a Conn filters it.
type tap struct {
	net.Conn
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf.Write(p)
	t.mu.Unlock()
	return t.Conn.Write(p)
}

func (t *tap) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf.Bytes())
}

// countWrites counts the writes that reach the socket under TLS.
type countWrites struct {
	net.Conn
	mu sync.Mutex
	n  int
}

func (c *countWrites) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *countWrites) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestXNetWritesAsFlowconnExpects runs x/net's transport (the version in
// go.mod) over a Conn, as package rpc does, and reads a stream of ~4 KiB
// writes. It fails when an x/net upgrade breaks what Conn relies on: the
// windows the transport announces must stay far above Batch (else the
// server would wait for credit a Conn holds), and the transport must still
// return credit every few KiB (else the batching is no longer needed and
// this package should go).
func TestXNetWritesAsFlowconnExpects(t *testing.T) {
	const chunk, chunks = 4200, 400 // 1.6 MiB: more than three batches
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		b := []byte(strings.Repeat("x", chunk))
		for range chunks {
			if _, err := w.Write(b); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	var taps []*tap
	var socks []*countWrites
	tr := &http2.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}, //nolint:gosec // a test's own server
		DialTLSContext: func(ctx context.Context, network, addr string, tc *tls.Config) (net.Conn, error) {
			raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			sock := &countWrites{Conn: raw}
			conn := tls.Client(sock, tc)
			if err := conn.HandshakeContext(ctx); err != nil {
				return nil, err
			}
			tp := &tap{Conn: New(conn)}
			taps, socks = append(taps, tp), append(socks, sock)
			return tp, nil
		},
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	writesBefore := socks[0].count()
	n, err := io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, int64(chunk*chunks), n)
	require.Len(t, taps, 1)

	frames := parseFrames(t, taps[0].bytes())
	streamWindow, connWindow := uint64(65535), uint64(65535) // RFC 9113's initial windows
	var updates int
	for i, f := range frames {
		switch f.typ {
		case http2.FrameSettings:
			p := f.raw[frameHeaderLen:]
			for ; len(p) >= 6; p = p[6:] {
				if http2.SettingID(binary.BigEndian.Uint16(p)) == http2.SettingInitialWindowSize {
					streamWindow = uint64(binary.BigEndian.Uint32(p[2:]))
				}
			}
		case http2.FrameWindowUpdate:
			if f.stream == 0 && i <= 2 { // the transport's opening update, after its SETTINGS
				connWindow += uint64(binary.BigEndian.Uint32(f.raw[frameHeaderLen:]) & (1<<31 - 1))
				continue
			}
			if f.stream != 0 {
				updates++
			}
		}
	}
	assert.GreaterOrEqual(t, streamWindow, uint64(4*Batch), "the transport's stream window must stay far above Batch")
	assert.GreaterOrEqual(t, connWindow, uint64(4*Batch), "the transport's connection window must stay far above Batch")
	assert.GreaterOrEqual(t, updates, chunk*chunks/(16<<10),
		"x/net returns credit at least every 16 KiB read: if it no longer does, batching it is not needed")
	assert.LessOrEqual(t, socks[0].count()-writesBefore, chunk*chunks/Batch+2,
		"while the body is read, the connection writes a batch of credit per Batch, not an update per chunk")
}

// TestXNetWritesARequestBodyRightAfterItsHeaders runs x/net's transport
// (the version in go.mod) over a Conn and sends small POSTs, as package
// rpc's unary calls are. It fails when an x/net upgrade stops writing a
// request's body right after its HEADERS, on the same goroutine: the Conn
// would then write the HEADERS alone after HeldHeadersDelay, and holding
// them would only cost each call that delay.
func TestXNetWritesARequestBodyRightAfterItsHeaders(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	var sock *countWrites
	tr := &http2.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}, //nolint:gosec // a test's own server
		DialTLSContext: func(ctx context.Context, network, addr string, tc *tls.Config) (net.Conn, error) {
			raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			sock = &countWrites{Conn: raw}
			conn := tls.Client(sock, tc)
			if err := conn.HandshakeContext(ctx); err != nil {
				return nil, err
			}
			return New(conn), nil
		},
	}
	defer tr.CloseIdleConnections()
	post := func() {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"cascadeId":"c"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, `{"cascadeId":"c"}`, string(b))
	}
	post() // the connection's setup
	for range 5 {
		before := sock.count()
		post()
		assert.Equal(t, 1, sock.count()-before, "a request's HEADERS and body leave in one write")
	}
}
