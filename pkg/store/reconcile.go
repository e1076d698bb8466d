package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// unstartedClaimsSQL finds one-off jobs claimed into Redis whose due time passed
// before olderThan with no outcome recorded: their member may have been lost
// (a dashboard that died between commit and ZADD, a Redis that lost its data).
// The caller leaves out those Redis still holds, running ones included
// (queue.Queue.Scheduled).
const unstartedClaimsSQL = `SELECT j.id, j.run_at, 1, j.priority, j.generation, j.owner_id, ` + routeSQL + ` FROM jobs_idle j
WHERE j.status = 'scheduled' AND j.run_at IS NOT NULL AND j.run_at < $1
  AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.scheduled_for = j.run_at)
ORDER BY j.run_at
LIMIT $2`

// UnstartedClaims returns the first attempts of claimed one-off jobs that were
// due before olderThan and never started.
func (s *Store) UnstartedClaims(ctx context.Context, olderThan time.Time, limit int) ([]job.Occurrence, error) {
	return s.occurrences(ctx, "unstarted claims", unstartedClaimsSQL, olderThan, limit)
}

// legacyRunningSQL finds running rows an older release wrote (its workers
// recorded each start in job_runs) whose lease has ended: their worker
// stopped with the release. Requeuing the attempt lets a worker of this
// one take it over, and its outcome replaces the row.
const legacyRunningSQL = `SELECT r.job_id, r.scheduled_for, r.attempt, j.priority, j.generation, j.owner_id, ` + routeSQL + `
FROM job_runs r JOIN jobs j ON j.id = r.job_id
WHERE r.status = 'running' AND r.lease_until < $1 AND j.status = 'scheduled'
ORDER BY r.lease_until
LIMIT $2`

// LegacyRunning returns the attempts an older release recorded as running
// whose lease ended before now. This release records no running rows
// (an attempt's lease lives in Redis); the partial index on running rows
// keeps the look cheap once they are gone.
func (s *Store) LegacyRunning(ctx context.Context, now time.Time, limit int) ([]job.Occurrence, error) {
	return s.occurrences(ctx, "legacy running rows", legacyRunningSQL, now, limit)
}

// occurrences runs a query whose rows are (job_id, scheduled_for, attempt,
// priority, generation, owner_id, routeSQL) and returns them as routed
// occurrences; what names the query in errors.
func (s *Store) occurrences(ctx context.Context, what, sql string, args ...any) ([]job.Occurrence, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, translate(err))
	}
	occs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job.Occurrence, error) {
		var o job.Occurrence
		var attempt, prio int16
		var target, flow *string
		err := r.Scan(&o.JobID, &o.ScheduledFor, &attempt, &prio, &o.Generation, &o.Owner, &target, &flow)
		o.ScheduledFor, o.Attempt, o.Priority = o.ScheduledFor.UTC(), int(attempt), int(prio)
		return routed(o, target, flow), err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, translate(err))
	}
	return occs, nil
}
