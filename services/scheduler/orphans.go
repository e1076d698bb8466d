// Orphaned claims: a dashboard stores a one-off job due soon claimed and adds
// it to the due set right after its commit. One that dies in between leaves
// the job in neither place; the leader re-adds such jobs as soon as the
// dashboard's beat expires, instead of TOCK_LOST_AFTER past their due time.

package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
)

// dashboardCheck is how often the leader looks for dashboards that stopped
// beating. A dashboard beats every dashboard.beatEvery and its beat lives
// for dashboard.beatTTL (services/dashboard), so a dead one's claims are
// back in Redis within about beatTTL plus this.
const dashboardCheck = 500 * time.Millisecond

// orphanPage bounds one statement's and one pipeline's share of a dead
// dashboard's claims.
const orphanPage = 5000

// adoptOrphans re-adds the claims of dashboards that stopped beating without
// saying they stopped, those not started and not in Redis, and then forgets
// those dashboards.
func (l *Leader) adoptOrphans(ctx context.Context) {
	home := l.queue.Home()
	dead, err := home.DeadDashboards(ctx)
	if err != nil {
		l.log.Warn("orphaned_claims_failed", zap.Error(err))
		return
	}
	if len(dead) == 0 {
		return
	}
	requeued := 0
	var after job.Occurrence
	for {
		occs, err := l.store.OrphanedClaims(ctx, dead, after, orphanPage)
		if err != nil {
			l.log.Warn("orphaned_claims_failed", zap.Error(err))
			return
		}
		n, err := l.requeueMissing(ctx, occs)
		if err != nil {
			l.log.Warn("orphaned_claims_failed", zap.Error(err))
			return
		}
		requeued += n
		if len(occs) < orphanPage {
			break
		}
		after = occs[len(occs)-1]
	}
	for _, n := range dead {
		if err := home.DashboardGone(ctx, n); err != nil {
			l.log.Warn("orphaned_claims_failed", zap.Error(err))
			return
		}
	}
	log := l.log.Info
	if requeued > 0 {
		log = l.log.Warn
	}
	log("dead_dashboards_adopted", zap.Int32s("dashboards", dead), zap.Int("requeued_claims", requeued))
}
