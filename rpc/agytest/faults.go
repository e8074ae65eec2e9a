package agytest

import (
	"maps"
	"time"

	"github.com/agyharness/agyharness/rpc"
)

// FaultKind names a fault the server can inject.
type FaultKind int

// The faults. Each is armed by InjectFault and fires on the next matching
// occasion; FaultsInjected counts the ones that fired.
const (
	// FaultDropStreamAfter resets the next stream to send a frame after it
	// has sent N more frames (N=0: before its next frame), as a dying
	// connection does: no end-of-stream envelope.
	FaultDropStreamAfter FaultKind = iota + 1
	// FaultRestart restarts the server on a new port at once (see Restart).
	FaultRestart
	// FaultBurst5xx fails the next Count calls (default 1) of Method (""
	// for any) with 503 unavailable or 500 internal (seeded choice);
	// streams get the error in their end-of-stream envelope.
	FaultBurst5xx
	// FaultSlow delays the next Count calls of Method ("" for any) by
	// Duration; Count 0 means every call until Close.
	FaultSlow
	// FaultTruncatedFrame cuts the next stream frame mid-envelope, then
	// resets the stream.
	FaultTruncatedFrame
	// FaultOversizedFrame sends a frame header announcing more than 16 MiB,
	// then resets the stream.
	FaultOversizedFrame
	// FaultPromptTimeout expires the next prompt as soon as it opens, before
	// anyone can answer it; agy's retry follows at a higher stepIndex.
	FaultPromptTimeout
	// FaultSlowReply delays the reply of the next Count calls (default 1)
	// of Method ("" for any) by Duration, after the call took effect: agy's
	// frames then show its effect (an answer) before the caller hears back.
	FaultSlowReply
)

// FaultDropStream is another name for FaultDropStreamAfter.
const FaultDropStream = FaultDropStreamAfter

// String is the kind's name, the key of FaultsInjected.
func (k FaultKind) String() string {
	switch k {
	case FaultDropStreamAfter:
		return "drop_stream_after"
	case FaultRestart:
		return "restart"
	case FaultBurst5xx:
		return "burst_5xx"
	case FaultSlow:
		return "slow"
	case FaultTruncatedFrame:
		return "truncated_frame"
	case FaultOversizedFrame:
		return "oversized_frame"
	case FaultPromptTimeout:
		return "prompt_timeout"
	case FaultSlowReply:
		return "slow_reply"
	}
	return "unknown_fault"
}

// Fault is one armed fault. Which fields apply depends on Kind (see the
// FaultKind constants).
type Fault struct {
	Kind     FaultKind
	N        int
	Method   string
	Duration time.Duration
	Count    int

	remaining int // occurrences left; -1 for unlimited
}

// InjectFault arms a fault. FaultRestart acts at once (its error, if any,
// is logged).
func (s *Server) InjectFault(f Fault) {
	if f.Kind == FaultRestart {
		if _, err := s.Restart(); err != nil {
			s.log.Warn("injected restart failed", "err", err)
		}
		return
	}
	f.remaining = f.Count
	switch {
	case f.Kind == FaultSlow && f.Count == 0:
		f.remaining = -1
	case f.remaining <= 0:
		f.remaining = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// FaultsInjected counts the faults that fired, by kind name.
func (s *Server) FaultsInjected() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.injected)
}

// takeFaultLocked consumes one occurrence of the first armed fault of kind
// that matches method.
func (s *Server) takeFaultLocked(kind FaultKind, method string) *Fault {
	for i, f := range s.faults {
		if f.Kind != kind || (f.Method != "" && method != "" && f.Method != method) {
			continue
		}
		if f.remaining > 0 {
			f.remaining--
		}
		if f.remaining == 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		s.injected[kind.String()]++
		return f
	}
	return nil
}

// takeFault consumes one occurrence of a fault that has no method.
func (s *Server) takeFault(kind FaultKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeFaultLocked(kind, "") != nil
}

// replyDelay is how long the reply of a call of method waits after the call
// took effect.
func (s *Server) replyDelay(method string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.takeFaultLocked(FaultSlowReply, method); f != nil {
		return f.Duration
	}
	return 0
}

// callFaults returns what the armed faults do to a call of method: a delay
// and/or an error.
func (s *Server) callFaults(method string) (time.Duration, *connectError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var delay time.Duration
	if f := s.takeFaultLocked(FaultSlow, method); f != nil {
		delay = f.Duration
	}
	if s.takeFaultLocked(FaultBurst5xx, method) != nil {
		if s.faultRNG.IntN(2) == 0 {
			return delay, errorf(rpc.CodeUnavailable, "language server overloaded, try again")
		}
		return delay, errorf(rpc.CodeInternal, "internal error: injected failure")
	}
	return delay, nil
}
