package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DeadLetter names one dead letter: a permanently failed run that is the
// last attempt of its occurrence and that nobody replayed or purged (see
// migration 025). Its id is the run's.
type DeadLetter struct {
	RunID        uuid.UUID
	JobID        uuid.UUID
	Owner        uuid.UUID
	ScheduledFor time.Time
	Attempt      int
}

const (
	// deadLettersSQL finds which of the run ids $1 are dead letters of
	// owner $2 (every owner's for AnyOwner), through job_runs_dead.
	deadLettersSQL = `SELECT w.id, w.job_id, w.owner_id, w.scheduled_for, w.attempt FROM job_runs w
WHERE w.id = ANY($1) AND w.status = 'permanently_failed'
  AND ($2 = ` + noUUID + ` OR w.owner_id = $2) AND ` + deadLetterSQL
	// purgeDeadLettersSQL ends those of them, returning the ids it ended.
	purgeDeadLettersSQL = `UPDATE job_runs w SET dead_letter = 'purged'
WHERE w.id = ANY($1) AND w.status = 'permanently_failed'
  AND ($2 = ` + noUUID + ` OR w.owner_id = $2) AND ` + deadLetterSQL + `
RETURNING w.id`
)

// DeadLetters returns those of ids that are dead letters of owner
// (every owner's for AnyOwner), in no particular order. An id that is not
// one (unknown, another owner's, replayed, purged, or not a permanently
// failed run) is left out.
func (s *Store) DeadLetters(ctx context.Context, owner uuid.UUID, ids []uuid.UUID) ([]DeadLetter, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, deadLettersSQL, ids, owner)
	if err != nil {
		return nil, fmt.Errorf("find dead letters: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadLetter, error) {
		var d DeadLetter
		var a int16
		err := r.Scan(&d.RunID, &d.JobID, &d.Owner, &d.ScheduledFor, &a)
		d.Attempt, d.ScheduledFor = int(a), d.ScheduledFor.UTC()
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("find dead letters: %w", translate(err))
	}
	return out, nil
}

// PurgeDeadLetters takes those of ids that are dead letters of owner
// (every owner's for AnyOwner) out of the list, in one statement, and
// returns the ids it purged. The runs stay in their jobs' histories until
// run retention drops them; only the dead-letter list forgets them.
func (s *Store) PurgeDeadLetters(ctx context.Context, owner uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, purgeDeadLettersSQL, ids, owner)
	if err != nil {
		return nil, fmt.Errorf("purge dead letters: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("purge dead letters: %w", translate(err))
	}
	return out, nil
}

// getDeadLetterSQL reads one dead letter of owner $2 (any owner's for
// AnyOwner) by its run id $1, with its job's name and type.
const getDeadLetterSQL = `SELECT w.job_id, w.scheduled_for, w.attempt, w.status, w.id, w.owner_id, w.due_at, w.started_at,
       w.lease_until, w.finished_at, coalesce(w.output, ''), coalesce(w.error, ''), coalesce(j.name, ''), coalesce(j.type, '')
FROM job_runs w
LEFT JOIN LATERAL (SELECT name, type FROM jobs WHERE id = w.job_id) j ON true
WHERE w.id = $1 AND w.status = 'permanently_failed'
  AND ($2 = ` + noUUID + ` OR w.owner_id = $2) AND ` + deadLetterSQL

// GetDeadLetter returns the dead letter named id, if it is one of owner's
// (any owner's for AnyOwner); job.ErrNotFound otherwise.
func (s *Store) GetDeadLetter(ctx context.Context, owner, id uuid.UUID) (FoundRun, error) {
	rows, err := s.pool.Query(ctx, getDeadLetterSQL, id, owner)
	if err != nil {
		return FoundRun{}, fmt.Errorf("get dead letter: %w", translate(err))
	}
	run, err := pgx.CollectExactlyOneRow(rows, scanFoundRun)
	if err != nil {
		return FoundRun{}, fmt.Errorf("get dead letter %s: %w", id, translate(err))
	}
	return run, nil
}
