package api

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/store"
)

// Jobs by key: a job that carries its owner's own key can be read,
// created or replaced, and cancelled by that key, which is what a
// declarative schedule file applies with PUT.

// pathKey reads the :key path parameter.
func pathKey(c *echo.Context) (string, error) {
	k, err := url.PathUnescape(c.Param("key"))
	if err != nil {
		return "", invalid("key", "is not a valid path segment")
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
	return caller(c).user, nil
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
		return nil, dependency(err)
	}
	return j, nil
}

// getJobByKey returns the job that holds the key: the newest that took it.
func (s *Server) getJobByKey(c *echo.Context) error {
	j, err := s.jobByKey(c)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, s.jobView(j, s.clock()))
}

// cancelJobByKey cancels the job that holds the key, as DELETE on its id.
func (s *Server) cancelJobByKey(c *echo.Context) error {
	j, err := s.jobByKey(c)
	if err != nil {
		return err
	}
	err = s.jobs.Cancel(c.Request().Context(), caller(c).scope(), j.ID, s.clock(), caller(c).audit(store.ActionJobCancel))
	if errors.Is(err, job.ErrConflict) {
		return newError(http.StatusConflict, CodeConflict, "", "the job has started or finished; only a one-off job that has not started, or a recurring job, can be cancelled")
	}
	if err != nil {
		return dependency(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// putJobByKey creates the job the body describes under the key (201), or,
// when a job of the owner's that can still run holds the key, replaces its
// definition in place: same id, a new generation, every field as the body
// gives it or at its default, audited job.update (200). The type of a job
// never changes (409).
func (s *Server) putJobByKey(c *echo.Context) error {
	key, err := pathKey(c)
	if err != nil {
		return err
	}
	var req createRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Key != "" && req.Key != key {
		return invalid("key", "must be absent or equal the key in the path")
	}
	req.Key = key
	owner, err := s.owner(c, req.Owner)
	if err != nil {
		return err
	}
	cur, err := s.store.JobByKey(c.Request().Context(), owner.ID, key)
	switch {
	case errors.Is(err, job.ErrNotFound):
	case err != nil:
		return dependency(err)
	case cur.Status == job.StatusScheduled || cur.Status == job.StatusPaused:
		return s.replaceJob(c, cur, req.Spec)
	}
	return s.create(c, req, owner)
}

// replaceJob gives cur the definition spec describes, as a PATCH naming
// every field would, absent fields taking their defaults.
func (s *Server) replaceJob(c *echo.Context, cur *job.Job, spec jobspec.Spec) error {
	if spec.Type != cur.Type {
		return newError(http.StatusConflict, CodeConflict, "type", "a job's type never changes; DELETE it and PUT again")
	}
	p := jobspec.Patch{Name: &spec.Name, RunAt: spec.RunAt, Delay: spec.Delay, RunOn: spec.RunOn, Timezone: spec.Timezone,
		Schedule: spec.Schedule, Payload: spec.Payload, Priority: spec.Priority, MaxRetries: spec.MaxRetries,
		Timeout: spec.Timeout, Retention: &spec.Retention, History: spec.History, Labels: spec.Labels}
	zero, retries := 0, job.DefaultMaxRetries
	if p.Priority == nil {
		p.Priority = &zero
	}
	if p.MaxRetries == nil {
		p.MaxRetries = &retries
	}
	if p.Timeout == "" {
		p.Timeout = job.DefaultTimeout.String()
	}
	if p.History == "" {
		p.History = string(job.HistoryAll)
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if len(p.Payload) == 0 {
		return invalid("payload", "is required")
	}
	now := s.now()
	var change *jobspec.Change
	if err := s.evaluate(c, p.Schedule != nil, func() (err error) {
		change, err = p.Prepare(requestBudget(c), cur, now, s.limits)
		return err
	}); err != nil {
		return err
	}
	if change.Timing() == nil {
		return invalid("run_at", "one of run_at, delay, run_on or schedule is required")
	}
	return s.edit(c, cur.ID, now, store.ActionJobUpdate, change.Apply)
}
