package api

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// runStatsRoute counts runs across jobs. Echo reads ":" as the start of a
// path parameter, so the route escapes it.
const runStatsRoute = `/api/v1/runs\:stats`

// Bounds of the run search and its counts.
const (
	// MaxRunQuery bounds q, the error text a run search looks for.
	MaxRunQuery = 200
	// DefaultStatsWindow is the window GET /api/v1/runs:stats counts when
	// since is absent: the day before until.
	DefaultStatsWindow = 24 * time.Hour
	// MaxRunGroups bounds the groups of one count, the largest kept.
	MaxRunGroups = 1_000
)

// runSearch reads a run search's filters from the query: owner (an
// administrator's), status when withStatus, type, job, label, since,
// until, q, limit and cursor. It returns the search and the page size.
func (s *Server) runSearch(c *echo.Context, withStatus bool) (store.RunSearch, int, error) {
	f := store.RunSearch{Owner: access.Caller(c).Owner(), Now: s.clock()}
	if owner, named, err := queryOwner(c); err != nil {
		return f, 0, err
	} else if named {
		f.Owner = owner
	}
	if v := c.QueryParam("status"); v != "" && withStatus {
		f.Status = job.RunStatus(v)
		if !validRunStatus(f.Status) {
			names := make([]string, len(store.RunStatuses))
			for i, st := range store.RunStatuses {
				names[i] = string(st)
			}
			return f, 0, apierr.Invalid("status", "must be one of "+strings.Join(names, ", "))
		}
	}
	if v := c.QueryParam("type"); v != "" {
		f.Type = job.Type(v)
		if _, ok := jobtype.Lookup(f.Type); !ok {
			return f, 0, apierr.Invalid("type", "must be one of "+strings.Join(jobtype.Names(), ", "))
		}
	}
	if v := c.QueryParam("job"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, 0, apierr.Invalid("job", "must be a job id (a UUID)")
		}
		f.JobID = id
	}
	var err error
	if f.Labels, err = labelFilter(c.QueryParams()["label"]); err != nil {
		return f, 0, err
	}
	if f.Since, f.Until, err = runWindow(c); err != nil {
		return f, 0, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, 0, apierr.Invalid("until", "must be after since")
	}
	if f.Error = strings.TrimSpace(c.QueryParam("q")); utf8.RuneCountInString(f.Error) > MaxRunQuery {
		return f, 0, apierr.Invalid("q", "is at most 200 characters")
	}
	limit, err := pageSize(c)
	if err != nil {
		return f, 0, err
	}
	if v := c.QueryParam("cursor"); v != "" {
		if f.Before, err = parseRunSearchCursor(v); err != nil {
			return f, 0, apierr.Invalid("cursor", "is not a cursor this API returned")
		}
	}
	return f, limit, nil
}

// searchRuns pages through the runs of the caller's jobs (an
// administrator's: everyone's, or one owner's with ?owner=) across jobs,
// newest first. Filters that the index cannot serve (q, type, label) are
// applied over a bounded walk (store.DefaultRunWalk runs a page): a short
// or empty page may then still have a next one.
func (s *Server) searchRuns(c *echo.Context) error {
	f, limit, err := s.runSearch(c, true)
	if err != nil {
		return err
	}
	f.Limit = limit + 1
	runs, resume, err := s.store.SearchRuns(c.Request().Context(), f)
	if err != nil {
		return apierr.Dependency(err)
	}
	runs = s.withRunningFound(c, runs, resume, f)
	var out RunList
	out.Runs, out.NextCursor = foundPage(runs, limit, resume)
	return writeJSON(c, http.StatusOK, out)
}

// foundPage is one page of a run search's limit+1 runs: their views and
// the next page's cursor, after the last run shown or, when the search
// stopped short at a bound, where it resumes.
func foundPage(runs []store.FoundRun, limit int, resume *store.RunCursor) ([]Run, string) {
	runs, next := page(runs, limit, func(r store.FoundRun) string {
		return runSearchCursor(store.RunCursor{ScheduledFor: r.ScheduledFor, Attempt: r.Attempt, JobID: r.JobID})
	})
	if next == "" && resume != nil {
		next = runSearchCursor(*resume)
	}
	views := make([]Run, 0, len(runs))
	for i := range runs {
		views = append(views, foundRunView(&runs[i]))
	}
	return views, next
}

// MaxRunningListed bounds the attempts running a run search reads from
// Redis: the workers' slots in all, in any deployment this serves.
const MaxRunningListed = 10_000

// withRunningFound merges the attempts running that f selects, which
// Redis holds (Postgres holds outcomes), into a page of a run search, in
// its order and within its cursor, its size and, when the page stopped
// short at a bound, its resume point. Should Redis fail, the page shows
// outcomes only, and the failure is logged.
func (s *Server) withRunningFound(c *echo.Context, runs []store.FoundRun, resume *store.RunCursor, f store.RunSearch) []store.FoundRun {
	if (f.Status != "" && f.Status != job.RunRunning) || f.Error != "" {
		return runs
	}
	ctx := c.Request().Context()
	leases, err := s.queue.Leased(ctx, time.Time{}, MaxRunningListed)
	if err != nil {
		s.log.Warn("running_attempts_unavailable", zap.Error(err))
		return runs
	}
	after := func(r job.Run, c *store.RunCursor) bool { // r comes after c in the order: older
		if !r.ScheduledFor.Equal(c.ScheduledFor) {
			return r.ScheduledFor.Before(c.ScheduledFor)
		}
		if r.Attempt != c.Attempt {
			return r.Attempt < c.Attempt
		}
		return bytes.Compare(r.JobID[:], c.JobID[:]) < 0
	}
	shown := make(map[string]bool, len(runs))
	for _, r := range runs {
		shown[r.JobID.String()+"/"+r.ScheduledFor.String()+"/"+strconv.Itoa(r.Attempt)] = true
	}
	var candidates []job.Run
	for _, l := range leases {
		r := lifecycle.LeaseRun(l)
		switch {
		case f.Owner != store.AnyOwner && r.Owner != uuid.Nil && r.Owner != f.Owner,
			f.JobID != uuid.Nil && r.JobID != f.JobID,
			!f.Since.IsZero() && r.ScheduledFor.Before(f.Since),
			!f.Until.IsZero() && !r.ScheduledFor.Before(f.Until),
			f.Before != nil && !after(r, f.Before),
			resume != nil && after(r, resume),
			shown[r.JobID.String()+"/"+r.ScheduledFor.String()+"/"+strconv.Itoa(r.Attempt)]:
			continue
		}
		candidates = append(candidates, r)
	}
	if len(candidates) == 0 {
		return runs
	}
	found, err := s.store.DescribeRunning(ctx, candidates, f)
	if err != nil {
		s.log.Warn("running_attempts_unavailable", zap.Error(err))
		return runs
	}
	runs = append(runs, found...)
	slices.SortStableFunc(runs, func(a, b store.FoundRun) int {
		if c := b.ScheduledFor.Compare(a.ScheduledFor); c != 0 {
			return c
		}
		if a.Attempt != b.Attempt {
			return b.Attempt - a.Attempt
		}
		return bytes.Compare(b.JobID[:], a.JobID[:])
	})
	return runs[:min(len(runs), f.Limit)]
}

// runStats counts the runs of the caller's jobs (as searchRuns scopes
// them) scheduled in a window of at most store.MaxRunWindow, by status,
// job type or job.
func (s *Server) runStats(c *echo.Context) error {
	owner := access.Caller(c).Owner()
	if o, named, err := queryOwner(c); err != nil {
		return err
	} else if named {
		owner = o
	}
	by := store.RunGroup(c.QueryParam("group_by"))
	switch by {
	case "":
		by = store.GroupByStatus
	case store.GroupByStatus, store.GroupByType, store.GroupByJob:
	default:
		return apierr.Invalid("group_by", "must be one of status, type, job")
	}
	since, until, err := runWindow(c)
	if err != nil {
		return err
	}
	if until.IsZero() {
		until = s.clock().UTC().Truncate(time.Millisecond)
	}
	if since.IsZero() {
		since = until.Add(-DefaultStatsWindow)
	}
	switch {
	case !until.After(since):
		return apierr.Invalid("until", "must be after since")
	case until.Sub(since) > store.MaxRunWindow:
		return apierr.Invalid("since", "must be at most 31 days before until")
	}
	counts, err := s.store.CountRuns(c.Request().Context(), owner, since, until, by, MaxRunGroups+1)
	if err != nil {
		return apierr.Dependency(err)
	}
	counts = s.countRunning(c, counts, owner, since, until, by)
	out := RunStats{Since: Time{since}, Until: Time{until}, GroupBy: string(by), Groups: make([]RunStatsGroup, 0, len(counts))}
	if len(counts) > MaxRunGroups {
		counts, out.Truncated = counts[:MaxRunGroups], true
	}
	for _, g := range counts {
		out.Groups = append(out.Groups, RunStatsGroup{Key: g.Key, Name: g.Name, Count: g.Count})
	}
	return writeJSON(c, http.StatusOK, out)
}

// countRunning adds the attempts running (their leases, in Redis) of
// owner's jobs scheduled in [since, until) to counts, grouped by by, and
// orders the groups as CountRuns does: largest first, then by key. Should
// Redis fail, the counts are Postgres's alone, and the failure is logged.
func (s *Server) countRunning(c *echo.Context, counts []store.RunCount, owner uuid.UUID, since, until time.Time, by store.RunGroup) []store.RunCount {
	ctx := c.Request().Context()
	leases, err := s.queue.Leased(ctx, time.Time{}, MaxRunningListed)
	if err != nil {
		s.log.Warn("running_attempts_unavailable", zap.Error(err))
		return counts
	}
	var runs []job.Run
	for _, l := range leases {
		r := lifecycle.LeaseRun(l)
		if !r.ScheduledFor.Before(since) && r.ScheduledFor.Before(until) &&
			(owner == store.AnyOwner || r.Owner == uuid.Nil || r.Owner == owner) {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return counts
	}
	found, err := s.store.DescribeRunning(ctx, runs, store.RunSearch{Owner: owner})
	if err != nil {
		s.log.Warn("running_attempts_unavailable", zap.Error(err))
		return counts
	}
	at := make(map[string]int, len(counts))
	for i, g := range counts {
		at[g.Key] = i
	}
	for _, f := range found {
		key, name := string(job.RunRunning), ""
		switch by {
		case store.GroupByType:
			key = string(f.JobType)
		case store.GroupByJob:
			key, name = f.JobID.String(), f.JobName
		}
		i, ok := at[key]
		if !ok {
			i = len(counts)
			at[key] = i
			counts = append(counts, store.RunCount{Key: key, Name: name})
		}
		counts[i].Count++
	}
	slices.SortStableFunc(counts, func(a, b store.RunCount) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return strings.Compare(a.Key, b.Key)
	})
	return counts
}

// runWindow reads ?since= and ?until=, RFC 3339 times; zero when absent.
func runWindow(c *echo.Context) (since, until time.Time, err error) {
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"since", &since}, {"until", &until}} {
		v := c.QueryParam(p.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, time.Time{}, apierr.Invalid(p.name, "must be an RFC 3339 time, such as 2030-01-02T15:04:05Z")
		}
		*p.to = t.UTC()
	}
	return since, until, nil
}

func validRunStatus(st job.RunStatus) bool {
	for _, s := range store.RunStatuses {
		if s == st {
			return true
		}
	}
	return false
}
