package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tockhq/tock/pkg/job"
)

// OverlapWaitKept is how long a buffer_one occurrence keeps its place
// without trying again; the worker tries every OverlapPoll.
const (
	OverlapWaitKept = 30 * time.Second
	OverlapPoll     = 250 * time.Millisecond
)

// attemptArrays spreads occs into the column arrays the run statements
// take: job ids, scheduled times, attempts.
func attemptArrays(occs []job.Occurrence) ([]uuid.UUID, []time.Time, []int16) {
	jobIDs := make([]uuid.UUID, len(occs))
	sched := make([]time.Time, len(occs))
	attempts := make([]int16, len(occs))
	for i, o := range occs {
		jobIDs[i], sched[i], attempts[i] = o.JobID, o.ScheduledFor, int16(o.Attempt)
	}
	return jobIDs, sched, attempts
}

func runKey(id uuid.UUID, at time.Time, attempt int) string {
	return fmt.Sprintf("%s/%d/%d", id, at.UnixMilli(), attempt)
}

// Result is the outcome of one attempt: its one row in job_runs.
type Result struct {
	// ID is the run's id, given when it started (its trace names it); a
	// new one when zero.
	ID         uuid.UUID
	Occurrence job.Occurrence
	Owner      uuid.UUID
	Status     job.RunStatus
	// DueAt is when the attempt was due, StartedAt when it started (its
	// lateness is the difference), FinishedAt when it ended.
	DueAt, StartedAt, FinishedAt time.Time
	// Throttled is how long the attempt waited behind its flow key's limits
	// after DueAt: late by design, kept apart from its lateness.
	Throttled time.Duration
	Output    string
	Error     string
	// TrimHistory asks to keep only the job's newest job.KeptSuccesses
	// completed runs (job.HistoryFailures): older ones are deleted as this
	// outcome is recorded.
	TrimHistory bool
	// EndsJob says that a final outcome of this attempt ends its job: the
	// occurrence is a one-off job's, or a recurring job's last (last_at).
	EndsJob bool
	// Callback is the body of the callback this outcome sends (the job's
	// notify has one for its event), written with the outcome; nil for none.
	Callback []byte
}

// finishRunsSQL records a batch of outcomes in one statement (a group
// commit): each attempt's one row, inserted with its outcome, and the jobs
// whose last occurrence this was ended: a one-off job with the outcome of
// its run_at occurrence's final attempt (cancelled when it was aborted), a
// recurring job completed once its final occurrence (last_at) is done; a
// job whose last occurrence expired ends expired. An attempt that already
// has an outcome keeps it (a late duplicate, from an attempt taken over
// after its lease ran out, changes nothing); a row a release that recorded
// starts left running takes the outcome. No job row is locked ahead: only
// the jobs that end are written, by the final UPDATE, through the claimed
// jobs' partition's primary key.
//
// Its plan holds whatever the statistics say: each outcome's job is looked
// up in a LATERAL subquery fenced with LIMIT 1 (a probe of jobs_idle's
// primary key, the batch always driving), and updated by its row address
// (a TID scan). Written as a join, the planner drove it from a scan of the
// claimed jobs (the partial index jobs_idle_claimed) whenever the
// statistics it had said few were scheduled: every batch then walked every
// claimed job. A job changed between the look and the update (a cancel)
// is skipped: FinishRuns counts it among those not ended and EndJobs
// reads it again.
const finishRunsSQL = `WITH res AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::smallint[], $4::run_status[], $5::timestamptz[], $6::text[],
                         $7::text[], $8::uuid[], $9::uuid[], $10::timestamptz[], $11::timestamptz[], $13::integer[])
        AS r(job_id, scheduled_for, attempt, status, finished_at, output, error, id, owner_id, due_at, started_at, throttled_ms)
), done AS (
    INSERT INTO job_runs AS jr (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until,
                                finished_at, output, error, throttled_ms)
    SELECT job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, finished_at,
           finished_at, nullif(output, ''), nullif(error, ''), nullif(throttled_ms, 0)
    FROM res
    ON CONFLICT (job_id, scheduled_for, attempt) DO UPDATE SET status = EXCLUDED.status, id = EXCLUDED.id,
        started_at = EXCLUDED.started_at, lease_until = EXCLUDED.lease_until, finished_at = EXCLUDED.finished_at,
        output = EXCLUDED.output, error = EXCLUDED.error, throttled_ms = EXCLUDED.throttled_ms
    WHERE jr.status = 'running'
    RETURNING jr.job_id, jr.scheduled_for, jr.status
), ending AS (
    SELECT t.ctid, CASE
            WHEN d.status = 'expired' THEN 'expired'::job_status
            WHEN t.recurring OR d.status = 'completed' THEN 'completed'::job_status
            WHEN d.status = 'aborted' THEN 'cancelled'::job_status
            ELSE 'permanently_failed'::job_status END AS status
    FROM done d
    CROSS JOIN LATERAL (
        SELECT j.ctid, j.status, j.run_at, j.last_at, j.schedule IS NOT NULL AS recurring FROM jobs_idle j
        WHERE j.id = d.job_id
        LIMIT 1
    ) t
    WHERE d.status IN ('completed', 'permanently_failed', 'skipped', 'aborted', 'expired')
      AND t.status = 'scheduled' AND (t.run_at = d.scheduled_for OR t.last_at = d.scheduled_for)
)
UPDATE jobs_idle j SET status = e.status, updated_at = $12
FROM ending e
WHERE j.ctid = e.ctid`

// finishBackfillRunsSQL is finishRunsSQL for a batch that holds a
// backfill's outcomes: each row also names its backfill ($14, uuid.Nil for
// none). The hot statement stays as it was for every other batch.
var finishBackfillRunsSQL = mustReplace(finishRunsSQL,
	"$13::integer[])", "$13::integer[], $14::uuid[])",
	"started_at, throttled_ms)", "started_at, throttled_ms, backfill_id)",
	"error, throttled_ms)", "error, throttled_ms, backfill_id)",
	"nullif(throttled_ms, 0)", "nullif(throttled_ms, 0), nullif(backfill_id, '00000000-0000-0000-0000-000000000000')",
	"throttled_ms = EXCLUDED.throttled_ms", "throttled_ms = EXCLUDED.throttled_ms, backfill_id = EXCLUDED.backfill_id")

// finishCallbackRunsSQL is finishBackfillRunsSQL for a batch that holds
// outcomes with a callback ($15, NULL for none): the callback rows are
// written by the same statement, only for the outcomes it records (a late
// duplicate of an attempt, which changes nothing, sends nothing either).
var finishCallbackRunsSQL = mustReplace(finishBackfillRunsSQL,
	"$14::uuid[])", "$14::uuid[], $15::bytea[])",
	"started_at, throttled_ms, backfill_id)", "started_at, throttled_ms, backfill_id, callback)",
	"RETURNING jr.job_id, jr.scheduled_for, jr.status\n)", `RETURNING jr.job_id, jr.scheduled_for, jr.attempt, jr.status
), called AS (
    INSERT INTO callbacks (owner_id, job_id, scheduled_for, attempt, event, body, next_at, created_at)
    SELECT r.owner_id, r.job_id, r.scheduled_for, r.attempt, r.status::text, r.callback, $12, $12
    FROM done d
    JOIN res r ON r.job_id = d.job_id AND r.scheduled_for = d.scheduled_for AND r.attempt = d.attempt
    WHERE r.callback IS NOT NULL
)`)

// mustReplace replaces each old of pairs (old, new, ...) in s, each found
// exactly once.
func mustReplace(s string, pairs ...string) string {
	for i := 0; i < len(pairs); i += 2 {
		if strings.Count(s, pairs[i]) != 1 {
			panic(fmt.Sprintf("store: %q is not in the statement exactly once", pairs[i]))
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// trimRunsSQL deletes, for each job of $1 (jobs that keep only failures),
// up to $3 of its completed runs older than its newest $2. It runs just
// before finishRunsSQL, in the same transaction, so the batch's own
// outcomes come on top of the $2 kept, and a backlog left by a change of
// policy drains over the next runs instead of in one statement. Each
// job's runs are read through a LATERAL lookup on the primary key and
// deleted by their row addresses (a TID scan), so the plan never scans a
// partition whatever the statistics.
const trimRunsSQL = `DELETE FROM job_runs x
USING (
    SELECT o.tableoid, o.ctid
    FROM unnest($1::uuid[]) AS c(job_id)
    CROSS JOIN LATERAL (
        SELECT r.tableoid, r.ctid FROM job_runs r
        WHERE r.job_id = c.job_id AND r.status = 'completed'
        ORDER BY r.scheduled_for DESC, r.attempt DESC
        OFFSET $2 LIMIT $3) o
) old
WHERE x.tableoid = old.tableoid AND x.ctid = old.ctid`

// trimBatch bounds the completed runs one finish deletes per job that
// keeps only failures.
const trimBatch = 100

// FinishRuns records outcomes in one round trip: the attempts' one write
// (with, for jobs that keep only failures, the trim of their history, in
// the same transaction). Should fewer jobs end than the results say
// (EndsJob), it ends the others with endJobsSQL: see there.
func (s *Store) FinishRuns(ctx context.Context, results []Result, now time.Time) error {
	results = firstOfEachAttempt(results)
	if len(results) == 0 {
		return nil
	}
	args, trim, ending := finishArgs(results, now)
	sql := finishRunsSQL
	backfills, callbacks := backfillArg(results), callbackArg(results)
	switch {
	case callbacks != nil:
		if backfills == nil {
			backfills = make([]uuid.UUID, len(results))
		}
		sql, args = finishCallbackRunsSQL, append(args, backfills, callbacks)
	case backfills != nil:
		sql, args = finishBackfillRunsSQL, append(args, backfills)
	}
	var ended int64
	if len(trim) == 0 {
		tag, err := s.pool.Exec(ctx, sql, args...)
		if err != nil {
			return fmt.Errorf("finish runs: %w", translate(err))
		}
		ended = tag.RowsAffected()
	} else {
		// One round trip, one implicit transaction: a batch ends with one Sync.
		b := &pgx.Batch{}
		b.Queue(trimRunsSQL, trim, job.KeptSuccesses, trimBatch)
		b.Queue(sql, args...)
		br := s.pool.SendBatch(ctx, b)
		_, err := br.Exec()
		var tag pgconn.CommandTag
		if err == nil {
			tag, err = br.Exec()
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("finish runs: %w", translate(err))
		}
		ended = tag.RowsAffected()
	}
	if ended < int64(ending) {
		// The outcomes are recorded: a job this cannot end now stays
		// scheduled until its attempt, read again, is found done (the
		// worker then calls EndJobs), rather than holding up the batch.
		_ = s.EndJobs(ctx, slices.DeleteFunc(slices.Clone(results), func(r Result) bool { return !endsJob(r) }), now)
	}
	return nil
}

// finishArgs spreads results into finishRunsSQL's arguments, and returns
// the jobs whose history to trim and how many jobs the results end.
func finishArgs(results []Result, now time.Time) (args []any, trim []uuid.UUID, ending int) {
	n := len(results)
	jobIDs, sched, attempts := make([]uuid.UUID, n), make([]time.Time, n), make([]int16, n)
	statuses, finished, outputs, errs := make([]string, n), make([]time.Time, n), make([]string, n), make([]string, n)
	ids, owners := make([]uuid.UUID, n), make([]uuid.UUID, n)
	dues, started, throttled := make([]time.Time, n), make([]time.Time, n), make([]int32, n)
	for i, r := range results {
		throttled[i] = int32(min(r.Throttled.Milliseconds(), math.MaxInt32))
		jobIDs[i], sched[i], attempts[i] = r.Occurrence.JobID, r.Occurrence.ScheduledFor, int16(r.Occurrence.Attempt)
		statuses[i], finished[i], outputs[i], errs[i] = string(r.Status), r.FinishedAt, storable(r.Output), storable(r.Error)
		ids[i], owners[i] = r.ID, r.Owner
		if r.ID == uuid.Nil {
			ids[i] = job.NewID()
		}
		dues[i], started[i] = r.DueAt, r.StartedAt
		if r.TrimHistory && !slices.Contains(trim, r.Occurrence.JobID) {
			trim = append(trim, r.Occurrence.JobID)
		}
		if endsJob(r) {
			ending++
		}
	}
	return []any{jobIDs, sched, attempts, statuses, finished, outputs, errs, ids, owners, dues, started, now, throttled}, trim, ending
}

// backfillArg is the backfill of each of results, nil when none has one.
func backfillArg(results []Result) []uuid.UUID {
	var out []uuid.UUID
	for i, r := range results {
		if r.Occurrence.Backfill != uuid.Nil && out == nil {
			out = make([]uuid.UUID, len(results))
		}
		if out != nil {
			out[i] = results[i].Occurrence.Backfill
		}
	}
	return out
}

// callbackArg is the callback body of each of results, nil when none has
// one.
func callbackArg(results []Result) [][]byte {
	var out [][]byte
	for i, r := range results {
		if r.Callback != nil && out == nil {
			out = make([][]byte, len(results))
		}
		if out != nil {
			out[i] = results[i].Callback
		}
	}
	return out
}

// endsJob says whether r's outcome should end its job: the occurrence
// ends its job (EndsJob) and the outcome is its last (every outcome but a
// failure that a retry follows).
func endsJob(r Result) bool {
	return r.EndsJob && r.Status != job.RunRunning && r.Status != job.RunFailed
}

// endJobSQL ends the job of an attempt whose final outcome is recorded
// while the job is still scheduled, wherever its row is: finishRunsSQL
// looks only among claimed rows, and a loader's claim enqueues before it
// commits, so an attempt can run and end while its job's claim is not
// committed (a job loaded overdue), or never will be (a leader killed
// between its ZADD and its commit; the next leader claims the job again,
// and its attempt, found done, never ends it). Such a job would stay
// scheduled for ever. The row ends idle, as a claim leaves it. A job
// changed since a failed outcome (a retry revived it) is left alone; a
// completed occurrence is never retried. One job a statement, found
// through each partition's primary key ($1 is the job's id), so the plan
// never scans a partition.
const endJobSQL = `UPDATE jobs j SET status = CASE
        WHEN r.status = 'expired' THEN 'expired'::job_status
        WHEN j.schedule IS NOT NULL OR r.status = 'completed' THEN 'completed'::job_status
        WHEN r.status = 'aborted' THEN 'cancelled'::job_status
        ELSE 'permanently_failed'::job_status END,
    due_at = NULL, due_hour = -1, updated_at = $4
FROM (SELECT status, finished_at FROM job_runs WHERE job_id = $1 AND scheduled_for = $2 AND attempt = $3) r
WHERE j.id = $1 AND j.status = 'scheduled'
  AND r.status IN ('completed', 'permanently_failed', 'skipped', 'aborted', 'expired')
  AND (j.run_at = $2 OR j.last_at = $2)
  AND (r.status = 'completed' OR j.updated_at <= r.finished_at)`

// endJobsLockTimeout bounds how long EndJobs waits for a claim that is
// committing: the rare path must not hold up the group commit.
const endJobsLockTimeout = "1s"

// EndJobs ends the jobs of results, attempts whose final outcome is
// recorded, that are still scheduled (see endJobSQL): FinishRuns calls it
// when it ended fewer jobs than its outcomes said, and the worker when it
// is handed an attempt found done whose job is still scheduled. A row a
// claim is committing is waited for, up to endJobsLockTimeout, and read
// again where the claim moved it (a serialization failure, retried). The
// rare path: a statement per job, in one round trip.
func (s *Store) EndJobs(ctx context.Context, results []Result, now time.Time) error {
	if len(results) == 0 {
		return nil
	}
	err := retrySerialization(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue("SET LOCAL lock_timeout = '" + endJobsLockTimeout + "'")
			for _, r := range results {
				o := r.Occurrence
				b.Queue(endJobSQL, o.JobID, o.ScheduledFor, int16(o.Attempt), now)
			}
			return tx.SendBatch(ctx, b).Close()
		})
	})
	if err != nil {
		return fmt.Errorf("end jobs: %w", translate(err))
	}
	return nil
}

// firstOfEachAttempt returns results with each attempt (job, occurrence,
// attempt) once, its first outcome: one statement cannot write a row twice
// (Postgres refuses the whole batch, SQLSTATE 21000), and an attempt whose
// lease ran out while its worker waited on Redis can be run again and end
// in the same batch as its first run. The first outcome recorded is the one
// kept, here as across batches (finishRunsSQL updates only running rows).
func firstOfEachAttempt(results []Result) []Result {
	type attempt struct {
		job   uuid.UUID
		at    int64
		index int
	}
	seen := make(map[attempt]bool, len(results))
	var out []Result // allocated at the first repeat
	for i, r := range results {
		k := attempt{r.Occurrence.JobID, r.Occurrence.ScheduledFor.UnixNano(), r.Occurrence.Attempt}
		switch {
		case seen[k] && out == nil:
			out = append(make([]Result, 0, len(results)-1), results[:i]...)
		case seen[k]:
		case out != nil:
			out = append(out, r)
		}
		seen[k] = true
	}
	if out == nil {
		return results
	}
	return out
}

// storable is s as a text column takes it: Postgres refuses a NUL and
// bytes that are not UTF-8, which a target's answer may hold, and one
// refused outcome would spoil its whole batch. NULs are dropped and invalid
// bytes replaced by U+FFFD.
func storable(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
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
       finished_at, coalesce(output, ''), coalesce(error, ''), coalesce(throttled_ms, 0)
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
		var throttled int32
		err := r.Scan(&run.JobID, &run.ScheduledFor, &a, &run.Status, &run.ID, &run.Owner, &run.DueAt,
			&run.StartedAt, &run.LeaseUntil, &finished, &run.Output, &run.Error, &throttled)
		run.Attempt, run.Throttled = int(a), time.Duration(throttled)*time.Millisecond
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

// cancelAbortedSQL ends a one-off job whose attempt is aborted: no retry
// of it, queued or reclaimed after a worker's death, may start again.
const cancelAbortedSQL = `UPDATE jobs SET status = 'cancelled', due_at = NULL, due_hour = -1,
    generation = generation + 1, updated_at = $2
WHERE id = $1 AND status = 'scheduled' AND schedule IS NULL`

// AbortJob records in the audit log that the attempts running of a job of
// owner (or of anyone, for AnyOwner) are being aborted; running lists them
// (they live in Redis: queue.Queue.Running), and the caller then tells the
// workers (queue.Queue.Abort), which stop them and record them aborted. A
// one-off job is cancelled in the same transaction, fenced first, so that
// no attempt of it starts again (a retry, or a takeover after a worker's
// death); a recurring job keeps its schedule. No running attempt is
// job.ErrConflict; an unknown job, or another owner's, job.ErrNotFound.
func (s *Store) AbortJob(ctx context.Context, owner, id uuid.UUID, now time.Time, a Audit, running []job.Run, fence Fencer) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status job.Status
		var gen int
		var recurring bool
		if err := tx.QueryRow(ctx, lockJobSQL, id, owner).Scan(&status, &gen, &recurring); err != nil {
			return translate(err)
		}
		if len(running) == 0 {
			return fmt.Errorf("%w: no attempt of this %s job is running", job.ErrConflict, status)
		}
		change := map[string]any{"attempts": len(running)}
		if !recurring && status == job.StatusScheduled {
			if fence != nil {
				if _, err := fence(ctx, id, gen+1); err != nil {
					return err
				}
			}
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
		return fmt.Errorf("abort job %s: %w", id, err)
	}
	return nil
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
	jobIDs, sched, attempts := attemptArrays(occs)
	members := make(map[string]string, len(occs))
	for _, o := range occs {
		members[runKey(o.JobID, o.ScheduledFor, o.Attempt)] = o.Member()
	}
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
