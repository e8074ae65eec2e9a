package spare

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuffers(t *testing.T) {
	b := New(2)
	require.Nil(t, b.Get(), "none given back yet")
	one, two, three := make([]byte, 5, 64), make([]byte, 0, 64), make([]byte, 0, 64)
	b.Put(one)
	b.Put(two)
	b.Put(three) // more than it holds: dropped
	b.Put(make([]byte, 0, Max+1))
	got := b.Get()
	require.Empty(t, got, "a buffer comes back empty")
	require.Same(t, &one[:1][0], &got[:1][0])
	got = b.Get()
	require.Same(t, &two[:1][0], &got[:1][0])
	require.Nil(t, b.Get(), "the third and the large one were not kept")
	var none Buffers
	none.Put(one)
	require.Nil(t, none.Get())
}
