package rpc

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

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
		require.GreaterOrEqual(t, len(b), http2FrameHeaderLen, "a frame header cut short")
		length := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		require.GreaterOrEqual(t, len(b), http2FrameHeaderLen+length, "a frame cut short")
		out = append(out, frameOut{
			typ:    http2.FrameType(b[3]),
			stream: binary.BigEndian.Uint32(b[5:]) & (1<<31 - 1),
			raw:    b[:http2FrameHeaderLen+length],
		})
		b = b[http2FrameHeaderLen+length:]
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
			sums[f.stream] += uint64(binary.BigEndian.Uint32(f.raw[http2FrameHeaderLen:]) & (1<<31 - 1))
			continue
		}
		other = append(other, f.raw)
	}
	return sums, other
}

// TestWindowFilterKeepsFramesAndCredit: whatever the transport writes and
// however its writes are cut, every other frame comes out whole and in
// order, no update lands inside a frame, the credit held back per stream is
// under windowBatch whenever a write ends between frames, and the next other
// frame carries all of it: the server gets every byte of credit.
func TestWindowFilterKeepsFramesAndCredit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var in bytes.Buffer
		in.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&in, nil)
		require.NoError(t, fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 4 << 20}))
		streams := []uint32{0, 1, 3, 5}
		// Small increments, as the transport's, and large ones that cross
		// windowBatch within a few writes.
		incr := rapid.OneOf(rapid.IntRange(1, 8192), rapid.IntRange(windowBatch/2, 2*windowBatch))
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

		var f windowFilter
		f.init()
		var out []byte
		for rest := in.Bytes(); len(rest) > 0; {
			cut := rapid.IntRange(1, min(len(rest), 6000)).Draw(t, "write")
			out = f.filter(out, rest[:cut])
			rest = rest[cut:]
			if f.rest == 0 || f.update {
				for s, held := range f.held {
					require.Less(t, held, uint32(windowBatch), "credit held for stream %d between frames", s)
				}
			}
		}
		gotCredit, gotOther := credit(parseFrames(t, out))
		require.Equal(t, wantOther, gotOther, "every other frame, whole and in order")
		require.Equal(t, wantCredit, gotCredit, "all credit, once another frame went out")
		require.Empty(t, f.held)
	})
}

// TestWindowFilterBatchesTheStreamsUpdates is the case it is for: the
// transport returning ~4 KiB of credit to the stream and the connection
// after every frame the caller reads. Those 2,000 updates leave as a few
// batches of windowBatch.
func TestWindowFilterBatchesTheStreamsUpdates(t *testing.T) {
	var f windowFilter
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
	batches := frames * size / windowBatch
	assert.Equal(t, batches, writes, "one write per windowBatch of credit, not one per frame")
	for _, s := range []uint32{0, 1} {
		assert.Equal(t, uint64(frames*size), sums[s]+uint64(f.held[s]), "stream %d: what did not go out is held", s)
		assert.Less(t, f.held[s], uint32(windowBatch))
	}
}

// headersFrame is a HEADERS frame on stream, ending the stream or not.
func headersFrame(t *testing.T, stream uint32, endStream bool) []byte {
	var b bytes.Buffer
	require.NoError(t, http2.NewFramer(&b, nil).WriteHeaders(http2.HeadersFrameParam{
		StreamID: stream, BlockFragment: []byte{0x82}, EndHeaders: true, EndStream: endStream}))
	return b.Bytes()
}

// dataFrame is a DATA frame on stream that ends it.
func dataFrame(t *testing.T, stream uint32, data string) []byte {
	var b bytes.Buffer
	require.NoError(t, http2.NewFramer(&b, nil).WriteData(stream, true, []byte(data)))
	return b.Bytes()
}

// The filter knows when what it passed ends with the HEADERS of a request
// whose body is to come, and only then.
func TestWindowFilterSeesABodyComing(t *testing.T) {
	var f windowFilter
	f.init()
	f.filter(nil, []byte(http2.ClientPreface))
	require.False(t, f.bodyNext())
	h := headersFrame(t, 1, false)
	f.filter(nil, h[:5])
	require.False(t, f.bodyNext(), "a header cut short")
	f.filter(nil, h[5:len(h)-1])
	require.False(t, f.bodyNext(), "a block cut short")
	f.filter(nil, h[len(h)-1:])
	require.True(t, f.bodyNext())
	var wu bytes.Buffer
	require.NoError(t, http2.NewFramer(&wu, nil).WriteWindowUpdate(0, 4096))
	f.filter(nil, wu.Bytes())
	require.True(t, f.bodyNext(), "a WINDOW_UPDATE held after the HEADERS changes nothing")
	f.filter(nil, dataFrame(t, 1, "{}"))
	require.False(t, f.bodyNext())
	f.filter(nil, headersFrame(t, 3, true))
	require.False(t, f.bodyNext(), "a request without a body")
}

// tlsPair is a windowConn over a TLS connection to a server that reads
// frames: it counts the writes under TLS and hands over each frame the
// server reads.
type tlsPair struct {
	w      *windowConn
	writes atomic.Int64
	frames chan http2.Frame
	done   chan struct{}
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

func newTLSPair(t *testing.T) *tlsPair {
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	cert := srv.TLS.Certificates[0]
	srv.Close()
	a, b := net.Pipe()
	p := &tlsPair{frames: make(chan http2.Frame, 16), done: make(chan struct{})}
	server := tls.Server(b, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	go func() {
		defer close(p.done)
		defer close(p.frames)
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(server, preface); err != nil {
			return
		}
		fr := http2.NewFramer(nil, server)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			p.frames <- f
		}
	}()
	client := tls.Client(countingConn{a, &p.writes}, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // a test's own server
	require.NoError(t, client.Handshake())
	p.w = newWindowConn(client)
	t.Cleanup(func() {
		p.w.Close()
		b.Close()
		<-p.done
	})
	_, err := p.w.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	return p
}

// next is the next frame the server read, within a deadline.
func (p *tlsPair) next(t *testing.T) http2.Frame {
	select {
	case f := <-p.frames:
		require.NotNil(t, f, "the server stopped reading")
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame reached the server")
		return nil
	}
}

// A request's HEADERS and body leave in one write; a request without a
// body leaves at once.
func TestWindowConnWritesARequestInOnePiece(t *testing.T) {
	p := newTLSPair(t)
	before := p.writes.Load()
	_, err := p.w.Write(headersFrame(t, 1, false))
	require.NoError(t, err)
	require.Equal(t, before, p.writes.Load(), "the HEADERS wait for the body")
	_, err = p.w.Write(dataFrame(t, 1, `{"cascadeId":"c"}`))
	require.NoError(t, err)
	require.Equal(t, before+1, p.writes.Load(), "HEADERS and body in one write")
	require.IsType(t, &http2.HeadersFrame{}, p.next(t))
	d := p.next(t).(*http2.DataFrame)
	require.Equal(t, `{"cascadeId":"c"}`, string(d.Data()))

	_, err = p.w.Write(headersFrame(t, 3, true))
	require.NoError(t, err)
	require.Equal(t, before+2, p.writes.Load(), "nothing to wait for")
	require.Equal(t, uint32(3), p.next(t).Header().StreamID)
}

// HEADERS whose body does not come are written on their own, soon.
func TestWindowConnWritesHeldHeadersInTime(t *testing.T) {
	p := newTLSPair(t)
	_, err := p.w.Write(headersFrame(t, 1, false))
	require.NoError(t, err)
	f := p.next(t)
	require.IsType(t, &http2.HeadersFrame{}, f)
	require.False(t, f.(*http2.HeadersFrame).StreamEnded())
	_, err = p.w.Write(dataFrame(t, 1, "late"))
	require.NoError(t, err)
	require.Equal(t, "late", string(p.next(t).(*http2.DataFrame).Data()))
}
