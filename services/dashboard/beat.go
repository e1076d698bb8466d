// The dashboard's beat: it stores one-off jobs due soon claimed and adds them
// to the due set after its commit, so the scheduler's leader must know when
// a dashboard dies, to re-add what it left out at once.

package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// beatEvery is how often the dashboard beats; beatTTL how long a beat lives.
// A dashboard silent for beatTTL is dead to the leader, which then re-adds
// its claims (services/scheduler, adoptOrphans): a dead dashboard's jobs run
// about 2.5 s late at most, instead of TOCK_LOST_AFTER.
const (
	beatEvery = 500 * time.Millisecond
	beatTTL   = 2 * time.Second
)

// beater beats under this dashboard's process number. The number goes on
// the claims the server makes (claimAs) only once a beat is in Redis: a
// claim by a dashboard the leader cannot see die would wait for
// TOCK_LOST_AFTER. Each beat registers the number again, so a dashboard the
// leader took for dead (Redis unreachable for a while) is watched again
// once it beats.
type beater struct {
	log     *zap.Logger
	st      *store.Store
	home    *queue.Shard
	claimAs func(int32)

	// ready is set after the first beat, made before the dashboard answers
	// its first request; run beats only from then on.
	ready atomic.Bool
	done  chan struct{}

	mu      sync.Mutex // held by a beat
	n       int32
	failing bool
}

func newBeater(log *zap.Logger, st *store.Store, home *queue.Shard, claimAs func(int32)) *beater {
	return &beater{log: log, st: st, home: home, claimAs: claimAs, done: make(chan struct{})}
}

// beat beats once, taking a number first if it has none. The dashboard
// beats once before it answers its first request, so that no claim of its
// goes without its number (start); then run beats on.
func (b *beater) beat(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var err error
	if b.n == 0 {
		b.n, err = b.st.ProcessNumber(ctx)
	}
	if err == nil {
		err = b.home.DashboardBeat(ctx, b.n, beatTTL)
	}
	switch {
	case err == nil:
		b.claimAs(b.n)
		if b.failing {
			b.log.Info("dashboard_beat_resumed", zap.Int32("process", b.n))
			b.failing = false
		}
	case !b.failing && ctx.Err() == nil:
		b.log.Warn("dashboard_beat_failed", zap.Error(err))
		b.failing = true
	}
}

// start makes the first beat, once the schema is ready, and lets run beat.
func (b *beater) start(ctx context.Context) {
	b.beat(ctx)
	b.ready.Store(true)
}

// run beats every beatEvery, once started, until ctx ends.
func (b *beater) run(ctx context.Context) {
	defer close(b.done)
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if b.ready.Load() {
				b.beat(ctx)
			}
		}
	}
}

// stop waits for run to end (its ctx ended), then forgets the number in
// Redis: the dashboard has finished its last request, and no claim of its
// awaits a ZADD.
func (b *beater) stop(ctx context.Context) {
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 {
		return
	}
	b.claimAs(0)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := b.home.DashboardGone(fctx, b.n); err != nil {
		b.log.Warn("dashboard_forget_failed", zap.Error(err))
	}
}
