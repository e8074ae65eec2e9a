package textcache

import (
	"encoding/json"
	"strings"
	"testing"

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
// marker of the same length, which the result then carries).
func TestDecodeUnquotesOnlyWhatAValueAdds(t *testing.T) {
	var c Cache
	text := strings.Repeat(`a "quoted" line → `, 40)
	require.Equal(t, text, c.Decode(1, quote(text)))
	marker := strings.Repeat("#", len(c.slots[1].text))
	copy(c.slots[1].text, marker)
	got := c.Decode(1, quote(text+"more\n"))
	require.Equal(t, marker+"more\n", got)
	require.Equal(t, text, c.Decode(0, quote(text)), "another slot is not touched")
}

// A short value, a value that does not extend the last one, and one that
// the added bytes cannot decode alone (a surrogate pair cut in two) are
// decoded whole.
func TestDecodeWhole(t *testing.T) {
	var c Cache
	require.Equal(t, "short", c.Decode(0, quote("short")))
	require.Empty(t, c.slots[0].raw, "a short text is not remembered")

	long := strings.Repeat("x", MinText)
	require.Equal(t, long, c.Decode(0, quote(long)))
	require.Equal(t, "y"+long, c.Decode(0, quote("y"+long)), "not an extension")

	cut := []byte(`"` + long + `\ud83d`)
	c.Decode(0, append(cut, '"')) // a lone high surrogate, replaced
	require.Equal(t, long+"😀", c.Decode(0, []byte(`"`+long+`\ud83d\ude00"`)))
}

// Reset forgets every text.
func TestReset(t *testing.T) {
	var c Cache
	c.Decode(2, quote(strings.Repeat("z", MinText)))
	require.NotEqual(t, Cache{}, c)
	c.Reset()
	require.Equal(t, Cache{}, c)
}
