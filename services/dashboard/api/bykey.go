package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// Jobs by key: a job that carries its owner's own key can be read,
// created or replaced, and cancelled by that key, which is what a
// declarative schedule file applies with PUT.

// pathKey reads the :key path parameter.
func pathKey(c *echo.Context) (string, error) {
	k, err := url.PathUnescape(c.Param("key"))
	if err != nil {
		return "", apierr.Invalid("key", "is not a valid path segment")
	}
	if err := jobspec.ValidKey(k); err != nil {
		return "", err
	}
	return k, nil
}

// keyOwner is whose key a by-key request names: the caller's, or the user
// ?owner= names (see queryOwner).
func keyOwner(c *echo.Context) (uuid.UUID, error) {
	if id, named, err := queryOwner(c); named || err != nil {
		return id, err
	}
	return access.Caller(c).User, nil
}

// jobByKey finds the job that holds the key named in the path.
func (s *Server) jobByKey(c *echo.Context) (*job.Job, error) {
	key, err := pathKey(c)
	if err != nil {
		return nil, err
	}
	owner, err := keyOwner(c)
	if err != nil {
		return nil, err
	}
	j, err := s.store.JobByKey(c.Request().Context(), owner, key)
	if errors.Is(err, job.ErrNotFound) {
		return nil, errJobNotFound
	}
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	return j, nil
}

// getJobByKey returns the job that holds the key: the newest that took it.
func (s *Server) getJobByKey(c *echo.Context) error {
	j, err := s.jobByKey(c)
	if err != nil {
		return err
	}
	s.showRunning(c, j)
	return writeJSON(c, http.StatusOK, s.jobView(j, s.clock()))
}

// cancelJobByKey cancels the job that holds the key, as DELETE on its id.
func (s *Server) cancelJobByKey(c *echo.Context) error {
	j, err := s.jobByKey(c)
	if err != nil {
		return err
	}
	p := access.Caller(c)
	return cancelled(c, s.jobs.Cancel(c.Request().Context(), p.Owner(), j.ID, s.clock(), p.Audit(store.ActionJobCancel)))
}

// putJobByKey creates the job the body describes under the key (201), or,
// when a job of the owner's that can still run holds the key, replaces its
// definition in place: same id, every field as the body gives it or at its
// default, audited job.update (200). A replace that changes nothing writes
// nothing and answers the job as it is; one that changes the timing or the
// priority moves the job to a new generation. The type of a job never
// changes (409). With ?dry_run=true it answers what it would do (DryRun)
// and does nothing.
func (s *Server) putJobByKey(c *echo.Context) error {
	key, err := pathKey(c)
	if err != nil {
		return err
	}
	dry, err := dryRun(c)
	if err != nil {
		return err
	}
	req, named, err := s.decodeJob(c, jobspec.Replace)
	if err != nil {
		return err
	}
	if raw, ok := req.Raw("key"); ok {
		var k string
		if json.Unmarshal(raw, &k) != nil || k != "" && k != key {
			return apierr.Invalid("key", "must be absent or equal the key in the path")
		}
	}
	if req, err = req.With("key", key); err != nil {
		return err
	}
	owner, err := s.owner(c, named)
	if err != nil {
		return err
	}
	cur, err := s.store.JobByKey(c.Request().Context(), owner.ID, key)
	switch {
	case errors.Is(err, job.ErrNotFound):
	case err != nil:
		return apierr.Dependency(err)
	case cur.Status == job.StatusScheduled || cur.Status == job.StatusPaused:
		if raw, ok := req.Raw("type"); ok {
			var t job.Type
			if json.Unmarshal(raw, &t) == nil && t != cur.Type {
				return apierr.New(http.StatusConflict, apierr.CodeConflict, "type", "a job's type never changes; DELETE it and PUT again")
			}
		}
		return s.change(c, req, cur, dry)
	case dry && cur.Status != job.StatusCancelled:
		// A finished job holds the key: a PUT creates a new one. Say how
		// it differs from the finished one too.
		return s.dryCreateOver(c, req, owner, cur)
	}
	return s.create(c, req, owner, dry)
}

// dryCreateOver answers the dry run of a replace whose key a finished job
// holds: a new job would be created; Changes compares it with cur.
func (s *Server) dryCreateOver(c *echo.Context, req *jobspec.Request, owner *store.User, cur *job.Job) error {
	now := s.clock()
	var j *job.Job
	if err := s.evaluate(c, req.Schedules(), func() (err error) {
		j, err = req.Build(requestBudget(c), owner.ID, now, s.limits)
		return err
	}); err != nil {
		return err
	}
	changes := jobspec.Diff(cur, j, s.limits.Box)
	if changes == nil {
		changes = []jobspec.FieldChange{}
	}
	held := s.jobView(cur, now)
	return writeJSON(c, http.StatusOK, DryRun{DryRun: true, Action: ActionCreate, Changes: changes, Job: s.jobView(j, now), Current: &held})
}
