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
	lockJobForRetrySQL = `SELECT status, generation, priority, schedule IS NOT NULL, owner_id, ` + routeSQL + ` FROM jobs
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2) FOR UPDATE`
	// latestRunSQL finds the occurrence to retry: the one given, or else the
	// latest that ended permanently_failed.
	latestRunSQL = `SELECT scheduled_for, attempt, status FROM job_runs
WHERE job_id = $1 AND ($2::timestamptz IS NULL OR scheduled_for = $2)
  AND ($2::timestamptz IS NOT NULL OR status = 'permanently_failed')
ORDER BY scheduled_for DESC, attempt DESC LIMIT 1`
	reviveJobSQL = `UPDATE jobs SET status = 'scheduled', updated_at = $2 WHERE id = $1 AND status = 'permanently_failed'`
	// replayedSQL ends the dead letter the retried attempt was, unless it
	// was purged: the retry has taken it out of the list.
	replayedSQL = `UPDATE job_runs SET dead_letter = 'replayed'
WHERE job_id = $1 AND scheduled_for = $2 AND attempt = $3 AND dead_letter IS NULL`
)

// RetryOccurrence gives a permanently failed occurrence of a job of owner one
// more attempt, now: the attempt after its last, under the same idempotency
// key. scheduledFor picks the occurrence; zero means the latest that failed
// permanently. A one-off job that had ended permanently_failed is scheduled
// again until that attempt ends. enqueue puts the attempt in Redis inside the
// transaction, before the commit: a worker that is handed the attempt first
// finds the job permanently_failed and reads it again with FetchCommitted,
// which waits for the job's lock; should the commit fail it finds the job
// not scheduled and drops the attempt, so nothing is lost or dropped either
// way.
// A job or occurrence that cannot be retried is job.ErrConflict; an unknown
// job, or another owner's, is job.ErrNotFound.
func (s *Store) RetryOccurrence(ctx context.Context, owner, id uuid.UUID, scheduledFor, now time.Time, a Audit,
	enqueue func(context.Context, job.Occurrence) error) (job.Occurrence, error) {
	var occ job.Occurrence
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			status    job.Status
			recurring bool
			target    *string
			flow      *string
		)
		occ = job.Occurrence{JobID: id}
		if err := tx.QueryRow(ctx, lockJobForRetrySQL, id, owner).Scan(&status, &occ.Generation, &occ.Priority, &recurring, &occ.Owner, &target, &flow); err != nil {
			return translate(err)
		}
		occ = routed(occ, target, flow)
		switch {
		case recurring && status != job.StatusScheduled:
			return fmt.Errorf("%w: a %s recurring job cannot run; resume it first", job.ErrConflict, status)
		case !recurring && status != job.StatusPermanentlyFailed:
			return fmt.Errorf("%w: only a one-off job that failed permanently can be retried; this one is %s", job.ErrConflict, status)
		}
		var last job.RunStatus
		err := tx.QueryRow(ctx, latestRunSQL, id, nullTime(scheduledFor)).Scan(&occ.ScheduledFor, &occ.Attempt, &last)
		if err == pgx.ErrNoRows {
			return fmt.Errorf("%w: no attempt of that occurrence failed permanently", job.ErrConflict)
		}
		if err != nil {
			return translate(err)
		}
		if last != job.RunPermanentlyFailed {
			return fmt.Errorf("%w: the occurrence's last attempt is %s, not permanently_failed", job.ErrConflict, last)
		}
		occ.ScheduledFor = occ.ScheduledFor.UTC()
		if _, err := tx.Exec(ctx, replayedSQL, id, occ.ScheduledFor, int16(occ.Attempt)); err != nil {
			return translate(err)
		}
		occ.Attempt++
		if _, err := tx.Exec(ctx, reviveJobSQL, id, now); err != nil {
			return translate(err)
		}
		if err := record(ctx, tx, a, now, TargetJob, id, map[string]any{
			"scheduled_for": occ.ScheduledFor, "attempt": occ.Attempt, "idempotency_key": occ.Key()}); err != nil {
			return err
		}
		return enqueue(ctx, occ)
	})
	if err != nil {
		return job.Occurrence{}, fmt.Errorf("retry job %s: %w", id, err)
	}
	return occ, nil
}
