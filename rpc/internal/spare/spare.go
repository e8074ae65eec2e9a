// Package spare keeps a few buffers given back, for later reads to reuse.
//
// Why: a stream frame read into the buffer of a frame released before it
// costs less CPU than one read into new memory
// (BenchmarkStreamTransport/pace=0s/client in package rpc, with and without
// StreamFrame.Release; docs/PERFORMANCE.md).
package spare

// Max is the largest buffer kept: what an idle stream holds stays small.
const Max = 32 << 10

// Buffers holds up to the capacity it was made with. The zero Buffers (nil)
// holds none. It is safe for concurrent use.
type Buffers chan []byte

// New returns Buffers that hold up to n buffers.
func New(n int) Buffers { return make(Buffers, n) }

// Get returns a buffer given back, empty, or nil when there is none.
func (b Buffers) Get() []byte {
	select {
	case buf := <-b:
		return buf[:0]
	default:
		return nil
	}
}

// Put gives buf back, unless it is larger than Max or enough are held.
// Nothing may use buf afterwards.
func (b Buffers) Put(buf []byte) {
	if buf == nil || cap(buf) > Max {
		return
	}
	select {
	case b <- buf:
	default:
	}
}
