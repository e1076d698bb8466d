package api

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// activeCounts lets a single create far below its owner's cap on active jobs
// skip the exact check. That check takes the owner's lock and counts the
// owner's active jobs inside it, so one owner's creations run one at a time,
// each as slow as the count: 45 ms at 120,000 active jobs on a 2-core
// machine, about 20 creates a second whatever the rate limits allow.
//
// Instead, each owner's count is read at most once per activeTTL without the
// lock and kept with what this dashboard created since and is creating now.
// While that total, plus the new job, stays at or below the cap less a tenth
// of it, the create goes without the check. Within the last tenth, for a
// bulk create, and for a cap under minFastCap, it is checked exactly as
// before. What the estimate does not see is other dashboards' creations
// since the count (finishes only lower the true figure): they could take an
// owner past the cap only by creating more than a tenth of it within
// activeTTL, which the per-owner rate limits forbid unless an operator
// raises them that far.
type activeCounts struct {
	count func(ctx context.Context, owner uuid.UUID) (int, error)
	clock func() time.Time

	mu     sync.Mutex
	owners map[uuid.UUID]*activeCount
}

type activeCount struct {
	mu       sync.Mutex // one count at a time per owner
	counted  int        // active jobs at the last count
	at       time.Time  // when counted
	added    int        // created by this dashboard since (or about when) it counted
	creating int        // being created by this dashboard now
}

const (
	activeTTL = time.Second
	// minFastCap: under it a tenth of the cap is too thin a margin.
	minFastCap = 100
	// maxTracked bounds the owners tracked; beyond, the idle ones go.
	maxTracked = 10_000
)

func newActiveCounts(count func(context.Context, uuid.UUID) (int, error), clock func() time.Time) *activeCounts {
	return &activeCounts{count: count, clock: clock, owners: map[uuid.UUID]*activeCount{}}
}

// reserve says whether owner surely has room for n more jobs under max
// without the exact check. When it does, the caller creates them without
// the cap and then calls done with whether they were created.
func (a *activeCounts) reserve(ctx context.Context, owner uuid.UUID, n, max int) (done func(created bool), ok bool) {
	if n != 1 || max < minFastCap {
		return nil, false
	}
	e := a.entry(owner)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := a.clock()
	if now.Sub(e.at) > activeTTL {
		counted, err := a.count(ctx, owner)
		if err != nil {
			return nil, false // the exact check will say what is wrong
		}
		// What this dashboard created before the count is in it; what it
		// is creating now is not, and stays counted apart.
		e.counted, e.at, e.added = counted, now, 0
	}
	if e.counted+e.added+e.creating+n > max-max/10 {
		return nil, false
	}
	e.creating += n
	return func(created bool) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.creating -= n
		if created {
			// Counted again should the next count already hold it: an
			// estimate high by a few is only a little more caution.
			e.added += n
		}
	}, true
}

func (a *activeCounts) entry(owner uuid.UUID) *activeCount {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.owners[owner]
	if e == nil {
		if len(a.owners) >= maxTracked {
			a.prune()
		}
		e = &activeCount{}
		a.owners[owner] = e
	}
	return e
}

// prune forgets the owners whose count is stale: a fresh count costs one
// query, and a create in flight holds its entry, so nothing is lost.
func (a *activeCounts) prune() {
	cutoff := a.clock().Add(-activeTTL)
	for owner, e := range a.owners {
		if e.mu.TryLock() {
			if e.at.Before(cutoff) && e.creating == 0 {
				delete(a.owners, owner)
			}
			e.mu.Unlock()
		}
	}
}
