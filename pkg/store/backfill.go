package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// Backfill states.
const (
	BackfillRunning   = "running"
	BackfillCompleted = "completed"
	BackfillCancelled = "cancelled"
)

// ActionJobBackfill and ActionBackfillCancel are the audit actions of a
// backfill's start and cancel; TargetBackfill is what the cancel names.
const (
	ActionJobBackfill    = "job.backfill"
	ActionBackfillCancel = "backfill.cancel"
	TargetBackfill       = "backfill"
)

// Backfill is one run of a recurring job's past occurrences (see
// migrations/029_backfills.sql): those whose nominal times fall in
// [From, To) and that never ran.
type Backfill struct {
	ID, Owner, JobID uuid.UUID
	From, To         time.Time
	Overlap          job.Overlap
	Status           string
	// Total is how many occurrences the range holds; Queued how many the
	// backfill queued so far, Existing how many it left alone because they
	// had run already; Completed, Failed (permanently failed, expired or
	// aborted) and Skipped what became of the queued ones that ended.
	Total, Queued, Existing, Completed, Failed, Skipped int
	// Cursor is the nominal time from which the next occurrences are
	// planned; Inflight the due times of those queued whose outcome is not
	// final yet.
	Cursor   time.Time
	Inflight []time.Time
	// Generation is the job's generation Inflight was queued under.
	Generation int
	// ProgressedAt is when Inflight last changed.
	CreatedAt, ProgressedAt time.Time
	// FinishedAt is when it completed or was cancelled, zero while it runs;
	// Reason says why it was cancelled.
	FinishedAt time.Time
	Reason     string
}

// Remaining is how many occurrences are neither queued nor found run.
func (b *Backfill) Remaining() int { return max(b.Total-b.Queued-b.Existing, 0) }

// MaxRunningBackfills bounds the backfills one owner has running at once.
const MaxRunningBackfills = 10

// ErrTooManyBackfills refuses a backfill beyond MaxRunningBackfills; it is
// a job.ErrConflict.
var ErrTooManyBackfills = fmt.Errorf("%w: %d backfills are running already; cancel one or wait for one to finish",
	job.ErrConflict, MaxRunningBackfills)

const backfillColumns = `id, owner_id, job_id, from_at, to_at, overlap, status, total, cursor_at, inflight, generation, queued,
    existing, completed, failed, skipped, created_at, progressed_at, finished_at, coalesce(reason, '')`

func scanBackfill(row pgx.Row) (*Backfill, error) {
	var b Backfill
	var overlap string
	var inflight []int64
	var finished *time.Time
	if err := row.Scan(&b.ID, &b.Owner, &b.JobID, &b.From, &b.To, &overlap, &b.Status, &b.Total, &b.Cursor, &inflight, &b.Generation,
		&b.Queued, &b.Existing, &b.Completed, &b.Failed, &b.Skipped, &b.CreatedAt, &b.ProgressedAt, &finished, &b.Reason); err != nil {
		return nil, err
	}
	b.Overlap = job.Overlap(overlap)
	for _, ms := range inflight {
		b.Inflight = append(b.Inflight, time.UnixMilli(ms).UTC())
	}
	if finished != nil {
		b.FinishedAt = *finished
	}
	b.From, b.To, b.Cursor = b.From.UTC(), b.To.UTC(), b.Cursor.UTC()
	return &b, nil
}

func inflightMs(ts []time.Time) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.UnixMilli()
	}
	return out
}

// CreateBackfill stores b (running, its cursor at From) with its audit
// entry, unless its owner has MaxRunningBackfills running already
// (ErrTooManyBackfills) or its job is not one of the owner's scheduled
// recurring jobs at its generation of the check (job.ErrConflict).
func (s *Store) CreateBackfill(ctx context.Context, b *Backfill, a Audit) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('tock.backfills.' || $1::text, 0))`, b.Owner); err != nil {
			return fmt.Errorf("lock backfills: %w", translate(err))
		}
		var running int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM backfills WHERE owner_id = $1 AND status = 'running'`, b.Owner).Scan(&running); err != nil {
			return fmt.Errorf("count backfills: %w", translate(err))
		}
		if running >= MaxRunningBackfills {
			return ErrTooManyBackfills
		}
		_, err := tx.Exec(ctx, `INSERT INTO backfills (id, owner_id, job_id, from_at, to_at, overlap, status, total, cursor_at, created_at, progressed_at)
VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $4, $8, $8)`, b.ID, b.Owner, b.JobID, b.From, b.To, string(b.Overlap), b.Total, b.CreatedAt)
		if err != nil {
			return fmt.Errorf("insert backfill: %w", translate(err))
		}
		b.Status, b.Cursor, b.ProgressedAt = BackfillRunning, b.From, b.CreatedAt
		return record(ctx, tx, a, b.CreatedAt, TargetJob, b.JobID, map[string]any{
			"backfill_id": b.ID, "from": b.From, "to": b.To, "overlap": b.Overlap, "total": b.Total})
	})
}

// GetBackfill returns a backfill of owner's (uuid.Nil: anyone's); another
// owner's, or none, is job.ErrNotFound.
func (s *Store) GetBackfill(ctx context.Context, owner, id uuid.UUID) (*Backfill, error) {
	b, err := scanBackfill(s.pool.QueryRow(ctx, `SELECT `+backfillColumns+` FROM backfills
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2)`, id, owner))
	if err != nil {
		return nil, fmt.Errorf("get backfill %s: %w", id, translate(err))
	}
	return b, nil
}

// ListBackfills returns up to limit of the backfills of a job of owner's
// (uuid.Nil: anyone's), newest first.
func (s *Store) ListBackfills(ctx context.Context, owner, jobID uuid.UUID, limit int) ([]*Backfill, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+backfillColumns+` FROM backfills
WHERE job_id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2)
ORDER BY created_at DESC, id DESC LIMIT $3`, jobID, owner, limit)
	if err != nil {
		return nil, fmt.Errorf("list backfills: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Backfill, error) { return scanBackfill(r) })
	if err != nil {
		return nil, fmt.Errorf("list backfills: %w", translate(err))
	}
	return out, nil
}

// CancelBackfill cancels a running backfill of owner's (uuid.Nil:
// anyone's): it queues nothing more, and a worker handed one of its
// occurrences afterwards drops it (BackfillStates). An attempt that
// started before runs to its end. A backfill cancelled already is returned
// as it is; a completed one is job.ErrConflict; none, job.ErrNotFound.
func (s *Store) CancelBackfill(ctx context.Context, owner, id uuid.UUID, now time.Time, a Audit) (*Backfill, error) {
	var out *Backfill
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		b, err := scanBackfill(tx.QueryRow(ctx, `UPDATE backfills SET status = 'cancelled', finished_at = $3, reason = 'cancelled by request'
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2) AND status = 'running'
RETURNING `+backfillColumns, id, owner, now))
		if errors.Is(err, pgx.ErrNoRows) {
			cur, err := scanBackfill(tx.QueryRow(ctx, `SELECT `+backfillColumns+` FROM backfills
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2)`, id, owner))
			if err != nil {
				return fmt.Errorf("cancel backfill %s: %w", id, translate(err))
			}
			if cur.Status == BackfillCompleted {
				return fmt.Errorf("%w: the backfill completed already", job.ErrConflict)
			}
			out = cur
			return nil
		}
		if err != nil {
			return fmt.Errorf("cancel backfill %s: %w", id, translate(err))
		}
		out = b
		return record(ctx, tx, a, now, TargetBackfill, b.ID, map[string]any{"job_id": b.JobID})
	})
	return out, err
}

// RunningBackfills returns up to limit running backfills after the one
// with id after (uuid.Nil: from the first), in id order: a leader walks
// them all, a page a round, so none waits behind others that cannot move.
func (s *Store) RunningBackfills(ctx context.Context, after uuid.UUID, limit int) ([]*Backfill, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+backfillColumns+` FROM backfills WHERE status = 'running' AND id > $1
ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("running backfills: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Backfill, error) { return scanBackfill(r) })
	if err != nil {
		return nil, fmt.Errorf("running backfills: %w", translate(err))
	}
	return out, nil
}

// RunningBackfillsPerOwner counts the running backfills of each owner
// among owners.
func (s *Store) RunningBackfillsPerOwner(ctx context.Context, owners []uuid.UUID) (map[uuid.UUID]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT owner_id, count(*) FROM backfills WHERE status = 'running' AND owner_id = ANY($1)
GROUP BY owner_id`, owners)
	if err != nil {
		return nil, fmt.Errorf("count backfills: %w", translate(err))
	}
	out := map[uuid.UUID]int{}
	var owner uuid.UUID
	var n int
	_, err = pgx.ForEachRow(rows, []any{&owner, &n}, func() error {
		out[owner] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count backfills: %w", translate(err))
	}
	return out, nil
}

// SaveBackfill writes what the leader's round made of a running backfill:
// its cursor, inflight, counters, status and reason. A backfill cancelled
// meanwhile is left as the cancel made it, and reported false.
func (s *Store) SaveBackfill(ctx context.Context, b *Backfill) (bool, error) {
	var finished *time.Time
	if !b.FinishedAt.IsZero() {
		finished = &b.FinishedAt
	}
	tag, err := s.pool.Exec(ctx, `UPDATE backfills SET cursor_at = $2, inflight = $3, queued = $4, existing = $5, completed = $6,
    failed = $7, skipped = $8, progressed_at = $9, status = $10, finished_at = $11, reason = nullif($12, ''), generation = $13
WHERE id = $1 AND status = 'running'`, b.ID, b.Cursor, inflightMs(b.Inflight), b.Queued, b.Existing, b.Completed,
		b.Failed, b.Skipped, b.ProgressedAt, b.Status, finished, b.Reason, b.Generation)
	if err != nil {
		return false, fmt.Errorf("save backfill %s: %w", b.ID, translate(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Outcomes returns, for each of times that has a run of job id, the status
// of its latest attempt, by the time's unix milliseconds: one probe of
// job_runs' primary key per time.
func (s *Store) Outcomes(ctx context.Context, id uuid.UUID, times []time.Time) (map[int64]job.RunStatus, error) {
	out := make(map[int64]job.RunStatus, len(times))
	if len(times) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT t.at, r.status FROM unnest($2::timestamptz[]) AS t(at)
CROSS JOIN LATERAL (SELECT status FROM job_runs WHERE job_id = $1 AND scheduled_for = t.at ORDER BY attempt DESC LIMIT 1) r`, id, times)
	if err != nil {
		return nil, fmt.Errorf("outcomes: %w", translate(err))
	}
	var at time.Time
	var status string
	_, err = pgx.ForEachRow(rows, []any{&at, &status}, func() error {
		out[at.UnixMilli()] = job.RunStatus(status)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outcomes: %w", translate(err))
	}
	return out, nil
}

// BackfillState is what a worker needs of a backfill whose occurrence it
// is about to start.
type BackfillState struct {
	Running bool
}

// BackfillStates reads the states of backfills ids, for a worker's batch
// that holds occurrences of them; one missing is not running.
func (s *Store) BackfillStates(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]BackfillState, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, status FROM backfills WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("backfill states: %w", translate(err))
	}
	out := make(map[uuid.UUID]BackfillState, len(ids))
	var id uuid.UUID
	var status string
	_, err = pgx.ForEachRow(rows, []any{&id, &status}, func() error {
		out[id] = BackfillState{Running: status == BackfillRunning}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("backfill states: %w", translate(err))
	}
	return out, nil
}
