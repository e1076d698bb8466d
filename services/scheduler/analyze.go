// The leader's statistics upkeep: partitions that changed much since their
// statistics were taken are analysed, so the hot statements keep their plans
// after a bulk load whether or not Postgres's autovacuum runs.

package main

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// analyzeInterval is how often the leader looks for stale statistics. The
// look is one catalog query; an ANALYZE of a partition reads a sample of
// 3,000 rows (store.AnalyzeStale).
const analyzeInterval = 5 * time.Second

// analyzeLimit bounds the partitions analysed in one round.
const analyzeLimit = 8

// analyze takes fresh statistics of the partitions of jobs and job_runs
// that changed by more than a tenth since their last.
func (l *Leader) analyze(ctx context.Context) {
	start := l.clock()
	names, err := l.store.AnalyzeStale(ctx, analyzeLimit)
	if err != nil && ctx.Err() == nil {
		l.log.Warn("analyze_failed", zap.Error(err))
	}
	if len(names) > 0 {
		l.log.Info("analyzed", zap.Strings("tables", names), zap.Duration("took", l.clock().Sub(start)))
	}
}
