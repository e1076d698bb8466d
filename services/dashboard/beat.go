// The dashboard's beat: it stores one-off jobs due soon claimed and adds them
// to the due set after its commit, so the scheduler's leader must know when
// a dashboard dies, to re-add what it left out at once.

package main

import (
	"context"
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

// beat takes this dashboard's process number and beats under it until ctx
// ends. The number goes on the claims the server makes (claimAs) only once
// a beat is in Redis: a claim by a dashboard the leader cannot see die would
// wait for TOCK_LOST_AFTER. Each beat registers the number again, so a
// dashboard the leader took for dead (Redis unreachable for a while) is
// watched again once it beats. Nothing happens before ready. The returned
// stop forgets the number in Redis, for a dashboard that has finished its
// last request.
func beat(ctx context.Context, log *zap.Logger, st *store.Store, home *queue.Shard, ready func(context.Context) error,
	claimAs func(int32)) (stop func()) {
	done := make(chan struct{})
	var n int32
	go func() {
		defer close(done)
		t := time.NewTicker(beatEvery)
		defer t.Stop()
		failing := false
		for {
			// Nothing before the migrations have run: the sequence exists.
			if ready(ctx) == nil {
				err := error(nil)
				if n == 0 {
					n, err = st.ProcessNumber(ctx)
				}
				if err == nil {
					err = home.DashboardBeat(ctx, n, beatTTL)
				}
				switch {
				case err == nil:
					claimAs(n)
					if failing {
						log.Info("dashboard_beat_resumed", zap.Int32("process", n))
						failing = false
					}
				case !failing && ctx.Err() == nil:
					log.Warn("dashboard_beat_failed", zap.Error(err))
					failing = true
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		<-done
		if n == 0 {
			return
		}
		claimAs(0)
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if err := home.DashboardGone(fctx, n); err != nil {
			log.Warn("dashboard_forget_failed", zap.Error(err))
		}
	}
}
