package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/pkg/job"
)

// Callbacks: the outbox of a job's notify callback (migration 031). A row
// is written with the outcome it tells (FinishRuns), claimed by a worker
// for a lease, and deleted once its URL takes it; a delivery that fails
// puts it off by a backoff. A worker that dies while delivering leaves the
// row to come due again when its lease ends: a callback is delivered at
// least once, with the same Idempotency-Key each time.

// Callback is one callback to deliver.
type Callback struct {
	ID         int64
	Owner      uuid.UUID
	Occurrence job.Occurrence
	Event      job.NotifyEvent
	Body       []byte
	// Tries counts the deliveries tried, this one included.
	Tries int
}

// claimCallbacksSQL takes up to $2 due callbacks, at most $3 of each
// owner and none of the owners in $4 (those at their cap of deliveries in
// flight in this worker), oldest due first, and leases them until $5.
// Rows another worker is claiming are skipped, not waited for.
const claimCallbacksSQL = `WITH due AS (
    SELECT id, owner_id, next_at FROM callbacks
    WHERE next_at <= $1 AND NOT (owner_id = ANY($4))
    ORDER BY next_at
    LIMIT $2 * 4
    FOR UPDATE SKIP LOCKED
), pick AS (
    SELECT id FROM (
        SELECT id, next_at, row_number() OVER (PARTITION BY owner_id ORDER BY next_at, id) AS n FROM due
    ) x
    WHERE n <= $3
    ORDER BY next_at
    LIMIT $2
)
UPDATE callbacks c SET next_at = $5, tries = c.tries + 1
FROM pick
WHERE c.id = pick.id
RETURNING c.id, c.owner_id, c.job_id, c.scheduled_for, c.attempt, c.event, c.body, c.tries`

// ClaimCallbacks leases up to most due callbacks until leaseUntil, at most
// perOwner of each owner and none of busy's.
func (s *Store) ClaimCallbacks(ctx context.Context, now, leaseUntil time.Time, most, perOwner int, busy []uuid.UUID) ([]Callback, error) {
	if busy == nil {
		busy = []uuid.UUID{}
	}
	rows, err := s.pool.Query(ctx, claimCallbacksSQL, now, most, perOwner, busy, leaseUntil)
	if err != nil {
		return nil, fmt.Errorf("claim callbacks: %w", translate(err))
	}
	defer rows.Close()
	var out []Callback
	for rows.Next() {
		var cb Callback
		var attempt int16
		var event string
		if err := rows.Scan(&cb.ID, &cb.Owner, &cb.Occurrence.JobID, &cb.Occurrence.ScheduledFor, &attempt, &event, &cb.Body, &cb.Tries); err != nil {
			return nil, fmt.Errorf("claim callbacks: %w", err)
		}
		cb.Occurrence.ScheduledFor = cb.Occurrence.ScheduledFor.UTC()
		cb.Occurrence.Attempt, cb.Event = int(attempt), job.NotifyEvent(event)
		out = append(out, cb)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim callbacks: %w", translate(err))
	}
	return out, nil
}

// CallbackDone deletes a callback: delivered, or given up on.
func (s *Store) CallbackDone(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM callbacks WHERE id = $1`, id); err != nil {
		return fmt.Errorf("callback done: %w", translate(err))
	}
	return nil
}

// CallbackLater puts a callback whose delivery failed off until at, with
// why (never a secret: the answer's status, or how the request failed).
func (s *Store) CallbackLater(ctx context.Context, id int64, at time.Time, why string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE callbacks SET next_at = $2, last_error = $3 WHERE id = $1`, id, at, storable(why)); err != nil {
		return fmt.Errorf("callback later: %w", translate(err))
	}
	return nil
}

// PendingCallbacks counts the callbacks not yet delivered, for the gauge.
func (s *Store) PendingCallbacks(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM callbacks`).Scan(&n); err != nil {
		return 0, fmt.Errorf("pending callbacks: %w", translate(err))
	}
	return n, nil
}
