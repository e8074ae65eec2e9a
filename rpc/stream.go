//lint:file-ignore SA1019 x/net/http2's Transport is the HTTP/2 client this project chose (docs/DECISIONS.md): it runs h2 on a conn we dial and wrap, which net/http's HTTP2 config does not offer.

package rpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/agyharness/agyharness/rpc/internal/spare"
	"github.com/agyharness/agyharness/wire"
)

// Stream is an open StreamAgentStateUpdates subscription. Next decodes one
// envelope at a time from the response body; nothing is buffered ahead.
// Next and NextRaw are for one goroutine; Close may be called from any
// goroutine, at any time, any number of times, and makes a blocked Next or
// NextRaw return.
type Stream struct {
	client       *Client
	method       string
	subscriberID string
	ctx          context.Context
	cancel       context.CancelFunc
	body         io.ReadCloser
	reader       *EnvelopeReader
	spare        spare.Buffers // payload buffers of released frames
	raw          []byte        // NextRaw's buffer: its last payload, handed back
	releaseOnce  sync.Once
	done         error // sticky result once the stream has ended

	frames frameDecoder
}

// StreamAgentStateUpdates subscribes to a conversation's state updates. The
// first frame is a snapshot of prior steps; later frames are sparse and
// index-addressed. subscriberID must be unique per live subscription (a
// repeated one closes the older stream); "" picks a fresh random one. The
// stream has no deadline: cancelling ctx, or Close, ends it. A server that
// refuses the stream (non-200, e.g. 404) yields a *Error here.
func (c *Client) StreamAgentStateUpdates(ctx context.Context, conversationID, subscriberID string) (*Stream, error) {
	const m = MethodStreamAgentStateUpdates
	if conversationID == "" {
		return nil, invalidArgument(m, "empty conversation id")
	}
	if subscriberID == "" {
		subscriberID = NewSubscriberID()
	}
	st, err := c.openStream(ctx, m, StreamRequest{ConversationID: conversationID, SubscriberID: subscriberID})
	c.observe(ctx, m, err)
	return st, err
}

// NewSubscriberID returns a fresh random subscriber id.
func NewSubscriberID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "agyharness-" + hex.EncodeToString(b[:])
}

// StreamCascadeReactiveUpdates exists to document that the method is dead:
// agy answers "reactive state is deprecated" (ErrDeprecated). It always
// returns an error and never yields data; use StreamAgentStateUpdates.
func (c *Client) StreamCascadeReactiveUpdates(ctx context.Context, conversationID string) error {
	const m = MethodStreamCascadeReactiveUpdates
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.UnaryTimeout)
		defer cancel()
	}
	s, err := c.openStream(ctx, m, StreamRequest{ConversationID: conversationID})
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Next(); err != nil && err != io.EOF {
		return err
	}
	return &Error{Method: m, Code: CodeFailedPrecondition, Message: "reactive state updates are deprecated and not consumed", Err: ErrDeprecated}
}

// openStream sends the single enveloped request of a server stream and
// checks the response head.
func (c *Client) openStream(ctx context.Context, method string, req any) (*Stream, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, invalidArgument(method, "encode request: %v", err)
	}
	var body bytes.Buffer
	if err := writeEnvelope(&body, 0, payload); err != nil {
		return nil, invalidArgument(method, "encode request: %v", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	hreq, err := c.newRequest(sctx, method, "application/connect+json", body.Bytes())
	if err != nil {
		cancel()
		return nil, invalidArgument(method, "build request: %v", err)
	}
	hresp, err := c.transport.RoundTrip(hreq)
	if err != nil {
		// Classify before cancel, which would make every failure look canceled.
		e := transportError(sctx, method, err)
		cancel()
		return nil, e
	}
	if err := checkStreamResponse(method, hresp); err != nil {
		hresp.Body.Close()
		cancel()
		return nil, err
	}
	sr, _ := req.(StreamRequest)
	return &Stream{
		client:       c,
		method:       method,
		subscriberID: sr.SubscriberID,
		ctx:          sctx,
		cancel:       cancel,
		body:         hresp.Body,
		reader:       NewEnvelopeReader(hresp.Body, c.cfg.MaxMessageSize),
		spare:        spare.New(spareFrameBuffers),
	}, nil
}

// maxStreamErrorBody bounds what is read of a refused stream's body.
const maxStreamErrorBody = 64 << 10

// checkStreamResponse turns a refused stream (non-200, or a unary-style JSON
// answer) into a *Error, and an unexpected content type into ErrProtocol.
func checkStreamResponse(method string, resp *http.Response) error {
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxStreamErrorBody))
		return errorFromStatus(method, resp.StatusCode, data)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "application/connect+json":
		return nil
	case "application/json":
		// Not a stream: some servers answer a refused stream like a unary call.
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxStreamErrorBody))
		var answer struct {
			Error *ErrorBody `json:"error"`
			ErrorBody
		}
		if json.Unmarshal(data, &answer) == nil {
			if answer.Error != nil {
				return errorFromEndStream(method, answer.Error)
			}
			if answer.Code != "" || answer.Message != "" {
				return errorFromEndStream(method, &answer.ErrorBody)
			}
		}
	}
	return &Error{Method: method, HTTPStatus: resp.StatusCode, Code: CodeInternal,
		Err: fmt.Errorf("%w: stream answered with content type %q, want application/connect+json", ErrProtocol, ct)}
}

// SubscriberID is the subscriber id the stream was opened with.
func (s *Stream) SubscriberID() string { return s.subscriberID }

// Next returns the next data frame (see StreamFrame.Release to have the
// next frames read into its buffer). It returns io.EOF after a clean
// end-stream ({}), a *Error carrying the server's code and message after an
// end-stream error, and a *Error for transport and framing failures
// (ErrProtocol, ErrMessageTooLarge, ErrPortGone, or CodeCanceled after
// Close or ctx cancellation). Once it has returned an error it returns the
// same error again, but for ErrFrameSkipped: a data frame over
// Config.MaxMessageSize (agy's first frame of a long conversation, a
// snapshot of every step) is read through without being kept, Next
// returns an error wrapping ErrFrameSkipped (and ErrMessageTooLarge), and
// the stream goes on with the frame after it.
func (s *Stream) Next() (*StreamFrame, error) {
	if s.done != nil {
		return nil, s.done // before a spare buffer is taken and dropped
	}
	payload, err := s.nextPayload(s.spare.Get())
	if err != nil {
		return nil, err
	}
	frame, err := s.frames.decode(payload)
	if err != nil {
		return nil, s.finish(transportError(s.ctx, s.method, err))
	}
	if cap(payload) <= spare.Max {
		frame.buf, frame.home = payload[:0], s.spare
	}
	return frame, nil
}

// NextRaw returns the payload of the next data envelope as agy sent it,
// not decoded: for tools that keep agy's frames as they came, and for
// measuring the transport without the decode (bench --floor-raw). The bytes
// are valid until the next call of NextRaw or Next. It ends as Next does:
// io.EOF after a clean end-stream, the same errors otherwise. A stream may
// mix NextRaw and Next: a frame taken raw is simply not decoded.
func (s *Stream) NextRaw() ([]byte, error) {
	payload, err := s.nextPayload(s.raw)
	if err != nil {
		return nil, err
	}
	if cap(payload) <= spare.Max {
		s.raw = payload[:0]
	}
	return payload, nil
}

// nextPayload reads the next envelope into buf (or a new buffer if it is
// too small) and returns a data envelope's payload, or the stream's end.
func (s *Stream) nextPayload(buf []byte) ([]byte, error) {
	if s.done != nil {
		return nil, s.done
	}
	flags, payload, err := s.reader.NextInto(buf)
	if err == io.EOF {
		err = fmt.Errorf("%w: stream ended without an end-stream message: %w", ErrProtocol, io.ErrUnexpectedEOF)
	}
	if err != nil && errors.Is(err, ErrMessageTooLarge) && flags&FlagEndStream == 0 && s.ctx.Err() == nil {
		// A data frame over the limit: skipped, the stream goes on.
		e := &Error{Method: s.method, Code: CodeResourceExhausted, Err: fmt.Errorf("%w: %w", ErrFrameSkipped, err)}
		if s.client.cfg.OnError != nil {
			s.client.cfg.OnError(s.method, e)
		}
		return nil, e
	}
	if err != nil {
		return nil, s.finish(transportError(s.ctx, s.method, err))
	}
	if flags&FlagEndStream != 0 {
		var end EndStream
		if len(bytes.TrimSpace(payload)) > 0 {
			if err := json.Unmarshal(payload, &end); err != nil {
				return nil, s.finish(transportError(s.ctx, s.method, fmt.Errorf("%w: decode end-stream message: %w", ErrProtocol, err)))
			}
		}
		if end.Error != nil {
			return nil, s.finish(errorFromEndStream(s.method, end.Error))
		}
		return nil, s.finish(io.EOF)
	}
	return payload, nil
}

// spareFrameBuffers is how many buffers of released frames a stream keeps
// to read later frames into (package spare says why): frames are handed on
// one at a time, so two suffice.
const spareFrameBuffers = 2

// DecodeFrame decodes the payload of one data envelope of
// StreamAgentStateUpdates to what Stream.Next gives (json v2, as leniently
// as encoding/json; see package wire), for benchmarks and tools that replay
// recorded frames. It decodes every frame whole: a stream, which sees the
// frames in order, decodes only what each planner text adds
// (wire.StreamDecoder). An empty payload is a frame with every field at its
// default; a payload that is not a frame fails with an error wrapping
// ErrProtocol. The frame keeps references into payload (each step's Raw is
// a slice of it): payload must not be modified afterwards.
func DecodeFrame(payload []byte) (*StreamFrame, error) {
	frame := new(StreamFrame)
	if len(bytes.TrimSpace(payload)) == 0 {
		return frame, nil
	}
	if err := wire.Unmarshal(payload, frame); err != nil {
		return nil, fmt.Errorf("%w: decode frame: %w", ErrProtocol, err)
	}
	return frame, nil
}

// A frameDecoder decodes a stream's frames as DecodeFrame does, with the
// planner's texts through a wire.StreamDecoder.
type frameDecoder struct {
	texts wire.StreamDecoder
}

func (d *frameDecoder) decode(payload []byte) (*StreamFrame, error) {
	frame := new(StreamFrame)
	u := &frame.Update
	if err := d.texts.Decode(payload, frame, &u.MainTrajectoryUpdate.StepsUpdate.Steps, &u.Status); err != nil {
		return nil, fmt.Errorf("%w: decode frame: %w", ErrProtocol, err)
	}
	return frame, nil
}

// finish records the stream's final result and releases its connection
// stream.
func (s *Stream) finish(err error) error {
	// Reported unless it is a clean end or the caller's own cancellation
	// (checked before release cancels the stream's context).
	report := err != io.EOF && s.ctx.Err() == nil && s.client.cfg.OnError != nil
	s.done = err
	s.release()
	if report {
		s.client.cfg.OnError(s.method, err)
	}
	return err
}

func (s *Stream) release() {
	s.releaseOnce.Do(func() {
		s.cancel()
		s.body.Close()
	})
}

// Close ends the stream and releases its HTTP/2 stream. It always returns nil.
func (s *Stream) Close() error {
	s.release()
	return nil
}
