//go:build linux

package bench

import (
	"syscall"
	"testing"
)

// BenchmarkPageFault measures the machine, not the harness: the cost of the
// first write to a page of fresh anonymous memory (a minor page fault),
// which every page of heap growth pays once. docs/PERFORMANCE.md prices the
// faults a run counts (drive_minor_faults) with it. Memory is mapped 64 MiB
// at a time and unmapped once written, outside the timing.
func BenchmarkPageFault(b *testing.B) {
	const chunk = 64 << 20
	page := syscall.Getpagesize()
	var m []byte
	off := chunk
	unmap := func() {
		if m != nil {
			if err := syscall.Munmap(m); err != nil {
				b.Fatal(err)
			}
			m = nil
		}
	}
	defer unmap()
	for b.Loop() {
		if off == chunk {
			b.StopTimer()
			unmap()
			var err error
			if m, err = syscall.Mmap(-1, 0, chunk, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE); err != nil {
				b.Fatal(err)
			}
			off = 0
			b.StartTimer()
		}
		m[off] = 1
		off += page
	}
}
