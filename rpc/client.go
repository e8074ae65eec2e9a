//lint:file-ignore SA1019 x/net/http2's Transport is the HTTP/2 client this project chose (docs/DECISIONS.md): it runs h2 on a conn we dial and wrap, which net/http's HTTP2 config does not offer.

package rpc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/agyharness/agyharness/rpc/internal/flowconn"
	"github.com/agyharness/agyharness/wire"
)

// Config says where a Client connects and how long it waits. The zero value
// of each field is replaced by its documented default in NewClient.
type Config struct {
	// Host is the language server's host: "127.0.0.1" when empty. It must be
	// loopback (127.0.0.0/8, ::1 or "localhost"); anything else is refused
	// with ErrNotLoopback, because TLS verification is skipped.
	Host string
	// Port is the language server's HTTPS port (required).
	Port int
	// CSRFToken, when set, is sent on every call as x-codeium-csrf-token.
	// It never appears in errors or logs.
	CSRFToken string
	// Pin is the certificate (DER) the server must present: the one a
	// session first bound on this port, when it binds the port again. A
	// server with another certificate fails the TLS handshake with
	// ErrCertificateChanged, before any request (and so the CSRF token or a
	// turn) is sent. Nil pins the first certificate seen.
	Pin []byte
	// MaxMessageSize bounds one stream envelope and one unary response
	// body: DefaultMaxMessageSize (16 MiB) when zero.
	MaxMessageSize int
	// ProbeTimeout bounds Heartbeat and GetConversationMetadata when the
	// context has no deadline: 2s when zero.
	ProbeTimeout time.Duration
	// UnaryTimeout bounds every other unary call when the context has no
	// deadline: 30s when zero. Streams have no default deadline.
	UnaryTimeout time.Duration
	// ReadIdleTimeout is how long a connection may go without a frame
	// before it is pinged, so that a hung (not dead) server is noticed:
	// 30s when zero; never when negative (a client for a few probes: x/net
	// keeps a closed connection, and its client, alive until the timer
	// fires).
	ReadIdleTimeout time.Duration
	// OnError, when set, is told of every failed call: a unary call, a
	// stream that could not open, a stream that ended other than cleanly
	// (not when the caller cancelled it). For metrics: it must be fast and
	// safe for concurrent use. ErrorClass names the error's class.
	OnError func(method string, err error)
}

// Defaults of Config.
const (
	DefaultHost         = "127.0.0.1"
	DefaultProbeTimeout = 2 * time.Second
	DefaultUnaryTimeout = 30 * time.Second
	// DefaultReadIdleTimeout is Config.ReadIdleTimeout's default.
	DefaultReadIdleTimeout = 30 * time.Second
)

// Client speaks the Connect protocol (JSON codec) to one agy language server
// port over HTTP/2 and TLS. It is safe for concurrent use; connections are
// reused across calls. TLS verification is skipped (agy's certificate is
// self-signed, and the host is verified loopback), but the client pins the
// first leaf certificate it sees: a different one later means another
// process holds the port, and every call fails with ErrCertificateChanged
// (which is also ErrPortGone).
type Client struct {
	cfg       Config
	baseURL   string
	transport *http2.Transport

	pinMu sync.Mutex
	pin   []byte // raw DER of the first leaf certificate seen
}

// NewClient validates cfg, fills its defaults and returns a client. It does
// not connect: the first call does.
func NewClient(cfg Config) (*Client, error) {
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	host := strings.TrimSuffix(strings.TrimPrefix(cfg.Host, "["), "]")
	if !IsLoopbackHost(host) {
		return nil, fmt.Errorf("%w: %q (only 127.0.0.0/8, ::1 and localhost are allowed)", ErrNotLoopback, cfg.Host)
	}
	cfg.Host = host
	if cfg.Port <= 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("rpc: invalid port %d", cfg.Port)
	}
	if cfg.MaxMessageSize < 0 || cfg.ProbeTimeout < 0 || cfg.UnaryTimeout < 0 {
		return nil, fmt.Errorf("rpc: negative MaxMessageSize or timeout in config")
	}
	if cfg.MaxMessageSize == 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.UnaryTimeout == 0 {
		cfg.UnaryTimeout = DefaultUnaryTimeout
	}
	switch {
	case cfg.ReadIdleTimeout == 0:
		cfg.ReadIdleTimeout = DefaultReadIdleTimeout
	case cfg.ReadIdleTimeout < 0:
		cfg.ReadIdleTimeout = 0 // x/net: no health check
	}
	c := &Client{
		cfg:     cfg,
		baseURL: "https://" + net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)) + "/" + Service + "/",
		pin:     bytes.Clone(cfg.Pin),
	}
	tlsConfig := &tls.Config{
		// Safe only because the host is loopback; the certificate is pinned
		// in VerifyConnection instead.
		InsecureSkipVerify: true, //nolint:gosec
		VerifyConnection:   c.verifyConnection,
		NextProtos:         []string{"h2"},
		MinVersion:         tls.VersionTLS12,
	}
	c.transport = &http2.Transport{
		TLSClientConfig: tlsConfig,
		// Compression at the HTTP layer would buffer stream frames.
		DisableCompression: true,
		DialTLSContext: func(ctx context.Context, network, addr string, tc *tls.Config) (net.Conn, error) {
			d := tls.Dialer{Config: tc}
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return flowconn.New(conn.(*tls.Conn)), nil
		},
		// A hung (not dead) server is noticed on idle streams.
		ReadIdleTimeout: cfg.ReadIdleTimeout,
		PingTimeout:     10 * time.Second,
	}
	return c, nil
}

// IsLoopbackHost reports whether host (an IP literal without brackets, or
// "localhost") is a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Port is the port this client talks to.
func (c *Client) Port() int { return c.cfg.Port }

// Close closes idle connections. Calls and streams in flight are not
// interrupted (cancel their contexts); the client stays usable.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// Pinned returns the certificate (DER) the client has pinned: Config.Pin,
// else the first one the server presented (nil before any connection).
func (c *Client) Pinned() []byte {
	c.pinMu.Lock()
	defer c.pinMu.Unlock()
	return bytes.Clone(c.pin)
}

// verifyConnection pins the first leaf certificate seen on the port (or
// checks Config.Pin).
func (c *Client) verifyConnection(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("%w: server presented no certificate", ErrProtocol)
	}
	leaf := cs.PeerCertificates[0].Raw
	c.pinMu.Lock()
	defer c.pinMu.Unlock()
	if c.pin == nil {
		c.pin = bytes.Clone(leaf)
		return nil
	}
	if !bytes.Equal(c.pin, leaf) {
		return fmt.Errorf("%w: port %d now presents certificate sha256:%x, first seen sha256:%x",
			ErrCertificateChanged, c.cfg.Port, sha256.Sum256(leaf), sha256.Sum256(c.pin))
	}
	return nil
}

// Call makes a unary call: req is marshalled to JSON (nil sends {}), and a
// 200 answer is decoded into resp (nil discards it) with json v2, as leniently
// as encoding/json would: unknown fields are ignored, names match
// case-insensitively, invalid UTF-8 and repeated names are accepted. Without a context deadline, Config.UnaryTimeout applies. Every
// failure is a *Error.
func (c *Client) Call(ctx context.Context, method string, req, resp any) error {
	return c.call(ctx, c.cfg.UnaryTimeout, method, req, resp)
}

func (c *Client) call(ctx context.Context, timeout time.Duration, method string, req, resp any) error {
	var read func(io.Reader) error
	if resp != nil {
		read = func(body io.Reader) error {
			data, err := io.ReadAll(body)
			if err != nil {
				return err
			}
			if len(bytes.TrimSpace(data)) == 0 {
				data = []byte("{}")
			}
			return wire.Unmarshal(data, resp)
		}
	}
	return c.callRead(ctx, timeout, method, req, read)
}

// callRead is call with the body of a 200 answer handed to read as it
// arrives (nil discards it). The body read fails once it is over
// Config.MaxMessageSize; a failure of the body is reported as such
// (transport, ErrMessageTooLarge), any other error of read is a protocol
// error.
func (c *Client) callRead(ctx context.Context, timeout time.Duration, method string, req any, read func(io.Reader) error) error {
	err := c.roundTrip(ctx, timeout, method, req, read)
	c.observe(ctx, method, err)
	return err
}

// observe reports a failure to Config.OnError, unless the caller gave up.
func (c *Client) observe(ctx context.Context, method string, err error) {
	if err != nil && c.cfg.OnError != nil && ctx.Err() != context.Canceled {
		c.cfg.OnError(method, err)
	}
}

func (c *Client) roundTrip(ctx context.Context, timeout time.Duration, method string, req any, read func(io.Reader) error) error {
	if err := checkMethod(method); err != nil {
		return err
	}
	body, err := marshalRequest(req)
	if err != nil {
		return invalidArgument(method, "encode request: %v", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return transportError(ctx, method, err)
	}
	hreq, err := c.newRequest(ctx, method, "application/json", body)
	if err != nil {
		return invalidArgument(method, "build request: %v", err)
	}
	hresp, err := c.transport.RoundTrip(hreq)
	if err != nil {
		return transportError(ctx, method, err)
	}
	defer hresp.Body.Close()
	answer := &answerBody{r: hresp.Body, limit: int64(c.cfg.MaxMessageSize), left: int64(c.cfg.MaxMessageSize)}
	if hresp.StatusCode != http.StatusOK {
		data, err := io.ReadAll(answer)
		if answer.err != nil {
			return transportError(ctx, method, answer.err)
		}
		if err != nil {
			return transportError(ctx, method, err)
		}
		return errorFromStatus(method, hresp.StatusCode, data)
	}
	if read == nil {
		_, err = io.Copy(io.Discard, answer)
	} else {
		err = read(answer)
	}
	switch {
	case answer.err != nil:
		// The body failed (or outgrew the limit): that, not what the
		// decoder made of a cut answer, is the error.
		return transportError(ctx, method, answer.err)
	case err != nil:
		return transportError(ctx, method, fmt.Errorf("%w: decode response: %w", ErrProtocol, err))
	}
	return nil
}

// answerBody is the body of a unary answer as a reader: at most left bytes
// of it, and err the first failure of reading it (io.EOF is not one), or
// ErrMessageTooLarge once it has more.
type answerBody struct {
	r           io.Reader
	limit, left int64
	err         error
}

func (b *answerBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// One byte over the limit tells an oversized body from one at the limit.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if int64(n) > b.left {
		b.err = fmt.Errorf("%w: response exceeds %d bytes", ErrMessageTooLarge, b.limit)
		return 0, b.err
	}
	b.left -= int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// newRequest builds a POST to the method with the Connect headers.
func (c *Client) newRequest(ctx context.Context, method, contentType string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+method, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Connect-Protocol-Version", "1")
	if deadline, ok := ctx.Deadline(); ok {
		req.Header.Set("Connect-Timeout-Ms", encodeTimeout(time.Until(deadline)))
	}
	if c.cfg.CSRFToken != "" {
		req.Header.Set("x-codeium-csrf-token", c.cfg.CSRFToken)
	}
	return req, nil
}

// maxTimeoutMs is the largest Connect-Timeout-Ms: the header allows 10 digits.
const maxTimeoutMs = 9_999_999_999

// encodeTimeout renders a remaining duration as Connect-Timeout-Ms. A
// fraction of a millisecond rounds up so that a live deadline is never sent
// as 0 (which the server would treat as already expired).
func encodeTimeout(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	if ms > maxTimeoutMs {
		ms = maxTimeoutMs
	}
	return strconv.FormatInt(ms, 10)
}

// marshalRequest encodes req; Connect rejects an empty unary body, so nil
// (or a value encoding to null) becomes {}.
func marshalRequest(req any) ([]byte, error) {
	if req == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return []byte("{}"), nil
	}
	return b, nil
}

// checkMethod refuses names that would leave the service path.
func checkMethod(method string) error {
	if method == "" || strings.ContainsAny(method, "/?#% ") {
		return invalidArgument(method, "invalid method name %q", method)
	}
	return nil
}
