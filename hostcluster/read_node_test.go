// Several nodes in one process: built without -race, as node_test.go says.

//go:build !race

package hostcluster

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadCrossesADocumentInPieces: a document larger than a remote
// message may carry (a transcript) crosses whole, in pieces of one
// snapshot; a small one in one piece; one over MaxDocument is refused; a
// command's choice crosses too.
func TestReadCrossesADocumentInPieces(t *testing.T) {
	nodes, locals := testNodes(t, "A", "B")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	locals[1].add("s1")

	big := make([]byte, 5*pieceSize+12345) // 6 pieces, over gRPC's 4 MiB
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	locals[1].setDoc("s1", ReadTranscript, big)
	locals[1].setDoc("s1", ReadModels, []byte(`{"models":[]}`))

	got, err := nodes[0].Read(ctx, "B", "s1", ReadTranscript)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(big, got), "the whole document, in order (%d bytes of %d)", len(got), len(big))
	got, err = nodes[0].Read(ctx, "B", "s1", ReadModels)
	require.NoError(t, err)
	assert.Equal(t, `{"models":[]}`, string(got))
	locals[1].mu.Lock()
	assert.Equal(t, 2, locals[1].sessions["s1"].reads, "one snapshot per document read")
	locals[1].mu.Unlock()
	nodes[1].docs.mu.Lock()
	assert.Empty(t, nodes[1].docs.m, "a snapshot read to its end is dropped")
	nodes[1].docs.mu.Unlock()

	var e *Error
	_, err = nodes[0].Read(ctx, "B", "nope", ReadTranscript)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusNotFound, e.Status)
	_, err = nodes[0].Read(ctx, "B", "s1", "secrets")
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusUnprocessableEntity, e.Status)

	old := MaxDocument
	MaxDocument = 4 * pieceSize
	t.Cleanup(func() { MaxDocument = old })
	_, err = nodes[0].Read(ctx, "B", "s1", ReadTranscript)
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Message, "over the")
}
