package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// finishedRuns are the run statuses job_runs_search holds: all but running.
// A listing without a status merges one ordered walk of that index per
// status, so a status missing here would be missing from it:
// TestFinishedRunsMatchTheSchema holds the list to the run_status enum.
var finishedRuns = []job.RunStatus{job.RunCompleted, job.RunFailed, job.RunPermanentlyFailed, job.RunSkipped, job.RunAborted, job.RunExpired}

// RunStatuses are every status a run search can ask for: running and the
// finished ones.
var RunStatuses = append([]job.RunStatus{job.RunRunning}, finishedRuns...)

// DefaultRunWalk bounds how many runs one page of SearchRuns looks at. The
// filters that the index cannot serve (the error text, the job's type or
// labels) may reject most runs; past this many, the page stops short and
// says where the next one resumes, so one request never reads an owner's
// whole history.
const DefaultRunWalk = 5_000

// RunSearch selects runs across jobs for SearchRuns. Zero fields do not
// filter.
type RunSearch struct {
	Owner  uuid.UUID // AnyOwner for every owner's
	Status job.RunStatus
	Type   job.Type
	JobID  uuid.UUID
	// Labels, if any, select the runs of jobs that carry every one of them.
	Labels []Label
	// Since (inclusive) and Until (exclusive) bound scheduled_for.
	Since, Until time.Time
	// Error, if set, selects the runs whose error contains it, ignoring case.
	Error string
	// Before is the keyset cursor: runs after this position in the order.
	Before *RunCursor
	Limit  int
	// Walk bounds the runs looked at (see SearchRuns); 0 is DefaultRunWalk.
	Walk int
	// Dead keeps only dead letters: permanently failed runs that are the
	// last attempt of their occurrence and were neither replayed nor purged
	// (Status must be job.RunPermanentlyFailed).
	Dead bool
	// Now is when the search runs: across owners, with no Until and no
	// cursor, the first query takes Now's day and anything later (no run
	// is scheduled after it starts), and the next ones a day each.
	Now time.Time
}

// FoundRun is a run SearchRuns found, with its job's name and type (empty
// if the job went away meanwhile).
type FoundRun struct {
	job.Run
	JobName string
	JobType job.Type
}

// The shapes of a run search's walk, by what bounds it.
type runWalk int

const (
	// walkOwner merges one owner's per-status ranges of job_runs_search and
	// the running runs (job_runs_running), newest first.
	walkOwner runWalk = iota
	// walkJob reads one job's runs through the primary key.
	walkJob
	// walkAny reads every owner's runs, newest day partition first.
	walkAny
)

const (
	runSearchColumns = `job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until, finished_at, output, error, dead_letter, throttled_ms`
	// deadLetterSQL is true of a run w that is a dead letter, given that it
	// is permanently_failed: not replayed or purged, and no later attempt of
	// its occurrence (one retried before dead_letter was recorded).
	deadLetterSQL = `w.dead_letter IS NULL AND NOT EXISTS (SELECT 1 FROM job_runs n
          WHERE n.job_id = w.job_id AND n.scheduled_for = w.scheduled_for AND n.attempt > w.attempt)`
	runSearchOrder = `ORDER BY scheduled_for DESC, attempt DESC, job_id DESC`
	// runSearchBound is the range a walk reads: scheduled_for from $3 up to
	// the position ($4, $5, $6), the cursor or the end of the window.
	runSearchBound = `scheduled_for >= $3 AND (scheduled_for, attempt, job_id) < ($4, $5, $6)`
	noUUID         = `'00000000-0000-0000-0000-000000000000'::uuid`
)

// runWalkSQL is the walk of shape w over runs of status st ("" for all):
// the first n runs in the listing's order that the index conditions
// select, nothing else. Parameters: $1 owner, $2 job, $3 since, $4-$6 the
// upper position, $7 the walk's bound (n is $7 or more).
//
// walkOwner is a UNION ALL of one ordered, limited walk per status, which
// Postgres merges (Merge Append) rather than sorting the owner's runs;
// within a status the index gives (scheduled_for, attempt) order and an
// incremental sort puts ties in job_id order. walkJob first checks, once,
// that the job is the owner's; another owner's job reads nothing. walkAny
// has no index in scheduled_for order: it sorts the runs of its window,
// which SearchRuns keeps to one day partition a query.
func runWalkSQL(w runWalk, st job.RunStatus, n string) string {
	switch w {
	case walkJob:
		return `SELECT ` + runSearchColumns + ` FROM job_runs
WHERE job_id = $2 AND ` + runSearchBound + `
  AND EXISTS (SELECT 1 FROM jobs WHERE id = $2 AND ($1 = ` + noUUID + ` OR owner_id = $1))
` + runSearchOrder + `
LIMIT ` + n
	case walkAny:
		status := ""
		if st != "" {
			status = ` AND status = '` + string(st) + `'`
		}
		return `SELECT ` + runSearchColumns + ` FROM job_runs
WHERE $1::uuid = ` + noUUID + ` AND $2::uuid = ` + noUUID + status + ` AND ` + runSearchBound + `
` + runSearchOrder + `
LIMIT ` + n
	}
	var parts []string
	for _, s := range finishedRuns {
		if st == "" || st == s {
			parts = append(parts, `(SELECT `+runSearchColumns+` FROM job_runs
    WHERE owner_id = $1 AND status = '`+string(s)+`' AND `+runSearchBound+`
    `+runSearchOrder+` LIMIT `+n+`)`)
		}
	}
	if st == "" || st == job.RunRunning {
		parts = append(parts, `(SELECT `+runSearchColumns+` FROM job_runs
    WHERE status = 'running' AND owner_id = $1 AND `+runSearchBound+`
    `+runSearchOrder+` LIMIT `+n+`)`)
	}
	return `SELECT * FROM (
` + strings.Join(parts, "\nUNION ALL\n") + `
) w
WHERE $2::uuid = ` + noUUID + `
` + runSearchOrder + `
LIMIT ` + n
}

// searchRunsSQL keeps, of a walk, the runs that pass the filters the index
// does not serve, and adds each one's job name and type: the first $12 of
// them. $8 is the error text, $9 the type, $10 and $11 the label keys and
// values, $13 whether only dead letters count (RunSearch.Dead). The status of a walkJob is one of these filters too: a status
// that the job's runs never have then costs a bounded walk, not a read of
// all its runs.
func searchRunsSQL(w runWalk, st job.RunStatus) string {
	walk, status := runWalkSQL(w, st, "$7"), ""
	if w == walkJob && st != "" {
		walk, status = runWalkSQL(w, "", "$7"), `w.status = '`+string(st)+`' AND `
	}
	return `SELECT p.job_id, p.scheduled_for, p.attempt, p.status, p.id, p.owner_id, p.due_at, p.started_at, p.lease_until,
       p.finished_at, coalesce(p.output, ''), coalesce(p.error, ''), coalesce(j.name, ''), coalesce(j.type, ''),
       coalesce(p.throttled_ms, 0)
FROM (
    SELECT w.* FROM (` + walk + `) w
    WHERE ` + status + `($8 = '' OR strpos(lower(w.error), lower($8)) > 0)
      AND (NOT $13::bool OR (` + deadLetterSQL + `))
      AND ($9 = '' OR EXISTS (SELECT 1 FROM jobs x WHERE x.id = w.job_id AND x.type = $9))
      AND NOT EXISTS (
          SELECT 1 FROM unnest($10::text[], $11::text[]) AS o(key, value)
          WHERE NOT EXISTS (SELECT 1 FROM job_labels l
                            WHERE l.owner_id = w.owner_id AND l.key = o.key AND l.value = o.value AND l.job_id = w.job_id))
    ` + runSearchOrder + `
    LIMIT $12) p
LEFT JOIN LATERAL (SELECT name, type FROM jobs WHERE id = p.job_id) j ON true
ORDER BY p.scheduled_for DESC, p.attempt DESC, p.job_id DESC`
}

// runWalkEdgeSQL finds the last run a full walk looked at, and the one
// after it if there is one: the next page resumes after the first, and
// only if the second exists.
func runWalkEdgeSQL(w runWalk, st job.RunStatus) string {
	if w == walkJob {
		st = ""
	}
	return `SELECT scheduled_for, attempt, job_id FROM (` + runWalkSQL(w, st, "$7 + 1") + `) w
` + runSearchOrder + `
OFFSET $7 - 1 LIMIT 2`
}

// runQuery names one of the prepared run searches.
type runQuery struct {
	walk   runWalk
	status job.RunStatus
}

// runSearches holds each shape's search and edge query, per status and
// for none, built once.
var runSearches = func() map[runQuery][2]string {
	out := map[runQuery][2]string{}
	for _, w := range []runWalk{walkOwner, walkJob, walkAny} {
		for _, st := range append([]job.RunStatus{"", job.RunRunning}, finishedRuns...) {
			out[runQuery{w, st}] = [2]string{searchRunsSQL(w, st), runWalkEdgeSQL(w, st)}
		}
	}
	return out
}()

// anyOwnerDays bounds the day partitions one page of an administrator's
// search across owners sorts: with no index in scheduled_for order, each
// is read whole, so a page looks at no more than these days before it
// answers, short if need be, with where the next one resumes.
const anyOwnerDays = 7

// SearchRuns lists the runs f selects across jobs, newest first
// (scheduled_for, then attempt, then job id, all descending), at most
// f.Limit, looking at no more than f.Walk (DefaultRunWalk when 0) of the
// runs the owner, status, job and time window select, and across owners at
// no more than anyOwnerDays days. When it stopped at such a bound with
// fewer than f.Limit runs, resume is where the next page goes on (a
// cursor, as RunSearch.Before); otherwise it is nil and the runs are all
// there is up to f.Limit. A status that the schema does not know (yet)
// selects nothing.
func (s *Store) SearchRuns(ctx context.Context, f RunSearch) (runs []FoundRun, resume *RunCursor, err error) {
	w := walkOwner
	switch {
	case f.JobID != uuid.Nil:
		w = walkJob
	case f.Owner == AnyOwner:
		w = walkAny
	}
	q, ok := runSearches[runQuery{w, f.Status}]
	if !ok {
		return nil, nil, nil
	}
	since := time.Unix(0, 0)
	if !f.Since.IsZero() {
		since = f.Since
	}
	upper := RunCursor{ScheduledFor: endOfTime} // no run is scheduled this late
	if !f.Until.IsZero() {
		upper.ScheduledFor = f.Until
	}
	if c := f.Before; c != nil && c.ScheduledFor.Before(upper.ScheduledFor) {
		upper = *c
	}
	if w != walkAny {
		return s.searchRuns(ctx, q, f, since, upper, f.Limit)
	}
	// Across owners, a day partition at a time, newest first: each query
	// sorts one day (and the default partition), not every run there is.
	// The windows tile [since, upper): the first reaches from Now's day up,
	// the last from since to the oldest day.
	days, err := s.runDays(ctx)
	if err != nil {
		return nil, nil, err
	}
	first := upper.ScheduledFor.Equal(endOfTime)
	for n := 0; upper.ScheduledFor.After(since); n++ {
		if n == anyOwnerDays {
			return runs, &upper, nil
		}
		from := since
		if first {
			from, first = f.Now.Truncate(24*time.Hour), false
		} else {
			for _, d := range days {
				if d.Before(upper.ScheduledFor) {
					from = d
					break
				}
			}
		}
		if from.Before(since) {
			from = since
		}
		got, resume, err := s.searchRuns(ctx, q, f, from, upper, f.Limit-len(runs))
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, got...)
		if len(runs) >= f.Limit || resume != nil {
			return runs, resume, nil
		}
		upper = RunCursor{ScheduledFor: from}
	}
	return runs, nil, nil
}

// runDaysSQL lists job_runs' day partitions (see runPartition).
const runDaysSQL = `SELECT c.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'job_runs'::regclass AND c.relname ~ '^job_runs_[0-9]{8}$'`

// runDays returns the days job_runs has a partition for, newest first.
func (s *Store) runDays(ctx context.Context) ([]time.Time, error) {
	rows, err := s.pool.Query(ctx, runDaysSQL)
	if err != nil {
		return nil, fmt.Errorf("search runs: %w", translate(err))
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("search runs: %w", translate(err))
	}
	days := make([]time.Time, 0, len(names))
	for _, name := range names {
		if d, err := time.Parse("20060102", strings.TrimPrefix(name, "job_runs_")); err == nil {
			days = append(days, d)
		}
	}
	slices.SortFunc(days, func(a, b time.Time) int { return b.Compare(a) })
	return days, nil
}

// searchRuns runs one search query q over [since, upper) for at most
// limit runs, and its edge query when the page comes back short.
func (s *Store) searchRuns(ctx context.Context, q [2]string, f RunSearch, since time.Time, upper RunCursor, limit int) ([]FoundRun, *RunCursor, error) {
	walk := f.Walk
	if walk <= 0 {
		walk = DefaultRunWalk
	}
	bounds := []any{f.Owner, f.JobID, since, upper.ScheduledFor, int16(upper.Attempt), upper.JobID, walk}
	keys, values := labelArrays(f.Labels)
	rows, err := s.pool.Query(ctx, q[0], append(bounds, f.Error, string(f.Type), keys, values, limit, f.Dead)...)
	if err != nil {
		return nil, nil, fmt.Errorf("search runs: %w", translate(err))
	}
	runs, err := pgx.CollectRows(rows, scanFoundRun)
	if err != nil {
		return nil, nil, fmt.Errorf("search runs: %w", translate(err))
	}
	if len(runs) >= limit {
		return runs, nil, nil
	}
	rows, err = s.pool.Query(ctx, q[1], bounds...)
	if err != nil {
		return nil, nil, fmt.Errorf("search runs: %w", translate(err))
	}
	edges, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunCursor, error) {
		var c RunCursor
		var attempt int16
		err := r.Scan(&c.ScheduledFor, &attempt, &c.JobID)
		c.ScheduledFor, c.Attempt = c.ScheduledFor.UTC(), int(attempt)
		return c, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("search runs: %w", translate(err))
	}
	if len(edges) < 2 {
		return runs, nil, nil // the walk saw every run: nothing more
	}
	return runs, &edges[0], nil
}

func scanFoundRun(r pgx.CollectableRow) (FoundRun, error) {
	var run FoundRun
	var a int16
	var finished *time.Time
	var throttled int32
	err := r.Scan(&run.JobID, &run.ScheduledFor, &a, &run.Status, &run.ID, &run.Owner, &run.DueAt,
		&run.StartedAt, &run.LeaseUntil, &finished, &run.Output, &run.Error, &run.JobName, &run.JobType, &throttled)
	run.Attempt, run.Throttled = int(a), time.Duration(throttled)*time.Millisecond
	run.ScheduledFor, run.DueAt, run.StartedAt, run.LeaseUntil = run.ScheduledFor.UTC(), run.DueAt.UTC(), run.StartedAt.UTC(), run.LeaseUntil.UTC()
	if finished != nil {
		run.FinishedAt = finished.UTC()
	}
	return run, err
}

// RunGroup is what CountRuns counts runs by.
type RunGroup string

// The groupings of CountRuns.
const (
	GroupByStatus RunGroup = "status"
	GroupByType   RunGroup = "type"
	GroupByJob    RunGroup = "job"
)

// MaxRunWindow bounds CountRuns' window: it counts every run in it, so the
// window is what bounds its work.
const MaxRunWindow = 31 * 24 * time.Hour

// RunCount is one group of CountRuns: a status, a job type or a job id,
// with the job's name for a job, and how many runs it has.
type RunCount struct {
	Key   string
	Name  string
	Count int64
}

// runCountSourceSQL selects column of the runs CountRuns counts: those of
// owner $1 scheduled in [$2, $3). An owner's come from job_runs_search, a
// range per status (index only, for the status), and from
// job_runs_running; every owner's from the window's day partitions.
func runCountSourceSQL(any bool, column string) string {
	const window = `scheduled_for >= $2 AND scheduled_for < $3`
	if any {
		return `SELECT ` + column + ` FROM job_runs WHERE $1::uuid = ` + noUUID + ` AND ` + window
	}
	parts := make([]string, 0, len(finishedRuns)+1)
	for _, s := range finishedRuns {
		parts = append(parts, `SELECT `+column+` FROM job_runs WHERE owner_id = $1 AND status = '`+string(s)+`' AND `+window)
	}
	parts = append(parts, `SELECT `+column+` FROM job_runs WHERE status = 'running' AND owner_id = $1 AND `+window)
	return strings.Join(parts, "\nUNION ALL\n")
}

// runCountSQL counts the runs of runCountSourceSQL by group, the largest
// $4 groups, as key, name, count. By type it counts per job first, so that
// each job is looked up once.
func runCountSQL(any bool, by RunGroup) string {
	switch by {
	case GroupByJob:
		return `SELECT c.job_id::text, coalesce(j.name, ''), c.n FROM (
    SELECT job_id, count(*) AS n FROM (` + runCountSourceSQL(any, "job_id") + `) r
    GROUP BY job_id ORDER BY n DESC, job_id LIMIT $4) c
LEFT JOIN LATERAL (SELECT name FROM jobs WHERE id = c.job_id) j ON true
ORDER BY c.n DESC, c.job_id`
	case GroupByType:
		return `SELECT coalesce(j.type, ''), '', sum(c.n)::bigint AS n FROM (
    SELECT job_id, count(*) AS n FROM (` + runCountSourceSQL(any, "job_id") + `) r
    GROUP BY job_id) c
LEFT JOIN jobs j ON j.id = c.job_id
GROUP BY 1 ORDER BY n DESC, 1 LIMIT $4`
	}
	return `SELECT status::text, '', count(*) AS n FROM (` + runCountSourceSQL(any, "status") + `) r
GROUP BY status ORDER BY n DESC, 1 LIMIT $4`
}

// runCounts holds CountRuns' queries by grouping, an owner's and every
// owner's.
var runCounts = func() map[RunGroup][2]string {
	out := map[RunGroup][2]string{}
	for _, by := range []RunGroup{GroupByStatus, GroupByType, GroupByJob} {
		out[by] = [2]string{runCountSQL(false, by), runCountSQL(true, by)}
	}
	return out
}()

// CountRuns counts the runs of owner (every owner's for AnyOwner)
// scheduled from since up to until, grouped by, and returns the largest
// limit groups, largest first. A window longer than MaxRunWindow, or an
// unknown grouping, is job.ErrInvalid.
func (s *Store) CountRuns(ctx context.Context, owner uuid.UUID, since, until time.Time, by RunGroup, limit int) ([]RunCount, error) {
	q, ok := runCounts[by]
	if !ok || until.Sub(since) > MaxRunWindow {
		return nil, fmt.Errorf("count runs: %w: a window of at most %s, grouped by status, type or job", job.ErrInvalid, MaxRunWindow)
	}
	sql := q[0]
	if owner == AnyOwner {
		sql = q[1]
	}
	rows, err := s.pool.Query(ctx, sql, owner, since, until, limit)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", translate(err))
	}
	counts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunCount, error) {
		var c RunCount
		err := r.Scan(&c.Key, &c.Name, &c.Count)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", translate(err))
	}
	return counts, nil
}

// describeRunningSQL keeps, of the jobs of runs Redis holds running, those
// a search selects by owner, type and labels, with their names and types.
const describeRunningSQL = `SELECT r.n, j.name, j.type, j.owner_id
FROM unnest($1::uuid[]) WITH ORDINALITY AS r(job_id, n)
JOIN jobs j ON j.id = r.job_id
WHERE ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR j.owner_id = $2)
  AND ($3 = '' OR j.type = $3)
  AND NOT EXISTS (
      SELECT 1 FROM unnest($4::text[], $5::text[]) AS o(key, value)
      WHERE NOT EXISTS (SELECT 1 FROM job_labels l
                        WHERE l.owner_id = j.owner_id AND l.key = o.key AND l.value = o.value AND l.job_id = j.id))`

// DescribeRunning keeps, in order, those of runs (attempts running, which
// Redis holds) that f selects by owner, job type and labels, with their
// jobs' names and types, in one statement. The caller applies the rest of
// f (job, time window, cursor, error text: a running attempt has none).
func (s *Store) DescribeRunning(ctx context.Context, runs []job.Run, f RunSearch) ([]FoundRun, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(runs))
	for i, r := range runs {
		ids[i] = r.JobID
	}
	keys, values := labelArrays(f.Labels)
	rows, err := s.pool.Query(ctx, describeRunningSQL, ids, f.Owner, string(f.Type), keys, values)
	if err != nil {
		return nil, fmt.Errorf("describe running runs: %w", translate(err))
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (FoundRun, error) {
		var n int64
		var fr FoundRun
		var owner uuid.UUID
		if err := r.Scan(&n, &fr.JobName, &fr.JobType, &owner); err != nil {
			return fr, err
		}
		fr.Run = runs[n-1]
		fr.Owner = owner
		return fr, nil
	})
	if err != nil {
		return nil, fmt.Errorf("describe running runs: %w", translate(err))
	}
	slices.SortStableFunc(found, func(a, b FoundRun) int { return compareFound(b, a) })
	return found, nil
}

// compareFound orders runs as a run search pages them, oldest first:
// scheduled_for, then attempt, then job id.
func compareFound(a, b FoundRun) int {
	if c := a.ScheduledFor.Compare(b.ScheduledFor); c != 0 {
		return c
	}
	if a.Attempt != b.Attempt {
		return a.Attempt - b.Attempt
	}
	return bytes.Compare(a.JobID[:], b.JobID[:])
}

// labelArrays spreads labels into their keys and values.
func labelArrays(labels []Label) ([]string, []string) {
	keys, values := make([]string, 0, len(labels)), make([]string, 0, len(labels))
	for _, l := range labels {
		keys, values = append(keys, l.Key), append(values, l.Value)
	}
	return keys, values
}
