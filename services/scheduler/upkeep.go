// The leader's hourly upkeep of job_runs partitions.

package main

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// upkeep creates job_runs partitions ahead and drops those past retention,
// and records the retention, which bounds how far back a backfill reaches.
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
	if err := l.store.SetRunRetention(ctx, l.cfg.RunRetention); err != nil {
		l.log.Warn("partition_upkeep_failed", zap.Error(err))
	}
	if created > 0 || len(dropped) > 0 {
		l.log.Info("partition_upkeep", zap.Int("created", created), zap.Strings("dropped", dropped))
	}
}
