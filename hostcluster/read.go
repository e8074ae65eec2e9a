package hostcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
)

// A session's documents (its transcript, agy's models) are read from
// another node in pieces: a transcript is up to 16 MiB of text, more than
// one remote message should carry (gRPC refuses a message over 4 MiB by
// default). The owner takes the document once, keeps it for the pieces
// that follow (documents), and the reader asks for them in turn (Read).

// What a ReadSession asks for.
const (
	ReadTranscript = "transcript"
	ReadModels     = "models"
)

// CodeGone is the code of a piece of a snapshot the owner no longer holds
// (it expired or was dropped for a newer one): read again from the start.
const CodeGone = "gone"

var (
	// pieceSize bounds the data of one SessionPiece.
	pieceSize = 1 << 20
	// MaxDocument bounds a document read from another node, in bytes: the
	// owner refuses to serve a larger one and a reader to take one. A
	// transcript's 16 MiB of text is at most about 4 times that as JSON.
	MaxDocument = 64 << 20
	// documentTTL is how long an owner keeps a snapshot after its last
	// piece was asked for; maxHeld bounds the bytes of the snapshots it
	// keeps (the oldest dropped first).
	documentTTL = 30 * time.Second
	maxHeld     = 2 * MaxDocument
)

// documents are the snapshots an owner keeps for the pieces still to be
// read. Used by the goroutines of the node actor's requests.
type documents struct {
	mu   sync.Mutex
	m    map[string]*heldDocument
	held int
	now  func() time.Time
}

type heldDocument struct {
	data    []byte
	expires time.Time
}

func (d *documents) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// serve answers one ReadSession from local.
func (d *documents) serve(ctx context.Context, local Local, m *clusterpb.ReadSession) *clusterpb.SessionPiece {
	reply := &clusterpb.SessionPiece{Version: ProtocolVersion}
	if m.What != ReadTranscript && m.What != ReadModels {
		reply.Failure = failure(&Error{Status: http.StatusUnprocessableEntity, Code: CodeBadRequest,
			Message: fmt.Sprintf("unknown document %q (want transcript or models)", m.What)})
		return reply
	}
	var data []byte
	snapshot := m.Snapshot
	if snapshot == "" {
		var err error
		if data, err = local.Read(ctx, m.SessionId, m.What); err != nil {
			reply.Failure = failure(err)
			return reply
		}
		if len(data) > MaxDocument {
			reply.Failure = failure(&Error{Status: http.StatusBadGateway, Code: CodeFailed,
				Message: fmt.Sprintf("the %s of session %q is %d bytes, over the %d a node sends", m.What, m.SessionId, len(data), MaxDocument)})
			return reply
		}
		if len(data) > pieceSize {
			snapshot = d.hold(data)
		}
	} else {
		var ok bool
		if data, ok = d.get(snapshot); !ok {
			reply.Failure = failure(&Error{Status: http.StatusConflict, Code: CodeGone,
				Message: "the snapshot is no longer held: read it again from the start"})
			return reply
		}
	}
	if m.Offset > uint64(len(data)) {
		reply.Failure = failure(&Error{Status: http.StatusBadRequest, Code: CodeBadRequest,
			Message: fmt.Sprintf("offset %d is beyond the document's %d bytes", m.Offset, len(data))})
		return reply
	}
	end := min(uint64(len(data)), m.Offset+uint64(pieceSize))
	reply.Snapshot, reply.Total, reply.Data = snapshot, uint64(len(data)), data[m.Offset:end]
	if end == uint64(len(data)) && snapshot != "" {
		d.drop(snapshot) // read to its end
	}
	return reply
}

// hold keeps data under a new snapshot id.
func (d *documents) hold(data []byte) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	now := d.clock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = make(map[string]*heldDocument)
	}
	for k, h := range d.m {
		if !now.Before(h.expires) {
			d.dropLocked(k)
		}
	}
	for d.held+len(data) > maxHeld && len(d.m) > 0 {
		var oldest string
		var at time.Time
		for k, h := range d.m {
			if oldest == "" || h.expires.Before(at) {
				oldest, at = k, h.expires
			}
		}
		d.dropLocked(oldest)
	}
	d.m[id] = &heldDocument{data: data, expires: now.Add(documentTTL)}
	d.held += len(data)
	return id
}

func (d *documents) get(id string) ([]byte, bool) {
	now := d.clock()
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.m[id]
	if !ok || !now.Before(h.expires) {
		if ok {
			d.dropLocked(id)
		}
		return nil, false
	}
	h.expires = now.Add(documentTTL)
	return h.data, true
}

func (d *documents) drop(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropLocked(id)
}

func (d *documents) dropLocked(id string) {
	if h, ok := d.m[id]; ok {
		d.held -= len(h.data)
		delete(d.m, id)
	}
}

// Read reads a document of a session of another node (what: ReadTranscript
// or ReadModels): the bytes the owner's own API answers for it, at most
// MaxDocument. A snapshot the owner dropped halfway is read again from
// the start, once.
func (n *Node) Read(ctx context.Context, node, sessionID, what string) ([]byte, error) {
	st, _, err := n.target(node)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(ownerDefault)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		data, err := n.readOnce(ctx, st, node, sessionID, what, deadline)
		if e := (*Error)(nil); attempt == 0 && errors.As(err, &e) && e.Code == CodeGone {
			continue
		}
		return data, err
	}
}

func (n *Node) readOnce(ctx context.Context, st NodeStatus, node, sessionID, what string, deadline time.Time) ([]byte, error) {
	var (
		data     []byte
		snapshot string
		total    uint64
	)
	for {
		req := &clusterpb.ReadSession{Version: ProtocolVersion, SessionId: sessionID, What: what,
			Snapshot: snapshot, Offset: uint64(len(data)), DeadlineUnixNano: deadline.UnixNano()}
		res, err := n.askNode(ctx, st, req)
		if err != nil {
			return nil, askError(node, err)
		}
		p, ok := res.(*clusterpb.SessionPiece)
		if !ok {
			return nil, unexpected(node, res)
		}
		if err := fromFailure(p.Failure); err != nil {
			return nil, err
		}
		first := len(data) == 0 && snapshot == ""
		switch {
		case p.Total > uint64(MaxDocument):
			return nil, &Error{Status: http.StatusBadGateway, Code: CodeFailed,
				Message: fmt.Sprintf("node %q: the %s is %d bytes, over the %d a node takes", node, what, p.Total, MaxDocument)}
		case !first && (p.Total != total || p.Snapshot != snapshot),
			uint64(len(data)+len(p.Data)) > p.Total,
			len(p.Data) == 0 && uint64(len(data)) < p.Total:
			return nil, &Error{Status: http.StatusBadGateway, Code: CodeFailed,
				Message: fmt.Sprintf("node %q sent a piece that does not fit its %s", node, what)}
		}
		if first {
			total, snapshot = p.Total, p.Snapshot
			data = make([]byte, 0, total)
		}
		data = append(data, p.Data...)
		if uint64(len(data)) == total {
			return data, nil
		}
		if snapshot == "" { // a document in pieces has a snapshot
			return nil, &Error{Status: http.StatusBadGateway, Code: CodeFailed,
				Message: fmt.Sprintf("node %q sent part of its %s with no snapshot", node, what)}
		}
	}
}
