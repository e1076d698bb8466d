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

// An attempt's one Postgres write is its outcome (FinishRuns). Starting it
// writes nothing here: its lease lives in Redis (queue.Shard.Start), and the
// worker only reads what the attempt needs, with Fetch.

// Fetched is what Postgres holds for an attempt a worker read from the
// stream: its job, when there is one, and the attempt's outcome, when it
// has one already.
type Fetched struct {
	Occurrence job.Occurrence
	// Job is the job's current state; nil when the job is gone (purged,
	// erased).
	Job *AttemptJob
	// Outcome is the attempt's recorded status, "" when it has none:
	// finished already (a redelivery racing its own settle), or running,
	// a row of a release that recorded starts, leased until LeaseUntil.
	Outcome    job.RunStatus
	LeaseUntil time.Time
}

// AttemptJob is what an attempt needs of its job to run and be recorded.
type AttemptJob struct {
	Status     job.Status
	Generation int
	Owner      uuid.UUID
	Type       job.Type
	Name       string
	// Payload and Notify hold their credentials' fingerprints; Secrets
	// holds the credentials, sealed (jobspec.Reveal puts them back).
	Payload    json.RawMessage
	Notify     *job.Notify
	Secrets    string
	Timeout    time.Duration
	MaxRetries int
	// Schedule is the job's normalized recurrence; nil for a one-off job.
	Schedule json.RawMessage
	// LastAt is the final occurrence of a recurrence that has ended.
	LastAt       time.Time
	History      job.History
	ExpiresAfter time.Duration
	Overlap      job.Overlap
	TraceParent  string
	// RunAt is a one-off job's due time. Jittered says the job has a
	// jitter, and JitterOffset how much later than their nominal times its
	// occurrences are due.
	RunAt        time.Time
	Jittered     bool
	JitterOffset time.Duration
	// SkipCalendars names the owner's calendars whose days the job's
	// occurrences are skipped on.
	SkipCalendars []string
	// SigningSecret and PreviousSigningSecret are the owner's, opened;
	// SigningErr says why they could not be (the operator key is not held).
	SigningSecret, PreviousSigningSecret string
	SigningErr                           error
	// SecretsErr says why the job's own credentials could not be put back
	// in the payload and notify (the operator key is not held): the
	// attempt must not be sent with fingerprints for them.
	SecretsErr error
}

// revealJob puts the job's sealed credentials back into its payload and
// notify, in place of their fingerprints. The error never holds a secret.
func (s *Store) revealJob(id uuid.UUID, aj *AttemptJob) error {
	m, err := jobspec.OpenSecrets(s.secrets, &job.Job{ID: id, Owner: aj.Owner, Secrets: aj.Secrets})
	if err != nil {
		return err
	}
	payload, notify, err := jobspec.Reveal(aj.Type, aj.Payload, aj.Notify, m)
	if err != nil {
		return fmt.Errorf("secrets of job %s: %w", id, err)
	}
	aj.Payload, aj.Notify = payload, notify
	return nil
}

// fetchSQL reads, for each attempt, its job and its own outcome row, through
// the primary keys: a read, with no lock and no write. Each lookup is a
// LATERAL subquery fenced with LIMIT 1, so that it stays a nested loop of
// index probes whatever the statistics say: the plan is generic and made
// once per connection, and one made while a table is small (a hash join
// over a scan of every partition) would read the whole table for every
// batch once it has grown. A job the worker reads has almost always been
// claimed (due_hour -1): that partition is probed first, and the hour
// partitions only when it is not there (a recurring job, whose row moved
// to its next occurrence's hour). The run row's lookup carries its
// scheduled time, so it is pruned to one day's partition at execution.
const fetchSQL = `WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::smallint[]) WITH ORDINALITY AS r(job_id, scheduled_for, attempt, n)
)
SELECT r.n, j.id IS NOT NULL, coalesce(j.status::text, ''), coalesce(j.generation, 0), coalesce(j.owner_id, r.job_id),
       coalesce(j.type, ''), coalesce(j.name, ''), j.payload, coalesce(j.timeout_ms, 0), coalesce(j.max_retries, 0),
       j.schedule, j.last_at, coalesce(j.history, 'all'), coalesce(j.expires_after_ms, 0), coalesce(j.overlap, ''),
       j.notify, coalesce(j.trace_parent, ''), coalesce(j.secrets, ''), j.run_at, j.jitter_offset_ms, j.skip_calendars,
       coalesce(u.signing_secret, ''),
       CASE WHEN u.previous_signing_until > $4 THEN coalesce(u.previous_signing_secret, '') ELSE '' END,
       coalesce(o.status::text, ''), CASE WHEN o.status = 'running' THEN o.lease_until END
FROM req r
LEFT JOIN LATERAL (
    SELECT * FROM (
        SELECT id, status, generation, owner_id, type, name, payload, timeout_ms, max_retries, schedule, last_at, history,
               expires_after_ms, overlap, notify, trace_parent, secrets, run_at, jitter_offset_ms, skip_calendars
        FROM jobs WHERE id = r.job_id AND due_hour = -1
        UNION ALL
        SELECT id, status, generation, owner_id, type, name, payload, timeout_ms, max_retries, schedule, last_at, history,
               expires_after_ms, overlap, notify, trace_parent, secrets, run_at, jitter_offset_ms, skip_calendars
        FROM jobs WHERE id = r.job_id AND due_hour >= 0
    ) x LIMIT 1
) j ON true
LEFT JOIN LATERAL (
    SELECT signing_secret, previous_signing_secret, previous_signing_until FROM users WHERE id = j.owner_id LIMIT 1
) u ON true
LEFT JOIN LATERAL (
    SELECT status, lease_until FROM job_runs
    WHERE job_id = r.job_id AND scheduled_for = r.scheduled_for AND attempt = r.attempt LIMIT 1
) o ON true
ORDER BY r.n`

// Fetch reads what occs need to start, in one statement: the answer has
// one Fetched per occurrence, in order.
func (s *Store) Fetch(ctx context.Context, occs []job.Occurrence, now time.Time) ([]Fetched, error) {
	if len(occs) == 0 {
		return nil, nil
	}
	return s.fetch(ctx, s.pool, occs, now)
}

// awaitJobsSQL waits for every transaction that writes one of the jobs to
// end: a share lock, taken and dropped with its transaction.
const awaitJobsSQL = `SELECT 1 FROM jobs WHERE id = ANY($1) FOR SHARE`

// FetchCommitted is Fetch once every transaction writing one of the jobs
// of occs has ended. A retry puts its attempt in Redis before it commits
// (see RetryOccurrence), so a worker can read the attempt while its job is
// still permanently_failed: it fetches those again with this, which waits
// for the commit. It is the rare path: a lock per job, in a transaction.
func (s *Store) FetchCommitted(ctx context.Context, occs []job.Occurrence, now time.Time) ([]Fetched, error) {
	if len(occs) == 0 {
		return nil, nil
	}
	var out []Fetched
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids := make([]uuid.UUID, len(occs))
		for i, o := range occs {
			ids[i] = o.JobID
		}
		if _, err := tx.Exec(ctx, awaitJobsSQL, ids); err != nil {
			return fmt.Errorf("fetch attempts: %w", translate(err))
		}
		var err error
		out, err = s.fetch(ctx, tx, occs, now)
		return err
	})
	return out, err
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) fetch(ctx context.Context, db querier, occs []job.Occurrence, now time.Time) ([]Fetched, error) {
	jobIDs, sched, attempts := attemptArrays(occs)
	rows, err := db.Query(ctx, fetchSQL, jobIDs, sched, attempts, now)
	if err != nil {
		return nil, fmt.Errorf("fetch attempts: %w", translate(err))
	}
	out := make([]Fetched, len(occs))
	secrets := map[uuid.UUID]SigningSecrets{}
	defer rows.Close()
	for rows.Next() {
		var (
			n                    int64
			found                bool
			aj                   AttemptJob
			status, typ, overlap string
			history, outcome     string
			timeoutMS            int32
			maxRetries           int16
			generation           int32
			expMS                int64
			lastAt, leaseUntil   *time.Time
			runAt                *time.Time
			jitterMs             *int64
			notify               []byte
			signing, prevSigning string
		)
		if err := rows.Scan(&n, &found, &status, &generation, &aj.Owner, &typ, &aj.Name, &aj.Payload, &timeoutMS, &maxRetries,
			&aj.Schedule, &lastAt, &history, &expMS, &overlap, &notify, &aj.TraceParent, &aj.Secrets, &runAt, &jitterMs, &aj.SkipCalendars,
			&signing, &prevSigning, &outcome, &leaseUntil); err != nil {
			return nil, fmt.Errorf("fetch attempts: %w", err)
		}
		if n < 1 || int(n) > len(out) {
			continue
		}
		f := &out[n-1]
		f.Occurrence = occs[n-1]
		f.Outcome = job.RunStatus(outcome)
		if leaseUntil != nil {
			f.LeaseUntil = leaseUntil.UTC()
		}
		if !found {
			continue
		}
		aj.Status, aj.Type, aj.Generation = job.Status(status), job.Type(typ), int(generation)
		aj.Timeout, aj.MaxRetries = time.Duration(timeoutMS)*time.Millisecond, int(maxRetries)
		aj.History, aj.ExpiresAfter, aj.Overlap = job.History(history), time.Duration(expMS)*time.Millisecond, job.Overlap(overlap)
		if lastAt != nil {
			aj.LastAt = lastAt.UTC()
		}
		if runAt != nil {
			aj.RunAt = runAt.UTC()
		}
		if jitterMs != nil {
			aj.Jittered, aj.JitterOffset = true, time.Duration(*jitterMs)*time.Millisecond
		}
		if len(notify) > 0 {
			if err := json.Unmarshal(notify, &aj.Notify); err != nil {
				return nil, fmt.Errorf("notify of job %s: %w", f.Occurrence.JobID, err)
			}
		}
		// A batch holds many attempts of few owners: open each owner's
		// signing secrets once.
		sec, ok := secrets[aj.Owner]
		if !ok {
			sec.Current, sec.Previous = signing, prevSigning
			if sec.Current, aj.SigningErr = s.openSecret(signing, aj.Owner); aj.SigningErr == nil {
				sec.Previous, aj.SigningErr = s.openSecret(prevSigning, aj.Owner)
			}
			if aj.SigningErr == nil {
				secrets[aj.Owner] = sec
			}
		}
		aj.SigningSecret, aj.PreviousSigningSecret = sec.Current, sec.Previous
		if aj.Secrets != "" {
			aj.SecretsErr = s.revealJob(f.Occurrence.JobID, &aj)
		}
		f.Job = &aj
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fetch attempts: %w", translate(err))
	}
	for k := range out {
		if out[k].Occurrence.JobID == uuid.Nil {
			out[k].Occurrence = occs[k]
		}
	}
	return out, nil
}
