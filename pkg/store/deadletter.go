package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// DeadLetter asks to end an attempt whose entry was delivered too often
// without an outcome: Postgres refused to start it, or it took its worker
// down, each time. Reason is what its run row says; it must name no payload,
// URL or secret.
type DeadLetter struct {
	Occurrence job.Occurrence
	DueAt      time.Time
	Reason     string
}

// DeadLettered is an attempt DeadLetter ended.
type DeadLettered struct {
	Occurrence job.Occurrence
	// Recurring says its job has a schedule: it stays scheduled (unless
	// this was its last occurrence), and its failures count towards
	// AutoPause.
	Recurring bool
}

// deadLetterSQL ends a batch of attempts permanently_failed, saying why, in
// one statement. locked takes the jobs' rows for update whatever their
// status, in id order, as startRunsSQL share-locks them: a cancel, edit or
// start in flight commits first and is seen, or waits. want keeps the
// attempts of jobs still scheduled under the entry's generation. fresh
// writes a finished row for an attempt that has none (Postgres refused its
// start); expired ends a running one whose lease ran out (its worker died).
// A running attempt with a live lease, and a finished one, are left alone:
// the caller sorts them out with RunStates.
//
// The jobs end as finishRunsSQL ends them on a permanently_failed outcome: a
// one-off job whose run_at occurrence this is becomes permanently_failed, a
// recurring job whose final occurrence (last_at) this is completed, and
// either lets go of its overlap hold. released lets go of the hold of a job
// that goes on, if this occurrence held it; it skips the jobs that ended,
// since a row is updated once per statement.
const deadLetterSQL = `WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::smallint[], $4::timestamptz[], $5::integer[], $6::text[], $7::uuid[])
        AS r(job_id, scheduled_for, attempt, due_at, generation, reason, run_id)
), locked AS MATERIALIZED (
    SELECT id, status, owner_id, generation, schedule IS NOT NULL AS recurring FROM jobs
    WHERE id = ANY($1)
    ORDER BY id
    FOR NO KEY UPDATE
), want AS (
    SELECT r.*, l.owner_id, l.recurring
    FROM req r JOIN locked l ON l.id = r.job_id AND l.generation = r.generation
    WHERE l.status = 'scheduled'
), fresh AS (
    INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until, finished_at, error)
    SELECT w.job_id, w.scheduled_for, w.attempt, 'permanently_failed', w.run_id, w.owner_id, w.due_at, $8::timestamptz,
           $8::timestamptz, $8::timestamptz, w.reason
    FROM want w
    ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING
    RETURNING job_id, scheduled_for, attempt
), expired AS (
    UPDATE job_runs jr SET status = 'permanently_failed', finished_at = $8, error = w.reason
    FROM want w
    WHERE jr.job_id = w.job_id AND jr.scheduled_for = w.scheduled_for AND jr.attempt = w.attempt
      AND jr.scheduled_for = ANY($2) AND jr.status = 'running' AND jr.lease_until < $8
    RETURNING jr.job_id, jr.scheduled_for, jr.attempt
), done AS (
    SELECT * FROM fresh UNION ALL SELECT * FROM expired
), released AS (
    UPDATE jobs j SET overlap_for = NULL, overlap_until = NULL
    FROM done d
    WHERE j.id = d.job_id AND j.overlap_for = d.scheduled_for
      AND NOT (j.due_hour = -1 AND j.status = 'scheduled'
               AND (j.run_at = d.scheduled_for OR j.last_at = d.scheduled_for))
), ended AS (
    UPDATE jobs j SET status = CASE WHEN j.schedule IS NOT NULL THEN 'completed'::job_status
                                    ELSE 'permanently_failed'::job_status END,
        updated_at = $8, overlap_for = NULL, overlap_until = NULL
    FROM done d
    WHERE j.id = d.job_id AND j.due_hour = -1 AND j.status = 'scheduled'
      AND (j.run_at = d.scheduled_for OR j.last_at = d.scheduled_for)
)
SELECT d.job_id, d.scheduled_for, d.attempt, w.generation, w.recurring
FROM done d
JOIN want w ON w.job_id = d.job_id AND w.scheduled_for = d.scheduled_for AND w.attempt = d.attempt`

// DeadLetter records each attempt of reqs that has no run row, or a running
// one whose lease expired, as permanently_failed with its reason, ends its
// job when it was the job's last, and returns those it ended. The others (a
// job no longer scheduled or of another generation, an attempt finished or
// leased to a live worker) it leaves as they are.
func (s *Store) DeadLetter(ctx context.Context, reqs []DeadLetter, now time.Time) ([]DeadLettered, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	occs := make([]job.Occurrence, len(reqs))
	dues, reasons := make([]time.Time, len(reqs)), make([]string, len(reqs))
	gens, runIDs := make([]int32, len(reqs)), make([]uuid.UUID, len(reqs))
	byKey := make(map[string]job.Occurrence, len(reqs))
	for i, r := range reqs {
		o := r.Occurrence
		occs[i], dues[i], reasons[i] = o, r.DueAt, r.Reason
		gens[i], runIDs[i] = int32(o.Generation), job.NewID()
		byKey[deadKey(o.JobID, o.ScheduledFor, o.Attempt, o.Generation)] = o
	}
	jobIDs, sched, attempts, _ := attemptArrays(occs)
	rows, err := s.pool.Query(ctx, deadLetterSQL, jobIDs, sched, attempts, dues, gens, reasons, runIDs, now)
	if err != nil {
		return nil, fmt.Errorf("dead-letter runs: %w", translate(err))
	}
	done, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadLettered, error) {
		var id uuid.UUID
		var at time.Time
		var attempt int16
		var gen int32
		var d DeadLettered
		err := r.Scan(&id, &at, &attempt, &gen, &d.Recurring)
		d.Occurrence = byKey[deadKey(id, at.UTC(), int(attempt), int(gen))]
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("dead-letter runs: %w", translate(err))
	}
	return done, nil
}

// deadKey names an attempt under one generation: two entries of one
// attempt, one planned under a generation the job has left, are told apart.
func deadKey(id uuid.UUID, at time.Time, attempt, gen int) string {
	return runKey(id, at, attempt) + "/" + strconv.Itoa(gen)
}
