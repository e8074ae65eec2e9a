package rpc

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/agyharness/agyharness/wire"
	"github.com/go-json-experiment/json/jsontext"
)

// TrajectorySummaryOf reads GetAllCascadeTrajectories and decodes the
// summary of one conversation only; ok is false when agy does not list it.
// agy lists every conversation it keeps on disk and every subagent child,
// so decoding the whole answer costs as much as the list is long: this
// finds the conversation's entry by its key and decodes that entry alone.
// When the key cannot be told for certain that way (not listed, written
// with escapes, or twice), the whole answer is decoded, with the same
// result GetAllCascadeTrajectories would give.
func (c *Client) TrajectorySummaryOf(ctx context.Context, conv string) (found TrajectorySummary, present bool, err error) {
	err = c.callRead(ctx, c.cfg.UnaryTimeout, MethodGetAllCascadeTrajectories, Empty{}, func(body io.Reader) error {
		return readList(body, func(data []byte) error {
			// Nothing decoded keeps a slice of data: strings are copied.
			s, ok, rerr := summaryIn(data, conv)
			if rerr == nil {
				found, present = s, ok
			}
			return rerr
		})
	})
	return found, present, err
}

// readList reads an answer of GetAllCascadeTrajectories whole into a
// buffer of listBuffers and hands it to use, which must keep no slice of
// it.
func readList(body io.Reader, use func(data []byte) error) error {
	buf := listBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledList {
			buf.Reset()
			listBuffers.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(body); err != nil {
		return err
	}
	return use(buf.Bytes())
}

// listBuffers hold the answers readList reads, so that a long
// list is read into room already made, not into a buffer grown again (and
// thrown away) on every read. Buffers over maxPooledList are dropped.
var listBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledList = 4 << 20

// summaryIn is conv's entry of a GetAllCascadeTrajectories answer.
func summaryIn(data []byte, conv string) (TrajectorySummary, bool, error) {
	if s, ok := findSummary(data, conv); ok {
		return s, true, nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return TrajectorySummary{}, false, nil
	}
	var all TrajectoriesResponse
	if err := wire.Unmarshal(data, &all); err != nil {
		return TrajectorySummary{}, false, err
	}
	s, ok := all.TrajectorySummaries[conv]
	return s, ok, nil
}

// findSummary finds conv's entry in data without decoding the rest: the
// one place where "conv" is a name (a string followed by a colon, its
// quote not escaped inside another string) with an object for its value.
// Nothing else in the answer is keyed by a conversation id, and a
// conversation id elsewhere (a child's parentConversationId) is a value.
// It reports false whenever that is not certain: an id of other
// characters than letters, digits, '-' and '_' (which could follow a
// closing quote, or need escapes), no such name, or more than one.
func findSummary(data []byte, conv string) (TrajectorySummary, bool) {
	if !plainID(conv) {
		return TrajectorySummary{}, false
	}
	key := make([]byte, 0, len(conv)+2)
	key = append(append(append(key, '"'), conv...), '"')
	find := newKeyFinder(key, data)
	at := -1
	for off := 0; ; {
		i := find.index(data, off)
		if i < 0 {
			break
		}
		off = i + len(key)
		backslashes := 0
		for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 1 {
			continue // an escaped quote, inside a string
		}
		rest := bytes.TrimLeft(data[off:], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue // a value
		}
		if at >= 0 {
			return TrajectorySummary{}, false // twice: the whole answer tells which one counts
		}
		at = len(data) - len(rest) + 1
	}
	if at < 0 {
		return TrajectorySummary{}, false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data[at:]), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if dec.PeekKind() != '{' {
		return TrajectorySummary{}, false
	}
	if err := dec.SkipValue(); err != nil {
		return TrajectorySummary{}, false
	}
	var s TrajectorySummary
	if err := wire.Unmarshal(data[at:at+int(dec.InputOffset())], &s); err != nil {
		return TrajectorySummary{}, false
	}
	return s, true
}

// keyFinder finds a key in a long answer. bytes.Index looks for the key's
// first byte, a quote, and a JSON text has one every few bytes: on agy's
// list of 1,000 conversations it stops so often that it falls back to
// comparing the key at every position (some 200 µs for 350 KB). A keyFinder
// looks instead for the key's byte that is rarest in a sample of the answer
// (a UUID's characters are spread over the others' ids and times) and
// compares the key only where that byte is. Where that byte turns out
// common beyond the sample, it gives the rest of the search to
// bytes.Index, as bytes.Index itself does, so that no answer costs much
// more than bytes.Index would.
type keyFinder struct {
	key []byte
	at  int  // the offset in key of the byte looked for
	c   byte // key[at]
}

// The sample newKeyFinder counts bytes in: keyFinderWindows windows of
// keyFinderWindow bytes spread evenly over the answer (a list in the order
// of its ids has ids of one first character together).
const (
	keyFinderWindows = 4
	keyFinderWindow  = 256
)

// newKeyFinder is a keyFinder for key (not empty) in data.
func newKeyFinder(key, data []byte) keyFinder {
	var seen [256]int
	for w := range keyFinderWindows {
		start := w * len(data) / keyFinderWindows
		for _, b := range data[start:min(len(data), start+keyFinderWindow)] {
			seen[b]++
		}
	}
	f := keyFinder{key: key}
	for j := range key {
		if seen[key[j]] < seen[key[f.at]] {
			f.at = j
		}
	}
	f.c = key[f.at]
	return f
}

// index is the position of the first occurrence of the key in data that
// starts at from or later, or -1: bytes.Index(data[from:], key), plus from
// when found.
func (f keyFinder) index(data []byte, from int) int {
	misses := 0
	for i := from + f.at; i < len(data); i++ {
		o := bytes.IndexByte(data[i:], f.c)
		if o < 0 {
			return -1
		}
		i += o
		if s := i - f.at; s+len(f.key) <= len(data) && bytes.Equal(data[s:s+len(f.key)], f.key) {
			return s
		}
		// Over a miss per 16 bytes looked at: bytes.Index is no slower.
		if misses++; misses > 4+(i-from)/16 {
			if r := bytes.Index(data[i-f.at+1:], f.key); r >= 0 {
				return r + i - f.at + 1
			}
			return -1
		}
	}
	return -1
}

// plainID reports whether id is made of letters, digits, '-' and '_' only
// (agy's conversation ids are UUIDs).
func plainID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}
