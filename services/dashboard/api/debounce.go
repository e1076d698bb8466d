package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// Debounce: a one-off job created with a debounce key that a pending job of
// the owner's holds (scheduled or paused, not started) is not created; that
// job takes the create's payload, timing and debounce under its row lock
// (lifecycle.Edit: a new generation, the old one fenced), and the create is
// answered 200 with it. Once that job has started, or finished, the next
// create with the key makes a new job, which takes the key over
// (store.Create.Displace). Two creates racing for a free key take it one
// at a time (an advisory lock per key in the create's transaction): the
// loser finds the winner's job and folds into it.

// maxDebounceTries bounds the look-fold-create rounds of one create: each
// lost round means another request took the key meanwhile.
const maxDebounceTries = 4

// pendingDebounce says whether cur, the job that last took debounce key
// key, may still take a create in: a one-off job that can still run and
// still has the key (a PATCH may have taken it out).
func pendingDebounce(cur *job.Job, key string) bool {
	return cur != nil && !cur.Recurring() && cur.DebounceKey() == key &&
		(cur.Status == job.StatusScheduled || cur.Status == job.StatusPaused)
}

// debounced creates j, built from req, or folds it into the pending job
// that holds its debounce key, and answers 201 or 200 with the job.
func (s *Server) debounced(c *echo.Context, req *jobspec.Request, j *job.Job, owner *store.User, now time.Time, dry bool) error {
	if dry {
		cur, err := s.store.JobByDebounceKey(c.Request().Context(), owner.ID, j.Debounce.Key)
		if err != nil && !errors.Is(err, job.ErrNotFound) {
			return apierr.Dependency(err)
		}
		if err == nil && pendingDebounce(cur, j.Debounce.Key) && cur.LastRun == nil {
			if err := foldable(cur, j); err != nil {
				return err
			}
			return s.change(c, req.DebouncePatch(), cur, true)
		}
		return writeJSON(c, http.StatusOK, DryRun{DryRun: true, Action: ActionCreate, Changes: []jobspec.FieldChange{}, Job: s.jobView(j, now)})
	}
	if err := s.allowJobs(c, 1); err != nil {
		return err
	}
	after, folded, err := s.debounce(c, req, j, owner, now)
	if err != nil {
		return err
	}
	if !folded {
		return writeJSON(c, http.StatusCreated, s.jobView(after, now))
	}
	s.showRunning(c, after)
	return writeJSON(c, http.StatusOK, s.jobView(after, now))
}

// debounce creates j, built from req, or folds it into the pending job that
// holds its debounce key (folded), and returns the job it made or changed;
// an error is the API error to answer.
func (s *Server) debounce(c *echo.Context, req *jobspec.Request, j *job.Job, owner *store.User, now time.Time) (*job.Job, bool, error) {
	ctx := c.Request().Context()
	for try := 1; ; try++ {
		cur, err := s.store.JobByDebounceKey(ctx, owner.ID, j.Debounce.Key)
		switch {
		case errors.Is(err, job.ErrNotFound):
			cur = nil
		case err != nil:
			return nil, false, apierr.Dependency(err)
		}
		if pendingDebounce(cur, j.Debounce.Key) {
			if err := foldable(cur, j); err != nil {
				return nil, false, err
			}
			after, err := s.fold(c, req, cur, owner.ID)
			if err == nil {
				return after, true, nil
			}
			if !errors.Is(err, job.ErrConflict) {
				return nil, false, err
			}
			// It started (or finished) meanwhile: a new job takes the key.
		}
		var displace []uuid.UUID
		if cur != nil {
			displace = []uuid.UUID{cur.ID}
		}
		err = s.insert(c, j, owner, now, displace)
		var taken *store.DebounceTakenError
		if errors.As(err, &taken) && try < maxDebounceTries {
			continue // another create took the key: fold into its job
		}
		if err != nil {
			return nil, false, createError(err)
		}
		return j, false, nil
	}
}

// foldable refuses to fold j into cur, the pending job that holds its
// debounce key, when cur is of another type, or has another key of the
// owner's (or none where j has one): the create would not give cur its
// key, and a GET by that key would not find it.
func foldable(cur, j *job.Job) error {
	switch {
	case cur.Type != j.Type:
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "debounce.key",
			"is held by a pending "+string(cur.Type)+" job; a create folds only into a job of its own type")
	case cur.Key != j.Key:
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "debounce.key",
			"is held by a pending job with another key (or none); a create folds only into a job of its own key")
	}
	return nil
}

// fold applies the debounced create req to cur, the pending job that holds
// its key: its payload, timing and debounce. A job that started meanwhile
// refuses it with job.ErrConflict, returned as it is; any other failure is
// returned as the API error to answer.
func (s *Server) fold(c *echo.Context, req *jobspec.Request, cur *job.Job, owner uuid.UUID) (*job.Job, error) {
	now := s.now()
	var change *jobspec.Change
	if err := s.evaluate(c, false, func() (err error) {
		change, err = req.DebouncePatch().Prepare(requestBudget(c), cur, now, s.limits)
		return err
	}); err != nil {
		return nil, err
	}
	var refused error
	after, err := s.jobs.Edit(c.Request().Context(), owner, cur.ID, now, func(j *job.Job, started bool) error {
		if j.DebounceKey() != cur.DebounceKey() || j.Recurring() {
			return job.ErrConflict // the key moved on meanwhile
		}
		refused = change.Apply(j, started)
		return refused
	}, store.Update{Audit: access.Caller(c).Audit(store.ActionJobDebounce), Rates: s.ownerRates(c), MaxFlowKeys: s.quotas.MaxFlowKeys})
	if errors.Is(err, job.ErrConflict) || errors.Is(err, job.ErrNotFound) {
		return nil, job.ErrConflict
	}
	if err != nil {
		return nil, editError(err, refused)
	}
	return after, nil
}

// debounceTakenError refuses a job whose debounce key another pending job
// holds: an edit that names it, or a create that lost every round.
func debounceTakenError(e *store.DebounceTakenError) error {
	return apierr.New(http.StatusConflict, apierr.CodeConflict, "debounce.key",
		fmt.Sprintf("key %q is held by another of your jobs that has not started yet", e.Key))
}
