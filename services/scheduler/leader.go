package main

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// Leader competes for the loader lock and, while it holds it, runs the loader,
// the reconciler and partition upkeep. The lock is refreshed every third of its
// TTL; the first refresh that fails ends the leadership at once, cancelling any
// round in flight (its claim transaction rolls back).
type Leader struct {
	store  *store.Store
	queue  *queue.Ring
	locker *redislock.Client
	log    *zap.Logger
	clock  func() time.Time
	cfg    Config
	// metrics counts the occurrences the loader claims.
	metrics *metrics.Scheduler

	// watermark is the lower bound of the next loader window: everything due
	// before it was claimed by an earlier round of this leadership.
	watermark time.Time
	// leading is true while this instance holds the loader lock.
	leading atomic.Bool
}

// Leading says whether this instance holds the loader lock now.
func (l *Leader) Leading() bool { return l.leading.Load() }

// Run competes for leadership until ctx ends.
func (l *Leader) Run(ctx context.Context) {
	retry := time.NewTicker(l.cfg.LockTTL / 4)
	defer retry.Stop()
	for {
		lock, err := l.locker.Obtain(ctx, l.queue.Home().Keys().LoaderLock(), l.cfg.LockTTL, nil)
		switch {
		case err == nil:
			l.lead(ctx, lock)
		case errors.Is(err, redislock.ErrNotObtained):
		case ctx.Err() == nil:
			l.log.Warn("obtain_lock_failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
	}
}

func (l *Leader) lead(parent context.Context, lock *redislock.Lock) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	// A leader with another shard count than the deployment's would load
	// jobs where nobody reads them: it gives the lock back instead, and
	// tries again at the next round (an operator may be changing N).
	if err := l.queue.CheckShards(ctx); err != nil {
		l.log.Error("not_leading_shard_count_differs", zap.Error(err))
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		_ = lock.Release(rctx)
		return
	}
	l.log.Info("leadership_gained")
	l.leading.Store(true)
	defer func() {
		l.leading.Store(false)
		// Release with a fresh context: the parent may be ending (shutdown).
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		_ = lock.Release(rctx)
		l.log.Info("leadership_lost")
	}()
	go func() {
		t := time.NewTicker(l.cfg.LockTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := lock.Refresh(ctx, l.cfg.LockTTL, nil); err != nil {
					if ctx.Err() == nil {
						l.log.Warn("lock_refresh_failed", zap.Error(err))
					}
					cancel()
					return
				}
			}
		}
	}()

	l.upkeep(ctx)
	// A new leader first reconciles, which also sweeps every partition.
	l.reconcile(ctx)
	load := time.NewTimer(0)
	defer load.Stop()
	reconcile := time.NewTicker(l.cfg.ReconcileInterval)
	defer reconcile.Stop()
	upkeep := time.NewTicker(time.Hour)
	defer upkeep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-load.C:
			l.load(ctx)
			load.Reset(l.cfg.LoadInterval)
		case <-reconcile.C:
			l.reconcile(ctx)
		case <-upkeep.C:
			l.upkeep(ctx)
		}
	}
}

// load claims every job due before now + horizon that is not yet in Redis, in
// batches, each ZADDed in one pipelined round trip before its claim commits.
func (l *Leader) load(ctx context.Context) {
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
	entries := make([]queue.Entry, len(occs))
	for i, o := range occs {
		entries[i] = queue.Entry{Occurrence: o, DueAt: o.ScheduledFor}
	}
	return l.queue.Enqueue(ctx, entries)
}

// reconcile repairs what a crash between two steps leaves behind.
func (l *Leader) reconcile(ctx context.Context) {
	now := l.clock()
	if err := l.queue.EnsureGroup(ctx); err != nil {
		l.log.Warn("reconcile_group_failed", zap.Error(err))
	}
	if intact, err := l.queue.Intact(ctx); err != nil {
		l.log.Warn("reconcile_marker_failed", zap.Error(err))
	} else if !intact {
		l.rebuild(ctx, now)
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
	// A full sweep over every hour partition catches anything the windowed
	// rounds could not see, such as a claim released after its window passed.
	l.watermark = time.Time{}
	l.load(ctx)

	// Claimed one-off jobs long overdue that never started and are not in the
	// due set: their member was lost. Re-adding is safe: workers start an
	// attempt once, keyed by (job, scheduled_for, attempt).
	lost, err := l.store.UnstartedClaims(ctx, now.Add(-l.cfg.LostAfter), 1000)
	if err != nil {
		l.log.Warn("reconcile_claims_failed", zap.Error(err))
	} else if len(lost) > 0 {
		in, err := l.queue.Scheduled(ctx, lost)
		if err != nil {
			l.log.Warn("reconcile_claims_failed", zap.Error(err))
		} else {
			var missing []job.Occurrence
			for i, o := range lost {
				if !in[i] {
					missing = append(missing, o)
				}
			}
			if len(missing) > 0 {
				if err := l.enqueue(ctx, missing); err != nil {
					l.log.Warn("reconcile_claims_failed", zap.Error(err))
				} else {
					l.log.Warn("requeued_lost_claims", zap.Int("jobs", len(missing)))
				}
			}
		}
	}

	// Attempts running past their lease: their worker died or stalled. Requeue
	// the same attempt now; the worker that gets it takes the lease over.
	expired, err := l.store.ExpiredLeases(ctx, now, 1000)
	if err != nil {
		l.log.Warn("reconcile_leases_failed", zap.Error(err))
		return
	}
	if len(expired) > 0 {
		entries := make([]queue.Entry, len(expired))
		for i, o := range expired {
			entries[i] = queue.Entry{Occurrence: o, DueAt: now}
		}
		if err := l.queue.Enqueue(ctx, entries); err != nil {
			l.log.Warn("reconcile_leases_failed", zap.Error(err))
			return
		}
		l.log.Warn("requeued_expired_leases", zap.Int("runs", len(expired)))
	}
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
		entries := make([]queue.Entry, len(retries))
		for i, o := range retries {
			entries[i] = queue.Entry{Occurrence: o, DueAt: now}
		}
		err = l.queue.Enqueue(ctx, entries)
	}
	if err != nil {
		l.log.Warn("rebuild_failed", zap.Error(err))
		return
	}
	if err := l.queue.MarkIntact(ctx); err != nil {
		l.log.Warn("rebuild_failed", zap.Error(err))
		return
	}
	// A first start also finds no marker; only a rebuild that put something
	// back means Redis had lost data.
	log := l.log.Info
	if oneOffs > 0 || len(retries) > 0 {
		log = l.log.Warn
	}
	log("redis_rebuilt", zap.Int("recurring_jobs_rewound", moved), zap.Int("one_off_attempts", oneOffs),
		zap.Int("retries", len(retries)), zap.Duration("took", l.clock().Sub(start)))
}

// upkeep creates job_runs partitions ahead and drops those past retention.
func (l *Leader) upkeep(ctx context.Context) {
	now := l.clock()
	created, err := l.store.EnsureRunPartitions(ctx, now.Add(-24*time.Hour), now.Add(l.cfg.PartitionsAhead))
	if err != nil {
		l.log.Warn("partition_upkeep_failed", zap.Error(err))
	}
	dropped, err := l.store.DropRunPartitionsBefore(ctx, now.Add(-l.cfg.RunRetention))
	if err != nil {
		l.log.Warn("partition_upkeep_failed", zap.Error(err))
	}
	if created > 0 || len(dropped) > 0 {
		l.log.Info("partition_upkeep", zap.Int("created", created), zap.Strings("dropped", dropped))
	}
}
