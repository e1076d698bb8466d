package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

// claimedOneOffsSQL pages through claimed one-off jobs whose first attempt never
// started, in (run_at, id) order, whatever their due time.
const claimedOneOffsSQL = `SELECT j.id, j.run_at, 1, j.priority, j.generation, j.owner_id, ` + routeSQL + ` FROM jobs_idle j
WHERE j.status = 'scheduled' AND j.run_at IS NOT NULL AND j.run_at < $1 AND (j.run_at, j.id) > ($2, $3)
  AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.scheduled_for = j.run_at)
ORDER BY j.run_at, j.id
LIMIT $4`

// ClaimedNotStarted pages through the first attempts of claimed one-off jobs due
// before `before` that never started: after Redis lost its data, all of them
// must be enqueued again. Pass the last returned occurrence as after (zero to
// begin).
func (s *Store) ClaimedNotStarted(ctx context.Context, before time.Time, after job.Occurrence, limit int) ([]job.Occurrence, error) {
	lower := after.ScheduledFor
	if lower.IsZero() {
		lower = time.Unix(0, 0)
	}
	return s.occurrences(ctx, "claimed one-off jobs", claimedOneOffsSQL, before, lower, after.JobID, limit)
}

// lostRetriesSQL finds failed attempts whose next attempt has no row: the retry
// lives only in Redis until it starts, so a Redis that lost its data lost it.
const lostRetriesSQL = `SELECT r.job_id, r.scheduled_for, r.attempt + 1, j.priority, j.generation, j.owner_id, ` + routeSQL + `
FROM job_runs r JOIN jobs j ON j.id = r.job_id
WHERE r.status = 'failed' AND j.status = 'scheduled'
  AND NOT EXISTS (SELECT 1 FROM job_runs n
                  WHERE n.job_id = r.job_id AND n.scheduled_for = r.scheduled_for AND n.attempt = r.attempt + 1)
ORDER BY r.scheduled_for
LIMIT $1`

// LostRetries returns the next attempts of failed attempts that have not
// started, to be enqueued again after Redis lost its data.
func (s *Store) LostRetries(ctx context.Context, limit int) ([]job.Occurrence, error) {
	return s.occurrences(ctx, "lost retries", lostRetriesSQL, limit)
}

// recurringSQL pages through scheduled recurring jobs with the last occurrence
// that has a run, so their cursors can be moved back over what Redis held.
const recurringSQL = `SELECT j.id, j.due_hour, j.due_at, j.last_at, j.occurrences, j.schedule, coalesce(j.jitter_offset_ms, 0),
       (SELECT max(r.scheduled_for) FROM job_runs r WHERE r.job_id = j.id AND r.scheduled_for > $1)
FROM jobs j
WHERE j.schedule IS NOT NULL AND j.status = 'scheduled' AND j.id > $2
ORDER BY j.id
LIMIT $3
FOR UPDATE`

// RewindRecurring moves every scheduled recurring job's cursor back to its
// first occurrence after the later of its last run and since, for when Redis
// lost the occurrences it held: the loader then plans them again, and the
// misfire policy judges those that are now late. It returns how many jobs moved.
func (s *Store) RewindRecurring(ctx context.Context, since time.Time, now time.Time) (int, error) {
	moved := 0
	after := uuid.Nil
	for {
		n, last, err := s.rewindBatch(ctx, since, after, now)
		if err != nil {
			return moved, fmt.Errorf("rewind recurring jobs: %w", err)
		}
		moved += n
		if last == uuid.Nil {
			return moved, nil
		}
		after = last
	}
}

func (s *Store) rewindBatch(ctx context.Context, since time.Time, after uuid.UUID, now time.Time) (int, uuid.UUID, error) {
	const batch = 1000
	moved, last := 0, uuid.Nil
	err := retrySerialization(ctx, func() error {
		moved, last = 0, uuid.Nil
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, recurringSQL, since, after, batch)
			if err != nil {
				return err
			}
			type rec struct {
				id               uuid.UUID
				hour             int16
				due, lastAt, ran *time.Time
				occurrences      int32
				schedule         []byte
				jitterMs         int64
			}
			recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rec, error) {
				var x rec
				err := r.Scan(&x.id, &x.hour, &x.due, &x.lastAt, &x.occurrences, &x.schedule, &x.jitterMs, &x.ran)
				return x, err
			})
			if err != nil || len(recs) == 0 {
				return err
			}
			n := len(recs)
			ids, oldHours, newHours := make([]uuid.UUID, n), make([]int16, n), make([]int16, n)
			dues, lasts, counts := make([]*time.Time, n), make([]*time.Time, n), make([]int32, n)
			for i, x := range recs {
				ids[i], oldHours[i], counts[i], newHours[i] = x.id, x.hour, x.occurrences, x.hour
				dues[i], lasts[i] = x.due, x.lastAt
				sched, err := jitteredSchedule(schedule.LoaderBudget(ctx), x.schedule, x.jitterMs)
				if err != nil {
					continue // left as it is; the loader reports it
				}
				from := since
				if x.ran != nil && x.ran.After(from) {
					from = *x.ran
				}
				var cursor, lastAt time.Time
				if x.due != nil {
					cursor = *x.due
				}
				if x.lastAt != nil {
					lastAt = *x.lastAt
				}
				next, used := sched.Rewind(from, cursor, lastAt, int(x.occurrences))
				if sched.Err() != nil {
					continue // too costly to walk back: left where it is
				}
				counts[i], lasts[i], newHours[i] = int32(used), nil, dueHour(next)
				dues[i] = nullTime(next)
				if next.IsZero() {
					lasts[i] = x.lastAt
				}
			}
			if _, err := tx.Exec(ctx, advanceSQL, ids, oldHours, dues, newHours, counts, lasts, now, make([]*int32, n)); err != nil {
				return err
			}
			moved, last = n, recs[n-1].id
			return nil
		})
	})
	return moved, last, err
}
