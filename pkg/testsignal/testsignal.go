// Package testsignal lets a component tell a test that it has done
// something (River's testsignal), so that the test waits for that instead of
// polling on an interval. A nil *Signal is off: production code signals at
// the cost of a nil check.
package testsignal

import "time"

// Signal is raised by a component and awaited by a test. Signals do not
// queue up: one pending signal stands for any number raised since the last
// wait, which is all a test rechecking its condition needs.
type Signal struct{ ch chan struct{} }

// New returns a Signal a test can wait on.
func New() *Signal { return &Signal{ch: make(chan struct{}, 1)} }

// Signal raises s; on a nil s it does nothing.
func (s *Signal) Signal() {
	if s == nil {
		return
	}
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// WaitFor reports whether cond holds, checking it at once and again each
// time s is raised, until timeout passes.
func (s *Signal) WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-s.ch:
		case <-deadline.C:
			return cond()
		}
	}
	return true
}
