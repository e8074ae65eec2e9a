// Package stepsfilter finds, as a GetCascadeTrajectorySteps answer is read,
// the elements of its steps array that are byte for byte the last read's,
// and hands the JSON decoder an empty object in place of each.
//
// Why: json v2 must scan a value to hand it over, so without the filter
// telling an unchanged step from the decoder costs a scan of the whole
// trajectory after every turn; with it, a compare
// (BenchmarkDecodeSnapshot/v2-reuse-unchanged in package rpc;
// docs/PERFORMANCE.md).
package stepsfilter

import (
	"bytes"
	"errors"
	"io"
	"sort"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A Filter, between the answer and the decoder, compares each element of
// the steps array with the last read's step of the same index as the bytes
// come, and hands the decoder an empty object (Placeholder) in place of each
// element that is equal, noting its index (Reused). The decoder then scans
// two bytes, and the caller takes the step from the last read; only
// elements that differ are scanned, by the filter and by the decoder.
//
// The filter follows the answer's structure only as far as it must to find
// the elements of the steps array: strings, nesting, member names at the
// top. It replaces nothing it is not sure of:
//   - only elements of the first "steps" member of a top-level object (the
//     name compared as the decoder compares it, case-insensitively), and
//     only while that member has come before any name with an escape in it;
//   - only an element equal to the last read's, whole: a complete JSON
//     object, so that its end is where the decoder would find it.
//
// Up to the first byte that is not JSON, the filter's view of the structure
// is exact, and the elements it replaces are values in their place, so the
// decoder fails on what the filter passes on exactly when it would fail on
// the answer. Errors are placed in the answer, not in what the decoder read
// (InputOffset, PlaceError). Past the last element that could match (the array ends, or
// the last read has no step of that index), everything passes unread.
type Filter struct {
	r    io.Reader
	n    int                // steps in the last read
	prev func(i int) []byte // the JSON of the last read's step i

	buf  []byte // read from r: buf[i:] is not yet scanned
	i    int
	rerr error // r's error, once buf is used up

	out []byte // scanned, for the decoder: out[o:] is not yet read
	o   int

	reused  []bool  // per index of the steps array: replaced by {}
	shifts  []shift // where what the decoder reads is shorter than the answer
	outRead int64   // bytes handed to the decoder so far

	// Where the scan is in the answer's structure.
	passing   bool   // nothing more can be replaced: pass the rest on unread
	depth     int    // of nesting, outside strings
	inString  bool   // in a string (a name or a value)
	escaped   bool   // the last byte in a string was an unescaped '\'
	isName    bool   // the string being scanned is a member name of the top object
	name      []byte // the member name being scanned, up to maxNameBytes and one piece more
	nameSteps bool   // the last member name of the top object was steps
	valueNext bool   // a ':' after steps came: its value is next
	expectKey bool   // at the top object's level, a member name is next
	steps     bool   // in the steps array (its elements are at depth 2)
	elemNext  bool   // in the steps array, an element (or its end) is next
	elem      int    // index of the current element of the steps array
	match     int    // bytes of prev(elem) matched; -1 when not matching
}

// Placeholder is what the decoder reads for an element equal to the last
// read's: an object, as steps are, so that what follows it reads (and
// fails) as it would after the element.
const Placeholder = "{}"

// shift records a replacement: from output offset at on, the answer is
// removed bytes further on than what the decoder read.
type shift struct {
	at, removed int64
}

// filterBuffer is the most of the answer the filter reads at a time.
const filterBuffer = 32 << 10

// filterBuffers holds the filters' buffers between reads: a session reads
// its trajectory after every turn, and a buffer is dear next to a short
// answer. A buffer is made the size of the last read (as the answer is
// likely to be), up to filterBuffer, when the pool has none as large: most
// sessions' trajectories are short, and a pool keeps what it holds only
// until the next collection or two.
var filterBuffers sync.Pool

type filterScratch struct {
	buf, out []byte
	shifts   []shift
}

// New returns a Filter of r, the body of an answer, against the last read
// of the same window: n steps, the JSON of step i prev(i).
func New(r io.Reader, n int, prev func(i int) []byte) *Filter {
	size := 512 // the answer's size, if it is the last read's, up to filterBuffer
	for i := range n {
		if size += len(prev(i)) + 1; size >= filterBuffer {
			size = filterBuffer
			break
		}
	}
	s, _ := filterBuffers.Get().(*filterScratch)
	if s == nil {
		s = new(filterScratch)
	}
	if cap(s.buf) < size {
		s.buf = make([]byte, size)
	}
	return &Filter{r: r, n: n, prev: prev, reused: make([]bool, n), match: -1,
		buf: s.buf[:0], out: s.out[:0], shifts: s.shifts[:0]}
}

// Release gives the filter's buffers back for another read. The filter
// must not be read again. A nil Filter is a no-op.
func (f *Filter) Release() {
	if f == nil {
		return
	}
	out := f.out[:0]
	if cap(out) > 2*filterBuffer {
		// It held a long step that differed near its end (what matched
		// is passed on at once): not worth keeping.
		out = nil
	}
	filterBuffers.Put(&filterScratch{buf: f.buf[:0], out: out, shifts: f.shifts[:0]})
	f.buf, f.out, f.shifts, f.i, f.o = nil, nil, nil, 0, 0
}

// Reused reports whether element i of the first steps array was replaced
// by Placeholder, standing for the last read's step i. A nil Filter replaced
// nothing.
func (f *Filter) Reused(i int64) bool {
	return f != nil && i >= 0 && i < int64(len(f.reused)) && f.reused[i]
}

// InputOffset maps an offset in what the decoder read to the same place in
// the answer. A nil Filter replaced nothing.
func (f *Filter) InputOffset(out int64) int64 {
	if f == nil {
		return out
	}
	n := sort.Search(len(f.shifts), func(k int) bool { return f.shifts[k].at > out })
	if n == 0 {
		return out
	}
	return out + f.shifts[n-1].removed
}

// Read hands the decoder the answer, each element equal to the last read's
// replaced by Placeholder.
func (f *Filter) Read(p []byte) (int, error) {
	for f.o == len(f.out) {
		f.out, f.o = f.out[:0], 0
		if f.i == len(f.buf) {
			if f.rerr != nil {
				if f.match >= 0 {
					// The answer ended inside an element being matched:
					// pass on what matched, for the decoder to fail on.
					f.out = append(f.out, f.prev(f.elem)[:f.match]...)
					f.match = -1
					continue
				}
				return 0, f.rerr
			}
			if f.passing {
				n, err := f.r.Read(p)
				f.outRead += int64(n)
				return n, err
			}
			n, err := f.r.Read(f.buf[:cap(f.buf)])
			f.buf, f.i, f.rerr = f.buf[:n], 0, err
			if n == 0 && err == nil {
				return 0, nil
			}
		}
		f.scan()
	}
	n := copy(p, f.out[f.o:])
	f.o += n
	f.outRead += int64(n)
	return n, nil
}

// scan takes what it can of buf[i:] into out: replaced elements as {}, the
// rest as it is.
func (f *Filter) scan() {
	for f.i < len(f.buf) {
		if f.match >= 0 {
			f.matchMore()
			continue
		}
		if f.passing {
			f.out = append(f.out, f.buf[f.i:]...)
			f.i = len(f.buf)
			return
		}
		start := f.i
		f.i += f.structure(f.buf[f.i:], true)
		f.out = append(f.out, f.buf[start:f.i]...)
	}
}

// matchMore compares what came of the current element with prev's.
func (f *Filter) matchMore() {
	raw := f.prev(f.elem)
	in := f.buf[f.i:]
	n := min(len(in), len(raw)-f.match)
	k := commonPrefix(in[:n], raw[f.match:f.match+n])
	f.i += k
	f.match += k
	switch {
	case f.match == len(raw): // all of it: the decoder reads {}
		f.reused[f.elem] = true
		end := f.outRead + int64(len(f.out)-f.o+len(Placeholder))
		removed := int64(len(raw) - len(Placeholder))
		if len(f.shifts) > 0 {
			removed += f.shifts[len(f.shifts)-1].removed
		}
		f.shifts = append(f.shifts, shift{at: end, removed: removed})
		f.out = append(f.out, Placeholder...)
		f.match = -1
	case k < n: // it differs: pass on what matched, and scan the element
		matched := raw[:f.match]
		f.match = -1
		f.out = append(f.out, matched...)
		f.structure(matched, false)
	}
}

// commonPrefix is the length of what a and b (of one length) begin with.
func commonPrefix(a, b []byte) int {
	if bytes.Equal(a, b) {
		return len(a)
	}
	for len(a) > 64 {
		h := len(a) / 2
		if !bytes.Equal(a[:h], b[:h]) {
			a, b = a[:h], b[:h]
			continue
		}
		return h + commonPrefix(a[h:], b[h:])
	}
	for k := range a {
		if a[k] != b[k] {
			return k
		}
	}
	return len(a)
}

// structure follows the answer's structure over b, and returns how many of
// its bytes it went over: all of them, or, when matching is allowed, the
// bytes before an element that may be the last read's (f.match is then 0),
// or before what passes on unread (f.passing).
func (f *Filter) structure(b []byte, matching bool) int {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if f.inString {
			if f.escaped {
				f.escaped = false
				continue
			}
			j := i // the next quote or backslash
			for j < len(b) && b[j] != '"' && b[j] != '\\' {
				j++
			}
			if f.isName && len(f.name) <= maxNameBytes {
				f.name = append(f.name, b[i:j]...)
			}
			if j == len(b) {
				return len(b)
			}
			i = j
			if b[j] == '\\' {
				if f.isName {
					f.passing = true // a name with an escape: not compared here
					return i
				}
				f.escaped = true
				continue
			}
			f.inString = false
			if f.isName {
				f.isName = false
				f.nameSteps = len(f.name) <= maxNameBytes && bytes.EqualFold(f.name, []byte("steps"))
			}
			continue
		}
		if isBlank(c) {
			continue
		}
		if f.elemNext && c != ']' {
			f.elemNext = false
			if f.elem >= f.n {
				f.passing = true // the last read has no step of this index
				return i
			}
			if raw := f.prev(f.elem); matching && c == '{' && len(raw) > len(Placeholder) && raw[0] == c {
				f.match = 0
				return i
			}
		}
		if f.valueNext {
			f.valueNext = false
			if c != '[' {
				f.passing = true // steps is not an array: leave it to the decoder
				return i
			}
			f.depth++
			f.steps, f.elemNext, f.elem = true, true, 0
			continue
		}
		switch c {
		case '"':
			f.inString = true
			if f.depth == 1 && f.expectKey {
				f.isName, f.name = true, f.name[:0]
			}
		case '{', '[':
			if f.depth == 0 && c == '[' {
				f.passing = true // not an object
				return i
			}
			f.depth++
			if f.depth == 1 {
				f.expectKey = true
			}
		case '}', ']':
			f.depth--
			if f.depth <= 0 || f.steps && f.depth == 1 {
				f.passing = true // the answer, or the steps array, ended
				return i + 1
			}
		case ',':
			switch {
			case f.depth == 1:
				f.expectKey = true
			case f.depth == 2 && f.steps:
				f.elem++
				f.elemNext = true
			}
		case ':':
			if f.depth == 1 {
				f.expectKey = false
				f.valueNext = f.nameSteps
			}
		default:
			if f.depth == 0 {
				f.passing = true // not an object
				return i
			}
		}
	}
	return len(b)
}

// maxNameBytes bounds the member names compared with steps: five runes of
// at most three bytes each (U+212A, the Kelvin sign, folds to k).
const maxNameBytes = 15

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// PlaceError moves the byte offset of a decoding error from what the
// decoder read to the answer. A nil Filter replaced nothing.
func (f *Filter) PlaceError(err error) {
	if f == nil {
		return
	}
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		se.ByteOffset = f.InputOffset(se.ByteOffset)
	}
	if se, ok := errors.AsType[*jsonv2.SemanticError](err); ok {
		se.ByteOffset = f.InputOffset(se.ByteOffset)
	}
}
