// Package termtext makes text that the harness did not write (agy's
// replies, command lines and output, file paths, a capture, agy's last
// lines in its pane) safe to print on a terminal: every character a
// terminal would act on, or that would make a line read as another, is
// shown as visible text instead of being interpreted.
//
// The notation, one per class of character:
//
//	^@ … ^_, ^?   C0 controls and DEL, in caret notation (as cat -v and
//	              less show them): ESC is ^[, CR is ^M, BEL is ^G.
//	              Newline and tab stay as they are; a CR directly before
//	              a newline (a CRLF line end) is dropped.
//	<U+009B>      C1 controls (U+0080–U+009F), the bidirectional
//	              embeddings, overrides and isolates (U+202A–U+202E,
//	              U+2066–U+2069) and the direction marks (U+200E, U+200F,
//	              U+061C), by their code point.
//	\xff          a byte that is not part of valid UTF-8, in hex.
//
// An escape sequence is thus inert: its ESC (or C1 introducer) is shown,
// and the rest of it is plain text. Everything else, including all other
// printable Unicode, is unchanged, so plain text passes through as is.
// The notation is not reversible: a text that contains "^[" literally
// looks like one that contained an ESC, which is harmless, as both are
// plain text on the screen.
package termtext

import (
	"strings"
	"unicode/utf8"
)

// Clean returns s with every control character, invalid UTF-8 byte and
// bidirectional control shown in the package's notation. It returns s
// itself when s needs no change.
func Clean(s string) string {
	i := firstUnsafe(s)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\r' && i+1 < len(s) && s[i+1] == '\n':
				// A CRLF line end: the newline alone ends the line.
			case c == 0x7f:
				b.WriteString("^?")
			case c < 0x20 && c != '\n' && c != '\t':
				b.WriteByte('^')
				b.WriteByte(c + 0x40)
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		case unsafeRune(r):
			b.WriteString("<U+")
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(upperHex[(r>>shift)&0xf])
			}
			b.WriteByte('>')
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

const (
	hex      = "0123456789abcdef"
	upperHex = "0123456789ABCDEF"
)

// firstUnsafe is the index of the first byte of s that Clean must look at
// (len(s) when none): plain printable ASCII, tab and newline are copied as
// they are; valid non-ASCII runes are decoded once here.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return i
		}
		i += size
	}
	return len(s)
}

// unsafeRune reports a non-ASCII code point that Clean shows by its number:
// a C1 control, or one that changes the direction text is drawn in.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls (CSI is U+009B, OSC U+009D)
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c: // LRM, RLM, ALM
		return true
	}
	return false
}

// Stream cleans a text that arrives in pieces (a reply streamed delta by
// delta) as Clean would clean it whole: a multi-byte character split
// between two pieces is shown as that character, not as two bytes that are
// not UTF-8, and a CR at the end of a piece waits for the next one to tell
// a CRLF line end from a lone CR. Each ESC is shown in the piece it comes
// in, so an escape sequence split between pieces is inert too. The zero
// value is ready to use; a Stream is used by one goroutine.
type Stream struct {
	held string // the end of the last piece, not shown yet (at most 3 bytes)
}

// Write returns the clean text of piece that can be shown now; the held
// end of it comes with the next Write or with Flush.
func (s *Stream) Write(piece string) string {
	text := piece
	if s.held != "" {
		text = s.held + piece
	}
	cut := len(text) - heldTail(text)
	s.held = strings.Clone(text[cut:])
	return Clean(text[:cut])
}

// Flush returns the clean text of what Write held back (the stream ended:
// an unfinished character is shown as its bytes, a last CR as ^M) and
// forgets it.
func (s *Stream) Flush() string {
	held := s.held
	s.held = ""
	return Clean(held)
}

// heldTail is how many bytes at the end of text to hold back: a CR, or the
// start of a multi-byte character that the next piece may complete.
func heldTail(text string) int {
	n := len(text)
	if n == 0 {
		return 0
	}
	if text[n-1] == '\r' {
		return 1
	}
	// A character is at most utf8.UTFMax bytes: its start is among the
	// last three when it is incomplete.
	for k := 1; k < utf8.UTFMax && k <= n; k++ {
		c := text[n-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRuneInString(text[n-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}
