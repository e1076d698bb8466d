// The leader's reconciler: what a crash between two steps left behind is
// found and repaired, and Redis is rebuilt from Postgres when it lost its data.

package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
)

// reconcile repairs what a crash between two steps leaves behind.
func (l *Leader) reconcile(ctx context.Context) {
	defer l.stepped.Signal()
	now := l.clock()
	if err := l.queue.EnsureGroup(ctx); err != nil {
		l.log.Warn("reconcile_group_failed", zap.Error(err))
	}
	// The markers must hold the committed load mark: a missing marker is a
	// Redis that lost everything, a lower one a Redis that lost the last
	// claims' writes (a failover to a lagging replica). Either is rebuilt.
	if mark, err := l.store.LoadMark(ctx); err != nil {
		l.log.Warn("reconcile_marker_failed", zap.Error(err))
	} else {
		l.mark = max(l.mark, mark)
		if intact, err := l.queue.Intact(ctx, l.mark); err != nil {
			l.log.Warn("reconcile_marker_failed", zap.Error(err))
		} else if !intact {
			l.rebuild(ctx, now)
		}
	}
	// The counts of attempts in flight that fair dispatch holds owners and
	// hosts to are kept exactly by the scripts; recounting them from the
	// streams repairs any drift. Users' own caps follow their limits here
	// too, should the dashboard have failed to record one.
	if err := l.queue.Recount(ctx); err != nil {
		l.log.Warn("reconcile_recount_failed", zap.Error(err))
	}
	if caps, err := l.store.OwnerCaps(ctx); err != nil {
		l.log.Warn("reconcile_owner_caps_failed", zap.Error(err))
	} else if err := l.queue.SetOwnerCaps(ctx, caps); err != nil {
		l.log.Warn("reconcile_owner_caps_failed", zap.Error(err))
	}
	l.drainDead(ctx)
	// A full sweep over every hour partition catches anything the windowed
	// rounds could not see, such as a claim released after its window passed.
	l.watermark = time.Time{}
	l.load(ctx)

	// Claimed one-off jobs long overdue that never started and are not in the
	// due set: their member was lost. Re-adding is safe: workers start an
	// attempt once, keyed by (job, scheduled_for, attempt).
	lost, err := l.store.UnstartedClaims(ctx, now.Add(-l.cfg.LostAfter), 1000)
	if err == nil {
		var n int
		if n, err = l.requeueMissing(ctx, lost); err == nil && n > 0 {
			l.log.Warn("requeued_lost_claims", zap.Int("jobs", n))
		}
	}
	if err != nil {
		l.log.Warn("reconcile_claims_failed", zap.Error(err))
	}

	// Attempts running past their lease whose entry is still unsettled: their
	// worker died or stalled, and the reclaimers, which take its pending
	// entry over, have not (the entry was lost with a failover). Requeue
	// the same attempt; the worker that gets it takes the lease over.
	expired, err := l.queue.Expired(ctx, now.Add(-l.cfg.LostAfter), 1000)
	if err != nil {
		l.log.Warn("reconcile_leases_failed", zap.Error(err))
		return
	}
	if len(expired) > 0 {
		occs := make([]job.Occurrence, 0, len(expired))
		for _, e := range expired {
			occs = append(occs, e.Occurrence)
		}
		if err := l.queue.Enqueue(ctx, queue.DueAt(occs, now)); err != nil {
			l.log.Warn("reconcile_leases_failed", zap.Error(err))
			return
		}
		l.log.Warn("requeued_expired_leases", zap.Int("runs", len(expired)))
	}
	// Attempts an older release recorded as running, whose worker stopped
	// with it: requeued once their lease ended, like any other.
	legacy, err := l.store.LegacyRunning(ctx, now, 1000)
	if err == nil && len(legacy) > 0 {
		if err = l.queue.Enqueue(ctx, queue.DueAt(legacy, now)); err == nil {
			l.log.Warn("requeued_legacy_running", zap.Int("runs", len(legacy)))
		}
	}
	if err != nil {
		l.log.Warn("reconcile_leases_failed", zap.Error(err))
	}
}

// requeueMissing adds to the due set those of occs that are in neither the
// due set nor a held set, and returns how many it added. Re-adding one that
// is somewhere after all (in the stream, unread) is safe: an attempt starts
// once.
func (l *Leader) requeueMissing(ctx context.Context, occs []job.Occurrence) (int, error) {
	if len(occs) == 0 {
		return 0, nil
	}
	in, err := l.queue.Scheduled(ctx, occs)
	if err != nil {
		return 0, err
	}
	var missing []job.Occurrence
	for i, o := range occs {
		if !in[i] {
			missing = append(missing, o)
		}
	}
	return len(missing), l.enqueue(ctx, missing)
}

// rebuild puts back what Redis held, from Postgres, after Redis lost its
// data: the first attempts of claimed one-off jobs that never started, the
// retries of failed attempts, and the occurrences of recurring jobs after
// their last run (their cursors move back; the loader plans them again and
// their misfire policies judge those now late). Attempts that were running
// come back through lease expiry. Re-adding what may still be somewhere is
// safe: an attempt starts once. The marker is set only when all of it worked,
// so a failed rebuild is tried again at the next reconcile.
func (l *Leader) rebuild(ctx context.Context, now time.Time) {
	l.log.Info("redis_marker_missing_rebuilding")
	start := l.clock()
	// The flow keys' limits went with the data: all of them first.
	l.flowsSynced = time.Time{}
	if !l.syncFlows(ctx) {
		return
	}
	// Read first: this leader makes no claim until the rebuild is done, so
	// what it rebuilds covers every claim up to this mark.
	mark, err := l.store.LoadMark(ctx)
	if err != nil {
		l.log.Warn("rebuild_failed", zap.Error(err))
		return
	}
	moved, err := l.store.RewindRecurring(ctx, now.Add(-l.cfg.Horizon), now)
	if err != nil {
		l.log.Warn("rebuild_failed", zap.Error(err))
		return
	}
	oneOffs := 0
	var after job.Occurrence
	for {
		occs, err := l.store.ClaimedNotStarted(ctx, now.Add(l.cfg.Horizon+time.Hour), after, l.cfg.LoadBatch)
		if err == nil && len(occs) > 0 {
			err = l.enqueue(ctx, occs)
		}
		if err != nil {
			l.log.Warn("rebuild_failed", zap.Error(err))
			return
		}
		oneOffs += len(occs)
		if len(occs) < l.cfg.LoadBatch {
			break
		}
		after = occs[len(occs)-1]
	}
	retries, err := l.store.LostRetries(ctx, 100000)
	if err == nil && len(retries) > 0 {
		err = l.queue.Enqueue(ctx, queue.DueAt(retries, now))
	}
	if err != nil {
		l.log.Warn("rebuild_failed", zap.Error(err))
		return
	}
	if err := l.queue.MarkIntact(ctx, mark); err != nil {
		l.log.Warn("rebuild_failed", zap.Error(err))
		return
	}
	l.mark = max(l.mark, mark)
	// A first start also finds no marker; only a rebuild that put something
	// back means Redis had lost data.
	log := l.log.Info
	if oneOffs > 0 || len(retries) > 0 {
		log = l.log.Warn
	}
	log("redis_rebuilt", zap.Int("recurring_jobs_rewound", moved), zap.Int("one_off_attempts", oneOffs),
		zap.Int("retries", len(retries)), zap.Duration("took", l.clock().Sub(start)))
}
