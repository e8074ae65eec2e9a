package rpc

import (
	"bytes"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A live planner step comes again in every frame with all its text so far:
// a 4 KiB answer is decoded, unquoted and copied into a new string a hundred
// times while it streams, though each frame adds a few dozen bytes. A
// Stream's textCache remembers, for each of the planner's text fields
// (thinking, modifiedResponse, response), the last long value it decoded.
// When the next frame's value starts with the same JSON bytes, only the
// bytes after them are unquoted, and appended to the text decoded before.
//
// The texts handed out are views of an append-only buffer: a string holds
// the first n bytes of it, and nothing writes to those bytes again (an
// append writes after them, or into a new array once it is full; a field
// whose next value is not an extension gets a new buffer). So a text stays
// valid, and unchanged, for as long as anyone holds it, whatever the stream
// decodes afterwards, and after its frame is released.
//
// The result is what a plain decode gives, byte for byte
// (FuzzTextCacheDecodesAsDecodeFrame); only the work differs. Where the
// decoding of the added bytes could depend on what came before them (they
// start inside a character cut short, or with the second half of a
// surrogate pair), appendUnquoted refuses them and the value is decoded
// whole: it decodes a character or an escape only when all of it is in the
// added bytes. A value is extended once per frame at most: a second value
// of the same field in a frame (two steps, a repeated member) is decoded
// whole, so that no append writes where a text of the same frame lies.
type textCache struct {
	slots [plannerTexts]textSlot
}

// The planner's text fields, each with a slot of its own.
const (
	slotThinking = iota
	slotModifiedResponse
	slotResponse
	plannerTexts
)

// minCachedText is the length of JSON below which a text is decoded plainly
// and not remembered: copying it costs less than remembering it.
const minCachedText = 512

type textSlot struct {
	// Remembered from an earlier frame: raw, a copy of the value's JSON
	// without its closing quote; text, its decoding.
	raw  []byte
	text []byte

	// From the frame being decoded: the last long value of this field
	// (pendingRaw lies in the frame's payload), its decoding, and whether
	// it extends raw.
	pending     bool
	extends     bool
	pendingRaw  []byte
	pendingText []byte
}

// decode returns the text of the JSON string value raw, a value of field
// slot of the frame being decoded, which lies in the frame's payload. The
// value is remembered when the frame is done (commit).
func (c *textCache) decode(slot int, raw []byte) string {
	s := &c.slots[slot]
	inner := raw[:len(raw)-1] // without the closing quote
	if !s.pending && len(s.raw) > 0 && len(s.raw) <= len(inner) && bytes.Equal(inner[:len(s.raw)], s.raw) {
		if text, ok := appendUnquoted(s.text, inner[len(s.raw):]); ok {
			s.pending, s.extends, s.pendingRaw, s.pendingText = true, true, inner, text
			return unsafe.String(unsafe.SliceData(text), len(text))
		}
	}
	text, err := jsontext.AppendUnquote(make([]byte, 0, len(raw)), raw)
	// A text with invalid UTF-8 (replaced, as a plain decode replaces it)
	// or a short one is right, but not remembered.
	if err == nil && len(raw) >= minCachedText {
		s.pending, s.extends, s.pendingRaw, s.pendingText = true, false, inner, text
	}
	return unsafe.String(unsafe.SliceData(text), len(text))
}

// commit remembers the last long value of each field in the frame just
// decoded, copying its JSON out of the frame's payload (only what it adds,
// when it extends the value remembered).
func (c *textCache) commit() {
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

// reset forgets every remembered text, so that an idle stream holds none.
func (c *textCache) reset() { *c = textCache{} }

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

// streamOptions are the options a stream decodes its frames with:
// unmarshal's, with each planner text that is a JSON string left undecoded
// (PlannerResponse.raw, a view of the payload) for the stream's textCache
// to decode after the frame (frameDecoder.decode). They are one set for
// every stream, so that json v2's cache of which unmarshaler serves which
// type is one warm cache: a set of options per stream (the cache reached
// from the functions) cost 5 µs per frame in lookups in 200 cold caches.
var streamOptions = jsonv2.JoinOptions(decodeOptions, jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
	keepRawStep,
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, p *PlannerResponse) error {
		var raw [plannerTexts][]byte
		if p.raw != nil {
			raw = *p.raw // a repeated member: merged into what came before
		}
		w := plannerWire{
			Thinking:         rawText{p.Thinking, raw[slotThinking]},
			ModifiedResponse: rawText{p.ModifiedResponse, raw[slotModifiedResponse]},
			Response:         rawText{p.Response, raw[slotResponse]},
			MessageID:        p.MessageID,
			StopReason:       p.StopReason,
			ToolCalls:        p.ToolCalls,
		}
		if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
			return err
		}
		*p = PlannerResponse{
			Thinking:         w.Thinking.s,
			ModifiedResponse: w.ModifiedResponse.s,
			Response:         w.Response.s,
			MessageID:        w.MessageID,
			StopReason:       w.StopReason,
			ToolCalls:        w.ToolCalls,
		}
		if w.Thinking.raw != nil || w.ModifiedResponse.raw != nil || w.Response.raw != nil {
			p.raw = &[plannerTexts][]byte{w.Thinking.raw, w.ModifiedResponse.raw, w.Response.raw}
		}
		return nil
	}),
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, t *rawText) error {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if v[0] == '"' {
			// A view of the payload (the decoder reads from memory, as
			// keepRaw relies on).
			t.s, t.raw = "", v
			return nil
		}
		// null (which leaves the text as it is) or not a string: as a plain
		// decode does.
		return placeError(dec, v, jsonv2.Unmarshal(v, &t.s, decodeOptions))
	}),
)))

// plannerWire is PlannerResponse as a stream decodes it: the same members
// (TestPlannerWireMatchesPlannerResponse), the texts left undecoded.
type plannerWire struct {
	Thinking         rawText    `json:"thinking,omitempty"`
	ModifiedResponse rawText    `json:"modifiedResponse,omitempty"`
	Response         rawText    `json:"response,omitempty"`
	MessageID        string     `json:"messageId,omitempty"`
	StopReason       string     `json:"stopReason,omitempty"`
	ToolCalls        []ToolCall `json:"toolCalls,omitempty"`
}

// rawText is a planner text being decoded: the JSON string raw, not yet
// decoded, or (raw nil) the text s.
type rawText struct {
	s   string
	raw []byte
}

// resolve decodes the planner texts a frame's steps left undecoded, through
// c, in the order of the steps (the last value of a field in the frame is
// the one remembered). payload is the frame's: every text left undecoded
// must lie in it (as keepRaw, this relies on the decoder reading from
// memory).
func (c *textCache) resolve(steps []Step, payload []byte) error {
	for i := range steps {
		p := steps[i].PlannerResponse
		if p == nil || p.raw == nil {
			continue
		}
		fields := [plannerTexts]*string{&p.Thinking, &p.ModifiedResponse, &p.Response}
		for slot, raw := range p.raw {
			if raw == nil {
				continue
			}
			if !within(raw, payload) {
				return errors.New("rpc: a planner text was not decoded from memory") // cannot happen with jsonv2.Unmarshal
			}
			*fields[slot] = c.decode(slot, raw)
		}
		p.raw = nil
	}
	return nil
}

// within says whether b lies in buf.
func within(b, buf []byte) bool {
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(buf))
}
