// Reclaiming: each shard's reclaimer takes over the entries other consumers
// left pending past the visibility timeout (their worker died or stalled, or
// their attempt still runs, which the starter then gives back).

package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
)

// reclaimer takes over one shard's entries pending past the visibility
// timeout, into free slots, every third of it.
type reclaimer struct {
	w     *Worker
	q     *queue.Shard
	slots *slotPool
	out   chan<- batch
}

func (r *reclaimer) run(ctx context.Context) {
	tick := time.NewTicker(max(r.w.Visibility/3, 100*time.Millisecond))
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n := r.slots.take(ctx, r.w.Batch)
		if n == 0 {
			return
		}
		msgs, err := r.q.Reclaim(ctx, r.w.Name, r.w.Visibility, n)
		r.slots.give(n - len(msgs))
		if err != nil {
			if ctx.Err() == nil && !failing {
				r.w.Log.Warn("reclaim_failed", zap.Error(err))
				failing = true
			}
			continue
		}
		failing = false
		if len(msgs) > 0 {
			r.w.Metrics.Reclaimed.Add(float64(len(msgs)))
			r.out <- batch{shard: r.q, msgs: msgs}
		}
	}
}
