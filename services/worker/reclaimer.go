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
// timeout, into free slots, every third of it; and, every endedPoll, the
// entries of attempts whose lease has ended (their worker died), which
// otherwise keep their places in their lanes and flow key until they have
// been pending a visibility timeout.
type reclaimer struct {
	w     *Worker
	q     *queue.Shard
	slots *slotPool
	out   chan<- batch
}

// endedPoll is how often a reclaimer looks for leases that have ended: one
// ZRANGEBYSCORE of its shard's leases set while none has.
const endedPoll = 250 * time.Millisecond

func (r *reclaimer) run(ctx context.Context) {
	tick := time.NewTicker(max(r.w.Visibility/3, 100*time.Millisecond))
	defer tick.Stop()
	ended := time.NewTicker(endedPoll)
	defer ended.Stop()
	failing := false
	for {
		var msgs []queue.Message
		var err error
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			n := r.slots.take(ctx, r.w.Batch)
			if n == 0 {
				return
			}
			msgs, err = r.q.Reclaim(ctx, r.w.Name, r.w.Visibility, n)
			r.slots.give(n - len(msgs))
		case <-ended.C:
			// Looked for without slots (it finds nothing nearly always,
			// and a stalled Redis must not hold the reader's slots);
			// what it claims waits for its slots.
			msgs, err = r.q.ClaimEnded(ctx, r.w.Name, r.w.Clock(), r.w.Batch)
			for got := 0; got < len(msgs); {
				n := r.slots.take(ctx, len(msgs)-got)
				if n == 0 {
					return
				}
				got += n
			}
		}
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
