package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testsignal"
)

// Leader competes for the loader lock and, while it holds it, runs the loader,
// the reconciler, partition upkeep, retention, statistics upkeep, the
// backfills and the SLO checks. The lock is refreshed every third of its
// TTL; the first refresh that fails ends the leadership at once, cancelling any
// round in flight (its claim transaction rolls back).
type Leader struct {
	store  *store.Store
	queue  *queue.Queue
	locker *redislock.Client
	log    *zap.Logger
	clock  func() time.Time
	cfg    Config
	// caps are the caps on attempts in flight the publishers apply (nil:
	// none known), which bound a backfill's window.
	caps func() queue.Caps
	// metrics counts the occurrences the loader claims.
	metrics *metrics.Scheduler
	// tracer makes a span per loader round that claimed something; nil
	// (tracing off) makes none.
	tracer trace.Tracer

	// watermark is the lower bound of the next loader window: everything due
	// before it was claimed by an earlier round of this leadership.
	watermark time.Time
	// mark is the load mark (store.LoadMark) this leader last read or
	// wrote: every shard's marker must hold at least as much, or Redis lost
	// writes that Postgres committed.
	mark int64
	// backfillAfter is where the next round's page of running backfills
	// starts (uuid.Nil: the first); only runBackfills uses it.
	backfillAfter uuid.UUID
	// flowsSynced is when the last flow sync (syncFlows) began; zero
	// syncs every flow.
	flowsSynced time.Time
	// leading is true while this instance holds the loader lock.
	leading atomic.Bool
	// stepped is raised when leadership is gained or lost and after each
	// load and reconcile round, for tests to wait on; nil in production.
	stepped *testsignal.Signal
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
	l.flowsSynced = time.Time{} // another leader may have missed a change: all of them
	l.leading.Store(true)
	l.stepped.Signal()
	defer func() {
		l.leading.Store(false)
		// Release with a fresh context: the parent may be ending (shutdown).
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		_ = lock.Release(rctx)
		l.log.Info("leadership_lost")
		l.stepped.Signal()
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
	retain := time.NewTicker(l.cfg.RetentionInterval)
	defer retain.Stop()
	analyze := time.NewTicker(analyzeInterval)
	defer analyze.Stop()
	orphans := time.NewTicker(dashboardCheck)
	defer orphans.Stop()
	var backfills sync.WaitGroup
	backfills.Go(func() { l.runBackfills(ctx) })
	backfills.Go(func() { l.runSLOs(ctx) })
	defer func() {
		cancel() // the backfills end with the leadership, before the lock goes
		backfills.Wait()
	}()
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
		case <-retain.C:
			l.retain(ctx)
		case <-analyze.C:
			l.analyze(ctx)
		case <-orphans.C:
			l.adoptOrphans(ctx)

		}
	}
}
