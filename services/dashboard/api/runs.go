package api

import (
	"net/http"

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
