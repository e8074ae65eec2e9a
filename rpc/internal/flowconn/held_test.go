package flowconn

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

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
func TestFilterSeesABodyComing(t *testing.T) {
	var f filter
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

// tlsPair is a Conn over a TLS connection to a server that reads
// frames: it counts the writes under TLS and hands over each frame the
// server reads.
type tlsPair struct {
	w      *Conn
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
	p.w = New(client)
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
func TestConnWritesARequestInOnePiece(t *testing.T) {
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
func TestConnWritesHeldHeadersInTime(t *testing.T) {
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
