package rpc_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
)

// BenchmarkStreamTransport reads a stream of 4.3 KiB frames two ways: through
// the client (x/net's transport over a flowconn.Conn, Stream.Next, each frame
// released), and through a bare HTTP/2 read loop on the TLS connection
// (x/net's Framer, each envelope decoded on the loop itself, credit returned
// every 512 KiB): what a transport of our own for the stream could do.
// Besides ns/op it reports cpu-ns/frame: getrusage over the run, client and
// server together; the server's part is the same both ways, so the
// difference is the client's.
func BenchmarkStreamTransport(b *testing.B) {
	frame := envelope(0, frameJSON(7, strings.Repeat("x", 4200)))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(framesWanted.Load())
		if h := r.Header.Get("X-Frames"); h != "" {
			n, _ = strconv.Atoi(h)
		}
		w.Header().Set("Content-Type", "application/connect+json")
		w.WriteHeader(http.StatusOK)
		pace := time.Duration(framePace.Load())
		for range n {
			if pace > 0 {
				time.Sleep(pace)
			}
			if _, err := w.Write(frame); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		_, _ = w.Write(envelope(rpc.FlagEndStream, `{}`))
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	for _, pace := range []time.Duration{0, 500 * time.Microsecond} {
		framePace.Store(int64(pace))
		b.Run(fmt.Sprintf("pace=%v", pace), func(b *testing.B) { benchTransports(b, port) })
	}
}

// benchTransports runs both readers against the server on port.
func benchTransports(b *testing.B, port int) {
	b.Run("client", func(b *testing.B) {
		c, err := rpc.NewClient(rpc.Config{Port: port})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		framesWanted.Store(int64(b.N))
		measure(b, func() int {
			s, err := c.StreamAgentStateUpdates(context.Background(), conv, "")
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			n := 0
			for {
				f, err := s.Next()
				if err == io.EOF {
					return n
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
				f.Release()
			}
		})
	})
	b.Run("bare", func(b *testing.B) {
		measure(b, func() int { return bareStream(b, port, b.N) })
	})
}

// framePace is the server's pause before each frame: 0 sends them back to
// back (a stream reader takes several per read), 500µs one at a time, as a
// host of many sessions sees them.
var framePace atomic.Int64

// framesWanted is how many frames the server sends to the client variant
// (it cannot add a request header).
var framesWanted atomic.Int64

// measure runs read once, checks it read b.N frames and reports CPU per frame.
func measure(b *testing.B, read func() int) {
	b.Helper()
	before := cpuNow()
	b.ResetTimer()
	n := read()
	b.StopTimer()
	if n != b.N {
		b.Fatalf("read %d frames, want %d", n, b.N)
	}
	b.ReportMetric(float64((cpuNow()-before).Nanoseconds())/float64(n), "cpu-ns/frame")
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareStream opens the stream on a connection of its own and reads frames
// on this goroutine until the end-stream envelope.
func bareStream(b *testing.B, port, frames int) int {
	b.Helper()
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // a test server
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		b.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 4 << 20}))
	must(fr.WriteWindowUpdate(0, 1<<30))
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, h := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", conn.RemoteAddr().String()},
		{":path", "/" + rpc.Service + "/" + rpc.MethodStreamAgentStateUpdates}, {"content-type", "application/connect+json"},
		{"x-frames", strconv.Itoa(frames)}} {
		must(enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]}))
	}
	must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true}))

	var buf []byte
	n, credit := 0, 0
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			b.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				must(fr.WriteSettingsAck())
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				must(fr.WritePing(true, f.Data))
			}
		case *http2.MetaHeadersFrame:
			if st := f.PseudoValue("status"); st != "" && st != "200" {
				b.Fatalf("status %s", st)
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			b.Fatalf("the server ended the stream: %v", f)
		case *http2.DataFrame:
			buf = append(buf, f.Data()...)
			credit += int(f.Length)
			for len(buf) >= 5 {
				size := int(binary.BigEndian.Uint32(buf[1:5]))
				if len(buf) < 5+size {
					break
				}
				if buf[0]&rpc.FlagEndStream != 0 {
					return n
				}
				if _, err := rpc.DecodeFrame(buf[5 : 5+size]); err != nil {
					b.Fatal(err)
				}
				n++
				buf = buf[:copy(buf, buf[5+size:])]
			}
			if credit >= 512<<10 {
				must(fr.WriteWindowUpdate(0, uint32(credit)))
				must(fr.WriteWindowUpdate(1, uint32(credit)))
				credit = 0
			}
		}
	}
}

// answeringClient is a client of an HTTPS server that answers every call
// with answer, both closed when b ends.
func answeringClient(b *testing.B, answer []byte) *rpc.Client {
	b.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	b.Cleanup(srv.Close)
	c, err := rpc.NewClient(rpc.Config{Port: srv.Listener.Addr().(*net.TCPAddr).Port})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// BenchmarkUnaryCall makes one unary call after another on one connection
// (GetCascadeTrajectorySteps answered with an empty trajectory): what an idle
// session's background reads cost. Besides ns/op it reports cpu-ns/call,
// client and server together (getrusage).
func BenchmarkUnaryCall(b *testing.B) {
	c := answeringClient(b, []byte(`{"steps":[]}`))
	ctx := context.Background()
	if _, err := c.GetCascadeTrajectorySteps(ctx, conv); err != nil {
		b.Fatal(err) // the connection is made before the clock starts
	}
	before := cpuNow()
	b.ResetTimer()
	for range b.N {
		if _, err := c.GetCascadeTrajectorySteps(ctx, conv); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuNow()-before).Nanoseconds())/float64(b.N), "cpu-ns/call")
}

// BenchmarkStatusReadOf1000 reads one conversation's summary from agy's
// list of 1,000 conversations (about 350 KB) over one connection, as a
// turn's end or a subagent's mirror does. Besides ns/op it reports
// cpu-ns/call, client and server together (getrusage).
func BenchmarkStatusReadOf1000(b *testing.B) {
	const conv = "7c3e1a55-2b9d-4f6e-8a10-c4d2e9f1b370"
	all := rpc.ListedWith(conv, rpc.TrajectorySummary{Status: wire.RunIdle, StepCount: 4}, 999, "")
	answer, err := json.Marshal(all)
	if err != nil {
		b.Fatal(err)
	}
	c := answeringClient(b, answer)
	ctx := context.Background()
	read := func() {
		if s, ok, err := c.TrajectorySummaryOf(ctx, conv); err != nil || !ok || s.StepCount != 4 {
			b.Fatal(s, ok, err)
		}
	}
	read() // the connection is made before the clock starts
	before := cpuNow()
	b.ResetTimer()
	for range b.N {
		read()
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuNow()-before).Nanoseconds())/float64(b.N), "cpu-ns/call")
}
