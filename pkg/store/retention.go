package store

import (
	"context"
	"fmt"
	"time"
)

// removeFinishedSQL deletes up to $2 jobs that finished (completed,
// permanently_failed, cancelled) before $1, oldest first, and their runs, in
// one statement. The outer condition is checked again on each row once it
// is locked, so a job a retry revives meanwhile is kept. The runs are found
// by job id through each day partition's primary key.
const removeFinishedSQL = `WITH gone AS (
    DELETE FROM jobs_idle j
    WHERE j.id IN (SELECT id FROM jobs_idle
                   WHERE status IN ('completed', 'permanently_failed', 'cancelled') AND updated_at < $1
                   ORDER BY updated_at LIMIT $2)
      AND j.status IN ('completed', 'permanently_failed', 'cancelled') AND j.updated_at < $1
    RETURNING j.id
), runs AS (
    DELETE FROM job_runs WHERE job_id = ANY(ARRAY(SELECT id FROM gone)) RETURNING 1
)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM runs)`

// RemoveFinishedJobs removes up to limit jobs that finished before before,
// oldest first, with their runs, and says how many of each went.
func (s *Store) RemoveFinishedJobs(ctx context.Context, before time.Time, limit int) (jobs, runs int, err error) {
	if err := s.pool.QueryRow(ctx, removeFinishedSQL, before, limit).Scan(&jobs, &runs); err != nil {
		return 0, 0, fmt.Errorf("remove finished jobs: %w", translate(err))
	}
	return jobs, runs, nil
}

// removeAuditSQL deletes up to $2 audit entries older than $1, oldest first.
const removeAuditSQL = `DELETE FROM audit_log WHERE id IN (
    SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)`

// RemoveAuditBefore removes up to limit audit entries written before before,
// oldest first, and says how many went.
func (s *Store) RemoveAuditBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, removeAuditSQL, before, limit)
	if err != nil {
		return 0, fmt.Errorf("remove audit entries: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}
