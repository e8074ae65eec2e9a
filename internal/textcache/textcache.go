// Package textcache decodes the JSON strings of texts that grow from one
// value to the next, unquoting only what each value adds to the one before,
// and hands out views of the decoded text instead of copies.
//
// Why: a live planner step comes again in every stream frame with all its
// text so far; decoding only the added bytes halves a frame's decode
// (BenchmarkDecodeFrame/stream against BenchmarkDecodeFrame/v2 in package
// rpc), and handing out views instead of a copy of the whole text per frame
// lowers the CPU of reading a stream (BenchmarkStreamTransport/*/client in
// package rpc, views against copies; docs/PERFORMANCE.md).
package textcache

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// Slots is how many texts a Cache follows at once: the planner's thinking,
// modifiedResponse and response.
const Slots = 3

// MinText is the length of JSON below which a text is decoded plainly and
// not remembered: copying it costs less than remembering it.
const MinText = 512

// Cache remembers, for each slot, the last long value it decoded: its JSON
// and its text. When the next value of the slot starts with the same JSON,
// only the bytes after them are unquoted and appended to the text. Where
// the decoding of the added bytes could depend on what came before them
// (they start inside a character cut short, or with the second half of a
// surrogate pair), the value is decoded whole. The result is always what a
// whole decode gives (FuzzTextCacheDecodesAsDecodeFrame in package rpc).
//
// The texts handed out are views of an append-only buffer: a string holds
// the first n bytes of it, and nothing writes to those bytes again (an
// append writes after them, or into a new array once it is full; a slot
// whose next value is not an extension gets a new buffer). So a text stays
// valid, and unchanged, for as long as anyone holds it. A slot is extended
// once per frame at most (between two calls of Commit): a second value of
// the same slot is decoded whole, so that no append writes where a text of
// the same frame lies.
//
// The zero Cache is empty and ready. A Cache is for one goroutine.
type Cache struct {
	slots [Slots]slot
}

type slot struct {
	// Remembered from an earlier frame: raw, a copy of the value's JSON
	// without its closing quote; text, its decoding.
	raw  []byte
	text []byte

	// From the frame being decoded: the last long value of this slot
	// (pendingRaw lies in the caller's buffer), its decoding, and whether
	// it extends raw.
	pending     bool
	extends     bool
	pendingRaw  []byte
	pendingText []byte
}

// Decode returns the text of raw, a JSON string with its quotes: the latest
// value of the text in slot (0 to Slots-1). raw must stay unchanged until
// Commit, which remembers the frame's values. The string is never written
// to again.
func (c *Cache) Decode(slot int, raw []byte) string {
	s := &c.slots[slot]
	inner := raw[:len(raw)-1] // without the closing quote
	if !s.pending && len(s.raw) > 0 && len(s.raw) <= len(inner) && bytes.Equal(inner[:len(s.raw)], s.raw) {
		if text, ok := appendUnquoted(s.text, inner[len(s.raw):]); ok {
			s.pending, s.extends, s.pendingRaw, s.pendingText = true, true, inner, text
			return unsafe.String(unsafe.SliceData(text), len(text))
		}
	}
	text, err := jsontext.AppendUnquote(make([]byte, 0, len(raw)), raw)
	// A text with invalid UTF-8 (replaced, as a whole decode replaces it)
	// or a short one is right, but not remembered.
	if err == nil && len(raw) >= MinText {
		s.pending, s.extends, s.pendingRaw, s.pendingText = true, false, inner, text
	}
	return unsafe.String(unsafe.SliceData(text), len(text))
}

// Commit remembers the last long value of each slot decoded since the last
// Commit, copying its JSON out of the caller's buffer (only what it adds,
// when it extends the value remembered).
func (c *Cache) Commit() {
	for i := range c.slots {
		s := &c.slots[i]
		if !s.pending {
			continue
		}
		if s.extends {
			s.raw = append(s.raw, s.pendingRaw[len(s.raw):]...)
		} else {
			s.raw = append(s.raw[:0], s.pendingRaw...)
		}
		s.text = s.pendingText
		s.pending, s.pendingRaw, s.pendingText = false, nil, nil
	}
}

// Reset forgets every text, so that an idle stream holds none.
func (c *Cache) Reset() { *c = Cache{} }

// appendUnquoted appends the decoding of suffix, JSON string content that
// continues a value, to text. It says false where a whole decode must
// decide: a byte that is not valid UTF-8, a \u escape of a surrogate that is
// not a whole pair, anything that is not valid JSON.
func appendUnquoted(text, suffix []byte) ([]byte, bool) {
	for len(suffix) > 0 {
		i := 0
		for i < len(suffix) && suffix[i] != '\\' && suffix[i] >= 0x20 && suffix[i] < utf8.RuneSelf && suffix[i] != '"' {
			i++
		}
		text = append(text, suffix[:i]...)
		suffix = suffix[i:]
		if len(suffix) == 0 {
			break
		}
		if c := suffix[0]; c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(suffix)
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			text = append(text, suffix[:n]...)
			suffix = suffix[n:]
			continue
		}
		if suffix[0] != '\\' || len(suffix) < 2 {
			return nil, false
		}
		switch c := suffix[1]; c {
		case '"', '\\', '/':
			text = append(text, c)
		case 'b':
			text = append(text, '\b')
		case 'f':
			text = append(text, '\f')
		case 'n':
			text = append(text, '\n')
		case 'r':
			text = append(text, '\r')
		case 't':
			text = append(text, '\t')
		case 'u':
			r, ok := hex4(suffix[2:])
			n := 6
			if !ok {
				return nil, false
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xdc00 || len(suffix) < 12 || suffix[6] != '\\' || suffix[7] != 'u' {
					return nil, false
				}
				lo, ok := hex4(suffix[8:])
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return nil, false
				}
				r, n = utf16.DecodeRune(r, lo), 12
			}
			text = utf8.AppendRune(text, r)
			suffix = suffix[n:]
			continue
		default:
			return nil, false
		}
		suffix = suffix[2:]
	}
	return text, true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
