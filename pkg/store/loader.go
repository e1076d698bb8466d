package store

import (
	"context"
	"errors"
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
const claimDueSQL = `SELECT id, due_hour, due_at, owner_id, priority, generation, occurrences, schedule, per_hour, coalesce(jitter_offset_ms, 0), ` + routeSQL + ` FROM jobs
WHERE due_hour = ANY($1) AND due_at >= $2 AND due_at < $3 AND status = 'scheduled'
ORDER BY due_at
LIMIT $4
FOR UPDATE SKIP LOCKED`

// claimJobSQL locks one job for loading right away (after a create or edit).
const claimJobSQL = `SELECT id, due_hour, due_at, owner_id, priority, generation, occurrences, schedule, per_hour, coalesce(jitter_offset_ms, 0), ` + routeSQL + ` FROM jobs
WHERE id = $1 AND due_at < $2 AND status = 'scheduled'
FOR UPDATE`

// advanceSQL moves each claimed job's cursor past what was handed to Redis:
// due_at to its next unloaded occurrence (NULL when none is left, which moves
// the row to jobs_idle).
const advanceSQL = `UPDATE jobs j SET due_at = u.due_at, due_hour = u.due_hour, occurrences = u.occurrences,
    last_at = u.last_at, updated_at = $7, per_hour = coalesce(u.per_hour, j.per_hour)
FROM unnest($1::uuid[], $2::smallint[], $3::timestamptz[], $4::smallint[], $5::integer[], $6::timestamptz[], $8::integer[])
    AS u(id, old_hour, due_at, due_hour, occurrences, last_at, per_hour)
WHERE j.id = u.id AND j.due_hour = u.old_hour AND j.due_hour = ANY($2)`

// skipSQL records occurrences that a misfire policy chose not to run, so none
// disappears without a trace.
const skipSQL = `INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until, finished_at, error)
SELECT u.job_id, u.scheduled_for, 1, 'skipped', u.id, u.owner_id, u.scheduled_for, $5, $5, $5, u.reason
FROM unnest($1::uuid[], $2::timestamptz[], $3::uuid[], $4::uuid[], $6::text[]) AS u(job_id, scheduled_for, id, owner_id, reason)
ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING`

// targetURLSQL reads the user-given URL of a job's payload in SQL, as
// job.TargetURL does in Go: "url" (webhook, ping) or "webhook_url" (slack).
const targetURLSQL = `coalesce(payload->>'url', payload->>'webhook_url')`

// routeSQL reads what routes a job's occurrences through fair dispatch
// besides its owner: its target URL (targetURLSQL) and its flow key.
const routeSQL = targetURLSQL + `, flow->>'key'`

// routed routes o, whose Owner is set, by a target URL and a flow key read
// with routeSQL.
func routed(o job.Occurrence, target, flow *string) job.Occurrence {
	o.Target = targetKey(target)
	if flow != nil {
		o = o.Through(*flow)
	}
	return o
}

// targetKey is job.TargetKey of a URL read with targetURLSQL.
func targetKey(url *string) string {
	if url == nil {
		return ""
	}
	return job.TargetKey(*url)
}

// maxPerJob bounds the occurrences one job contributes to one claim, so a
// frequent schedule cannot make one batch unbounded; the rest follow in the
// next round. Each job's planning also has a budget (schedule.LoaderBudget).
const maxPerJob = 10000

// maxSkipCount bounds how many missed occurrences of one job the loader
// counts in one round: a longer backlog of a schedule without a count is
// jumped over and reported as "more than maxSkipCount".
const maxSkipCount = 1000

// roundTime bounds the schedule work of one claim batch: jobs left unplanned
// when it runs out keep their cursor and are planned in the next round, so
// a round holds its rows locked for about this long at most.
const roundTime = 200 * time.Millisecond

// Window is one loader round: what to claim and how to judge misfires.
type Window struct {
	Since, Until time.Time // due times in [Since, Until); zero Since for all
	Limit        int       // most jobs per claim
	Now          time.Time
	// MisfireThreshold: an occurrence due longer ago than this is missed.
	MisfireThreshold time.Duration
}

// Skipped says that occurrences were not run, and why: one summary per job
// and loader round however many were missed. Occurrence is the last one
// skipped (its run row's scheduled_for); Count of them from First.
type Skipped struct {
	Occurrence job.Occurrence
	First      time.Time
	Count      int
	// More says Count is a floor: the backlog was jumped over uncounted.
	More   bool
	Reason string
}

// Claimed is what one claim handed over.
type Claimed struct {
	Jobs        int
	Occurrences int
	// Skipped counts the occurrences skipped; SkipRows the run rows that
	// record them (one per job at most).
	Skipped  int
	SkipRows int
	// Deferred counts jobs claimed but left for the next round: their
	// planning ran out of budget before it started.
	Deferred int
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
	perHour     *int32
	// jitterMs is the job's jitter offset (job.Job.JitterOffset).
	jitterMs int64
	target   *string
	flow     *string
}

// ClaimDue claims up to w.Limit jobs due in the window and passes their
// occurrences to enqueue before the claim commits. A one-off job yields its one
// occurrence; a recurring job yields every occurrence inside the window (its
// cursor moves to the first one beyond). If enqueue fails, nothing is claimed;
// if the commit fails after enqueue succeeded, the next round claims and
// enqueues the same members again, which Redis absorbs (ZADD of an existing
// member) and workers deduplicate by run key.
//
// A claim that hands anything to enqueue first raises the load mark
// (tock_marks) in its transaction and passes the new value along, for
// enqueue to write beside the occurrences: a Redis that later holds a lower
// mark than the committed one lost a claim's writes (see LoadMark).
func (s *Store) ClaimDue(ctx context.Context, w Window, enqueue func(ctx context.Context, occs []job.Occurrence, mark int64) error) (Claimed, error) {
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
			out, err = s.plan(ctx, tx, rows, w, func(ctx context.Context, occs []job.Occurrence) error {
				var mark int64
				if err := tx.QueryRow(ctx, raiseLoadMarkSQL).Scan(&mark); err != nil {
					return err
				}
				return enqueue(ctx, occs, mark)
			})
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
// skipped occurrences and enqueues, all inside tx. Jobs whose planning has no
// budget left this round are not advanced: they keep their cursor and come
// back in the next round.
func (s *Store) plan(ctx context.Context, tx pgx.Tx, rows pgx.Rows, w Window,
	enqueue func(context.Context, []job.Occurrence) error) (Claimed, error) {
	claimed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimRow, error) {
		var c claimRow
		err := r.Scan(&c.id, &c.hour, &c.dueAt, &c.owner, &c.priority, &c.generation, &c.occurrences, &c.schedule, &c.perHour, &c.jitterMs, &c.target, &c.flow)
		c.dueAt = c.dueAt.UTC()
		return c, err
	})
	if err != nil || len(claimed) == 0 {
		return Claimed{}, err
	}
	n := len(claimed)
	ids, oldHours, newHours := make([]uuid.UUID, 0, n), make([]int16, 0, n), make([]int16, 0, n)
	dues, lasts, counts := make([]*time.Time, 0, n), make([]*time.Time, 0, n), make([]int32, 0, n)
	rates := make([]*int32, 0, n)
	var occs []job.Occurrence
	var skipped []Skipped
	skipOwners := map[uuid.UUID]uuid.UUID{}
	out := Claimed{Jobs: n}
	roundEnd := time.Now().Add(roundTime)
	for _, c := range claimed {
		base := routed(job.Occurrence{JobID: c.id, Attempt: 1, Priority: int(c.priority), Generation: int(c.generation),
			Owner: c.owner}, c.target, c.flow)
		if len(c.schedule) == 0 {
			ids, oldHours, newHours = append(ids, c.id), append(oldHours, c.hour), append(newHours, -1)
			dues, lasts, counts, rates = append(dues, nil), append(lasts, nil), append(counts, c.occurrences+1), append(rates, nil)
			base.ScheduledFor = c.dueAt
			occs = append(occs, base)
			continue
		}
		if time.Now().After(roundEnd) {
			out.Deferred++
			continue
		}
		e := expand(ctx, c, base, w)
		if !e.progress {
			out.Deferred++
			continue
		}
		ids, oldHours, counts = append(ids, c.id), append(oldHours, c.hour), append(counts, e.used)
		occs = append(occs, e.planned...)
		if e.skipped != nil {
			skipped = append(skipped, *e.skipped)
			skipOwners[c.id] = c.owner
			out.Skipped += e.skipped.Count
		}
		var due, last *time.Time
		hour := int16(-1)
		switch {
		case !e.next.IsZero():
			next := e.next
			due, hour = &next, dueHour(next)
		case !e.last.IsZero():
			l := e.last
			last = &l
		}
		dues, lasts, newHours = append(dues, due), append(lasts, last), append(newHours, hour)
		rates = append(rates, e.perHour)
	}
	if len(ids) > 0 {
		if _, err := tx.Exec(ctx, advanceSQL, ids, oldHours, dues, newHours, counts, lasts, w.Now, rates); err != nil {
			return Claimed{}, err
		}
	}
	if len(skipped) > 0 {
		if err := insertSkipped(ctx, tx, skipped, skipOwners, w.Now); err != nil {
			return Claimed{}, err
		}
		out.SkipRows = len(skipped)
	}
	if len(occs) > 0 {
		if err := enqueue(ctx, occs); err != nil {
			return Claimed{}, err
		}
	}
	out.Occurrences = len(occs)
	return out, nil
}

// expansion is one recurring job's planning in one round.
type expansion struct {
	// progress is false when nothing could be planned within the budget:
	// the job is left as it is for the next round.
	progress bool
	// next is the new cursor, the first occurrence not handed out; zero
	// when the recurrence ended, with last its final occurrence (zero if the
	// count ran out before any).
	next, last time.Time
	used       int32
	planned    []job.Occurrence
	skipped    *Skipped
	// perHour is the job's rate when it had none stored (a job from before
	// the rate was kept), for its owner's limit.
	perHour *int32
}

// expand plans one recurring job's occurrences from its cursor up to the end
// of the window, within schedule.LoaderBudget. Missed occurrences (due more
// than the misfire threshold ago) are judged by the job's policy all at
// once, and those skipped are summed up in one Skipped. Every step finds the
// following occurrence before it hands one out, so a budget that runs out
// leaves the cursor on an occurrence not yet handed out: nothing is lost or
// planned twice, and the rest follows in the next round.
func expand(ctx context.Context, c claimRow, base job.Occurrence, w Window) expansion {
	e := expansion{used: c.occurrences}
	sched, err := jitteredSchedule(schedule.LoaderBudget(ctx), c.schedule, c.jitterMs)
	if err != nil {
		if errors.Is(err, schedule.ErrTooExpensive) || ctx.Err() != nil {
			return e // try again next round
		}
		// A stored schedule that no longer compiles cannot be planned; end it
		// rather than retry it every round. (Compile is deterministic, so this
		// only happens after an incompatible change to the schedule package.)
		e.progress, e.last = true, c.dueAt
		e.skipped = &Skipped{Occurrence: at(base, c.dueAt), First: c.dueAt, Count: 1, Reason: "schedule no longer valid: " + err.Error()}
		return e
	}
	var rate int32
	if c.perHour != nil {
		rate = *c.perHour
	} else {
		rate = int32(sched.PerHour(w.Now.Add(-time.Millisecond)))
		if sched.Err() != nil {
			return e
		}
		e.perHour = &rate
	}
	count := sched.Count()
	t := c.dueAt
	if missed := w.Now.Add(-w.MisfireThreshold); t.Before(missed) {
		var ok bool
		if t, ok = e.skipMissed(ctx, sched, base, t, w, missed, int(rate)); !ok {
			return e
		}
		if sched.Err() != nil {
			e.next = t // skipped what it could; the rest next round
			return e
		}
	}
	for k := 0; t.Before(w.Until) && k < maxPerJob; k++ {
		if count > 0 && int(e.used) >= count {
			e.next = time.Time{}
			return e
		}
		next, ok := sched.Next(t)
		if !ok && sched.Err() != nil {
			break // keep t as the cursor: the budget ran out
		}
		e.planned = append(e.planned, at(base, t))
		e.used++
		e.progress = true
		e.last = t
		if !ok || count > 0 && int(e.used) >= count {
			return e // ended: t was the final occurrence
		}
		t = next
	}
	e.next, e.last = t, time.Time{}
	return e
}

// skipMissed handles the occurrences from t that were due before missed:
// it finds where the job's misfire policy starts running them again (the
// cutoff), records the ones before it as one Skipped, and returns the new
// cursor: the cutoff, or where the budget ran out before it. It reports
// false when its budget ran out before it could decide.
//
//   - skip: nothing missed runs; the cutoff is the first occurrence not
//     missed.
//   - run_once: only the latest occurrence at or before now runs (missed or
//     not); the cutoff is that one.
//   - catch_up: the newest misfire_max occurrences at or before now run;
//     the cutoff is the oldest of them.
//
// The final occurrence of a counted recurrence is never skipped: no later
// one supersedes it.
func (e *expansion) skipMissed(ctx context.Context, sched *schedule.Schedule, base job.Occurrence, t time.Time, w Window, missed time.Time, perHour int) (time.Time, bool) {
	spec := sched.Spec()
	var cutoff time.Time
	var reason string
	switch spec.Misfire {
	case schedule.MisfireSkip:
		var ok bool
		if cutoff, ok = sched.Next(missed.Add(-time.Millisecond)); !ok {
			cutoff = endOfTime // none follows: all but the final one are skipped
		}
		reason = "misfire skip"
	case schedule.MisfireCatchUp:
		// Finding the newest misfire_max takes misfire_max steps at least: it
		// gets half the job's budget, and when that is not enough the
		// cutoff is estimated from the job's rate, so that a large bound on
		// a dense rule cannot stall the job round after round.
		probe := sched.Within(schedule.NewBudget(ctx, schedule.LoaderUnits/2, schedule.LoaderTime/2))
		last := probe.LastBefore(t, w.Now, spec.MisfireMax)
		cutoff = t
		switch {
		case probe.Err() == nil && len(last) == spec.MisfireMax:
			cutoff = last[0]
		case probe.Err() != nil && perHour > 0:
			back := time.Duration(int64(spec.MisfireMax) * int64(time.Hour) / int64(perHour))
			if c, ok := sched.Next(w.Now.Add(-back - time.Millisecond)); ok && c.After(t) {
				cutoff = c
			}
		}
		reason = fmt.Sprintf("beyond catch_up bound of %d", spec.MisfireMax)
	default:
		last := sched.LastBefore(t, w.Now, 1)
		if sched.Err() != nil {
			return time.Time{}, false
		}
		cutoff = t
		if len(last) == 1 {
			cutoff = last[0]
		}
		reason = "superseded by " + cutoff.Format(time.RFC3339)
	}
	if sched.Err() != nil {
		return time.Time{}, false
	}
	if !cutoff.After(t) {
		return t, true // nothing to skip
	}
	count := sched.Count()
	sk := Skipped{First: t}
	for t.Before(cutoff) {
		if count > 0 && int(e.used)+1 >= count {
			break // t is the final occurrence: it runs
		}
		if count == 0 && sk.Count >= maxSkipCount && cutoff.Before(endOfTime) {
			// A long backlog of an endless schedule: jump to the cutoff.
			sk.More, t = true, cutoff
			break
		}
		next, ok := sched.Next(t)
		if !ok {
			// The budget ran out (t stays the cursor), or t is the final
			// occurrence, which runs.
			break
		}
		sk.Count++
		sk.Occurrence = at(base, t)
		e.used++
		t = next
	}
	if sk.Count > 0 {
		e.progress = true
		sk.Reason = skipReason(sk, reason)
		e.skipped = &sk
	}
	return t, true
}

// endOfTime stands for "no cutoff": every missed occurrence but a final one
// is skipped.
var endOfTime = time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)

// skipReason is the error text of a Skipped: what was skipped, and why.
func skipReason(sk Skipped, why string) string {
	last := sk.Occurrence.ScheduledFor
	switch {
	case sk.Count == 1 && !sk.More:
		return "misfire: " + why
	case sk.More:
		return fmt.Sprintf("misfire: %s; skipped more than %d occurrences from %s to %s", why, sk.Count,
			sk.First.Format(time.RFC3339), last.Format(time.RFC3339))
	}
	return fmt.Sprintf("misfire: %s; skipped %d occurrences from %s to %s", why, sk.Count,
		sk.First.Format(time.RFC3339), last.Format(time.RFC3339))
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

// jitteredSchedule compiles a stored schedule within b, moved by the job's
// jitter offset (ms): every cursor the store keeps is in jittered times.
func jitteredSchedule(b *schedule.Budget, raw []byte, jitterMs int64) (*schedule.Schedule, error) {
	sched, err := schedule.FromJSONWithin(b, raw)
	if err != nil {
		return nil, err
	}
	return sched.Jittered(time.Duration(jitterMs) * time.Millisecond), nil
}
