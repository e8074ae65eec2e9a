package agytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agyharness/agyharness/wire"
)

// fakeStep is one step of a fake trajectory: the typed step the rpc package
// decodes, plus the fields agy sends that the project does not decode
// (extra, merged into the JSON), so the wire looks like the recorded
// fixtures. Guarded by its conversation's mutex.
type fakeStep struct {
	step  wire.Step
	extra map[string]any
	// streamOmitsResponse: agy's streamed DONE copy of a planner step can
	// carry modifiedResponse without response (fixtures/stream_planner_text_done.json).
	streamOmitsResponse bool

	rev                  uint64
	cachedRev            uint64
	fullJSON, streamJSON []byte
	cacheErr             error
	committed            bool
}

// wire returns the step's JSON as GetCascadeTrajectorySteps sends it (full)
// or as a stream frame carries it (without metadata.toolCall and
// plannerResponse.toolCalls).
func (f *fakeStep) wire(streamed bool) []byte {
	if f.cachedRev != f.rev || f.fullJSON == nil {
		f.fullJSON, f.cacheErr = marshalStep(f.step, f.extra)
		f.streamJSON = nil
		f.cachedRev = f.rev
	}
	if !streamed {
		return f.fullJSON
	}
	if f.streamJSON == nil {
		s := f.step
		s.Metadata.ToolCall = nil
		if f.step.Type == wire.StepGeneric && f.step.Metadata.ToolCall != nil {
			// Streamed GENERIC copies keep the call's id and name
			// (fixtures/stream_generic_done.json); others drop it.
			s.Metadata.ToolCall = &wire.ToolCall{ID: f.step.Metadata.ToolCall.ID, Name: f.step.Metadata.ToolCall.Name}
		}
		if s.PlannerResponse != nil {
			pr := *s.PlannerResponse
			pr.ToolCalls = nil
			if f.streamOmitsResponse {
				pr.Response = ""
			}
			s.PlannerResponse = &pr
		}
		f.streamJSON, f.cacheErr = marshalStep(s, f.extra)
	}
	return f.streamJSON
}

// decoded returns the step as a client decodes it (Raw set).
func (f *fakeStep) decoded() wire.Step {
	var s wire.Step
	if err := json.Unmarshal(f.wire(false), &s); err != nil {
		panic(fmt.Sprintf("agytest: step does not decode: %v", err)) // a bug in the fake
	}
	return s
}

func marshalStep(s wire.Step, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	mergeJSON(m, extra)
	return json.Marshal(m)
}

// mergeJSON merges src into dst, recursing into objects present in both.
func mergeJSON(dst, src map[string]any) {
	for k, v := range src {
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			mergeJSON(dm, sm)
			continue
		}
		dst[k] = deepCopyJSON(v)
	}
}

func deepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopyJSON(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = deepCopyJSON(x)
		}
		return l
	default:
		return v
	}
}

// setExtra sets a nested extra field: setExtra("metadata.argumentsOrder", v).
func (f *fakeStep) setExtra(path string, v any) {
	if f.extra == nil {
		f.extra = map[string]any{}
	}
	setPath(f.extra, path, v)
}

func setPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// clone deep-copies a step (for the retry of a timed-out prompt).
func (f *fakeStep) clone() *fakeStep {
	b, err := json.Marshal(f.step)
	if err != nil {
		panic(fmt.Sprintf("agytest: clone step: %v", err))
	}
	c := &fakeStep{}
	if err := json.Unmarshal(b, &c.step); err != nil {
		panic(fmt.Sprintf("agytest: clone step: %v", err))
	}
	c.step.Raw = nil
	if f.extra != nil {
		c.extra = deepCopyJSON(f.extra).(map[string]any)
	}
	return c
}

// timestamp formats t as agy's proto3 JSON timestamps (nanoseconds, Z).
func timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// rngFor derives a generator from the seed and a label, so every turn,
// conversation and stream draws from its own reproducible sequence whatever
// the goroutine interleaving.
func rngFor(seed int64, label ...string) *rand.Rand {
	h := fnv.New64a()
	for _, l := range label {
		_, _ = h.Write([]byte(l))
		_, _ = h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// uuidFrom draws a version-4-shaped UUID from r.
func uuidFrom(r *rand.Rand) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// shortID draws an 8-character tool call id, like agy's "cbawg2v8".
func shortID(r *rand.Rand) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [8]byte
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b[:])
}

// chunk splits text into n pieces of near-equal rune length (n<=0: about
// one piece per 24 bytes). Pieces never split a rune.
func chunk(text string, n int) []string {
	if text == "" {
		return nil
	}
	runes := utf8.RuneCountInString(text)
	if n <= 0 {
		n = (len(text) + 23) / 24
	}
	if n > runes {
		n = runes
	}
	if n < 1 {
		n = 1
	}
	out := make([]string, 0, n)
	rs := []rune(text)
	for i := 0; i < n; i++ {
		lo, hi := i*len(rs)/n, (i+1)*len(rs)/n
		out = append(out, string(rs[lo:hi]))
	}
	return out
}
