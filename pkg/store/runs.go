package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
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
	// SigningSecret is the owner's secret for X-Tock-Signature, opened;
	// SigningErr says why it could not be (its operator key is not held),
	// and then the attempt must not be sent unsigned.
	SigningSecret string
	SigningErr    error
	// SecretsErr says why the job's own secrets (its payload's and
	// notify's credentials) could not be put back in their places: its
	// operator key is not held. The attempt must not be sent with
	// fingerprints for credentials.
	SecretsErr error
	// PreviousSigningSecret is the owner's secret before a rotation, while
	// its grace period lasts; deliveries are signed under both.
	PreviousSigningSecret string
	// History is which of the job's runs are kept; see Result.TrimHistory.
	History job.History
	// ExpiresAfter is how late the attempt may start; zero, any time.
	ExpiresAfter time.Duration
	// Overlap is the job's overlap policy; "" allows any.
	Overlap job.Overlap
	// Notify is the job's alerting; nil when none.
	Notify *job.Notify
	// TraceParent is the W3C traceparent of the job's creation span, which
	// the attempt's span links to; empty when it was created untraced.
	TraceParent string
	// Gate is what the job's overlap policy says: GateRun, or GateSkip (an
	// earlier occurrence holds the job; record this one skipped), or
	// GateWait (not started: put it back in the due set to try again).
	Gate string
}

// OverlapWaitKept is how long a buffer_one occurrence keeps its place
// without trying again; the worker tries every OverlapPoll.
const (
	OverlapWaitKept = 30 * time.Second
	OverlapPoll     = 250 * time.Millisecond
)

// Gates of a started attempt; see Started.Gate.
const (
	GateRun  = "run"
	GateSkip = "skip"
	GateWait = "wait"
)

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
//
// A recurring job with an overlap policy is held by one occurrence at a
// time: held takes jobs.overlap_for for the batch's earliest first attempt
// of the job, if no other occurrence holds it (or its hold outlived its
// lease). It is an UPDATE, which Postgres re-checks on the newest version
// of the row, so of two workers starting two occurrences at once only one
// takes it. An occurrence that finds the job held is started and reported
// "skip" (the caller records it skipped), or, under buffer_one when no other
// occurrence waits, takes jobs.overlap_wait and is not started but reported
// "wait" (the caller puts it back in the due set, to try again shortly; $9
// is how long its place is kept if it does not). A waiting occurrence goes
// before any later one. Retries (attempt > 1) are not held back.
const startRunsSQL = `WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::smallint[], $5::timestamptz[], $8::integer[])
        AS r(run_id, job_id, scheduled_for, attempt, due_at, generation)
), locked AS MATERIALIZED (
    SELECT id, status, owner_id, type, name, payload, timeout_ms, max_retries, generation, schedule, last_at, history,
           expires_after_ms, overlap, notify, trace_parent, secrets FROM jobs
    WHERE id = ANY($2)
    ORDER BY id
    FOR SHARE
), live AS (
    SELECT * FROM locked WHERE status = 'scheduled'
), want AS (
    SELECT DISTINCT ON (r.job_id) r.job_id, r.scheduled_for, l.timeout_ms
    FROM req r JOIN live l ON l.id = r.job_id AND l.generation = r.generation
    WHERE l.overlap IS NOT NULL AND r.attempt = 1
    ORDER BY r.job_id, r.scheduled_for
), held AS (
    UPDATE jobs j SET
        overlap_for = CASE WHEN ` + overlapFree + ` THEN w.scheduled_for ELSE j.overlap_for END,
        overlap_until = CASE WHEN ` + overlapFree + `
                             THEN $6::timestamptz + (w.timeout_ms + $7::int) * interval '1 millisecond'
                             ELSE j.overlap_until END,
        overlap_wait = CASE WHEN ` + overlapFree + ` THEN (CASE WHEN j.overlap_wait = w.scheduled_for THEN NULL ELSE j.overlap_wait END)
                            WHEN ` + overlapMayWait + ` THEN w.scheduled_for
                            ELSE j.overlap_wait END,
        overlap_wait_until = CASE WHEN ` + overlapFree + ` THEN (CASE WHEN j.overlap_wait = w.scheduled_for THEN NULL ELSE j.overlap_wait_until END)
                                  WHEN ` + overlapMayWait + ` THEN $6::timestamptz + $9 * interval '1 millisecond'
                                  ELSE j.overlap_wait_until END
    FROM want w
    WHERE j.id = w.job_id
    RETURNING j.id, j.overlap_for, j.overlap_wait
), gate AS (
    SELECT r.*, CASE
            WHEN l.overlap IS NULL OR r.attempt > 1 THEN 'run'
            WHEN EXISTS (SELECT 1 FROM held h WHERE h.id = r.job_id AND h.overlap_for = r.scheduled_for) THEN 'run'
            WHEN EXISTS (SELECT 1 FROM held h WHERE h.id = r.job_id AND h.overlap_wait = r.scheduled_for) THEN 'wait'
            ELSE 'skip' END AS gate
    FROM req r JOIN live l ON l.id = r.job_id AND l.generation = r.generation
), fresh AS (
    INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until)
    SELECT r.job_id, r.scheduled_for, r.attempt, 'running', r.run_id, l.owner_id, r.due_at, $6::timestamptz,
           $6::timestamptz + (l.timeout_ms + $7::int) * interval '1 millisecond'
    FROM gate r JOIN live l ON l.id = r.job_id
    WHERE r.gate <> 'wait'
    ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING
    RETURNING job_id, scheduled_for, attempt, id, due_at, lease_until
), takeover AS (
    UPDATE job_runs jr SET started_at = $6::timestamptz, lease_until = $6::timestamptz + (l.timeout_ms + $7::int) * interval '1 millisecond'
    FROM gate r JOIN live l ON l.id = r.job_id
    WHERE jr.job_id = r.job_id AND jr.scheduled_for = r.scheduled_for AND jr.attempt = r.attempt AND r.gate <> 'wait'
      AND jr.scheduled_for = ANY($3) AND jr.status = 'running' AND jr.lease_until < $6
    RETURNING jr.job_id, jr.scheduled_for, jr.attempt, jr.id, jr.due_at, jr.lease_until
), waiting AS (
    SELECT job_id, scheduled_for, attempt, run_id AS id, due_at, $6::timestamptz AS lease_until FROM gate WHERE gate = 'wait'
)
SELECT s.job_id, s.scheduled_for, s.attempt, s.id, s.due_at, s.lease_until,
       l.owner_id, l.type, l.name, l.payload, l.timeout_ms, l.max_retries, l.schedule, l.generation, l.last_at,
       coalesce(u.signing_secret, ''),
       CASE WHEN u.previous_signing_until > $6 THEN coalesce(u.previous_signing_secret, '') ELSE '' END,
       coalesce(l.history, 'all'),
       coalesce(l.expires_after_ms, 0), coalesce(l.overlap, ''), l.notify, g.gate, coalesce(l.trace_parent, ''),
       coalesce(l.secrets, '')
FROM (SELECT * FROM fresh UNION ALL SELECT * FROM takeover UNION ALL SELECT * FROM waiting) s
JOIN live l ON l.id = s.job_id
JOIN gate g ON g.job_id = s.job_id AND g.scheduled_for = s.scheduled_for AND g.attempt = s.attempt
LEFT JOIN users u ON u.id = l.owner_id`

// overlapFree: no other occurrence holds the job w wants (or its hold
// outlived its lease), and none waits before w's. overlapMayWait: the job
// is buffer_one and its one place in the buffer is free, or w's already.
const (
	overlapFree = `((j.overlap_for IS NULL OR j.overlap_until < $6 OR j.overlap_for = w.scheduled_for)
          AND (j.overlap_wait IS NULL OR j.overlap_wait_until < $6 OR j.overlap_wait >= w.scheduled_for))`
	overlapMayWait = `(j.overlap = 'buffer_one'
          AND (j.overlap_wait IS NULL OR j.overlap_wait_until < $6 OR j.overlap_wait = w.scheduled_for))`
)

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
	rows, err := s.pool.Query(ctx, startRunsSQL, runIDs, jobIDs, sched, attempts, dues, now, leaseMargin.Milliseconds(), gens,
		OverlapWaitKept.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("start runs: %w", translate(err))
	}
	started, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Started, error) {
		var st Started
		var lastAt *time.Time
		var attempt int16
		var timeoutMS int32
		var maxRetries int16
		var expMS int64
		var notify []byte
		var secrets string
		err := r.Scan(&st.Run.JobID, &st.Run.ScheduledFor, &attempt, &st.Run.ID, &st.Run.DueAt, &st.Run.LeaseUntil,
			&st.Run.Owner, &st.Type, &st.Name, &st.Payload, &timeoutMS, &maxRetries, &st.Schedule, &st.Generation, &lastAt, &st.SigningSecret, &st.PreviousSigningSecret, &st.History,
			&expMS, &st.Overlap, &notify, &st.Gate, &st.TraceParent, &secrets)
		if err != nil {
			return st, err
		}
		if len(notify) > 0 {
			if err := json.Unmarshal(notify, &st.Notify); err != nil {
				return st, fmt.Errorf("notify of job %s: %w", st.Run.JobID, err)
			}
		}
		if secrets != "" {
			st.SecretsErr = s.reveal(&st, secrets)
		}
		st.SigningSecret, st.SigningErr = s.openSecret(st.SigningSecret, st.Run.Owner)
		if st.SigningErr == nil {
			st.PreviousSigningSecret, st.SigningErr = s.openSecret(st.PreviousSigningSecret, st.Run.Owner)
		}
		st.ExpiresAfter = time.Duration(expMS) * time.Millisecond
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

// attemptArrays spreads occs into the column arrays the run statements
// take (job ids, scheduled times, attempts) and maps each attempt's run key
// back to its member.
func attemptArrays(occs []job.Occurrence) ([]uuid.UUID, []time.Time, []int16, map[string]string) {
	jobIDs := make([]uuid.UUID, len(occs))
	sched := make([]time.Time, len(occs))
	attempts := make([]int16, len(occs))
	members := make(map[string]string, len(occs))
	for i, o := range occs {
		jobIDs[i], sched[i], attempts[i] = o.JobID, o.ScheduledFor, int16(o.Attempt)
		members[runKey(o.JobID, o.ScheduledFor, o.Attempt)] = o.Member()
	}
	return jobIDs, sched, attempts, members
}

// RunStates returns the recorded state of each attempt that has a run row,
// keyed by the occurrence's member. An attempt absent from the map has no row:
// its job is no longer scheduled, so it must not run.
func (s *Store) RunStates(ctx context.Context, occs []job.Occurrence) (map[string]RunState, error) {
	jobIDs, sched, attempts, members := attemptArrays(occs)
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
	// Held says the attempt's job has an overlap policy, so the occurrence
	// may hold it (see startRunsSQL): recording the outcome releases it.
	Held bool
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
// released lets go of the hold of a job with an overlap policy ($12) that
// the outcome's occurrence held, unless the final UPDATE ends the job (which
// lets go of it too: a row is updated once per statement). Only such jobs
// are looked up, so other jobs pay nothing for it. A job whose last
// occurrence expired ends expired.
const finishRunsSQL = `WITH res AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::smallint[], $4::run_status[], $5::timestamptz[], $6::text[], $7::text[], $9::boolean[], $12::boolean[])
        AS r(job_id, scheduled_for, attempt, status, finished_at, output, error, trim_history, held)
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
), released AS (
    UPDATE jobs j SET overlap_for = NULL, overlap_until = NULL
    FROM res r
    WHERE r.held AND j.id = r.job_id AND j.overlap_for = r.scheduled_for
      AND NOT (j.due_hour = -1 AND j.status = 'scheduled' AND j.last_at = r.scheduled_for
               AND r.status IN ('completed', 'permanently_failed', 'skipped', 'aborted', 'expired'))
)
UPDATE jobs j SET status = CASE
        WHEN d.status = 'expired' THEN 'expired'::job_status
        WHEN j.schedule IS NOT NULL OR d.status = 'completed' THEN 'completed'::job_status
        WHEN d.status = 'aborted' THEN 'cancelled'::job_status
        ELSE 'permanently_failed'::job_status END,
    updated_at = $8, overlap_for = NULL, overlap_until = NULL
FROM done d
WHERE j.id = d.job_id AND j.due_hour = -1 AND j.status = 'scheduled'
  AND d.status IN ('completed', 'permanently_failed', 'skipped', 'aborted', 'expired')
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
	trim, held := make([]bool, n), make([]bool, n)
	for i, r := range results {
		jobIDs[i], sched[i], attempts[i] = r.Occurrence.JobID, r.Occurrence.ScheduledFor, int16(r.Occurrence.Attempt)
		statuses[i], finished[i], outputs[i], errs[i] = string(r.Status), r.FinishedAt, r.Output, r.Error
		trim[i], held[i] = r.TrimHistory, r.Held
	}
	if _, err := s.pool.Exec(ctx, finishRunsSQL, jobIDs, sched, attempts, statuses, finished, outputs, errs, now,
		trim, job.KeptSuccesses, trimBatch, held); err != nil {
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

// RunCursor is the keyset position of a run in ListRuns' order, and with
// JobID in SearchRuns' (ListRuns, within one job, ignores it).
type RunCursor struct {
	ScheduledFor time.Time
	Attempt      int
	JobID        uuid.UUID
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
const autoPauseSQL = `WITH paused AS (
    UPDATE jobs j SET status = 'paused', generation = j.generation + 1, paused_reason = $3, updated_at = $4
    WHERE j.id = ANY($1) AND j.status = 'scheduled' AND j.schedule IS NOT NULL
      AND (SELECT count(*) FILTER (WHERE last.status = 'permanently_failed') FROM (
            SELECT r.status FROM job_runs r
            WHERE r.job_id = j.id AND r.status IN ('completed', 'permanently_failed')
            ORDER BY r.scheduled_for DESC, r.attempt DESC
            LIMIT $2) last) = $2
    RETURNING j.id
), logged AS (
    INSERT INTO audit_log (at, actor_id, action, target_type, target_id, change)
    SELECT $4, $5, 'job.pause', 'job', id, jsonb_build_object('reason', $3::text, 'by', 'tock') FROM paused
)
SELECT id FROM paused`

// TockActor is the audit log's actor for what tock does on its own (the
// worker's auto-pause): the nil UUID, which no user has.
var TockActor = uuid.Nil

// AutoPause pauses those of the given recurring jobs whose last n occurrences
// all failed permanently, saying so in paused_reason, and returns their ids.
// Each pause is audited (job.pause by TockActor) in the same statement.
func (s *Store) AutoPause(ctx context.Context, ids []uuid.UUID, n int, now time.Time) ([]uuid.UUID, error) {
	if len(ids) == 0 || n <= 0 {
		return nil, nil
	}
	reason := fmt.Sprintf("paused by tock: the last %d occurrences failed permanently", n)
	rows, err := s.pool.Query(ctx, autoPauseSQL, ids, n, reason, now, TockActor)
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

// previousOutcomesSQL finds, for each attempt, the status of the job's
// attempt recorded just before it that ran (skipped and expired ones did
// not), walking the primary key backwards: one probe each.
const previousOutcomesSQL = `SELECT r.job_id, r.scheduled_for, r.attempt, coalesce((
    SELECT p.status::text FROM job_runs p
    WHERE p.job_id = r.job_id AND (p.scheduled_for, p.attempt) < (r.scheduled_for, r.attempt)
      AND p.status IN ('completed', 'failed', 'permanently_failed', 'aborted')
    ORDER BY p.scheduled_for DESC, p.attempt DESC LIMIT 1), '')
FROM unnest($1::uuid[], $2::timestamptz[], $3::smallint[]) AS r(job_id, scheduled_for, attempt)`

// PreviousOutcomes returns, keyed by occurrence member, the outcome of the
// attempt each of occs followed (its job's previous attempt that ran);
// absent when there was none. A failure alert's "recovered" is a completed
// attempt whose previous one failed.
func (s *Store) PreviousOutcomes(ctx context.Context, occs []job.Occurrence) (map[string]job.RunStatus, error) {
	jobIDs, sched, attempts, members := attemptArrays(occs)
	rows, err := s.pool.Query(ctx, previousOutcomesSQL, jobIDs, sched, attempts)
	if err != nil {
		return nil, fmt.Errorf("previous outcomes: %w", translate(err))
	}
	defer rows.Close()
	out := make(map[string]job.RunStatus, len(occs))
	for rows.Next() {
		var id uuid.UUID
		var at time.Time
		var attempt int16
		var status string
		if err := rows.Scan(&id, &at, &attempt, &status); err != nil {
			return nil, fmt.Errorf("previous outcomes: %w", err)
		}
		if status != "" {
			out[members[runKey(id, at.UTC(), int(attempt))]] = job.RunStatus(status)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("previous outcomes: %w", translate(err))
	}
	return out, nil
}

// reveal puts the job's sealed secrets back into the attempt's payload and
// notify, in place of their fingerprints. The error never holds a secret.
func (s *Store) reveal(st *Started, sealed string) error {
	m, err := jobspec.OpenSecrets(s.secrets, &job.Job{ID: st.Run.JobID, Owner: st.Run.Owner, Secrets: sealed})
	if err != nil {
		return err
	}
	payload, notify, err := jobspec.Reveal(st.Type, st.Payload, st.Notify, m)
	if err != nil {
		return fmt.Errorf("secrets of job %s: %w", st.Run.JobID, err)
	}
	st.Payload, st.Notify = payload, notify
	return nil
}
