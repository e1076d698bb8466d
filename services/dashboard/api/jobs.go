package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// Page sizes of the listings.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// createJob validates a job (jobspec.Decode, Build) and creates it
// (lifecycle.Create: one due soon is in Redis before the answer, and a
// Redis failure after the commit still answers 201). With ?dry_run=true it
// only checks it, and answers what it would create.
func (s *Server) createJob(c *echo.Context) error {
	dry, err := dryRun(c)
	if err != nil {
		return err
	}
	req, named, err := s.decodeJob(c, jobspec.Create)
	if err != nil {
		return err
	}
	owner, err := s.owner(c, named)
	if err != nil {
		return err
	}
	return s.create(c, req, owner, dry)
}

// decodeJob reads the body of a create, patch or replace: a job's fields,
// and for a create or replace an administrator's owner.
func (s *Server) decodeJob(c *echo.Context, mode jobspec.Mode) (*jobspec.Request, string, error) {
	raw, err := readBody(c)
	if err != nil {
		return nil, "", err
	}
	if err := checkText(raw); err != nil {
		return nil, "", err
	}
	var extra []string
	if mode != jobspec.Patch {
		extra = []string{"owner"}
	}
	req, err := jobspec.Decode(raw, mode, extra...)
	if err != nil {
		return nil, "", err
	}
	if mode != jobspec.Patch {
		// A debounced job runs its window after its create unless timed.
		if req, _, err = req.Debounced(); err != nil {
			return nil, "", err
		}
	}
	var owner string
	if v, ok := req.Extra("owner"); ok {
		if json.Unmarshal(v, &owner) != nil {
			return nil, "", apierr.Invalid("owner", "must be a user id (a UUID)")
		}
	}
	return req, owner, nil
}

// create builds the job req describes for owner, creates it and answers
// 201; or, for a dry run, answers 200 with the job it would create.
func (s *Server) create(c *echo.Context, req *jobspec.Request, owner *store.User, dry bool) error {
	req, debounce, err := req.Debounced()
	if err != nil {
		return err
	}
	now := s.clock()
	var j *job.Job
	if err := s.evaluate(c, req.Schedules(), func() (err error) {
		j, err = req.Build(requestBudget(c), owner.ID, now, s.limits)
		return err
	}); err != nil {
		return err
	}
	if debounce != nil {
		return s.debounced(c, req, j, owner, now, dry)
	}
	if dry {
		return writeJSON(c, http.StatusOK, DryRun{DryRun: true, Action: ActionCreate, Changes: []jobspec.FieldChange{}, Job: s.jobView(j, now)})
	}
	if err := s.allowJobs(c, 1); err != nil {
		return err
	}
	if err := s.insert(c, j, owner, now, nil); err != nil {
		keepIfStored(c, err, http.StatusCreated, s.jobView(j, now))
		return createError(err)
	}
	return writeJSON(c, http.StatusCreated, s.jobView(j, now))
}

// insert creates the new job j of owner's, taking its debounce key over
// from the started jobs of displace.
func (s *Server) insert(c *echo.Context, j *job.Job, owner *store.User, now time.Time, displace []uuid.UUID) error {
	create := store.Create{Audit: access.Caller(c).Audit(store.ActionJobCreate), MaxActive: s.maxActive(owner), Rates: s.rates(owner),
		MaxFlowKeys: s.quotas.MaxFlowKeys, Displace: displace}
	done, roomy := s.active.reserve(c.Request().Context(), owner.ID, 1, create.MaxActive)
	if roomy {
		create.MaxActive = 0 // far below the cap: see activeCounts
	}
	err := s.createJobs(c, []*job.Job{j}, now, create)
	if roomy {
		done(err == nil)
	}
	return err
}

// requestBudget bounds the schedule work of one request: compiling, checking
// and previewing stop when it runs out or the client goes away.
func requestBudget(c *echo.Context) *schedule.Budget {
	return schedule.RequestBudget(c.Request().Context())
}

// owner resolves whom a new job belongs to: the caller, or the user an
// administrator names. A user naming anyone but themself is refused.
func (s *Server) owner(c *echo.Context, named string) (*store.User, error) {
	p := access.Caller(c)
	var id uuid.UUID
	if named != "" {
		var err error
		if id, err = uuid.Parse(named); err != nil {
			return nil, apierr.Invalid("owner", "must be a user id (a UUID)")
		}
	}
	if named == "" || id == p.User {
		role := store.RoleUser
		if p.Admin {
			role = store.RoleAdmin
		}
		return &store.User{ID: p.User, Role: role, Limits: p.Limits}, nil
	}
	if !p.Admin {
		return nil, apierr.New(http.StatusForbidden, apierr.CodeForbidden, "owner", "only an administrator can create a job for another user")
	}
	u, err := s.store.GetUser(c.Request().Context(), id)
	if errors.Is(err, job.ErrNotFound) {
		return nil, apierr.Invalid("owner", "is not a user")
	}
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	if !u.DisabledAt.IsZero() {
		return nil, apierr.Invalid("owner", "is a disabled user")
	}
	return u, nil
}

// createError maps a failed creation.
func createError(err error) error {
	var qe *store.QuotaError
	var re *store.RateError
	var ke *store.KeyTakenError
	var fe *store.FlowKeysError
	var de *store.DebounceTakenError
	var field *job.FieldError
	switch {
	case errors.As(err, &field):
		return field
	case errors.As(err, &fe):
		return flowKeysError(fe)
	case errors.As(err, &de):
		return debounceTakenError(de)
	case errors.As(err, &ke):
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "key",
			fmt.Sprintf("key %q is held by another of your jobs that can still run; PUT /api/v1/jobs/by-key/{key} replaces it", ke.Key))
	case errors.As(err, &qe):
		return quotaError(qe)
	case errors.As(err, &re):
		return rateError(re)
	}
	return apierr.Dependency(err)
}

// getJob returns one job of the caller's.
func (s *Server) getJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	j, err := s.store.GetJob(c.Request().Context(), access.Caller(c).Owner(), id)
	if err != nil {
		return apierr.Dependency(err)
	}
	s.showRunning(c, j)
	return writeJSON(c, http.StatusOK, s.jobView(j, s.clock()))
}

// showRunning makes each job's last run its newest attempt running, which
// Redis holds (Postgres holds outcomes). Should Redis fail, the jobs show
// their newest outcome, and the failure is logged: a read does not fail
// for it.
func (s *Server) showRunning(c *echo.Context, jobs ...*job.Job) {
	if len(jobs) == 0 {
		return
	}
	if err := s.jobs.ShowRunning(c.Request().Context(), jobs...); err != nil {
		s.log.Warn("running_attempts_unavailable", zap.Error(err))
	}
	if err := s.store.ShowSLOStates(c.Request().Context(), jobs...); err != nil {
		s.log.Warn("slo_states_unavailable", zap.Error(err))
	}
}

// queryOwner reads ?owner=, a user id: named is false when it is absent. A
// user may name only themself (403 otherwise); an administrator anyone.
func queryOwner(c *echo.Context) (owner uuid.UUID, named bool, err error) {
	v := c.QueryParam("owner")
	if v == "" {
		return uuid.Nil, false, nil
	}
	if owner, err = uuid.Parse(v); err != nil {
		return uuid.Nil, true, apierr.Invalid("owner", "must be a user id")
	}
	if p := access.Caller(c); !p.Admin && owner != p.User {
		return uuid.Nil, true, access.ErrForbidden
	}
	return owner, true, nil
}

// listJobs pages through the caller's jobs (an administrator's: everyone's).
// q finds a job by its exact id, or the jobs whose name contains it
// (ignoring case); owner narrows an administrator's listing to one user.
func (s *Server) listJobs(c *echo.Context) error {
	p := access.Caller(c)
	f := store.JobFilter{Owner: p.Owner()}
	if owner, named, err := queryOwner(c); err != nil {
		return err
	} else if named {
		f.Owner = owner
	}
	if v := strings.TrimSpace(c.QueryParam("q")); v != "" {
		if id, err := uuid.Parse(v); err == nil {
			f.ID = id
		} else {
			f.Name = v
		}
	}
	return s.pageJobs(c, f)
}

// pageJobs pages through the jobs f selects, newest first, optionally by
// status and type. It asks for one job more than the page to learn whether
// another page follows.
func (s *Server) pageJobs(c *echo.Context, f store.JobFilter) error {
	if v := c.QueryParam("status"); v != "" {
		f.Status = job.Status(v)
		if !validStatus(f.Status) {
			return apierr.Invalid("status", "must be one of scheduled, paused, completed, permanently_failed, cancelled, expired")
		}
	}
	if v := c.QueryParam("type"); v != "" {
		f.Type = job.Type(v)
		if _, ok := jobtype.Lookup(f.Type); !ok {
			return apierr.Invalid("type", "must be one of "+strings.Join(jobtype.Names(), ", "))
		}
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	if v := c.QueryParam("cursor"); v != "" {
		if f.Before, err = parseJobCursor(v); err != nil {
			return apierr.Invalid("cursor", "is not a cursor this API returned")
		}
	}
	if f.Labels, err = labelFilter(c.QueryParams()["label"]); err != nil {
		return err
	}
	switch v := c.QueryParam("at_risk"); v {
	case "", "false":
	case "true":
		if len(f.Labels) > 0 {
			return apierr.Invalid("at_risk", "cannot be combined with label")
		}
		f.AtRisk = true
	default:
		return apierr.Invalid("at_risk", "must be true or false")
	}
	f.Limit = limit + 1
	var jobs []*job.Job
	var resume uuid.UUID
	if len(f.Labels) > 0 {
		// A labelled listing looks at a bounded number of the first
		// label's jobs: a short page may then still have a next one.
		jobs, resume, err = s.store.ListLabelledJobs(c.Request().Context(), f)
	} else {
		jobs, err = s.store.ListJobs(c.Request().Context(), f)
	}
	if err != nil {
		return apierr.Dependency(err)
	}
	var out jobPage
	jobs, out.NextCursor = page(jobs, limit, func(j *job.Job) string { return jobCursor(j.ID) })
	if out.NextCursor == "" && resume != uuid.Nil {
		out.NextCursor = jobCursor(resume)
	}
	out.Jobs = make([]jobspec.View, 0, len(jobs))
	s.showRunning(c, jobs...)
	now := s.clock()
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, s.jobView(j, now))
	}
	return writeJSON(c, http.StatusOK, out)
}

// labelFilter reads label=key=value query parameters, all of which a job
// must carry: at most job.MaxLabels, each key a valid label key.
func labelFilter(values []string) ([]store.Label, error) {
	if len(values) > job.MaxLabels {
		return nil, apierr.Invalid("label", fmt.Sprintf("at most %d label filters", job.MaxLabels))
	}
	out := make([]store.Label, 0, len(values))
	seen := map[store.Label]bool{}
	for _, v := range values {
		key, value, ok := strings.Cut(v, "=")
		if !ok || !job.ValidLabelKey(key) {
			return nil, apierr.Invalid("label", "must be key=value, the key 1 to 63 of a-z, 0-9, '_', '.' and '-'")
		}
		if utf8.RuneCountInString(value) > job.MaxLabelValue {
			return nil, apierr.Invalid("label", fmt.Sprintf("a value is at most %d characters", job.MaxLabelValue))
		}
		l := store.Label{Key: key, Value: value}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out, nil
}

// cancelJob cancels a job: a one-off job that has not started, or a
// recurring job at any time (lifecycle.Cancel).
func (s *Server) cancelJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	switch c.QueryParam("purge") {
	case "", "false":
	case "true":
		return s.purgeJob(c, id)
	default:
		return apierr.Invalid("purge", "must be true or false")
	}
	p := access.Caller(c)
	return cancelled(c, s.jobs.Cancel(c.Request().Context(), p.Owner(), id, s.clock(), p.Audit(store.ActionJobCancel)))
}

// cancelled answers a cancel: 204, or a 409 that says why the job cannot
// be cancelled.
func cancelled(c *echo.Context, err error) error {
	var refused *store.CancelRefused
	switch {
	case err == nil:
		return c.NoContent(http.StatusNoContent)
	case errors.As(err, &refused) && refused.Status == job.StatusCancelled:
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "", "the job is already cancelled")
	case errors.As(err, &refused) && refused.Started:
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "",
			"the job has started: a one-off job can be cancelled only before its first attempt starts; to stop the attempt that runs, use POST /api/v1/jobs/{id}/abort")
	case errors.As(err, &refused):
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "",
			"the job has ended ("+string(refused.Status)+"): only a scheduled or paused job can be cancelled")
	case errors.Is(err, job.ErrConflict):
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "", "the job cannot be cancelled: "+err.Error())
	}
	return apierr.Dependency(err)
}

// purgeJob removes a finished job and its runs now (DELETE ?purge=true):
// what its retention would remove later, at once, for an erasure request.
func (s *Server) purgeJob(c *echo.Context, id uuid.UUID) error {
	p := access.Caller(c)
	err := s.store.PurgeJob(c.Request().Context(), p.Owner(), id, s.clock(), p.Audit(store.ActionJobPurge))
	switch {
	case errors.Is(err, job.ErrNotFound):
		return errJobNotFound
	case errors.Is(err, job.ErrConflict):
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "", "the job can still run; cancel it first, then purge it")
	case err != nil:
		return apierr.Dependency(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// jobID parses the :id path parameter. A malformed id is a 404, like an id
// that does not exist: both name no job the caller can see.
func jobID(c *echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, errJobNotFound
	}
	return id, nil
}

// pageSize reads ?limit=, DefaultPageSize when absent.
func pageSize(c *echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return DefaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, apierr.Invalid("limit", "must be an integer from 1 to "+strconv.Itoa(MaxPageSize))
	}
	return n, nil
}

func validStatus(st job.Status) bool {
	switch st {
	case job.StatusScheduled, job.StatusPaused, job.StatusCompleted, job.StatusPermanentlyFailed, job.StatusCancelled, job.StatusExpired:
		return true
	}
	return false
}
