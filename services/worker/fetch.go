// Fetching: each shard's reader fills the free slots from the stream (or
// takes over entries a dead worker left), and the releaser gives a lane's
// place back as soon as an attempt returns.

package main

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
)

// releaser gives back, in batches, the places in their lanes of entries
// whose attempts ended (queue.Queue.Release), so that an owner's next attempt
// does not wait for the group commit of this one's outcome. A failure is
// logged, once per outage, and dropped: settling the entries then gives
// their places back.
func (c *Consumer) releaser(ctx context.Context) {
	const maxBatch = 1024
	failing := false
	for m := range c.ended {
		byShard := map[int][]string{}
		add := func(m queue.Message) { byShard[m.Shard] = append(byShard[m.Shard], m.ID) }
		add(m)
	drain:
		for n := 1; n < maxBatch; n++ {
			select {
			case m, ok := <-c.ended:
				if !ok {
					break drain
				}
				add(m)
			default:
				break drain
			}
		}
		err := c.Queue.Release(ctx, byShard)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			c.Log.Warn("release_failed", zap.Error(err))
			failing = true
		case err == nil:
			failing = false
		}
	}
}

// fetch fills free slots from q's stream, or, when reclaim is set, from
// entries other consumers left pending past the visibility timeout. When the
// slots are shared with other shards' fetchers, a fetcher waiting on an empty
// stream holds one slot, not a batch's worth, so it starves no other shard.
func (c *Consumer) fetch(ctx, execCtx context.Context, running *sync.WaitGroup, q *queue.Shard, reclaim, shared bool) {
	var tick *time.Ticker
	if reclaim {
		tick = time.NewTicker(max(c.Visibility/3, 100*time.Millisecond))
		defer tick.Stop()
	}
	failing := false
	for {
		if reclaim {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		// Take one slot, waiting if all are busy, then as many more as are free.
		n := c.slots.take(ctx, c.Batch)
		if n == 0 {
			return
		}
		var msgs []queue.Message
		var err error
		switch {
		case reclaim:
			msgs, err = q.Reclaim(ctx, c.Name, c.Visibility, n)
		case shared:
			msgs, err = q.Read(ctx, c.Name, n, -1)
			if err == nil && len(msgs) == 0 {
				c.slots.give(n - 1)
				n = 1
				msgs, err = q.Read(ctx, c.Name, n, c.Block)
			}
		default:
			msgs, err = q.Read(ctx, c.Name, n, c.Block)
		}
		if err != nil {
			c.slots.give(n)
			if ctx.Err() != nil {
				return
			}
			if !failing {
				c.Log.Warn("read_failed", zap.Bool("reclaim", reclaim), zap.Error(err))
				failing = true
			}
			sleep(ctx, time.Second)
			continue
		}
		failing = false
		if reclaim && len(msgs) > 0 {
			c.Metrics.Reclaimed.Add(float64(len(msgs)))
		}
		c.slots.give(n - len(msgs))
		if len(msgs) > 0 {
			// On this goroutine, not one of its own: concurrent starts of
			// small batches made Postgres spend a 100,000-job burst on lock
			// contention (StartRuns p50 141 ms against 17 ms, and the burst
			// 1.7 times as long in make bench).
			c.handle(ctx, execCtx, q, msgs, running)
		}
	}
}
