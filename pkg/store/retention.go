package store

import (
	"context"
	"fmt"
	"time"
)

// finishedStatuses is the SQL list of the statuses a job ends in.
const finishedStatuses = `('completed', 'permanently_failed', 'cancelled', 'expired')`

// goneWithJobsSQL continues a WITH whose CTE gone deleted jobs (returning
// id, owner_id, labels, key and debounce): it deletes their runs (CTE runs,
// one row each, for counting), their job_keys, debounces, backfills and
// slo_states rows and their job_labels rows.
const goneWithJobsSQL = `), runs AS (
    DELETE FROM job_runs WHERE job_id = ANY(ARRAY(SELECT id FROM gone)) RETURNING 1
), keys AS (
    DELETE FROM job_keys k USING gone g WHERE k.owner_id = g.owner_id AND k.key = g.key AND k.job_id = g.id
), debounced AS (
    DELETE FROM debounces d USING gone g WHERE d.owner_id = g.owner_id AND d.key = g.debounce->>'key' AND d.job_id = g.id
), backfilled AS (
    DELETE FROM backfills b USING gone g WHERE b.job_id = g.id
), slos AS (
    DELETE FROM slo_states s USING gone g WHERE s.job_id = g.id
), labels AS (
    DELETE FROM job_labels l USING gone g, jsonb_each_text(g.labels) e
    WHERE l.owner_id = g.owner_id AND l.key = e.key AND l.value = e.value AND l.job_id = g.id
)`

// removeFinishedSQL deletes, in one statement, up to $2 jobs that finished
// before $1 (the operator's default retention; NULL keeps them) and up to
// $2 jobs with their own retention that has run out by $3, oldest first,
// with their runs and labels. The outer condition is checked again on each row once it
// is locked, so a job a retry revives meanwhile is kept. The runs are found
// by job id through each day partition's primary key.
const removeFinishedSQL = `WITH due AS (
    (SELECT id FROM jobs_idle
     WHERE status IN ` + finishedStatuses + ` AND retention_ms IS NULL AND updated_at < $1
     ORDER BY updated_at LIMIT $2)
    UNION ALL
    (SELECT id FROM jobs_idle
     WHERE status IN ` + finishedStatuses + ` AND retention_ms IS NOT NULL AND tock_purge_at(updated_at, retention_ms) < $3
     ORDER BY tock_purge_at(updated_at, retention_ms) LIMIT $2)
), gone AS (
    DELETE FROM jobs_idle j
    WHERE j.id IN (SELECT id FROM due) AND j.status IN ` + finishedStatuses + `
      AND CASE WHEN j.retention_ms IS NULL THEN j.updated_at < $1
               ELSE tock_purge_at(j.updated_at, j.retention_ms) < $3 END
    RETURNING j.id, j.owner_id, j.labels, j.key, j.debounce
` + goneWithJobsSQL + `
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM runs)`

// RemoveFinishedJobs removes the finished jobs whose retention has run out
// by now, with their runs: those under the default retention (none when it
// is 0 or less) and those with their own. It removes at most limit of each
// kind, oldest first, and says how many jobs and runs went: limit jobs or
// more means more may be waiting.
func (s *Store) RemoveFinishedJobs(ctx context.Context, now time.Time, retention time.Duration, limit int) (jobs, runs int, err error) {
	var before *time.Time
	if retention > 0 {
		t := now.Add(-retention)
		before = &t
	}
	if err := s.pool.QueryRow(ctx, removeFinishedSQL, before, limit, now).Scan(&jobs, &runs); err != nil {
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
