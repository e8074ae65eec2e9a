package rpc

import (
	"bytes"
	"context"
	"hash/maphash"
	"io"
	"iter"
	"strings"
	"unicode/utf8"

	"github.com/agyharness/agyharness/wire"
	"github.com/go-json-experiment/json/jsontext"
)

// SummaryCache keeps what a caller derived from each conversation agy
// listed at the last ReadSummaries (a T for each), with a print of the
// entry's bytes, so that an entry read again unchanged is not decoded
// again. agy's list holds every conversation it keeps on disk and every
// subagent child, while between two reads only the few that ran change:
// decoding the whole list each time costs as much as it is long (and
// leaves as much garbage). The zero value is empty. It is not safe for
// concurrent use: one reader at a time owns it.
type SummaryCache[T any] struct {
	entries map[string]*cachedSummary[T]
	gen     uint64 // the read that last listed an entry
	seed    maphash.Seed
	seeded  bool
	// answer is the print of the last answer read without error (valid
	// set): an answer the same to the byte holds what it held, and is not
	// scanned again (agy's list at rest, read by a safety read).
	answer uint64
	valid  bool
}

type cachedSummary[T any] struct {
	v      T
	sum    uint64
	summed bool // sum is the entry's print (false: derived from a whole decode)
	gen    uint64
}

// Len is how many conversations the last read listed.
func (l *SummaryCache[T]) Len() int { return len(l.entries) }

// Get is what was derived from conv's summary at the last read; false when
// agy did not list it.
func (l *SummaryCache[T]) Get(conv string) (T, bool) {
	if e, ok := l.entries[conv]; ok {
		return e.v, true
	}
	var zero T
	return zero, false
}

// All yields each conversation the last read listed, with what was
// derived from its summary, in no order.
func (l *SummaryCache[T]) All() iter.Seq2[string, T] {
	return func(yield func(string, T) bool) {
		for id, e := range l.entries {
			if !yield(id, e.v) {
				return
			}
		}
	}
}

// ReadSummaries reads GetAllCascadeTrajectories into l: for each listed
// conversation whose entry is new or changed since l's last read, keep
// derives its T from the summary, as GetAllCascadeTrajectories decodes it;
// an entry no longer listed leaves l. On an error l is left empty (the next
// read derives every entry again). What l holds after a read is what
// deriving each entry of GetAllCascadeTrajectories' answer would give
// (TestSummaryCacheMatchesTheWholeDecode), short of a collision of two
// entries' 64-bit prints (or of two answers': an answer the same as the
// last one is not read again).
func ReadSummaries[T any](ctx context.Context, c *Client, l *SummaryCache[T], keep func(conv string, s TrajectorySummary) T) error {
	return c.callRead(ctx, c.cfg.UnaryTimeout, MethodGetAllCascadeTrajectories, Empty{}, func(body io.Reader) error {
		err := readList(body, func(data []byte) error {
			// Nothing kept slices data: keep gets decoded strings.
			return l.update(data, keep)
		})
		if err != nil {
			l.entries, l.valid = nil, false // the answer may have been cut short
		}
		return err
	})
}

// update takes one answer: not at all when it is the last one again, to
// the byte; else entry by entry when its shape is certain (see scan), else
// by decoding it whole.
func (l *SummaryCache[T]) update(data []byte, keep func(string, TrajectorySummary) T) error {
	if !l.seeded {
		l.seed, l.seeded = maphash.MakeSeed(), true
	}
	answer := maphash.Bytes(l.seed, data)
	if l.valid && answer == l.answer {
		return nil // the last answer again: what it gave stands
	}
	l.valid = false
	err := l.derive(data, keep)
	l.answer, l.valid = answer, err == nil
	return err
}

// derive takes an answer other than the last one.
func (l *SummaryCache[T]) derive(data []byte, keep func(string, TrajectorySummary) T) error {
	l.gen++
	if l.scan(data, keep) {
		for id, e := range l.entries {
			if e.gen != l.gen {
				delete(l.entries, id)
			}
		}
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}") // as call reads an empty answer
	}
	var all TrajectoriesResponse
	if err := wire.Unmarshal(data, &all); err != nil {
		l.entries = nil
		return err
	}
	l.entries = make(map[string]*cachedSummary[T], len(all.TrajectorySummaries))
	for id, s := range all.TrajectorySummaries {
		l.entries[id] = &cachedSummary[T]{v: keep(id, s), gen: l.gen}
	}
	return nil
}

// listedName is the answer's one member the whole decode reads.
const listedName = "trajectorySummaries"

// scan updates l entry by entry and reports true when data is an object
// whose only member matching "trajectorySummaries" (as the whole decode
// matches names: any case) is that name exactly, once, holding an object
// of entries each named once, without escapes, with an object for its
// value. Then each entry decoded alone gives what the whole decode gives
// it. Anything else reports false (l may be half updated: the whole
// decode then replaces it).
func (l *SummaryCache[T]) scan(data []byte, keep func(string, TrajectorySummary) T) bool {
	// A bytes.Buffer is read in place.
	dec := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	listed := false
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil || bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		switch n := string(name[1 : len(name)-1]); {
		case n == listedName && !listed && dec.PeekKind() == '{':
			listed = true
			if !l.scanEntries(dec, keep) {
				return false
			}
		case strings.EqualFold(n, listedName):
			return false
		default:
			if dec.SkipValue() != nil {
				return false
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the object's end
		return false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return false // more than one value: the whole decode says what is wrong
	}
	if !listed {
		l.entries = nil
	}
	return true
}

// scanEntries reads the object of entries, dec before its '{'.
func (l *SummaryCache[T]) scanEntries(dec *jsontext.Decoder, keep func(string, TrajectorySummary) T) bool {
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	if l.entries == nil {
		l.entries = make(map[string]*cachedSummary[T])
	}
	var id []byte
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil || bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		// A value read is the decoder's until its next call.
		id = append(id[:0], name[1:len(name)-1]...)
		if !utf8.Valid(id) {
			return false // the whole decode would replace what is invalid
		}
		if dec.PeekKind() != '{' {
			return false
		}
		value, err := dec.ReadValue()
		if err != nil {
			return false
		}
		sum := maphash.Bytes(l.seed, value)
		e, ok := l.entries[string(id)]
		var conv string
		switch {
		case !ok:
			conv = string(id)
			e = &cachedSummary[T]{}
			l.entries[conv] = e
		case e.gen == l.gen:
			return false // named twice: the whole decode tells which counts
		}
		if !e.summed || e.sum != sum {
			var s TrajectorySummary
			if wire.Unmarshal(value, &s) != nil {
				return false
			}
			if conv == "" {
				conv = string(id)
			}
			e.v, e.sum, e.summed = keep(conv, s), sum, true
		}
		e.gen = l.gen
	}
	_, err := dec.ReadToken()
	return err == nil
}
