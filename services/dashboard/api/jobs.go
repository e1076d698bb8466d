package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
)

// Page sizes of the listings.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// afterCommitTimeout bounds the Redis and Postgres calls made after a job has
// been committed. They run even if the client has gone away: the job exists,
// and leaving it claimed but absent from Redis would delay it until the
// reconciler notices.
const afterCommitTimeout = 5 * time.Second

// createJob validates a jobspec.Spec and stores the job. A one-off job due
// within the horizon is stored as claimed and put in the due set right after
// the commit, so it runs on time rather than at the loader's next round; if
// Redis refuses, the claim is handed back to the loader and the answer is
// still 201. A recurring job is stored unclaimed and then loaded at once, as
// the loader would, so its occurrences within the horizon are in Redis
// before the answer.
func (s *Server) createJob(c *echo.Context) error {
	var req createRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	owner, err := s.owner(c, req.Owner)
	if err != nil {
		return err
	}
	now := s.clock()
	var j *job.Job
	if err := s.evaluate(c, req.Schedule != nil, func() (err error) {
		j, err = req.BuildWithin(requestBudget(c), owner.ID, now, s.limits)
		return err
	}); err != nil {
		return err
	}
	if err := s.allowJobs(c, 1); err != nil {
		return err
	}
	shortNotice := !j.Recurring() && j.RunAt.Before(now.Add(s.horizon))
	if shortNotice {
		j.DueAt = time.Time{}
	}
	ctx := c.Request().Context()
	create := store.Create{Audit: caller(c).audit(store.ActionJobCreate), MaxActive: s.maxActive(owner), MaxPerHour: s.maxPerHour(owner)}
	if err := s.store.CreateJobs(ctx, []*job.Job{j}, create); err != nil {
		return createError(err)
	}
	switch {
	case shortNotice:
		s.enqueueClaimed(context.WithoutCancel(ctx), []*job.Job{j})
	case j.Recurring() && j.DueAt.Before(now.Add(s.horizon)):
		s.load(context.WithoutCancel(ctx), j.ID, now)
	}
	return writeJSON(c, http.StatusCreated, s.jobView(j, now))
}

// requestBudget bounds the schedule work of one request: compiling, checking
// and previewing stop when it runs out or the client goes away.
func requestBudget(c *echo.Context) *schedule.Budget {
	return schedule.RequestBudget(c.Request().Context())
}

// createRequest is the body of POST /api/v1/jobs: a job, and for an
// administrator, the user it is created for.
type createRequest struct {
	jobspec.Spec
	Owner string `json:"owner"`
}

// owner resolves whom a new job belongs to: the caller, or the user an
// administrator names. A user naming anyone but themself is refused.
func (s *Server) owner(c *echo.Context, named string) (*store.User, error) {
	p := caller(c)
	var id uuid.UUID
	if named != "" {
		var err error
		if id, err = uuid.Parse(named); err != nil {
			return nil, invalid("owner", "must be a user id (a UUID)")
		}
	}
	if named == "" || id == p.user {
		role := store.RoleUser
		if p.admin {
			role = store.RoleAdmin
		}
		return &store.User{ID: p.user, Role: role, Limits: p.limits}, nil
	}
	if !p.admin {
		return nil, newError(http.StatusForbidden, CodeForbidden, "owner", "only an administrator can create a job for another user")
	}
	u, err := s.store.GetUser(c.Request().Context(), id)
	if errors.Is(err, job.ErrNotFound) {
		return nil, invalid("owner", "is not a user")
	}
	if err != nil {
		return nil, dependency(err)
	}
	if !u.DisabledAt.IsZero() {
		return nil, invalid("owner", "is a disabled user")
	}
	return u, nil
}

// createError maps a failed creation.
func createError(err error) error {
	var qe *store.QuotaError
	var re *store.RateError
	switch {
	case errors.As(err, &qe):
		return quotaError(qe)
	case errors.As(err, &re):
		return rateError(re)
	}
	return dependency(err)
}

// load hands a job's occurrences due within the horizon to Redis right away,
// as the loader would, after the job was created or edited. A failure only
// delays the job until the loader's next round, so it is logged, not returned.
func (s *Server) load(ctx context.Context, id uuid.UUID, now time.Time) {
	ctx, cancel := context.WithTimeout(ctx, afterCommitTimeout)
	defer cancel()
	w := store.Window{Until: now.Add(s.horizon), Now: now, MisfireThreshold: s.misfire}
	if _, err := s.store.LoadJob(ctx, id, w, s.enqueue); err != nil {
		s.log.Warn("load_job_failed", zap.Stringer("job_id", id), zap.Error(err))
	}
}

// enqueue puts first attempts in the due set at their scheduled time.
func (s *Server) enqueue(ctx context.Context, occs []job.Occurrence) error {
	entries := make([]queue.Entry, len(occs))
	for i, o := range occs {
		entries[i] = queue.Entry{Occurrence: o, DueAt: o.ScheduledFor}
	}
	return s.queue.Enqueue(ctx, entries)
}

// getJob returns one job of the caller's.
func (s *Server) getJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	j, err := s.store.GetJob(c.Request().Context(), caller(c).scope(), id)
	if err != nil {
		return dependency(err)
	}
	return writeJSON(c, http.StatusOK, s.jobView(j, s.clock()))
}

// listJobs pages through the caller's jobs (an administrator's: everyone's).
// q finds a job by its exact id, or the jobs whose name contains it
// (ignoring case); owner narrows an administrator's listing to one user.
func (s *Server) listJobs(c *echo.Context) error {
	p := caller(c)
	f := store.JobFilter{Owner: p.scope()}
	if v := c.QueryParam("owner"); v != "" {
		owner, err := uuid.Parse(v)
		if err != nil {
			return invalid("owner", "must be a user id")
		}
		if !p.admin && owner != p.user {
			return errForbidden
		}
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
			return invalid("status", "must be one of scheduled, paused, completed, permanently_failed, cancelled")
		}
	}
	if v := c.QueryParam("type"); v != "" {
		f.Type = job.Type(v)
		if !validType(f.Type) {
			return invalid("type", "must be one of webhook, ping, slack, email")
		}
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	if v := c.QueryParam("cursor"); v != "" {
		if f.Before, err = parseJobCursor(v); err != nil {
			return invalid("cursor", "is not a cursor this API returned")
		}
	}
	f.Limit = limit + 1
	jobs, err := s.store.ListJobs(c.Request().Context(), f)
	if err != nil {
		return dependency(err)
	}
	var out JobList
	jobs, out.NextCursor = page(jobs, limit, func(j *job.Job) string { return jobCursor(j.ID) })
	out.Jobs = make([]Job, 0, len(jobs))
	now := s.clock()
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, s.jobView(j, now))
	}
	return writeJSON(c, http.StatusOK, out)
}

// cancelJob cancels a job: a one-off job that has not started, or a
// recurring job at any time, which stops all its future occurrences. A
// one-off job's first attempt is then taken out of the due set. The removal
// is best effort, and a recurring job's loaded occurrences are left in place:
// cancelling moved the job to a new generation, so a worker that still
// receives an old occurrence finds it stale and drops it.
func (s *Server) cancelJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	j, err := s.store.CancelJob(ctx, caller(c).scope(), id, s.clock(), caller(c).audit(store.ActionJobCancel))
	if errors.Is(err, job.ErrConflict) {
		return newError(http.StatusConflict, CodeConflict, "", "the job has started or finished; only a one-off job that has not started, or a recurring job, can be cancelled")
	}
	if err != nil {
		return dependency(err)
	}
	if !j.Recurring() {
		// The member was planned under the generation before the cancel.
		occ := job.Occurrence{JobID: j.ID, ScheduledFor: j.RunAt, Attempt: 1, Priority: j.Priority, Generation: j.Generation - 1}.Route(j.Owner, j.Payload)
		s.removeStale(context.WithoutCancel(ctx), occ)
	}
	return c.NoContent(http.StatusNoContent)
}

// removeStale takes an occurrence of an older generation out of the due set.
// It is best effort: a worker that receives it anyway finds its generation
// stale and drops it.
func (s *Server) removeStale(ctx context.Context, occ job.Occurrence) {
	ctx, cancel := context.WithTimeout(ctx, afterCommitTimeout)
	defer cancel()
	if err := s.queue.Remove(ctx, []job.Occurrence{occ}); err != nil {
		s.log.Warn("remove_stale_failed", zap.Stringer("job_id", occ.JobID), zap.Int("generation", occ.Generation), zap.Error(err))
	}
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
		return 0, invalid("limit", "must be an integer from 1 to "+strconv.Itoa(MaxPageSize))
	}
	return n, nil
}

func validStatus(st job.Status) bool {
	switch st {
	case job.StatusScheduled, job.StatusPaused, job.StatusCompleted, job.StatusPermanentlyFailed, job.StatusCancelled:
		return true
	}
	return false
}

func validType(t job.Type) bool {
	_, ok := jobtype.Lookup(t)
	return ok
}
