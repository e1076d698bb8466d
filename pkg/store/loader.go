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

// WindowHours lists the due_hour partitions that hold due times in [since, until).
// A window of 23 hours or more, or an unbounded one (zero since), needs them all.
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

// claimDueSQL locks the earliest unclaimed due jobs of the window. It filters
// on due_hour = ANY($1), so Postgres prunes to the window's hour partitions
// (TestClaimDue/PrunesToWindowPartitions shows the plan).
const claimDueSQL = `SELECT id, due_hour, due_at, owner_id, priority, generation, occurrences, schedule FROM jobs
WHERE due_hour = ANY($1) AND due_at >= $2 AND due_at < $3 AND status = 'scheduled'
ORDER BY due_at
LIMIT $4
FOR UPDATE SKIP LOCKED`

// claimJobSQL locks one job for loading right away (after a create or edit).
const claimJobSQL = `SELECT id, due_hour, due_at, owner_id, priority, generation, occurrences, schedule FROM jobs
WHERE id = $1 AND due_at < $2 AND status = 'scheduled'
FOR UPDATE`

// advanceSQL moves each claimed job's cursor past what was handed to Redis:
// due_at to its next unloaded occurrence (NULL when none is left, which moves
// the row to jobs_idle).
const advanceSQL = `UPDATE jobs j SET due_at = u.due_at, due_hour = u.due_hour, occurrences = u.occurrences,
    last_at = u.last_at, updated_at = $7
FROM unnest($1::uuid[], $2::smallint[], $3::timestamptz[], $4::smallint[], $5::integer[], $6::timestamptz[])
    AS u(id, old_hour, due_at, due_hour, occurrences, last_at)
WHERE j.id = u.id AND j.due_hour = u.old_hour AND j.due_hour = ANY($2)`

// skipSQL records occurrences that a misfire policy chose not to run, so none
// disappears without a trace.
const skipSQL = `INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until, finished_at, error)
SELECT u.job_id, u.scheduled_for, 1, 'skipped', u.id, u.owner_id, u.scheduled_for, $5, $5, $5, u.reason
FROM unnest($1::uuid[], $2::timestamptz[], $3::uuid[], $4::uuid[], $6::text[]) AS u(job_id, scheduled_for, id, owner_id, reason)
ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING`

// maxPerJob bounds the occurrences one job contributes to one claim, so a
// frequent schedule after a long outage cannot make one batch unbounded; the
// rest follow in the next round.
const maxPerJob = 10000

// DefaultMisfireThreshold is how late an occurrence may start before its job's
// misfire policy decides whether it runs.
const DefaultMisfireThreshold = time.Minute

// Window is one loader round: what to claim and how to judge misfires.
type Window struct {
	Since, Until time.Time // due times in [Since, Until); zero Since for all
	Limit        int       // most jobs per claim
	Now          time.Time
	// MisfireThreshold: an occurrence due longer ago than this is missed.
	MisfireThreshold time.Duration
}

// Skipped is an occurrence that was not run, and why.
type Skipped struct {
	Occurrence job.Occurrence
	Reason     string
}

// Claimed is what one claim handed over.
type Claimed struct {
	Jobs        int
	Occurrences int
	Skipped     int
}

type claimRow struct {
	id          uuid.UUID
	hour        int16
	dueAt       time.Time
	owner       uuid.UUID
	priority    int16
	generation  int32
	occurrences int32
	schedule    []byte
}

// ClaimDue claims up to w.Limit jobs due in the window and passes their
// occurrences to enqueue before the claim commits. A one-off job yields its one
// occurrence; a recurring job yields every occurrence inside the window (its
// cursor moves to the first one beyond). If enqueue fails, nothing is claimed;
// if the commit fails after enqueue succeeded, the next round claims and
// enqueues the same members again, which Redis absorbs (ZADD of an existing
// member) and workers deduplicate by run key.
func (s *Store) ClaimDue(ctx context.Context, w Window, enqueue func(context.Context, []job.Occurrence) error) (Claimed, error) {
	lower := w.Since
	if lower.IsZero() {
		lower = time.Unix(0, 0)
	}
	var out Claimed
	err := retrySerialization(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, claimDueSQL, WindowHours(w.Since, w.Until), lower, w.Until, w.Limit)
			if err != nil {
				return err
			}
			out, err = s.plan(ctx, tx, rows, w, enqueue)
			return err
		})
	})
	if err != nil {
		return Claimed{}, fmt.Errorf("claim due jobs: %w", translate(err))
	}
	return out, nil
}

// LoadJob loads one job's occurrences due before w.Until right away, as the
// loader would: the dashboard calls it after creating or editing a job, so a
// change takes effect within milliseconds rather than at the next round.
func (s *Store) LoadJob(ctx context.Context, id uuid.UUID, w Window, enqueue func(context.Context, []job.Occurrence) error) (Claimed, error) {
	var out Claimed
	err := retrySerialization(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, claimJobSQL, id, w.Until)
			if err != nil {
				return err
			}
			out, err = s.plan(ctx, tx, rows, w, enqueue)
			return err
		})
	})
	if err != nil {
		return Claimed{}, fmt.Errorf("load job %s: %w", id, translate(err))
	}
	return out, nil
}

// plan expands the claimed rows into occurrences, advances the jobs, records
// skipped occurrences and enqueues, all inside tx.
func (s *Store) plan(ctx context.Context, tx pgx.Tx, rows pgx.Rows, w Window,
	enqueue func(context.Context, []job.Occurrence) error) (Claimed, error) {
	claimed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimRow, error) {
		var c claimRow
		err := r.Scan(&c.id, &c.hour, &c.dueAt, &c.owner, &c.priority, &c.generation, &c.occurrences, &c.schedule)
		c.dueAt = c.dueAt.UTC()
		return c, err
	})
	if err != nil || len(claimed) == 0 {
		return Claimed{}, err
	}
	n := len(claimed)
	ids, oldHours, newHours := make([]uuid.UUID, n), make([]int16, n), make([]int16, n)
	dues, lasts, counts := make([]*time.Time, n), make([]*time.Time, n), make([]int32, n)
	var occs []job.Occurrence
	var skipped []Skipped
	skipOwners := map[uuid.UUID]uuid.UUID{}
	for i, c := range claimed {
		ids[i], oldHours[i], counts[i], newHours[i] = c.id, c.hour, c.occurrences, -1
		base := job.Occurrence{JobID: c.id, Attempt: 1, Priority: int(c.priority), Generation: int(c.generation)}
		if len(c.schedule) == 0 {
			base.ScheduledFor = c.dueAt
			occs = append(occs, base)
			counts[i]++
			continue
		}
		next, last, used, sk, planned := expand(c, base, w)
		occs = append(occs, planned...)
		skipped = append(skipped, sk...)
		if len(sk) > 0 {
			skipOwners[c.id] = c.owner
		}
		counts[i] = used
		if !next.IsZero() {
			dues[i], newHours[i] = &next, dueHour(next)
		} else if !last.IsZero() {
			lasts[i] = &last
		}
	}
	if _, err := tx.Exec(ctx, advanceSQL, ids, oldHours, dues, newHours, counts, lasts, w.Now); err != nil {
		return Claimed{}, err
	}
	if len(skipped) > 0 {
		if err := insertSkipped(ctx, tx, skipped, skipOwners, w.Now); err != nil {
			return Claimed{}, err
		}
	}
	if len(occs) > 0 {
		if err := enqueue(ctx, occs); err != nil {
			return Claimed{}, err
		}
	}
	return Claimed{Jobs: n, Occurrences: len(occs), Skipped: len(skipped)}, nil
}

// expand plans one recurring job's occurrences from its cursor up to the end
// of the window. It returns the new cursor (zero when the recurrence ended),
// the final occurrence if it ended, the occurrence count, and what to skip and
// what to run.
func expand(c claimRow, base job.Occurrence, w Window) (next, last time.Time, used int32, skipped []Skipped, planned []job.Occurrence) {
	used = c.occurrences
	sched, err := schedule.FromJSON(c.schedule)
	if err != nil {
		// A stored schedule that no longer compiles cannot be planned; end it
		// rather than retry it every round. (Compile is deterministic, so this
		// only happens after an incompatible change to the schedule package.)
		return time.Time{}, c.dueAt, used, []Skipped{{Occurrence: at(base, c.dueAt), Reason: "schedule no longer valid: " + err.Error()}}, nil
	}
	t, ok := c.dueAt, true
	for k := 0; ok && t.Before(w.Until) && k < maxPerJob; k++ {
		if limit := sched.Count(); limit > 0 && int(used) >= limit {
			return time.Time{}, last, used, skipped, planned
		}
		used++
		last = t
		run, reason := true, ""
		final := sched.Count() > 0 && int(used) == sched.Count()
		if w.Now.Sub(t) > w.MisfireThreshold && !final {
			// The final occurrence of a counted recurrence is the latest there
			// will ever be: no later one supersedes it.
			run, reason = sched.Misfired(t, w.Now, w.MisfireThreshold)
		}
		if run {
			planned = append(planned, at(base, t))
		} else {
			skipped = append(skipped, Skipped{Occurrence: at(base, t), Reason: "misfire: " + reason})
		}
		t, ok = sched.Next(t)
	}
	if !ok {
		return time.Time{}, last, used, skipped, planned
	}
	if limit := sched.Count(); limit > 0 && int(used) >= limit {
		return time.Time{}, last, used, skipped, planned
	}
	return t, time.Time{}, used, skipped, planned
}

func at(o job.Occurrence, t time.Time) job.Occurrence {
	o.ScheduledFor = t
	return o
}

func insertSkipped(ctx context.Context, tx pgx.Tx, skipped []Skipped, owners map[uuid.UUID]uuid.UUID, now time.Time) error {
	n := len(skipped)
	jobIDs, sched, ids, ownerIDs, reasons := make([]uuid.UUID, n), make([]time.Time, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]string, n)
	for i, sk := range skipped {
		jobIDs[i], sched[i], ids[i] = sk.Occurrence.JobID, sk.Occurrence.ScheduledFor, job.NewID()
		ownerIDs[i], reasons[i] = owners[sk.Occurrence.JobID], sk.Reason
	}
	_, err := tx.Exec(ctx, skipSQL, jobIDs, sched, ids, ownerIDs, now, reasons)
	return err
}
