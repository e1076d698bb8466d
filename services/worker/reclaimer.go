// Reclaiming: each shard's reclaimer takes over the entries other consumers
// left pending past the visibility timeout (their worker died or stalled, or
// their attempt still runs, which the starter then gives back).

package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
)

// reclaimer takes over one shard's entries pending past the visibility
// timeout, into free slots, every third of it; and the entries of attempts
// whose lease has ended (their worker died), which otherwise keep their
// places in their lanes and flow key until they have been pending a
// visibility timeout: it looks when the earliest running lease ends, and at
// least every endedWait (endedLook).
type reclaimer struct {
	w     *Worker
	q     *queue.Shard
	slots *slotPool
	out   chan<- batch
}

// endedPoll is how soon a reclaimer looks again for ended leases after a
// look that found one, or failed: what it found may not be claimable yet
// (endedMinIdle), and more may have ended than one look takes.
const endedPoll = 250 * time.Millisecond

// endedWait is the longest a reclaimer waits between two looks for ended
// leases: no lease can end sooner after it is made than the shortest
// attempt timeout plus the lease margin, so a lease made just after a look
// is seen, with its end, at the next look before it ends. Never more than
// 2 s, in case other workers run with a smaller margin; never less than
// endedPoll. Idle, the worker looked four times a second before, which was
// a third of two idle workers' CPU (5.7 against 4.0 to 4.3 ms a second in
// make bench's idle phase).
func (r *reclaimer) endedWait() time.Duration {
	return max(endedPoll, min(job.MinTimeout+r.w.LeaseMargin, 2*time.Second))
}

// endedLook is how long to wait after a look at now for ended leases that
// found next (queue.Shard.ClaimEnded) and claimed n.
func (r *reclaimer) endedLook(now, next time.Time, n int, err error) time.Duration {
	switch {
	case err != nil || n > 0 || (!next.IsZero() && !next.After(now)):
		return endedPoll
	case next.IsZero():
		return r.endedWait()
	}
	// Just after the lease's end, by this worker's clock.
	return min(max(next.Sub(now)+time.Millisecond, time.Millisecond), r.endedWait())
}

func (r *reclaimer) run(ctx context.Context) {
	tick := time.NewTicker(max(r.w.Visibility/3, 100*time.Millisecond))
	defer tick.Stop()
	ended := time.NewTimer(endedPoll)
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
			now := r.w.Clock()
			var next time.Time
			msgs, next, err = r.q.ClaimEnded(ctx, r.w.Name, now, r.w.Batch)
			ended.Reset(r.endedLook(now, next, len(msgs), err))
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
