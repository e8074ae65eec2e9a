package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
	"github.com/agyharness/agyharness/wire"
)

// envelope encodes one envelope.
func envelope(flags byte, payload string) []byte {
	var b bytes.Buffer
	if err := connectserver.WriteEnvelope(&b, flags, []byte(payload)); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// frameJSON is a data frame carrying one step at index.
func frameJSON(index int, text string) string {
	return `{"update":{"conversationId":"` + conv + `","trajectoryId":"` + traj + `","status":"CASCADE_RUN_STATUS_RUNNING",
		"mainTrajectoryUpdate":{"stepsUpdate":{"indices":[` + itoa(index) + `],"totalLength":` + itoa(index+1) + `,
		"steps":[{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_GENERATING",
		"metadata":{"sourceTrajectoryStepInfo":{"trajectoryId":"` + traj + `","stepIndex":` + itoa(index) + `}},
		"plannerResponse":{"modifiedResponse":"` + text + `"}}]}}}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// streamServer answers the stream with chunks, flushing after each.
func streamServer(t *testing.T, chunks ...[]byte) *connectServer {
	t.Helper()
	return newConnectServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/connect+json")
		w.WriteHeader(http.StatusOK)
		for _, c := range chunks {
			if _, err := w.Write(c); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
}

func TestStreamRequestAndFrames(t *testing.T) {
	body := append(envelope(0, frameJSON(2, "Hel")), envelope(0, frameJSON(2, "Hello"))...)
	body = append(body, envelope(rpc.FlagEndStream, `{}`)...)
	srv := streamServer(t, body) // several envelopes in one write
	c := srv.client(t, rpc.Config{CSRFToken: "tok"})

	s, err := c.StreamAgentStateUpdates(context.Background(), conv, "sub-1")
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, "sub-1", s.SubscriberID())

	f, err := s.Next()
	require.NoError(t, err)
	assert.Equal(t, conv, f.Update.ConversationID)
	assert.Equal(t, traj, f.Update.TrajectoryID)
	assert.Equal(t, wire.RunRunning, f.Update.Status)
	su := f.Update.MainTrajectoryUpdate.StepsUpdate
	assert.Equal(t, []wire.Int{2}, su.Indices)
	assert.Equal(t, wire.Int(3), su.TotalLength)
	require.Len(t, su.Steps, 1)
	assert.Equal(t, 2, su.Steps[0].Index())
	assert.Equal(t, "Hel", su.Steps[0].PlannerResponse.ModifiedResponse)
	assert.NotEmpty(t, su.Steps[0].Raw)

	f, err = s.Next()
	require.NoError(t, err)
	assert.Equal(t, "Hello", f.Update.MainTrajectoryUpdate.StepsUpdate.Steps[0].PlannerResponse.ModifiedResponse)

	_, err = s.Next()
	assert.Equal(t, io.EOF, err)
	_, err = s.Next()
	assert.Equal(t, io.EOF, err, "the end is sticky")

	got := srv.last(t)
	assert.Equal(t, 2, got.Proto)
	assert.Equal(t, "/"+rpc.Service+"/StreamAgentStateUpdates", got.Path)
	assert.Equal(t, "application/connect+json", got.Header.Get("Content-Type"))
	assert.Equal(t, "1", got.Header.Get("Connect-Protocol-Version"))
	assert.Equal(t, "tok", got.Header.Get("x-codeium-csrf-token"))
	assert.Empty(t, got.Header.Get("Connect-Timeout-Ms"), "streams have no default deadline")
	flags, payload, err := rpc.NewEnvelopeReader(bytes.NewReader(got.Body), 0).Next()
	require.NoError(t, err)
	assert.Equal(t, byte(0), flags)
	assert.JSONEq(t, `{"conversationId":"`+conv+`","subscriberId":"sub-1"}`, string(payload))
	assert.Equal(t, 5+len(payload), len(got.Body), "exactly one envelope")
}

func TestStreamFreshSubscriberIDs(t *testing.T) {
	srv := streamServer(t, envelope(rpc.FlagEndStream, `{}`))
	c := srv.client(t, rpc.Config{})
	seen := map[string]bool{}
	for range 3 {
		s, err := c.StreamAgentStateUpdates(ctxT(t), conv, "")
		require.NoError(t, err)
		assert.NotEmpty(t, s.SubscriberID())
		assert.False(t, seen[s.SubscriberID()], "subscriber ids must be unique")
		seen[s.SubscriberID()] = true
		require.NoError(t, s.Close())
	}
	for _, r := range srv.requests() {
		_, payload, err := rpc.NewEnvelopeReader(bytes.NewReader(r.Body), 0).Next()
		require.NoError(t, err)
		var req rpc.StreamRequest
		require.NoError(t, json.Unmarshal(payload, &req))
		assert.True(t, seen[req.SubscriberID], "sent the id the stream reports")
	}
}

func TestStreamFraming(t *testing.T) {
	frame := envelope(0, frameJSON(1, "x"))
	end := envelope(rpc.FlagEndStream, `{}`)
	split := func(b []byte) [][]byte { // one byte per write, flushed: one read per byte
		var out [][]byte
		for i := range b {
			out = append(out, b[i:i+1])
		}
		return out
	}
	maxed := `{"update":{"conversationId":"` + conv + `"}}`
	maxed += strings.Repeat(" ", 1024-len(maxed))
	tests := []struct {
		name    string
		chunks  [][]byte
		frames  int
		badJSON bool // NextRaw hands the frame over; the stream then ends without an end-stream
		goesOn  int  // frames read after the error (then the end): a skipped frame is not the end
		wantErr func(t *testing.T, err error)
	}{
		{name: "split across reads", chunks: split(append(append([]byte{}, frame...), end...)), frames: 1},
		{name: "several per read", chunks: [][]byte{bytes.Repeat(frame, 3), end}, frames: 3},
		{name: "header split from payload", chunks: [][]byte{frame[:3], frame[3:7], frame[7:], end}, frames: 1},
		{name: "zero-length data", chunks: [][]byte{envelope(0, ""), end}, frames: 1},
		{name: "max size", chunks: [][]byte{envelope(0, maxed), end}, frames: 1},
		{name: "zero-length end-stream", chunks: [][]byte{frame, envelope(rpc.FlagEndStream, "")}, frames: 1},
		{name: "one over max size", chunks: [][]byte{envelope(0, maxed+" "), frame, end}, goesOn: 1, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, rpc.ErrMessageTooLarge)
			assert.ErrorIs(t, err, rpc.ErrFrameSkipped)
			assert.False(t, rpc.IsTransient(err))
		}},
		{name: "end-stream over max size", chunks: [][]byte{envelope(rpc.FlagEndStream, maxed+" ")}, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, rpc.ErrMessageTooLarge)
			assert.NotErrorIs(t, err, rpc.ErrFrameSkipped)
		}},
		{name: "end-stream error", chunks: [][]byte{frame, envelope(rpc.FlagEndStream, `{"error":{"code":"unavailable","message":"restarting","details":[{"type":"a"}]},"metadata":{"k":["v"]}}`)}, frames: 1,
			wantErr: func(t *testing.T, err error) {
				var e *rpc.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, rpc.CodeUnavailable, e.Code)
				assert.Equal(t, "restarting", e.Message)
				assert.Equal(t, 0, e.HTTPStatus)
				assert.Len(t, e.Details, 1)
				assert.True(t, rpc.IsTransient(err))
			}},
		{name: "end-stream error without code", chunks: [][]byte{envelope(rpc.FlagEndStream, `{"error":{"message":"trajectory not found"}}`)},
			wantErr: func(t *testing.T, err error) {
				var e *rpc.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, rpc.CodeUnknown, e.Code)
				assert.ErrorIs(t, err, rpc.ErrTrajectoryNotFound)
			}},
		{name: "compressed", chunks: [][]byte{envelope(rpc.FlagCompressed, "xx")}, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, rpc.ErrProtocol)
			assert.Contains(t, err.Error(), "compressed")
		}},
		{name: "unknown flags", chunks: [][]byte{frame, envelope(0x80, "{}")}, frames: 1, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, rpc.ErrProtocol)
			assert.Contains(t, err.Error(), "0x80")
		}},
		{name: "truncated payload", chunks: [][]byte{frame[:len(frame)-2]}, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.ErrorIs(t, err, rpc.ErrProtocol)
			assert.NotErrorIs(t, err, rpc.ErrPortGone, "a server that ends its body mid-envelope is broken, not gone")
		}},
		{name: "truncated header", chunks: [][]byte{frame, frame[:3]}, frames: 1, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		}},
		{name: "no end-stream", chunks: [][]byte{frame}, frames: 1, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, rpc.ErrProtocol)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		}},
		{name: "bad frame JSON", chunks: [][]byte{envelope(0, `{"update":`)}, badJSON: true, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, rpc.ErrProtocol)
		}},
		{name: "bad end-stream JSON", chunks: [][]byte{envelope(rpc.FlagEndStream, `nope`)}, wantErr: func(t *testing.T, err error) {
			assert.ErrorIs(t, err, rpc.ErrProtocol)
		}},
	}
	reads := map[string]func(*rpc.Stream) error{
		"Next":    func(s *rpc.Stream) error { _, err := s.Next(); return err },
		"NextRaw": func(s *rpc.Stream) error { _, err := s.NextRaw(); return err },
	}
	for _, tt := range tests {
		for mode, next := range reads {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				srv := streamServer(t, tt.chunks...)
				s, err := srv.client(t, rpc.Config{MaxMessageSize: 1024}).StreamAgentStateUpdates(ctxT(t), conv, "")
				require.NoError(t, err)
				defer s.Close()
				frames := tt.frames
				if tt.badJSON && mode == "NextRaw" {
					frames++
				}
				for i := 0; i < frames; i++ {
					require.NoError(t, next(s), "frame %d", i)
				}
				err = next(s)
				if tt.wantErr == nil {
					assert.Equal(t, io.EOF, err)
					return
				}
				require.Error(t, err)
				assert.NotEqual(t, io.EOF, err)
				tt.wantErr(t, err)
				if tt.goesOn > 0 {
					// A data frame over the limit is skipped: the stream goes on.
					for i := 0; i < tt.goesOn; i++ {
						require.NoError(t, next(s), "frame %d after the one skipped", i)
					}
					assert.Equal(t, io.EOF, next(s))
					return
				}
				assert.Equal(t, err, next(s), "errors are sticky")
			})
		}
	}
}

// TestStreamNextRaw reads frames as agy sent them, with a frame decoded in
// between, and checks which buffer each raw frame is read into.
func TestStreamNextRaw(t *testing.T) {
	payloads := []string{
		frameJSON(0, "a"),
		frameJSON(1, strings.Repeat("b", 3000)), // larger than the first: a buffer of 4 KiB
		frameJSON(2, "e"),                       // fits it
		"",
		frameJSON(3, strings.Repeat("c", 40<<10)), // over 32 KiB: its buffer is not kept
		frameJSON(4, "d"),                         // read with Next
		`{"update":{"status":"CASCADE_RUN_STATUS_IDLE"}}`,
	}
	var body []byte
	for _, p := range payloads {
		body = append(body, envelope(0, p)...)
	}
	body = append(body, envelope(rpc.FlagEndStream, `{}`)...)
	s, err := streamServer(t, body).client(t, rpc.Config{}).StreamAgentStateUpdates(ctxT(t), conv, "")
	require.NoError(t, err)
	defer s.Close()

	starts := make([]*byte, len(payloads)) // the first byte of each raw frame's buffer
	for i, p := range payloads {
		if i == 5 {
			f, err := s.Next()
			require.NoError(t, err)
			assert.Equal(t, "d", f.Update.MainTrajectoryUpdate.StepsUpdate.Steps[0].PlannerResponse.ModifiedResponse)
			f.Release()
			continue
		}
		raw, err := s.NextRaw()
		require.NoError(t, err, "frame %d", i)
		assert.Equal(t, p, string(raw), "frame %d as sent", i)
		starts[i] = &raw[:1][0]
	}
	assert.NotSame(t, starts[0], starts[1], "a frame larger than the buffer gets a new one")
	assert.Same(t, starts[1], starts[2], "a frame that fits is read into the last one's buffer")
	assert.NotSame(t, starts[2], starts[4], "a frame over 32 KiB gets a buffer of its own")
	assert.Same(t, starts[2], starts[6], "and the buffer kept before it is used again after it")
	_, err = s.NextRaw()
	assert.Equal(t, io.EOF, err)
}

// stallServer sends one frame and then holds the stream open until the
// client goes away.
func stallServer(t *testing.T) *connectServer {
	return newConnectServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/connect+json")
		_, _ = w.Write(envelope(0, frameJSON(0, "a")))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// nextAsync runs Next in a goroutine and returns its error channel.
func nextAsync(s *rpc.Stream) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := s.Next()
		ch <- err
	}()
	return ch
}

func awaitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return after cancellation")
		return nil
	}
}

func TestStreamStallsUntilContextCancel(t *testing.T) {
	srv := stallServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := srv.client(t, rpc.Config{}).StreamAgentStateUpdates(ctx, conv, "")
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Next()
	require.NoError(t, err)

	ch := nextAsync(s)
	select {
	case err := <-ch:
		t.Fatalf("Next returned before cancellation: %v", err)
	default:
	}
	cancel()
	err = awaitErr(t, ch)
	var e *rpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, rpc.CodeCanceled, e.Code)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, rpc.IsTransient(err))
}

func TestStreamCloseUnblocksNext(t *testing.T) {
	srv := stallServer(t)
	s, err := srv.client(t, rpc.Config{}).StreamAgentStateUpdates(context.Background(), conv, "")
	require.NoError(t, err)
	_, err = s.Next()
	require.NoError(t, err)
	ch := nextAsync(s)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	err = awaitErr(t, ch)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestStreamRefused(t *testing.T) {
	t.Run("404", func(t *testing.T) {
		srv := newConnectServer(t, reply(http.StatusNotFound, "404 page not found"))
		_, err := srv.client(t, rpc.Config{}).StreamAgentStateUpdates(ctxT(t), conv, "")
		var e *rpc.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 404, e.HTTPStatus)
		assert.Equal(t, rpc.CodeUnimplemented, e.Code)
		assert.ErrorIs(t, err, rpc.ErrUnimplemented)
	})
	t.Run("connect error status", func(t *testing.T) {
		srv := newConnectServer(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			connectserver.WriteError(w, rpc.CodeUnauthenticated, "missing csrf token")
		})
		_, err := srv.client(t, rpc.Config{}).StreamAgentStateUpdates(ctxT(t), conv, "")
		var e *rpc.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, rpc.CodeUnauthenticated, e.Code)
		assert.Equal(t, "missing csrf token", e.Message)
	})
	t.Run("wrong content type", func(t *testing.T) {
		srv := newConnectServer(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("hello"))
		})
		_, err := srv.client(t, rpc.Config{}).StreamAgentStateUpdates(ctxT(t), conv, "")
		assert.ErrorIs(t, err, rpc.ErrProtocol)
		assert.Contains(t, err.Error(), "text/plain")
	})
	t.Run("dead port", func(t *testing.T) {
		srv := streamServer(t)
		c := srv.client(t, rpc.Config{})
		srv.Close()
		_, err := c.StreamAgentStateUpdates(ctxT(t), conv, "")
		assert.ErrorIs(t, err, rpc.ErrPortGone)
	})
}

func TestStreamCascadeReactiveUpdatesDeprecated(t *testing.T) {
	t.Run("end-stream", func(t *testing.T) {
		srv := streamServer(t, envelope(rpc.FlagEndStream, `{"error":{"message":"reactive state is deprecated"}}`))
		err := srv.client(t, rpc.Config{}).StreamCascadeReactiveUpdates(ctxT(t), conv)
		assert.ErrorIs(t, err, rpc.ErrDeprecated)
		got := srv.last(t)
		assert.Equal(t, "/"+rpc.Service+"/StreamCascadeReactiveUpdates", got.Path)
		assert.Equal(t, "application/connect+json", got.Header.Get("Content-Type"))
	})
	t.Run("unary-style answer", func(t *testing.T) {
		srv := newConnectServer(t, reply(http.StatusOK, `{"error":{"message":"reactive state is deprecated"}}`))
		assert.ErrorIs(t, srv.client(t, rpc.Config{}).StreamCascadeReactiveUpdates(ctxT(t), conv), rpc.ErrDeprecated)
	})
	t.Run("data is still an error", func(t *testing.T) {
		srv := streamServer(t, envelope(0, `{}`), envelope(rpc.FlagEndStream, `{}`))
		err := srv.client(t, rpc.Config{}).StreamCascadeReactiveUpdates(ctxT(t), conv)
		assert.ErrorIs(t, err, rpc.ErrDeprecated)
	})
}

func TestEnvelopeReader(t *testing.T) {
	var in bytes.Buffer
	require.NoError(t, connectserver.WriteEnvelope(&in, 0, []byte(`{"a":1}`)))
	require.NoError(t, connectserver.WriteEnvelope(&in, 0, nil))
	require.NoError(t, connectserver.WriteEndStream(&in, "", ""))
	require.NoError(t, connectserver.WriteEndStream(&in, rpc.CodeAborted, "stop"))
	r := rpc.NewEnvelopeReader(bytes.NewReader(in.Bytes()), 0)

	want := []struct {
		flags   byte
		payload string
	}{{0, `{"a":1}`}, {0, ``}, {rpc.FlagEndStream, `{}`}, {rpc.FlagEndStream, `{"error":{"code":"aborted","message":"stop"}}`}}
	for _, w := range want {
		flags, payload, err := r.Next()
		require.NoError(t, err)
		assert.Equal(t, w.flags, flags)
		assert.Equal(t, w.payload, string(payload))
	}
	_, _, err := r.Next()
	assert.Equal(t, io.EOF, err)
}

func TestEnvelopeReaderPassesReadErrorsThrough(t *testing.T) {
	boom := errors.New("connection dropped")
	frame := envelope(0, `{"a":1}`)
	r := rpc.NewEnvelopeReader(io.MultiReader(bytes.NewReader(frame[:4]), errReader{boom}), 0)
	_, _, err := r.Next()
	assert.Equal(t, boom, err, "a transport failure is not a framing error")
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestEnvelopeReaderRefusesHugeLengthWithoutAllocating(t *testing.T) {
	hdr := []byte{0, 0xff, 0xff, 0xff, 0xff}
	allocs := testing.AllocsPerRun(20, func() {
		_, _, err := rpc.NewEnvelopeReader(bytes.NewReader(hdr), 1<<20).Next()
		if !errors.Is(err, rpc.ErrMessageTooLarge) {
			t.Fatalf("want ErrMessageTooLarge, got %v", err)
		}
	})
	// The error value and its message allocate; a 4 GiB buffer would be
	// one allocation too, so check the size instead.
	assert.Less(t, allocs, 20.0)
	var before, after runtimeMem
	before.read()
	_, _, _ = rpc.NewEnvelopeReader(bytes.NewReader(hdr), 1<<20).Next()
	after.read()
	assert.Less(t, after.total-before.total, uint64(1<<16), "bytes allocated")
}

func TestWriteEnvelopeHeader(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, connectserver.WriteEnvelope(&b, rpc.FlagEndStream, []byte("abc")))
	assert.Equal(t, byte(2), b.Bytes()[0])
	assert.Equal(t, uint32(3), binary.BigEndian.Uint32(b.Bytes()[1:5]))
	assert.Equal(t, "abc", b.String()[5:])
}

func TestStreamServerDiesMidStreamIsPortGone(t *testing.T) {
	srv := stallServer(t)
	s, err := srv.client(t, rpc.Config{}).StreamAgentStateUpdates(context.Background(), conv, "")
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Next()
	require.NoError(t, err)
	ch := nextAsync(s)
	srv.CloseClientConnections() // the process holding the port went away
	err = awaitErr(t, ch)
	assert.ErrorIs(t, err, rpc.ErrPortGone)
	assert.NotErrorIs(t, err, rpc.ErrProtocol)
}

func TestEnvelopeReaderLargePayloadGrows(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 300<<10)
	var in bytes.Buffer
	require.NoError(t, connectserver.WriteEnvelope(&in, 0, payload))
	_, got, err := rpc.NewEnvelopeReader(&in, 1<<20).Next()
	require.NoError(t, err)
	assert.Equal(t, payload, got)

	// A header promising 16 MiB followed by a few bytes allocates little.
	hdr := []byte{0, 0x01, 0x00, 0x00, 0x00}
	var before, after runtimeMem
	before.read()
	_, _, err = rpc.NewEnvelopeReader(io.MultiReader(bytes.NewReader(hdr), strings.NewReader("abc")), 0).Next()
	after.read()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Less(t, after.total-before.total, uint64(1<<20))
}

// TestStreamLongerThanItsWindow reads one stream of 12 MiB, three times the
// stream's flow-control window: the credit the client holds back to batch
// its WINDOW_UPDATEs must still reach the server in time.
func TestStreamLongerThanItsWindow(t *testing.T) {
	const frames = 3000
	text := strings.Repeat("x", 4200)
	chunks := make([][]byte, 0, frames+1)
	for i := range frames {
		chunks = append(chunks, envelope(0, frameJSON(i, text)))
	}
	chunks = append(chunks, envelope(rpc.FlagEndStream, `{}`))
	c := streamServer(t, chunks...).client(t, rpc.Config{})

	s, err := c.StreamAgentStateUpdates(ctxT(t), conv, "sub-1")
	require.NoError(t, err)
	defer s.Close()
	for i := range frames {
		f, err := s.Next()
		require.NoError(t, err, "frame %d", i)
		require.Equal(t, i, f.Update.MainTrajectoryUpdate.StepsUpdate.Steps[0].Index())
	}
	_, err = s.Next()
	assert.Equal(t, io.EOF, err)
}

// TestStreamReadsIntoReleasedBuffers: a released frame's buffer takes a
// later frame (growing frames included: a new buffer has room to grow);
// strings decoded from a frame outlive its release; an unreleased frame's
// bytes are never reused; Release twice is harmless.
func TestStreamReadsIntoReleasedBuffers(t *testing.T) {
	const frames = 40
	var body []byte
	for i := range frames {
		body = append(body, envelope(0, frameJSON(i, strings.Repeat("x", 1000+50*i)))...)
	}
	body = append(body, envelope(rpc.FlagEndStream, `{}`)...)
	c := streamServer(t, body).client(t, rpc.Config{})
	s, err := c.StreamAgentStateUpdates(ctxT(t), conv, "")
	require.NoError(t, err)
	defer s.Close()

	var texts []string
	var kept *rpc.StreamFrame // never released
	var keptRaw []byte
	seen := map[*byte]bool{} // first bytes of the buffers frames came in
	reused := 0
	for i := range frames {
		f, err := s.Next()
		require.NoError(t, err, "frame %d", i)
		st := f.Update.MainTrajectoryUpdate.StepsUpdate.Steps[0]
		texts = append(texts, st.PlannerResponse.ModifiedResponse)
		start := &st.Raw[:1][0]
		if i == 5 {
			kept, keptRaw = f, bytes.Clone(st.Raw)
			continue
		}
		// Raw begins at the same offset of every frame of this shape, so
		// the same first byte means the same buffer.
		if seen[start] {
			reused++
		}
		seen[start] = true
		f.Release()
		f.Release()
	}
	_, err = s.Next()
	require.Equal(t, io.EOF, err)
	assert.Greater(t, reused, frames/2, "most frames came in a released frame's buffer")
	assert.Equal(t, keptRaw, []byte(kept.Update.MainTrajectoryUpdate.StepsUpdate.Steps[0].Raw), "an unreleased frame keeps its bytes")
	for i, text := range texts {
		assert.Equal(t, strings.Repeat("x", 1000+50*i), text, "frame %d's text after its release", i)
	}
}

// TestKeptStepsDoNotPinTheirAnswers reads a trajectory that grows by one
// step per read, keeping each read as the next one's prev, as the poller
// does. The steps must not keep the answers they came in alive: each
// answer holds the whole trajectory, so a step pinning its answer makes
// memory grow with the square of the trajectory.
func TestKeptStepsDoNotPinTheirAnswers(t *testing.T) {
	const reads, stepBytes = 40, 10 << 10
	text := strings.Repeat("y", stepBytes)
	var n int
	srv := newConnectServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		n++
		reply(http.StatusOK, rpc.PlannerAnswer(n, text))(w, r, nil)
	})
	c := srv.client(t, rpc.Config{})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	var last []wire.Step
	for range reads {
		steps, err := c.GetCascadeTrajectoryStepsReusing(ctxT(t), conv, last)
		require.NoError(t, err)
		last = steps
	}
	require.Len(t, last, reads)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	kept := int64(ms.HeapAlloc) - int64(before)
	// The steps themselves: 40 × 10 KiB, 400 KiB; pinned answers: 8 MiB.
	assert.Less(t, kept, int64(2<<20), "%d bytes kept for %d steps of %d bytes", kept, reads, stepBytes)
	runtime.KeepAlive(last)
}

// TestReusingReadDoesNotHoldTheAnswer reads an unchanged trajectory of 1 MiB
// again, as the poller does after every turn: the answer is decoded as it
// arrives, never held whole (reading it whole allocated a buffer doubled up
// to its size, and more).
func TestReusingReadDoesNotHoldTheAnswer(t *testing.T) {
	const steps, stepBytes = 100, 10 << 10
	text := strings.Repeat("z", stepBytes)
	answer := rpc.PlannerAnswer(steps, text)
	c := newConnectServer(t, reply(http.StatusOK, answer)).client(t, rpc.Config{})
	prev, err := c.GetCascadeTrajectoryStepsReusing(ctxT(t), conv, nil)
	require.NoError(t, err)
	require.Len(t, prev, steps)

	var m runtimeMem
	m.read()
	before := m.total
	again, err := c.GetCascadeTrajectoryStepsReusing(ctxT(t), conv, prev)
	m.read()
	require.NoError(t, err)
	require.Len(t, again, steps)
	for i := range again {
		require.True(t, sameRaw(prev[i], again[i]), "step %d reused", i)
	}
	// Everything in this process counts: the test server's writing of the
	// answer (about 0.7 times its size) too. Read whole, it was 5.3 times.
	allocated := m.total - before
	t.Logf("read again: %d bytes allocated for an answer of %d", allocated, len(answer))
	assert.Less(t, allocated, uint64(2*len(answer)))
}
