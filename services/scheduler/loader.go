// The leader's loader: every round, what is due within the horizon and not
// yet in Redis is claimed from Postgres and put in the due set.

package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// load claims every job due before now + horizon that is not yet in Redis, in
// batches, each ZADDed in one pipelined round trip before its claim commits.
func (l *Leader) load(ctx context.Context) {
	defer l.stepped.Signal()
	start := l.clock()
	until := start.Add(l.cfg.Horizon)
	total := 0
	skipped := 0
	for ctx.Err() == nil {
		c, err := l.store.ClaimDue(ctx, store.Window{Since: l.watermark, Until: until, Limit: l.cfg.LoadBatch,
			Now: l.clock(), MisfireThreshold: l.cfg.MisfireThreshold}, l.enqueue)
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("load_failed", zap.Error(err))
			}
			return
		}
		total += c.Occurrences
		l.metrics.Claimed.Add(float64(c.Occurrences))
		skipped += c.Skipped
		if c.Jobs < l.cfg.LoadBatch {
			break
		}
	}
	if ctx.Err() != nil {
		return
	}
	l.metrics.Round.Observe(l.clock().Sub(start).Seconds())
	// Anything due from a minute before this round on is looked at again next
	// round; older jobs were all claimed now, and the reconciler sweeps the rest.
	l.watermark = start.Add(-time.Minute)
	if total > 0 || skipped > 0 {
		l.log.Info("loaded", zap.Int("occurrences", total), zap.Int("skipped", skipped), zap.Duration("took", l.clock().Sub(start)))
	}
}

func (l *Leader) enqueue(ctx context.Context, occs []job.Occurrence) error {
	return l.queue.Enqueue(ctx, queue.AsScheduled(occs))
}
