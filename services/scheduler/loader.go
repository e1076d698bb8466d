// The leader's loader: every round, what is due within the horizon and not
// yet in Redis is claimed from Postgres and put in the due set.

package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/telemetry"
)

// load claims every job due before now + horizon that is not yet in Redis, in
// batches, each ZADDed in one pipelined round trip before its claim commits.
func (l *Leader) load(ctx context.Context) {
	defer l.stepped.Signal()
	start := l.clock()
	until := start.Add(l.cfg.Horizon)
	// One GET per shard a round: a Redis that lost the last claims' writes
	// (its marker is gone, or older than this leader's last claim) is
	// rebuilt now rather than at the next reconcile.
	if intact, err := l.queue.Intact(ctx, l.mark); err == nil && !intact {
		l.rebuild(ctx, start)
	}
	// Flow keys' limits first: what this round claims may be published at
	// once, and must meet its key's limits there.
	l.syncFlows(ctx)
	var r round
	for ctx.Err() == nil {
		c, err := l.store.ClaimDue(ctx, store.Window{Since: l.watermark, Until: until, Limit: l.cfg.LoadBatch,
			Now: l.clock(), MisfireThreshold: l.cfg.MisfireThreshold}, l.claim)
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("load_failed", zap.Error(err))
				l.trace(ctx, start, r, err)
			}
			return
		}
		r.batches++
		r.jobs += c.Jobs
		r.total += c.Occurrences
		l.metrics.Claimed.Add(float64(c.Occurrences))
		r.skipped += c.Skipped
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
	if r.total > 0 || r.skipped > 0 {
		l.trace(ctx, start, r, nil)
		l.log.Info("loaded", zap.Int("occurrences", r.total), zap.Int("skipped", r.skipped), zap.Duration("took", l.clock().Sub(start)))
	}
}

func (l *Leader) enqueue(ctx context.Context, occs []job.Occurrence) error {
	return l.queue.Enqueue(ctx, queue.AsScheduled(occs))
}

// claim hands a claim's occurrences to Redis with the claim's load mark.
// The mark is this leader's as soon as Redis holds it: should the commit
// then fail, the markers are ahead of Postgres, which is no loss.
func (l *Leader) claim(ctx context.Context, occs []job.Occurrence, mark int64) error {
	if err := l.queue.EnqueueMarked(ctx, queue.AsScheduled(occs), mark); err != nil {
		return err
	}
	l.mark = max(l.mark, mark)
	return nil
}

// round is what one loader round did.
type round struct {
	batches, jobs, total, skipped int
}

// trace records a round that began at start as a span, after the fact:
// only a round that claimed something, or failed, makes one, so an idle
// leader exports nothing.
func (l *Leader) trace(ctx context.Context, start time.Time, r round, err error) {
	if l.tracer == nil {
		return
	}
	_, span := l.tracer.Start(ctx, loadSpan, trace.WithTimestamp(start), trace.WithAttributes(
		telemetry.Batches.Int(r.batches),
		telemetry.Jobs.Int(r.jobs),
		telemetry.Occurrences.Int(r.total),
		telemetry.Skipped.Int(r.skipped)))
	if err != nil {
		span.SetStatus(codes.Error, "round failed") // no stored value in a span
	}
	span.End(trace.WithTimestamp(l.clock()))
}
