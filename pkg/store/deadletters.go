package store

import (
	"context"
	"encoding/json"
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
       w.lease_until, w.finished_at, coalesce(w.output, ''), coalesce(w.error, ''), coalesce(j.name, ''), coalesce(j.type, ''),
       coalesce(w.throttled_ms, 0)
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

// DeadEntry is an entry of a shard's dead stream, kept in Postgres (see
// migration 025): Entry is its id in the stream.
type DeadEntry struct {
	Shard      int
	Entry      string
	SetAsideAt time.Time
	JobID      uuid.UUID // uuid.Nil when its member does not parse
	Owner      uuid.UUID
	Error      string
	Deliveries int
	Fields     map[string]string
}

// saveDeadEntriesSQL inserts the entries given as arrays, once each: a
// drain that stopped before deleting them from Redis saves them again.
const saveDeadEntriesSQL = `INSERT INTO dead_entries (shard, entry, set_aside_at, job_id, owner_id, error, deliveries, fields)
SELECT * FROM unnest($1::smallint[], $2::text[], $3::timestamptz[], $4::uuid[], $5::uuid[], $6::text[], $7::integer[], $8::jsonb[])
ON CONFLICT (shard, entry) DO NOTHING`

// SaveDeadEntries keeps entries in one statement; an entry already kept is
// left as it is.
func (s *Store) SaveDeadEntries(ctx context.Context, entries []DeadEntry) error {
	if len(entries) == 0 {
		return nil
	}
	n := len(entries)
	shards, ids, ats := make([]int16, n), make([]string, n), make([]time.Time, n)
	jobs, owners := make([]*uuid.UUID, n), make([]*uuid.UUID, n)
	errs, deliveries, fields := make([]string, n), make([]int32, n), make([][]byte, n)
	for i, e := range entries {
		shards[i], ids[i], ats[i], errs[i], deliveries[i] = int16(e.Shard), e.Entry, e.SetAsideAt, e.Error, int32(e.Deliveries)
		if e.JobID != uuid.Nil {
			jobs[i], owners[i] = &entries[i].JobID, &entries[i].Owner
		}
		raw, err := json.Marshal(e.Fields)
		if err != nil {
			return fmt.Errorf("save dead entries: %w", err)
		}
		fields[i] = raw
	}
	if _, err := s.pool.Exec(ctx, saveDeadEntriesSQL, shards, ids, ats, jobs, owners, errs, deliveries, fields); err != nil {
		return fmt.Errorf("save %d dead entries: %w", n, translate(err))
	}
	return nil
}

// DeadEntries lists the kept dead entries of one shard, oldest first.
func (s *Store) DeadEntries(ctx context.Context, shard int) ([]DeadEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT shard, entry, set_aside_at, coalesce(job_id, '00000000-0000-0000-0000-000000000000'),
       coalesce(owner_id, '00000000-0000-0000-0000-000000000000'), error, deliveries, fields
FROM dead_entries WHERE shard = $1 ORDER BY set_aside_at, entry`, int16(shard))
	if err != nil {
		return nil, fmt.Errorf("list dead entries: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadEntry, error) {
		var e DeadEntry
		var sh int16
		var d int32
		err := r.Scan(&sh, &e.Entry, &e.SetAsideAt, &e.JobID, &e.Owner, &e.Error, &d, &e.Fields)
		e.Shard, e.Deliveries, e.SetAsideAt = int(sh), int(d), e.SetAsideAt.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list dead entries: %w", translate(err))
	}
	return out, nil
}

// RemoveDeadEntriesBefore deletes up to limit kept dead entries set aside
// before cutoff, and says how many it deleted.
func (s *Store) RemoveDeadEntriesBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM dead_entries WHERE (shard, entry) IN (
    SELECT shard, entry FROM dead_entries WHERE set_aside_at < $1 ORDER BY set_aside_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("remove dead entries: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}
