package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// BulkMatchTimeout bounds the statement that finds the jobs a bulk filter
// selects. The filters are those of the jobs list, which a status, a type or
// a name search cannot narrow through an index: a filter that few of a
// million jobs pass is a walk of all of them, a second or two here, so the
// bound refuses only the pathological, and refuses it with ErrTooBroad
// instead of holding a connection.
const BulkMatchTimeout = 5 * time.Second

// ErrTooBroad is a bulk filter that could not be evaluated within
// BulkMatchTimeout.
var ErrTooBroad = errors.New("the query takes too long to evaluate; narrow it by label or status")

// matchJobsSQL selects the ids of the jobs every filter passes, newest
// first; matchLabelledSQL is driven by the first label's rows in
// job_labels instead of the owner's jobs.
const (
	matchJobsSQL = `SELECT id FROM jobs j
WHERE ($1 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $1)
  AND ($2 = '' OR status = $2::job_status)
  AND ($3 = '' OR type = $3)
  AND ($4 = '' OR strpos(lower(name), lower($4)) > 0)
  AND ` + otherLabels + `
ORDER BY id DESC
LIMIT $7`
	matchLabelledSQL = `SELECT j.id FROM job_labels l
JOIN jobs j ON j.id = l.job_id AND j.owner_id = l.owner_id
WHERE ($1 = '00000000-0000-0000-0000-000000000000'::uuid OR l.owner_id = $1)
  AND l.key = $8 AND l.value = $9
  AND ($2 = '' OR j.status = $2::job_status)
  AND ($3 = '' OR j.type = $3)
  AND ($4 = '' OR strpos(lower(j.name), lower($4)) > 0)
  AND ` + otherLabels + `
ORDER BY l.job_id DESC
LIMIT $7`
	otherLabels = `NOT EXISTS (
        SELECT 1 FROM unnest($5::text[], $6::text[]) AS o(key, value)
        WHERE NOT EXISTS (SELECT 1 FROM job_labels x
                          WHERE x.owner_id = j.owner_id AND x.key = o.key AND x.value = o.value AND x.job_id = j.id))`
)

// CountTimeout bounds CountJobs: counting an owner's million jobs by status
// reads them all, about a second here.
const CountTimeout = 3 * time.Second

const countJobsSQL = `SELECT status::text, count(*) FROM jobs
WHERE ($1 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $1)
GROUP BY status`

// CountJobs counts owner's jobs (AnyOwner: everyone's) by status, for the
// dashboard's totals. A count that cannot finish within CountTimeout is
// ErrTooBroad.
func (s *Store) CountJobs(ctx context.Context, owner uuid.UUID) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.withTimeout(ctx, CountTimeout, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, countJobsSQL, owner)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var status string
			var n int64
			if err := rows.Scan(&status, &n); err != nil {
				return err
			}
			out[status] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return out, nil
}

// withTimeout runs f in a transaction whose statements stop after d; a
// statement that does is ErrTooBroad (unless ctx itself ended).
func (s *Store) withTimeout(ctx context.Context, d time.Duration, f func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", d.Milliseconds())); err != nil {
			return err
		}
		return f(tx)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" && ctx.Err() == nil {
		return ErrTooBroad
	}
	if err != nil {
		return translate(err)
	}
	return nil
}

// MatchJobs returns the ids of the jobs f selects (owner, status, type,
// name, labels; not the cursor), newest first, at most max+1 of them, so
// the caller can tell "more than max".
func (s *Store) MatchJobs(ctx context.Context, f JobFilter, max int) ([]uuid.UUID, error) {
	query, labels := matchJobsSQL, f.Labels
	if len(labels) > 0 {
		query, labels = matchLabelledSQL, labels[1:]
	}
	keys, values := make([]string, len(labels)), make([]string, len(labels))
	for i, l := range labels {
		keys[i], values[i] = l.Key, l.Value
	}
	args := []any{f.Owner, string(f.Status), string(f.Type), f.Name, keys, values, max + 1}
	if len(f.Labels) > 0 {
		args = append(args, f.Labels[0].Key, f.Labels[0].Value)
	}
	var ids []uuid.UUID
	err := s.withTimeout(ctx, BulkMatchTimeout, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("match jobs: %w", err)
	}
	return ids, nil
}
