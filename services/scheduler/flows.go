// The leader's flow sync: the flow keys' limits Postgres holds are written
// to Redis, where the publishers enforce them.

package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/store"
)

// flowSyncOverlap is how far back each sync looks again: a change committed
// a little after a later one (its updated_at is its statement's clock) is
// still seen.
const flowSyncOverlap = 10 * time.Second

// flowSyncPage is how many flows one query of a sync reads.
const flowSyncPage = 1000

// syncFlows writes to Redis the flows changed since the last sync (all of
// them at the first of a leadership, or after Redis lost its data), before
// the loader claims: the dashboard writes a change itself, and this is what
// makes sure of it. It reports whether it went through.
func (l *Leader) syncFlows(ctx context.Context) bool {
	since := l.flowsSynced.Add(-flowSyncOverlap)
	if l.flowsSynced.IsZero() {
		since = time.Time{}
	}
	start := l.clock()
	after := store.FlowCursor{Since: since}
	n := 0
	for {
		flows, err := l.store.FlowsChanged(ctx, after, flowSyncPage)
		if err == nil && len(flows) > 0 {
			err = l.queue.SetFlows(ctx, lifecycle.FlowLimits(flows))
		}
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("flow_sync_failed", zap.Error(err))
			}
			return false
		}
		n += len(flows)
		if len(flows) < flowSyncPage {
			break
		}
		last := flows[len(flows)-1]
		after = store.FlowCursor{Since: last.UpdatedAt, Owner: last.Owner, Key: last.Key}
	}
	if l.flowsSynced.IsZero() && n > 0 {
		l.log.Info("flows_synced", zap.Int("flows", n))
	}
	l.flowsSynced = start
	return true
}
