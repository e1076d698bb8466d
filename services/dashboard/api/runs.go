package api

import (
	"net/http"
	"slices"

	"go.uber.org/zap"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// listRuns pages through one job's attempts, newest occurrence and attempt
// first. The job is looked up first so an unknown job, or another owner's, is
// a 404 rather than an empty list.
func (s *Server) listRuns(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	f := store.RunFilter{Owner: access.Caller(c).Owner(), JobID: id, Limit: limit + 1}
	if v := c.QueryParam("cursor"); v != "" {
		if f.Before, err = parseRunCursor(v); err != nil {
			return apierr.Invalid("cursor", "is not a cursor this API returned")
		}
	}
	ctx := c.Request().Context()
	j, err := s.store.GetJob(ctx, f.Owner, id)
	if err != nil {
		return apierr.Dependency(err)
	}
	runs, err := s.store.ListRuns(ctx, f)
	if err != nil {
		return apierr.Dependency(err)
	}
	runs = s.withRunning(c, j, runs, f)
	var out RunList
	runs, out.NextCursor = page(runs, limit, func(r job.Run) string { return runCursor(r.ScheduledFor, r.Attempt) })
	out.Runs = make([]Run, 0, len(runs))
	for i := range runs {
		v := runView(&runs[i])
		v.JobName, v.JobType = j.Name, j.Type
		out.Runs = append(out.Runs, v)
	}
	return writeJSON(c, http.StatusOK, out)
}

// withRunning merges the job's attempts running, which Redis holds, into
// a page of its outcomes from Postgres, in the page's order (newest
// occurrence and attempt first), keeping to the page's cursor and size. An
// attempt with an outcome already shows its outcome. Should Redis fail, the
// page shows outcomes only, and the failure is logged.
func (s *Server) withRunning(c *echo.Context, j *job.Job, runs []job.Run, f store.RunFilter) []job.Run {
	running, err := s.jobs.RunningRuns(c.Request().Context(), j.ID)
	if err != nil {
		s.log.Warn("running_attempts_unavailable", zap.Error(err))
		return runs
	}
	if len(running) == 0 {
		return runs
	}
	recorded := make(map[[2]int64]bool, len(runs))
	for _, r := range runs {
		recorded[[2]int64{r.ScheduledFor.UnixMilli(), int64(r.Attempt)}] = true
	}
	for _, r := range running {
		if recorded[[2]int64{r.ScheduledFor.UnixMilli(), int64(r.Attempt)}] {
			continue
		}
		if b := f.Before; b != nil && !(r.ScheduledFor.Before(b.ScheduledFor) ||
			r.ScheduledFor.Equal(b.ScheduledFor) && r.Attempt < b.Attempt) {
			continue
		}
		r.Owner = j.Owner
		runs = append(runs, r)
	}
	slices.SortStableFunc(runs, func(a, b job.Run) int {
		if c := b.ScheduledFor.Compare(a.ScheduledFor); c != 0 {
			return c
		}
		return b.Attempt - a.Attempt
	})
	return runs[:min(len(runs), f.Limit)]
}
