package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

const (
	lockJobForPurgeSQL = `SELECT status, owner_id FROM jobs
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2) FOR UPDATE`
	purgeJobSQL = `WITH gone AS (
    DELETE FROM jobs WHERE id = $1 RETURNING id, owner_id, labels, key, debounce
` + goneWithJobsSQL + `
SELECT (SELECT count(*) FROM runs)`
)

// PurgeJob removes a finished job of owner's (or of anyone's, for
// AnyOwner) now, with its runs and labels, instead of at the end of its
// retention, and records it in the audit log (the count of runs, not their
// content). A job that can still run (scheduled or paused) is
// job.ErrConflict; an unknown job, or another owner's, job.ErrNotFound.
func (s *Store) PurgeJob(ctx context.Context, owner, id uuid.UUID, now time.Time, a Audit) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status job.Status
		var jobOwner uuid.UUID
		if err := tx.QueryRow(ctx, lockJobForPurgeSQL, id, owner).Scan(&status, &jobOwner); err != nil {
			return translate(err)
		}
		if status == job.StatusScheduled || status == job.StatusPaused {
			return fmt.Errorf("%w: a %s job can still run; cancel it first", job.ErrConflict, status)
		}
		var runs int
		if err := tx.QueryRow(ctx, purgeJobSQL, id).Scan(&runs); err != nil {
			return translate(err)
		}
		return record(ctx, tx, a, now, TargetJob, id, map[string]any{"status": status, "owner": jobOwner, "runs": runs})
	})
	if err != nil {
		return fmt.Errorf("purge job %s: %w", id, err)
	}
	return nil
}
