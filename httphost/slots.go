package httphost

import (
	"container/list"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// authGrace is how long a connection to the host has, from the moment it
// is accepted, to show a valid bearer token (the TLS handshake and its
// first authenticated request's headers): past it, a connection that has
// not is closed. The default of serverConfig.authGrace.
const authGrace = 5 * time.Second

// slotListener hands out the host's connection slots (max at once; 0: no
// cap) and closes the connections of clients without the token:
//
//   - a connection starts unauthenticated; the first request on it that
//     carries the valid token marks it authenticated (server.auth, through
//     the connection's context), for as long as it is open;
//   - an unauthenticated connection is closed once grace has passed since
//     it was accepted (one with a request being answered, once its answer
//     is written: a request whose headers were read is never cut);
//   - when every slot is taken, the oldest unauthenticated connection
//     with no request being answered (else the oldest one) is closed to
//     make room for the next one; only when every slot holds an
//     authenticated connection does Accept wait for one to close.
//
// So connections without the token can take a slot a token holder needs
// for grace at most, and never keep a token holder's new connection
// waiting to be accepted. A token holder's connection can be evicted only
// before the host has read its first request, by max newer connections.
type slotListener struct {
	net.Listener
	max   int
	grace time.Duration

	mu     sync.Mutex
	cond   *sync.Cond
	active int       // connections holding a slot
	unauth list.List // of *slotConn, unauthenticated ones, oldest first
	closed bool
}

func newSlotListener(ln net.Listener, maxConns int, grace time.Duration) *slotListener {
	l := &slotListener{Listener: ln, max: maxConns, grace: grace}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// Accept waits for a slot that is free or can be freed, then for a
// connection; the connection takes the slot, evicting the oldest
// unauthenticated connection when there is no free one.
func (l *slotListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	for !l.closed && !l.roomLocked() {
		l.cond.Wait()
	}
	l.mu.Unlock()
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &slotConn{Conn: c, l: l}
	var evicted *slotConn
	l.mu.Lock()
	for !l.closed && l.max > 0 && l.active >= l.max && l.unauth.Len() == 0 {
		// Every unauthenticated connection showed the token meanwhile.
		l.cond.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		_ = c.Close()
		return nil, net.ErrClosed
	}
	if l.max > 0 && l.active >= l.max {
		evicted = l.evictableLocked()
		l.releaseLocked(evicted)
	}
	l.active++
	sc.state = connPending
	sc.elem = l.unauth.PushBack(sc)
	sc.timer = time.AfterFunc(l.grace, sc.expire)
	l.mu.Unlock()
	if evicted != nil {
		_ = evicted.Conn.Close()
	}
	return sc, nil
}

// evictableLocked is the oldest unauthenticated connection with no
// request being answered, else the oldest unauthenticated one (there is
// one).
func (l *slotListener) evictableLocked() *slotConn {
	for e := l.unauth.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*slotConn); !c.busy {
			return c
		}
	}
	return l.unauth.Front().Value.(*slotConn)
}

// roomLocked: a slot is free, or an unauthenticated connection can give
// its own.
func (l *slotListener) roomLocked() bool {
	return l.max <= 0 || l.active < l.max || l.unauth.Len() > 0
}

// Close stops accepting; the connections accepted stay the server's.
func (l *slotListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// releaseLocked gives c's slot back (once).
func (l *slotListener) releaseLocked(c *slotConn) {
	if c.state == connGone {
		return
	}
	if c.state == connPending {
		l.unauth.Remove(c.elem)
		c.timer.Stop()
	}
	c.state = connGone
	l.active--
	l.cond.Broadcast()
}

// connState is a slotConn's; guarded by its listener's mu.
type connState int

const (
	connPending       connState = iota // no valid token yet
	connAuthenticated                  // a request carried the valid token
	connGone                           // closed, expired or evicted: its slot is given back
)

// slotConn is a connection holding one of a slotListener's slots.
type slotConn struct {
	net.Conn
	l *slotListener

	// Guarded by l.mu.
	state   connState
	elem    *list.Element // in l.unauth while pending
	timer   *time.Timer   // closes the connection at the end of the grace
	busy    bool          // a request is being answered
	expired bool          // the grace ended while busy: close when idle
}

// authenticated marks the connection as a token holder's: it is no longer
// closed at the end of the grace, nor evicted.
func (c *slotConn) authenticated() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.state == connPending {
		c.l.unauth.Remove(c.elem)
		c.timer.Stop()
		c.state = connAuthenticated
	}
}

// expire closes the connection if it is still unauthenticated (the grace
// timer's): at once when idle, else once its answer is written.
func (c *slotConn) expire() {
	c.l.mu.Lock()
	c.expired = true
	closeNow := c.state == connPending && !c.busy
	if closeNow {
		c.l.releaseLocked(c)
	}
	c.l.mu.Unlock()
	if closeNow {
		_ = c.Conn.Close()
	}
}

// setBusy records whether a request is being answered on the connection
// (http.Server.ConnState); an unauthenticated connection whose grace ended
// meanwhile is closed as it becomes idle.
func (c *slotConn) setBusy(busy bool) {
	c.l.mu.Lock()
	c.busy = busy
	closeNow := !busy && c.expired && c.state == connPending
	if closeNow {
		c.l.releaseLocked(c)
	}
	c.l.mu.Unlock()
	if closeNow {
		_ = c.Conn.Close()
	}
}

func (c *slotConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite sends the client a FIN as soon as the server has answered a
// connection it closes (after a 401, say), as net/http does on a bare TCP
// connection.
func (c *slotConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// slotConnKey is the context key of a request's *slotConn.
type slotConnKey struct{}

// slotConnOf is the *slotConn under c's TLS layer, if there is one.
func slotConnOf(c net.Conn) (*slotConn, bool) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(*slotConn)
	return sc, ok
}

// withSlotConn is http.Server.ConnContext: it puts the connection's
// *slotConn in its requests' context, for server.auth to mark.
func withSlotConn(ctx context.Context, c net.Conn) context.Context {
	if sc, ok := slotConnOf(c); ok {
		return context.WithValue(ctx, slotConnKey{}, sc)
	}
	return ctx
}

// trackSlotConn is http.Server.ConnState: it tells the connection whether
// a request is being answered on it.
func trackSlotConn(c net.Conn, st http.ConnState) {
	sc, ok := slotConnOf(c)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		sc.setBusy(true)
	case http.StateIdle:
		sc.setBusy(false)
	}
}

// markAuthenticated marks the connection r came on, if it came on one of a
// slotListener's (a request another node of the cluster sent through this
// node's handlers came on none).
func markAuthenticated(r *http.Request) {
	if sc, ok := r.Context().Value(slotConnKey{}).(*slotConn); ok {
		sc.authenticated()
	}
}
