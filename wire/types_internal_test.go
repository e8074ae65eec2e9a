package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseInt: integers as numbers, as strings (escapes decoded), as
// integral floats, null and "" as zero; anything else refused.
func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{`42`: 42, `"42"`: 42, `"-7"`: -7, `""`: 0, `null`: 0, ` 5 `: 5,
		`"1e3"`: 1000, `"3.0"`: 3, `"\u0034"`: 4, `"9223372036854775807"`: 1<<63 - 1} {
		got, err := parseInt([]byte(in))
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{`"1.5"`, "\"4\xff\"", `"99999999999999999999"`, `" 5"`, `"`, `"5`, `5"`, `"5"6"`, `true`} {
		_, err := parseInt([]byte(in))
		require.Error(t, err, in)
	}
}
