package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// raiseLoadMarkSQL counts one more claim handed to Redis; see ClaimDue. Only
// the loader's leader claims, so the row is not contended.
const raiseLoadMarkSQL = `UPDATE tock_marks SET seq = seq + 1 WHERE name = 'load' RETURNING seq`

// LoadMark returns the count of committed claims. Every claim wrote its
// count to each shard's marker before committing, so a shard whose marker
// is lower lost writes that Postgres kept.
func (s *Store) LoadMark(ctx context.Context) (int64, error) {
	var mark int64
	if err := s.pool.QueryRow(ctx, `SELECT seq FROM tock_marks WHERE name = 'load'`).Scan(&mark); err != nil {
		return 0, fmt.Errorf("read load mark: %w", translate(err))
	}
	return mark, nil
}

// ProcessNumber hands a dashboard the number it records in the claims it
// makes (Create.ClaimedBy), unique among the processes alive at once.
func (s *Store) ProcessNumber(ctx context.Context) (int32, error) {
	var n int32
	if err := s.pool.QueryRow(ctx, `SELECT nextval('tock_process_seq')::integer`).Scan(&n); err != nil {
		return 0, fmt.Errorf("take a process number: %w", translate(err))
	}
	return n, nil
}

// orphanedClaimsSQL finds the one-off jobs that the given dashboards stored
// claimed, to add them to the due set after their commit, and that never
// started, after the cursor ($2, $3) in (run_at, id) order. It walks
// jobs_idle_claimed, which holds only the scheduled jobs of jobs_idle: what
// is claimed and not yet run.
const orphanedClaimsSQL = `SELECT j.id, j.run_at, 1, j.priority, j.generation, j.owner_id, ` + routeSQL + ` FROM jobs_idle j
WHERE j.status = 'scheduled' AND j.run_at IS NOT NULL AND (j.run_at, j.id) > ($2, $3) AND j.claimed_by = ANY($1)
  AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.scheduled_for = j.run_at)
ORDER BY j.run_at, j.id
LIMIT $4`

// OrphanedClaims returns up to limit first attempts, after the occurrence
// after (zero: from the start), of one-off jobs claimed by the given
// dashboards (their process numbers) that never started: a dashboard that
// died between its commit and its ZADD left them out of Redis.
func (s *Store) OrphanedClaims(ctx context.Context, dashboards []int32, after job.Occurrence, limit int) ([]job.Occurrence, error) {
	return s.occurrences(ctx, "orphaned claims", orphanedClaimsSQL, dashboards, after.ScheduledFor, after.JobID, limit)
}

// SetRunRetention records the scheduler's TOCK_RUN_RETENTION (0: runs are
// kept for ever), for the dashboard, which refuses a backfill of days whose
// runs retention would drop.
func (s *Store) SetRunRetention(ctx context.Context, d time.Duration) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO tock_marks (name, seq) VALUES ('run_retention_ms', $1)
ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq`, d.Milliseconds()); err != nil {
		return fmt.Errorf("record run retention: %w", translate(err))
	}
	return nil
}

// RunRetention returns what SetRunRetention last recorded; false when no
// scheduler has yet.
func (s *Store) RunRetention(ctx context.Context) (time.Duration, bool, error) {
	var ms int64
	err := s.pool.QueryRow(ctx, `SELECT seq FROM tock_marks WHERE name = 'run_retention_ms'`).Scan(&ms)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("run retention: %w", translate(err))
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}
