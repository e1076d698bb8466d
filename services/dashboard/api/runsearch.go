package api

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
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

// searchRuns pages through the runs of the caller's jobs (an
// administrator's: everyone's, or one owner's with ?owner=) across jobs,
// newest first. Filters that the index cannot serve (q, type, label) are
// applied over a bounded walk (store.DefaultRunWalk runs a page): a short
// or empty page may then still have a next one.
func (s *Server) searchRuns(c *echo.Context) error {
	f := store.RunSearch{Owner: access.Caller(c).Owner(), Now: s.clock()}
	if owner, named, err := queryOwner(c); err != nil {
		return err
	} else if named {
		f.Owner = owner
	}
	if v := c.QueryParam("status"); v != "" {
		f.Status = job.RunStatus(v)
		if !validRunStatus(f.Status) {
			names := make([]string, len(store.RunStatuses))
			for i, st := range store.RunStatuses {
				names[i] = string(st)
			}
			return apierr.Invalid("status", "must be one of "+strings.Join(names, ", "))
		}
	}
	if v := c.QueryParam("type"); v != "" {
		f.Type = job.Type(v)
		if _, ok := jobtype.Lookup(f.Type); !ok {
			return apierr.Invalid("type", "must be one of "+strings.Join(jobtype.Names(), ", "))
		}
	}
	if v := c.QueryParam("job"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return apierr.Invalid("job", "must be a job id (a UUID)")
		}
		f.JobID = id
	}
	var err error
	if f.Labels, err = labelFilter(c.QueryParams()["label"]); err != nil {
		return err
	}
	if f.Since, f.Until, err = runWindow(c); err != nil {
		return err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return apierr.Invalid("until", "must be after since")
	}
	if f.Error = strings.TrimSpace(c.QueryParam("q")); utf8.RuneCountInString(f.Error) > MaxRunQuery {
		return apierr.Invalid("q", "is at most 200 characters")
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	if v := c.QueryParam("cursor"); v != "" {
		if f.Before, err = parseRunSearchCursor(v); err != nil {
			return apierr.Invalid("cursor", "is not a cursor this API returned")
		}
	}
	f.Limit = limit + 1
	runs, resume, err := s.store.SearchRuns(c.Request().Context(), f)
	if err != nil {
		return apierr.Dependency(err)
	}
	var out RunList
	runs, out.NextCursor = page(runs, limit, func(r store.FoundRun) string {
		return runSearchCursor(store.RunCursor{ScheduledFor: r.ScheduledFor, Attempt: r.Attempt, JobID: r.JobID})
	})
	if out.NextCursor == "" && resume != nil {
		out.NextCursor = runSearchCursor(*resume)
	}
	out.Runs = make([]Run, 0, len(runs))
	for i := range runs {
		out.Runs = append(out.Runs, foundRunView(&runs[i]))
	}
	return writeJSON(c, http.StatusOK, out)
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
	out := RunStats{Since: Time{since}, Until: Time{until}, GroupBy: string(by), Groups: make([]RunStatsGroup, 0, len(counts))}
	if len(counts) > MaxRunGroups {
		counts, out.Truncated = counts[:MaxRunGroups], true
	}
	for _, g := range counts {
		out.Groups = append(out.Groups, RunStatsGroup{Key: g.Key, Name: g.Name, Count: g.Count})
	}
	return writeJSON(c, http.StatusOK, out)
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
