package chaos

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/e2e/cluster"
)

// row is one fault's line in the table, with every promise it broke.
type row struct {
	fault       string
	jobs        int // occurrences due
	delivered   int // jobs the target saw at least once
	lost        int // jobs missing an expected attempt
	dups        int // deliveries of an attempt after its first
	inFlight    int // attempts running at the fault
	outage      time.Duration
	recovery    time.Duration
	recoveredBy string        // the late job that set recovery
	maxLate     time.Duration // latest first delivery, over the whole load
	preLate     time.Duration // latest first delivery before the fault
	problems    []string
}

// examples collects a count and the first few instances of one finding.
type examples struct {
	n    int
	list []string
}

func (e *examples) add(format string, args ...any) {
	e.n++
	if len(e.list) < 5 {
		e.list = append(e.list, fmt.Sprintf(format, args...))
	}
}

func (e *examples) report(problems *[]string, what string) {
	if e.n > 0 {
		*problems = append(*problems, fmt.Sprintf("%d %s, e.g.:\n    %s", e.n, what, strings.Join(e.list, "\n    ")))
	}
}

type runRow struct {
	attempt int
	status  string
}

// judge checks the promises on the ledger and on job_runs:
//   - at least once: every job's expected attempts reached the target;
//   - one key per occurrence: every delivery of (job, scheduled_for) carried
//     Idempotency-Key "<job id>:<unix ms>", so a duplicate shares its
//     original's key;
//   - duplicates only after a fault: an attempt delivered more than once was in
//     flight at the fault, and there are no more duplicates than such attempts;
//   - every run ended: no run is running, each job completed (or, aimed at a
//     failing target, permanently_failed) with exactly its expected runs;
//   - recovery in seconds: from the strike (the heal, after an outage of
//     Postgres or Redis) to the last first delivery more than lateAfter late
//     (of the jobs created ahead: see createThrough) is within the fault's
//     bound.
func judge(ctx context.Context, fx *fixture, l *load, o outcome) row {
	ds := fx.target.Deliveries()
	r := row{jobs: len(l.planned), inFlight: len(o.inFlight), outage: o.healed.Sub(o.struck)}

	var unknown, badKey, wrongTime, lost, extra, strayDup, badRuns, badStatus examples
	perAttempt := map[string][]cluster.Delivery{}
	keys := map[string]map[string]bool{}
	seen := map[uuid.UUID]map[int]bool{}
	for _, d := range ds {
		id, err := uuid.Parse(d.JobID)
		p := l.planned[id]
		if err != nil || p == nil {
			unknown.add("job %q attempt %d key %q", d.JobID, d.Attempt, d.IdempotencyKey)
			continue
		}
		occ := fmt.Sprintf("%s:%d", d.JobID, d.ScheduledFor.UnixMilli())
		if keys[occ] == nil {
			keys[occ] = map[string]bool{}
		}
		keys[occ][d.IdempotencyKey] = true
		if d.IdempotencyKey != occ {
			badKey.add("job %s attempt %d: Idempotency-Key %q, want %q", d.JobID, d.Attempt, d.IdempotencyKey, occ)
		}
		if !d.ScheduledFor.Equal(p.at) {
			wrongTime.add("job %s: scheduled_for %s, due %s", d.JobID, d.ScheduledFor.Format(time.RFC3339Nano), p.at.Format(time.RFC3339Nano))
		}
		k := attemptKey(d.JobID, d.ScheduledFor, d.Attempt)
		perAttempt[k] = append(perAttempt[k], d)
		if seen[id] == nil {
			seen[id] = map[int]bool{}
		}
		seen[id][d.Attempt] = true
	}
	r.delivered = len(seen)

	runs, statuses, dbErr := fx.final(ctx)
	if dbErr != nil {
		r.problems = append(r.problems, fmt.Sprintf("read job_runs and jobs: %v", dbErr))
	}
	running, open := 0, 0
	for _, rs := range runs {
		for _, rr := range rs {
			if rr.status == "running" {
				running++
			}
		}
	}
	if leases, err := fx.queue.Leased(ctx, time.Time{}, 1_000_000); err != nil {
		r.problems = append(r.problems, fmt.Sprintf("read the leases in Redis: %v", err))
	} else {
		running += len(leases)
	}
	var stray examples
	for id, s := range statuses {
		if s != "completed" && s != "permanently_failed" {
			open++
			if l.planned[id] == nil {
				stray.add("job %s: %s; runs %v", id, s, runs[id])
			}
		}
	}
	if running > 0 || open > 0 {
		r.problems = append(r.problems, fmt.Sprintf("%d runs still running and %d jobs neither completed nor permanently_failed at the end", running, open))
	}
	// A create answered with an error whose job was stored all the same (a
	// commit Postgres never answered), and made again by its repeat.
	stray.report(&r.problems, "jobs not ended that no load made and no create was answered with")
	ids := make([]uuid.UUID, 0, len(l.planned))
	for id := range l.planned {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	for _, id := range ids {
		p := l.planned[id]
		var missing []int
		for a := 1; a <= p.attempts; a++ {
			if !seen[id][a] {
				missing = append(missing, a)
			}
		}
		if len(missing) > 0 {
			r.lost++
			lost.add("job %s (%s) due %s: attempts %v never delivered; job %s; runs %v",
				id, p.kind, p.at.Format("15:04:05.000"), missing, statuses[id], runs[id])
		}
		for a := range seen[id] {
			if a > p.attempts {
				extra.add("job %s (%s) due %s: attempt %d delivered, expected %d attempts; runs %v",
					id, p.kind, p.at.Format("15:04:05.000"), a, p.attempts, runs[id])
			}
		}
		if dbErr == nil {
			wantStatus, want := expectedRuns(p)
			if statuses[id] != wantStatus {
				badStatus.add("job %s (%s) due %s: status %q, want %q; runs %v",
					id, p.kind, p.at.Format("15:04:05.000"), statuses[id], wantStatus, runs[id])
			}
			if !slices.Equal(runs[id], want) {
				badRuns.add("job %s (%s) due %s: runs %v, want %v", id, p.kind, p.at.Format("15:04:05.000"), runs[id], want)
			}
		}
	}

	var thrice examples
	for k, list := range perAttempt {
		if len(list) < 2 {
			continue
		}
		r.dups += len(list) - 1
		at := make([]string, len(list))
		for i, d := range list {
			at[i] = d.At.Format("15:04:05.000")
		}
		if !o.inFlight[k] {
			strayDup.add("attempt %s delivered %d times (at %s), not in flight at the fault (struck %s)",
				k, len(list), strings.Join(at, ", "), o.struck.Format("15:04:05.000"))
		}
		if len(list) > 2 {
			thrice.add("attempt %s delivered %d times (at %s)", k, len(list), strings.Join(at, ", "))
		}
	}
	var splitKeys examples
	for occ, ks := range keys {
		if len(ks) > 1 {
			splitKeys.add("occurrence %s delivered under keys %v", occ, mapKeys(ks))
		}
	}

	// Lateness of each job's first delivery of its first attempt.
	for k, list := range perAttempt {
		if !strings.HasSuffix(k, "/1") {
			continue
		}
		first := list[0]
		lateness := first.At.Sub(first.ScheduledFor)
		r.maxLate = max(r.maxLate, lateness)
		created := false
		if id, err := uuid.Parse(first.JobID); err == nil && l.planned[id] != nil {
			created = l.planned[id].created
		}
		if lateness > lateAfter && first.At.After(o.struck) && first.At.Sub(o.repair) > r.recovery && !created {
			r.recovery = first.At.Sub(o.repair)
			r.recoveredBy = fmt.Sprintf("job %s due %s, first delivered %s", first.JobID,
				first.ScheduledFor.Format("15:04:05.000"), first.At.Format("15:04:05.000"))
		}
		if first.At.Before(o.sampled) {
			r.preLate = max(r.preLate, lateness)
		}
	}

	r.problems = append(r.problems, l.failed...)
	unknown.report(&r.problems, "deliveries of jobs the suite never created")
	badKey.report(&r.problems, "deliveries whose Idempotency-Key is not <job id>:<scheduled_for unix ms>")
	splitKeys.report(&r.problems, "occurrences delivered under more than one Idempotency-Key")
	wrongTime.report(&r.problems, "deliveries whose scheduled_for is not the job's due time")
	lost.report(&r.problems, "jobs lost")
	extra.report(&r.problems, "unexpected attempts")
	strayDup.report(&r.problems, "duplicated attempts that were not in flight at the fault")
	if r.dups > r.inFlight {
		r.problems = append(r.problems, fmt.Sprintf("%d duplicate deliveries, more than the %d attempts in flight at the fault", r.dups, r.inFlight))
		thrice.report(&r.problems, "attempts delivered more than twice")
	}
	badStatus.report(&r.problems, "jobs not in their expected final status")
	badRuns.report(&r.problems, "jobs whose runs are not what they should be")
	if r.recovery > o.bound {
		r.problems = append(r.problems, fmt.Sprintf("recovery took %s, more than %s: %s", r.recovery.Round(time.Millisecond), o.bound, r.recoveredBy))
	}
	return r
}

// expectedRuns is the final job status and the runs, by attempt, a planned
// job must end with.
func expectedRuns(p *planned) (string, []runRow) {
	if p.kind == kindHang || p.kind == kindFail {
		want := make([]runRow, p.attempts)
		for i := range want {
			want[i] = runRow{attempt: i + 1, status: "failed"}
		}
		want[len(want)-1].status = "permanently_failed"
		return "permanently_failed", want
	}
	return "completed", []runRow{{attempt: 1, status: "completed"}}
}

// final reads every job's status and runs, by attempt.
func (fx *fixture) final(ctx context.Context) (map[uuid.UUID][]runRow, map[uuid.UUID]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	runs := map[uuid.UUID][]runRow{}
	rows, err := fx.db.Query(ctx, `SELECT job_id, attempt, status::text FROM job_runs ORDER BY job_id, attempt`)
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var id uuid.UUID
		var rr runRow
		var attempt int16
		if err := rows.Scan(&id, &attempt, &rr.status); err != nil {
			rows.Close()
			return nil, nil, err
		}
		rr.attempt = int(attempt)
		runs[id] = append(runs[id], rr)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	statuses := map[uuid.UUID]string{}
	rows, err = fx.db.Query(ctx, `SELECT id, status::text FROM jobs`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var s string
		if err := rows.Scan(&id, &s); err != nil {
			return nil, nil, err
		}
		statuses[id] = s
	}
	return runs, statuses, rows.Err()
}

func mapKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
