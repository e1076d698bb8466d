package main

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
)

// The default caps on attempts in flight, when the operator sets none, are
// shares of the live workers' slots: an owner may have a quarter of them in
// flight, and one target host half. The caps bind when others wait: while
// nobody else does, an owner or host at its cap may borrow idle slots, up to
// all of them but one owner's cap, which stays free for whoever comes next
// (queue.Caps.Borrow). Each worker's default of 2048 slots is
// eight times what a worker had before caps existed, so with two workers one
// owner alone has 1024 in flight, twice the whole pool of before (make bench
// measured the same burst time as without caps from 1024 on, and 30% longer
// at 512), and an owner whose targets hang, or a host that is down, leaves
// three quarters, or half, of the slots to everyone else.
const (
	ownerShare = 4
	hostShare  = 2
	// minOwnerCap and minHostCap hold while no worker has said how many
	// slots it has (at start-up, or with every worker down).
	minOwnerCap = 16
	minHostCap  = 32
	// workerFresh: a worker silent for longer is not counted.
	workerFresh = 5 * time.Second
	// capsEvery is how often the caps are worked out again.
	capsEvery = 2 * time.Second
)

// CapsWatcher works out the caps on attempts in flight that every publisher
// of this instance records for its shard: the operator's
// (TOCK_LIMIT_MAX_RUNNING, TOCK_LIMIT_MAX_RUNNING_PER_HOST) or, for each left
// at 0, the share of the live workers' slots, divided among the shards.
type CapsWatcher struct {
	queue *queue.Queue
	log   *zap.Logger
	clock func() time.Time
	// Owner and Host are the operator's caps for the whole deployment; 0
	// derives them from the workers' slots.
	Owner, Host int
	// Lend lets a lane at its cap borrow idle slots while no other waits.
	Lend bool

	caps atomic.Pointer[queue.Caps]
}

// NewCapsWatcher returns a watcher whose caps hold the minimums until its
// first look at the workers.
func NewCapsWatcher(q *queue.Queue, owner, host int, lend bool, log *zap.Logger, clock func() time.Time) *CapsWatcher {
	w := &CapsWatcher{queue: q, log: log, clock: clock, Owner: owner, Host: host, Lend: lend}
	w.set(0, 0)
	return w
}

// Caps are the caps a publisher records for its shard now.
func (w *CapsWatcher) Caps() queue.Caps { return *w.caps.Load() }

// Run looks at the workers every capsEvery until ctx ends.
func (w *CapsWatcher) Run(ctx context.Context) {
	t := time.NewTicker(capsEvery)
	defer t.Stop()
	failing := false
	for {
		slots, workers, err := w.queue.Home().Pool(ctx, w.clock(), workerFresh)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			w.log.Warn("worker_pool_unreadable", zap.Error(err))
			failing = true
		case err == nil:
			failing = false
			w.set(slots, workers)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// set works the caps out for a pool of slots among workers.
func (w *CapsWatcher) set(slots, workers int) {
	c := DeriveCaps(w.Owner, w.Host, slots)
	c.Unread = max(workers, 1) * queue.ReadSize
	if !w.Lend {
		c.Borrow = -1
	}
	c = c.PerShard(len(w.queue.Shards()))
	if old := w.caps.Load(); old == nil || *old != c {
		w.caps.Store(&c)
		if old != nil {
			w.log.Info("caps_changed", zap.Int("worker_slots", slots), zap.Int("owner_cap_per_shard", c.Owner), zap.Int("host_cap_per_shard", c.Host), zap.Int("unread_limit", c.Unread))
		}
	}
}

// DeriveCaps is the deployment's caps: owner and host as the operator set
// them, or for each left at 0 the share of slots, at least the minimum; and
// the borrow limit, every slot but one owner's cap (nothing to lend while no
// worker has said how many slots it has, or when the cap is most of them).
func DeriveCaps(owner, host, slots int) queue.Caps {
	if owner <= 0 {
		owner = max(slots/ownerShare, minOwnerCap)
	}
	if host <= 0 {
		host = max(slots/hostShare, minHostCap)
	}
	c := queue.Caps{Owner: owner, Host: host}
	if slots > 0 {
		c.Borrow = max(slots-owner, -1)
		if c.Borrow == 0 {
			c.Borrow = -1
		}
	}
	return c
}
