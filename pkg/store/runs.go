package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// Start asks to begin one attempt: the occurrence, and when it was due.
type Start struct {
	Occurrence job.Occurrence
	DueAt      time.Time
}

// Started is an attempt a worker now holds the lease of, with what it needs to
// run it.
type Started struct {
	Run        job.Run
	Type       job.Type
	Name       string
	Payload    json.RawMessage
	Timeout    time.Duration
	MaxRetries int
	// Schedule is the job's normalized recurrence; nil for a one-off job.
	Schedule json.RawMessage
	// Generation is the job's generation the attempt was started under.
	Generation int
	// LastAt is the final occurrence of a recurrence that has ended; zero
	// while more may follow.
	LastAt time.Time
	// SigningSecret is the owner's secret for X-Tock-Signature.
	SigningSecret string
	// History is which of the job's runs are kept; see Result.TrimHistory.
	History job.History
}

// startRunsSQL starts a batch of attempts in one round trip. locked
// share-locks the entries' jobs whatever their status, so that a transaction
// that put an attempt in Redis before committing (a retry, a claim) is waited
// for and its outcome read: filtering on status before locking would judge
// the job by the version before that commit. live keeps the jobs that may
// still run (a concurrent cancel waits for the lock, see cancelJobSQL).
// fresh inserts a running row for attempts never seen; takeover re-leases an
// attempt whose worker vanished (running past its lease). Anything else (a
// finished attempt, one leased to a live worker, a job no longer scheduled)
// starts nothing and is sorted out by the caller with RunStates.
const startRunsSQL = `WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::smallint[], $5::timestamptz[], $8::integer[])
        AS r(run_id, job_id, scheduled_for, attempt, due_at, generation)
), locked AS MATERIALIZED (
    SELECT id, status, owner_id, type, name, payload, timeout_ms, max_retries, generation, schedule, last_at, history FROM jobs
    WHERE id = ANY($2)
    ORDER BY id
    FOR SHARE
), live AS (
    SELECT * FROM locked WHERE status = 'scheduled'
), fresh AS (
    INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until)
    SELECT r.job_id, r.scheduled_for, r.attempt, 'running', r.run_id, l.owner_id, r.due_at, $6::timestamptz,
           $6::timestamptz + (l.timeout_ms + $7::int) * interval '1 millisecond'
    FROM req r JOIN live l ON l.id = r.job_id AND l.generation = r.generation
    ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING
    RETURNING job_id, scheduled_for, attempt, id, due_at, lease_until
), takeover AS (
    UPDATE job_runs jr SET started_at = $6::timestamptz, lease_until = $6::timestamptz + (l.timeout_ms + $7::int) * interval '1 millisecond'
    FROM req r JOIN live l ON l.id = r.job_id AND l.generation = r.generation
    WHERE jr.job_id = r.job_id AND jr.scheduled_for = r.scheduled_for AND jr.attempt = r.attempt
      AND jr.scheduled_for = ANY($3) AND jr.status = 'running' AND jr.lease_until < $6
    RETURNING jr.job_id, jr.scheduled_for, jr.attempt, jr.id, jr.due_at, jr.lease_until
)
SELECT s.job_id, s.scheduled_for, s.attempt, s.id, s.due_at, s.lease_until,
       l.owner_id, l.type, l.name, l.payload, l.timeout_ms, l.max_retries, l.schedule, l.generation, l.last_at,
       coalesce(u.signing_secret, ''), coalesce(l.history, 'all')
FROM (SELECT * FROM fresh UNION ALL SELECT * FROM takeover) s JOIN live l ON l.id = s.job_id
LEFT JOIN users u ON u.id = l.owner_id`

// StartRuns records the attempts that may start now as running, leased until
// their timeout plus leaseMargin, and returns them. Attempts it leaves out must
// not run: see RunStates.
func (s *Store) StartRuns(ctx context.Context, reqs []Start, now time.Time, leaseMargin time.Duration) ([]Started, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	runIDs := make([]uuid.UUID, len(reqs))
	jobIDs := make([]uuid.UUID, len(reqs))
	sched := make([]time.Time, len(reqs))
	attempts := make([]int16, len(reqs))
	dues := make([]time.Time, len(reqs))
	gens := make([]int32, len(reqs))
	for i, r := range reqs {
		runIDs[i], jobIDs[i] = job.NewID(), r.Occurrence.JobID
		sched[i], attempts[i], dues[i] = r.Occurrence.ScheduledFor, int16(r.Occurrence.Attempt), r.DueAt
		gens[i] = int32(r.Occurrence.Generation)
	}
	rows, err := s.pool.Query(ctx, startRunsSQL, runIDs, jobIDs, sched, attempts, dues, now, leaseMargin.Milliseconds(), gens)
	if err != nil {
		return nil, fmt.Errorf("start runs: %w", translate(err))
	}
	started, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Started, error) {
		var st Started
		var lastAt *time.Time
		var attempt int16
		var timeoutMS int32
		var maxRetries int16
		err := r.Scan(&st.Run.JobID, &st.Run.ScheduledFor, &attempt, &st.Run.ID, &st.Run.DueAt, &st.Run.LeaseUntil,
			&st.Run.Owner, &st.Type, &st.Name, &st.Payload, &timeoutMS, &maxRetries, &st.Schedule, &st.Generation, &lastAt, &st.SigningSecret, &st.History)
		if lastAt != nil {
			st.LastAt = lastAt.UTC()
		}
		st.Run.Attempt, st.Timeout, st.MaxRetries = int(attempt), time.Duration(timeoutMS)*time.Millisecond, int(maxRetries)
		st.Run.ScheduledFor, st.Run.DueAt, st.Run.LeaseUntil = st.Run.ScheduledFor.UTC(), st.Run.DueAt.UTC(), st.Run.LeaseUntil.UTC()
		st.Run.Status, st.Run.StartedAt = job.RunRunning, now
		return st, err
	})
	if err != nil {
		return nil, fmt.Errorf("start runs: %w", translate(err))
	}
	return started, nil
}

// RunState is what Postgres knows of one attempt.
type RunState struct {
	Status     job.RunStatus
	LeaseUntil time.Time
	// JobGeneration is the job's current generation: an entry planned under an
	// older one is stale, whatever its run row says.
	JobGeneration int
}

const runStatesSQL = `SELECT r.job_id, r.scheduled_for, r.attempt, jr.status, jr.lease_until, coalesce(j.generation, -1)
FROM unnest($1::uuid[], $2::timestamptz[], $3::smallint[]) AS r(job_id, scheduled_for, attempt)
JOIN job_runs jr ON jr.job_id = r.job_id AND jr.scheduled_for = r.scheduled_for AND jr.attempt = r.attempt
LEFT JOIN jobs j ON j.id = r.job_id
WHERE jr.scheduled_for = ANY($2)`

// RunStates returns the recorded state of each attempt that has a run row,
// keyed by the occurrence's member. An attempt absent from the map has no row:
// its job is no longer scheduled, so it must not run.
func (s *Store) RunStates(ctx context.Context, occs []job.Occurrence) (map[string]RunState, error) {
	jobIDs := make([]uuid.UUID, len(occs))
	sched := make([]time.Time, len(occs))
	attempts := make([]int16, len(occs))
	members := make(map[string]string, len(occs))
	for i, o := range occs {
		jobIDs[i], sched[i], attempts[i] = o.JobID, o.ScheduledFor, int16(o.Attempt)
		members[runKey(o.JobID, o.ScheduledFor, o.Attempt)] = o.Member()
	}
	rows, err := s.pool.Query(ctx, runStatesSQL, jobIDs, sched, attempts)
	if err != nil {
		return nil, fmt.Errorf("run states: %w", translate(err))
	}
	defer rows.Close()
	out := make(map[string]RunState, len(occs))
	for rows.Next() {
		var id uuid.UUID
		var at time.Time
		var attempt int16
		var st RunState
		if err := rows.Scan(&id, &at, &attempt, &st.Status, &st.LeaseUntil, &st.JobGeneration); err != nil {
			return nil, fmt.Errorf("run states: %w", err)
		}
		out[members[runKey(id, at.UTC(), int(attempt))]] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run states: %w", translate(err))
	}
	return out, nil
}

func runKey(id uuid.UUID, at time.Time, attempt int) string {
	return fmt.Sprintf("%s/%d/%d", id, at.UnixMilli(), attempt)
}

// Result is the outcome of one attempt.
type Result struct {
	Occurrence job.Occurrence
	Status     job.RunStatus
	FinishedAt time.Time
	Output     string
	Error      string
	// TrimHistory asks to keep only the job's newest job.KeptSuccesses
	// completed runs (job.HistoryFailures): older ones are deleted as this
	// outcome is recorded.
	TrimHistory bool
}

// finishRunsSQL records a batch of outcomes in one statement (a group commit)
// and ends the jobs whose last occurrence this was: a one-off job with the
// outcome of its run_at occurrence's final attempt (cancelled when it was
// aborted), a recurring job completed once its final occurrence (last_at) is
// done. Only a row still running is updated, so a late duplicate cannot
// overwrite an outcome. No job row is locked ahead: only the jobs that end
// are written, by the final UPDATE. A start that re-leases an attempt this
// batch is finishing (a redelivery racing its own outcome) can meet it in a
// deadlock; Postgres then aborts one of them and the worker retries it.
// trimmed deletes, for each job of the batch that keeps only failures, up
// to $11 of its completed runs older than its newest $10 (as of before this
// statement: the batch's own outcomes come on top), so a backlog left by a
// change of policy drains over the next runs instead of in one statement.
const finishRunsSQL = `WITH res AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::smallint[], $4::run_status[], $5::timestamptz[], $6::text[], $7::text[], $9::boolean[])
        AS r(job_id, scheduled_for, attempt, status, finished_at, output, error, trim_history)
), trimmed AS (
    DELETE FROM job_runs x
    USING (
        SELECT c.job_id, o.scheduled_for, o.attempt
        FROM (SELECT DISTINCT job_id FROM res WHERE trim_history) c
        CROSS JOIN LATERAL (
            SELECT r.scheduled_for, r.attempt FROM job_runs r
            WHERE r.job_id = c.job_id AND r.status = 'completed'
            ORDER BY r.scheduled_for DESC, r.attempt DESC
            OFFSET $10 LIMIT $11) o
    ) old
    WHERE x.job_id = old.job_id AND x.scheduled_for = old.scheduled_for AND x.attempt = old.attempt
), done AS (
    UPDATE job_runs jr SET status = r.status, finished_at = r.finished_at,
        output = nullif(r.output, ''), error = nullif(r.error, '')
    FROM res r
    WHERE jr.job_id = r.job_id AND jr.scheduled_for = r.scheduled_for AND jr.attempt = r.attempt
      AND jr.scheduled_for = ANY($2) AND jr.status = 'running'
    RETURNING jr.job_id, jr.scheduled_for, jr.status
)
UPDATE jobs j SET status = CASE
        WHEN j.schedule IS NOT NULL OR d.status = 'completed' THEN 'completed'::job_status
        WHEN d.status = 'aborted' THEN 'cancelled'::job_status
        ELSE 'permanently_failed'::job_status END,
    updated_at = $8
FROM done d
WHERE j.id = d.job_id AND j.due_hour = -1 AND j.status = 'scheduled'
  AND d.status IN ('completed', 'permanently_failed', 'skipped', 'aborted')
  AND (j.run_at = d.scheduled_for OR j.last_at = d.scheduled_for)`

// trimBatch bounds the completed runs one finish statement deletes per job
// that keeps only failures.
const trimBatch = 100

// FinishRuns records outcomes in one round trip.
func (s *Store) FinishRuns(ctx context.Context, results []Result, now time.Time) error {
	if len(results) == 0 {
		return nil
	}
	n := len(results)
	jobIDs, sched, attempts := make([]uuid.UUID, n), make([]time.Time, n), make([]int16, n)
	statuses, finished, outputs, errs := make([]string, n), make([]time.Time, n), make([]string, n), make([]string, n)
	trim := make([]bool, n)
	for i, r := range results {
		jobIDs[i], sched[i], attempts[i] = r.Occurrence.JobID, r.Occurrence.ScheduledFor, int16(r.Occurrence.Attempt)
		statuses[i], finished[i], outputs[i], errs[i] = string(r.Status), r.FinishedAt, r.Output, r.Error
		trim[i] = r.TrimHistory
	}
	if _, err := s.pool.Exec(ctx, finishRunsSQL, jobIDs, sched, attempts, statuses, finished, outputs, errs, now,
		trim, job.KeptSuccesses, trimBatch); err != nil {
		return fmt.Errorf("finish runs: %w", translate(err))
	}
	return nil
}

// RunFilter selects runs for ListRuns.
type RunFilter struct {
	Owner  uuid.UUID // AnyOwner for all
	JobID  uuid.UUID
	Before *RunCursor
	Limit  int
}

// RunCursor is the keyset position of a run in ListRuns' order.
type RunCursor struct {
	ScheduledFor time.Time
	Attempt      int
}

const listRunsSQL = `SELECT job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until,
       finished_at, coalesce(output, ''), coalesce(error, '')
FROM job_runs
WHERE job_id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2)
  AND ($3::timestamptz IS NULL OR (scheduled_for, attempt) < ($3, $4))
ORDER BY scheduled_for DESC, attempt DESC
LIMIT $5`

// ListRuns returns a job's attempts, newest occurrence and attempt first.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]job.Run, error) {
	var before *time.Time
	attempt := int16(0)
	if f.Before != nil {
		before, attempt = &f.Before.ScheduledFor, int16(f.Before.Attempt)
	}
	rows, err := s.pool.Query(ctx, listRunsSQL, f.JobID, f.Owner, before, attempt, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", translate(err))
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job.Run, error) {
		var run job.Run
		var a int16
		var finished *time.Time
		err := r.Scan(&run.JobID, &run.ScheduledFor, &a, &run.Status, &run.ID, &run.Owner, &run.DueAt,
			&run.StartedAt, &run.LeaseUntil, &finished, &run.Output, &run.Error)
		run.Attempt = int(a)
		run.ScheduledFor, run.DueAt, run.StartedAt, run.LeaseUntil = run.ScheduledFor.UTC(), run.DueAt.UTC(), run.StartedAt.UTC(), run.LeaseUntil.UTC()
		if finished != nil {
			run.FinishedAt = finished.UTC()
		}
		return run, err
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", translate(err))
	}
	return runs, nil
}

// autoPauseSQL pauses recurring jobs whose last n occurrences all ended
// permanently_failed (an occurrence's final attempt is its last row that is
// completed or permanently_failed; failed attempts that were retried and
// skipped occurrences do not count).
const autoPauseSQL = `UPDATE jobs j SET status = 'paused', generation = j.generation + 1, paused_reason = $3, updated_at = $4
WHERE j.id = ANY($1) AND j.status = 'scheduled' AND j.schedule IS NOT NULL
  AND (SELECT count(*) FILTER (WHERE last.status = 'permanently_failed') FROM (
        SELECT r.status FROM job_runs r
        WHERE r.job_id = j.id AND r.status IN ('completed', 'permanently_failed')
        ORDER BY r.scheduled_for DESC, r.attempt DESC
        LIMIT $2) last) = $2
RETURNING j.id`

// AutoPause pauses those of the given recurring jobs whose last n occurrences
// all failed permanently, saying so in paused_reason, and returns their ids.
func (s *Store) AutoPause(ctx context.Context, ids []uuid.UUID, n int, now time.Time) ([]uuid.UUID, error) {
	if len(ids) == 0 || n <= 0 {
		return nil, nil
	}
	reason := fmt.Sprintf("paused by tock: the last %d occurrences failed permanently", n)
	rows, err := s.pool.Query(ctx, autoPauseSQL, ids, n, reason, now)
	if err != nil {
		return nil, fmt.Errorf("auto-pause: %w", translate(err))
	}
	paused, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("auto-pause: %w", translate(err))
	}
	return paused, nil
}

const (
	lockJobForAbortSQL = `SELECT status, schedule IS NOT NULL FROM jobs
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2) FOR UPDATE`
	// cancelAbortedSQL ends a one-off job whose attempt is aborted: no retry
	// of it, queued or reclaimed after a worker's death, may start again.
	cancelAbortedSQL = `UPDATE jobs SET status = 'cancelled', due_at = NULL, due_hour = -1,
    generation = generation + 1, updated_at = $2
WHERE id = $1 AND status = 'scheduled' AND schedule IS NULL`
	runningAttemptsSQL = `SELECT scheduled_for, attempt, started_at FROM job_runs
WHERE job_id = $1 AND status = 'running'
ORDER BY scheduled_for, attempt`
)

// AbortJob finds the running attempts of a job of owner (or of anyone, for
// AnyOwner) and records in the audit log that they are being aborted; the
// caller then tells the workers (queue.Queue.Abort), which stop them and
// record them aborted. A one-off job is cancelled in the same transaction,
// so that no attempt of it starts again (a retry, or a takeover after a
// worker's death); a recurring job keeps its schedule. No running attempt is
// job.ErrConflict; an unknown job, or another owner's, job.ErrNotFound.
func (s *Store) AbortJob(ctx context.Context, owner, id uuid.UUID, now time.Time, a Audit) ([]job.Run, error) {
	var runs []job.Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status job.Status
		var recurring bool
		if err := tx.QueryRow(ctx, lockJobForAbortSQL, id, owner).Scan(&status, &recurring); err != nil {
			return translate(err)
		}
		rows, err := tx.Query(ctx, runningAttemptsSQL, id)
		if err != nil {
			return translate(err)
		}
		runs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (job.Run, error) {
			run := job.Run{JobID: id, Status: job.RunRunning}
			var attempt int16
			err := r.Scan(&run.ScheduledFor, &attempt, &run.StartedAt)
			run.Attempt, run.ScheduledFor, run.StartedAt = int(attempt), run.ScheduledFor.UTC(), run.StartedAt.UTC()
			return run, err
		})
		if err != nil {
			return translate(err)
		}
		if len(runs) == 0 {
			return fmt.Errorf("%w: no attempt of this %s job is running", job.ErrConflict, status)
		}
		change := map[string]any{"attempts": len(runs)}
		if !recurring {
			tag, err := tx.Exec(ctx, cancelAbortedSQL, id, now)
			if err != nil {
				return translate(err)
			}
			if tag.RowsAffected() > 0 {
				change["status"] = map[string]any{"from": status, "to": job.StatusCancelled}
			}
		}
		return record(ctx, tx, a, now, TargetJob, id, change)
	})
	if err != nil {
		return nil, fmt.Errorf("abort job %s: %w", id, err)
	}
	return runs, nil
}
