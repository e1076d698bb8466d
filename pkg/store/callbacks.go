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

// claimCallbacksSQL takes due callbacks for a lease until $5, owner by
// owner: the owners with any due (after $6 in id order, none of $7, those
// at their cap in this worker), each for at most $3 less what it has in
// flight here ($4 by owner, $8 their counts), oldest due first, up to $2 in
// all. The owners are found by a skip scan of callbacks_owner_next_at, so a
// backlog of one owner's never hides another's; rows another worker is
// claiming are skipped, not waited for.
const claimCallbacksSQL = `WITH RECURSIVE owners AS (
    (SELECT owner_id FROM callbacks
     WHERE owner_id > $6 AND next_at <= $1 AND NOT (owner_id = ANY($7))
     ORDER BY owner_id LIMIT 1)
    UNION ALL
    SELECT (SELECT c.owner_id FROM callbacks c
            WHERE c.owner_id > o.owner_id AND c.next_at <= $1 AND NOT (c.owner_id = ANY($7))
            ORDER BY c.owner_id LIMIT 1)
    FROM owners o WHERE o.owner_id IS NOT NULL
), picked AS (
    SELECT x.id FROM (SELECT owner_id FROM owners WHERE owner_id IS NOT NULL LIMIT $2) o
    CROSS JOIN LATERAL (
        SELECT c.id, c.next_at FROM callbacks c
        WHERE c.owner_id = o.owner_id AND c.next_at <= $1
        ORDER BY c.next_at
        LIMIT greatest($3 - coalesce((SELECT b.n FROM unnest($4::uuid[], $8::integer[]) AS b(owner_id, n)
                                      WHERE b.owner_id = o.owner_id), 0), 0)
        FOR UPDATE SKIP LOCKED
    ) x
    ORDER BY x.next_at
    LIMIT $2
)
UPDATE callbacks c SET next_at = $5, tries = c.tries + 1
FROM picked
WHERE c.id = picked.id
RETURNING c.id, c.owner_id, c.job_id, c.scheduled_for, c.attempt, c.event, c.body, c.tries`

// ClaimCallbacks leases up to most due callbacks until leaseUntil: owner
// by owner from after on (uuid.Nil: the first), each owner for at most
// perOwner less inflight[owner], and none of an owner at perOwner.
func (s *Store) ClaimCallbacks(ctx context.Context, now, leaseUntil time.Time, most, perOwner int, after uuid.UUID, inflight map[uuid.UUID]int) ([]Callback, error) {
	owners, counts, full := []uuid.UUID{}, []int32{}, []uuid.UUID{}
	for o, n := range inflight {
		owners, counts = append(owners, o), append(counts, int32(n))
		if n >= perOwner {
			full = append(full, o)
		}
	}
	rows, err := s.pool.Query(ctx, claimCallbacksSQL, now, most, perOwner, owners, leaseUntil, after, full, counts)
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
