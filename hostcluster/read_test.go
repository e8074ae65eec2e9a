package hostcluster

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/agyharness/agyharness/hostcluster/clusterpb"
	"github.com/agyharness/agyharness/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadPiecesOfADroppedSnapshotStartAgain: the owner answers a piece of
// a snapshot it no longer holds with "gone", and of a snapshot it holds
// only from that snapshot.
func TestReadPiecesOfADroppedSnapshotStartAgain(t *testing.T) {
	l := newFakeLocal()
	l.add("s1")
	doc := bytes.Repeat([]byte("x"), 2*pieceSize+1)
	l.setDoc("s1", ReadTranscript, doc)
	now := time.Unix(1000, 0)
	d := &documents{now: func() time.Time { return now }}
	ctx := context.Background()
	first := d.serve(ctx, l, &clusterpb.ReadSession{SessionId: "s1", What: ReadTranscript})
	require.Nil(t, first.Failure)
	require.NotEmpty(t, first.Snapshot)
	assert.Equal(t, uint64(len(doc)), first.Total)
	assert.Len(t, first.Data, pieceSize)

	l.setDoc("s1", ReadTranscript, []byte("changed"))
	second := d.serve(ctx, l, &clusterpb.ReadSession{SessionId: "s1", What: ReadTranscript, Snapshot: first.Snapshot, Offset: uint64(pieceSize)})
	require.Nil(t, second.Failure)
	assert.Equal(t, doc[pieceSize:2*pieceSize], second.Data, "the pieces are of the snapshot, not of the document now")

	now = now.Add(documentTTL + time.Second)
	gone := d.serve(ctx, l, &clusterpb.ReadSession{SessionId: "s1", What: ReadTranscript, Snapshot: first.Snapshot, Offset: uint64(2 * pieceSize)})
	require.NotNil(t, gone.Failure)
	assert.Equal(t, CodeGone, gone.Failure.Code)
	assert.Zero(t, d.held)
}

// TestCommandChoiceCrosses: a resolve's choice reaches the owner.
func TestCommandChoiceCrosses(t *testing.T) {
	m := commandMessage("s1", messages.Command{Type: messages.CommandResolve, ElicitationID: "e/1", Action: "accept", Choice: messages.ChoiceDeny}, time.Now())
	assert.Equal(t, messages.ChoiceDeny, commandOf(m).Choice)
}
