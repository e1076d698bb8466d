// The leader's retention: finished jobs with their runs, audit entries,
// idempotency keys and expired dashboard sessions are removed once past
// their retention, in bounded batches.

package main

import (
	"context"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/store"
)

// retentionBatches bounds one round to this many batches of each kind, so a
// backlog (after an upgrade from a version that kept everything) drains
// over rounds without holding up the leader's loop.
const retentionBatches = 10

// retain removes what is past retention: jobs that finished more than
// their retention ago (their own, or TOCK_JOB_RETENTION) with their runs,
// audit entries older than TOCK_AUDIT_RETENTION, idempotency keys past
// their day, and dashboard sessions past their expiry (which already
// authenticate nothing: this reclaims their rows).
func (l *Leader) retain(ctx context.Context) {
	defer l.stepped.Signal()
	now := l.clock()
	var jobs, runs, audit, keys, sessions int
	fail := func(kind string, err error) {
		if ctx.Err() == nil {
			l.log.Warn("retention_failed", zap.String("kind", kind), zap.Error(err))
		}
	}
	// Jobs with a retention of their own go even when the default keeps
	// everything.
	for range retentionBatches {
		j, r, err := l.store.RemoveFinishedJobs(ctx, now, l.cfg.JobRetention, l.cfg.RetentionBatch)
		if err != nil {
			fail("jobs", err)
			break
		}
		jobs, runs = jobs+j, runs+r
		if j < l.cfg.RetentionBatch {
			break
		}
	}
	if l.cfg.AuditRetention > 0 {
		for range retentionBatches {
			n, err := l.store.RemoveAuditBefore(ctx, now.Add(-l.cfg.AuditRetention), l.cfg.RetentionBatch)
			if err != nil {
				fail("audit", err)
				break
			}
			audit += n
			if n < l.cfg.RetentionBatch {
				break
			}
		}
		// The drained dead stream is kept as long as the audit log.
		for range retentionBatches {
			n, err := l.store.RemoveDeadEntriesBefore(ctx, now.Add(-l.cfg.AuditRetention), l.cfg.RetentionBatch)
			if err != nil {
				fail("dead_entries", err)
				break
			}
			if n < l.cfg.RetentionBatch {
				break
			}
		}
	}
	// Idempotency keys are replayed for a day, then go.
	for range retentionBatches {
		n, err := l.store.RemoveIdempotencyKeysBefore(ctx, now.Add(-store.IdempotencyWindow), l.cfg.RetentionBatch)
		if err != nil {
			fail("idempotency_keys", err)
			break
		}
		keys += n
		if n < l.cfg.RetentionBatch {
			break
		}
	}
	for range retentionBatches {
		n, err := l.store.RemoveExpiredSessions(ctx, now, l.cfg.RetentionBatch)
		if err != nil {
			fail("sessions", err)
			break
		}
		sessions += n
		if n < l.cfg.RetentionBatch {
			break
		}
	}
	l.metrics.Removed.WithLabelValues("jobs").Add(float64(jobs))
	l.metrics.Removed.WithLabelValues("runs").Add(float64(runs))
	l.metrics.Removed.WithLabelValues("audit").Add(float64(audit))
	l.metrics.Removed.WithLabelValues("idempotency_keys").Add(float64(keys))
	l.metrics.Removed.WithLabelValues("sessions").Add(float64(sessions))
	if jobs+audit+keys+sessions > 0 {
		l.log.Info("retention_removed", zap.Int("jobs", jobs), zap.Int("runs", runs), zap.Int("audit", audit),
			zap.Int("idempotency_keys", keys), zap.Int("sessions", sessions), zap.Duration("took", l.clock().Sub(now)))
	}
}
