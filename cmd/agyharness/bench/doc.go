// Package bench is agyharness's fault campaign (`agyharness bench`): it
// starts in-process fake language servers (rpc/agytest), attaches one
// session per fake on a single actors.Host, drives every session like a
// person would (turns, answers after short random delays, occasional
// interrupts) while injecting faults, and at the end compares every
// session's events with the fakes' ground truth: nothing lost, nothing
// doubled, items in step order, every answer delivered to the prompt it was
// meant for, no goroutine left behind. See docs/RELIABILITY.md.
//
// The same run measures performance (docs/PERFORMANCE.md): latency from a
// fake's frame write to the session's consumer for streaming and poll-only
// sessions (--poll-sessions), frames per second, the harness's CPU per
// frame (exactly its own with --external-fakes, which hosts the fakes in a
// `fakeagy --servers N` process; the drivers then keep no event, only
// samples of the latencies, so the heap is the harness's too), the heap's
// peaks over the run, heap and goroutines per idle session
// (--idle-sessions), and one frame's cost as the trajectory grows. A floor
// run (--floor) reads the same streams with the rpc package alone, no
// harness, so the two CPU figures side by side say what the harness adds;
// with --floor-raw the frames are not decoded either, which leaves the
// transport's cost alone. A long-sessions run (--long-sessions N) measures
// the heap an active session holds after many turns on a long
// conversation (longsessions.go).
package bench
