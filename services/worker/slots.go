// The slot pool: a worker's attempts in flight, one slot per entry read and
// not yet ended, so that it never reads more than it can run.

package main

import "context"

// slotPool holds a worker's slots. take is the one way to take them and give
// the one way to return them: every entry read holds one slot until its
// attempt ends, or until it is let go unstarted (the completer takes it over).
type slotPool struct{ held chan struct{} }

func newSlotPool(n int) *slotPool { return &slotPool{held: make(chan struct{}, n)} }

// take waits for one free slot, then takes as many more as are free at
// once, up to most, and returns how many it took; 0 when ctx ended first.
func (p *slotPool) take(ctx context.Context, most int) int {
	select {
	case <-ctx.Done():
		return 0
	case p.held <- struct{}{}:
	}
	n := 1
	for n < most {
		select {
		case p.held <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// give returns n slots.
func (p *slotPool) give(n int) {
	for range n {
		<-p.held
	}
}
