package textcache

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func quote(s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// A value that extends the last one is decoded by unquoting only what it
// adds: the text remembered is not decoded again (here it is replaced by a
// marker of the same length, which the result then carries), and the new
// text continues the same buffer.
func TestDecodeUnquotesOnlyWhatAValueAdds(t *testing.T) {
	var c Cache
	text := strings.Repeat(`a "quoted" line → `, 40)
	first := c.Decode(1, quote(text))
	require.Equal(t, text, first)
	c.Commit()
	marker := strings.Repeat("#", len(c.slots[1].text))
	copy(c.slots[1].text, marker)
	got := c.Decode(1, quote(text+"more\n"))
	require.Equal(t, marker+"more\n", got)
	require.Equal(t, unsafe.StringData(first), unsafe.StringData(got), "a view of the same buffer")
	c.Commit()
	require.Equal(t, text, c.Decode(0, quote(text)), "another slot is not touched")
}

// A short value, a value that does not extend the last one, a second value
// of one slot before Commit, and one after a value that was not valid
// (a lone surrogate, replaced) are decoded whole; what was handed out
// before is never written to.
func TestDecodeWhole(t *testing.T) {
	var c Cache
	require.Equal(t, "short", c.Decode(0, quote("short")))
	c.Commit()
	require.Empty(t, c.slots[0].raw, "a short text is not remembered")

	long := strings.Repeat("x", MinText)
	a := c.Decode(0, quote(long))
	c.Commit()
	b := c.Decode(0, quote("y"+long))
	require.Equal(t, "y"+long, b, "not an extension")
	require.NotEqual(t, unsafe.StringData(a), unsafe.StringData(b))
	c.Commit()

	one := c.Decode(0, quote("y"+long+"1"))
	two := c.Decode(0, quote("y"+long+"22"))
	require.Equal(t, "y"+long+"1", one, "the first value of the frame is left as it was")
	require.Equal(t, "y"+long+"22", two)
	c.Commit()

	c.Decode(0, []byte(`"`+long+`\ud83d"`)) // a lone high surrogate, replaced
	c.Commit()
	require.Equal(t, long+"😀", c.Decode(0, []byte(`"`+long+`\ud83d\ude00"`)))
	require.Equal(t, long, a, "texts handed out are unchanged")
}

// Reset forgets every text.
func TestReset(t *testing.T) {
	var c Cache
	c.Decode(2, quote(strings.Repeat("z", MinText)))
	c.Commit()
	require.NotEqual(t, Cache{}, c)
	c.Reset()
	require.Equal(t, Cache{}, c)
}
