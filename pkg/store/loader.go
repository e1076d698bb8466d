package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// WindowHours lists the due_hour partitions that hold due times in [since, until).
// A window of 24 hours or more, or an unbounded one (zero since), needs them all.
func WindowHours(since, until time.Time) []int16 {
	if since.IsZero() || until.Sub(since) >= 23*time.Hour {
		hours := make([]int16, 24)
		for h := range hours {
			hours[h] = int16(h)
		}
		return hours
	}
	var hours []int16
	for t := since.UTC().Truncate(time.Hour); t.Before(until); t = t.Add(time.Hour) {
		hours = append(hours, int16(t.Hour()))
	}
	return hours
}

// claimDueSQL takes the earliest unclaimed due jobs of the window and marks them
// claimed (due_at NULL, which moves them to jobs_idle). Both the scan and the
// update carry due_hour = ANY($1), so Postgres prunes to the window's hour
// partitions (TestClaimDue/PrunesToWindowPartitions shows the plan).
const claimDueSQL = `WITH due AS (
    SELECT id, due_hour FROM jobs
    WHERE due_hour = ANY($1) AND due_at >= $2 AND due_at < $3 AND status = 'scheduled'
    ORDER BY due_at
    LIMIT $4
    FOR UPDATE SKIP LOCKED
)
UPDATE jobs j SET due_at = NULL, due_hour = -1, updated_at = $5
FROM due
WHERE j.id = due.id AND j.due_hour = due.due_hour AND j.due_hour = ANY($1)
RETURNING j.id, j.run_at, j.priority`

// ClaimDue claims up to limit jobs due in [since, until) and passes their
// occurrences to enqueue before the claim commits. If enqueue fails, nothing is
// claimed; if the commit fails after enqueue succeeded, the next round claims
// and enqueues the same members again, which Redis absorbs (ZADD of an existing
// member) and workers deduplicate by run key. It returns how many it claimed.
func (s *Store) ClaimDue(ctx context.Context, since, until time.Time, limit int, now time.Time,
	enqueue func(context.Context, []job.Occurrence) error) (int, error) {
	lower := since
	if lower.IsZero() {
		lower = time.Unix(0, 0)
	}
	var n int
	err := retrySerialization(ctx, func() error {
		n = 0
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, claimDueSQL, WindowHours(since, until), lower, until, limit, now)
			if err != nil {
				return err
			}
			occs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job.Occurrence, error) {
				var o job.Occurrence
				var prio int16
				err := r.Scan(&o.JobID, &o.ScheduledFor, &prio)
				o.ScheduledFor, o.Priority, o.Attempt = o.ScheduledFor.UTC(), int(prio), 1
				return o, err
			})
			if err != nil {
				return err
			}
			n = len(occs)
			if n == 0 {
				return nil
			}
			return enqueue(ctx, occs)
		})
	})
	if err != nil {
		return 0, fmt.Errorf("claim due jobs: %w", translate(err))
	}
	return n, nil
}
