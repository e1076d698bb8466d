package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// patchJob edits a job in place, keeping its id: only the fields given
// change, validated as for a new job. A change of timing or priority moves
// the job to a new generation, which the due set then follows (see
// afterEdit). A one-off job that has started can no longer move in time.
// With ?dry_run=true it answers what would change, and changes nothing.
func (s *Server) patchJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	dry, err := dryRun(c)
	if err != nil {
		return err
	}
	req, _, err := s.decodeJob(c, jobspec.Patch)
	if err != nil {
		return err
	}
	// Every check, and compiling a new schedule, happens before the row is
	// locked: the job is read once to learn its type, and the prepared
	// change is then applied under the lock in a few comparisons.
	cur, err := s.store.GetJob(c.Request().Context(), access.Caller(c).Owner(), id)
	if err != nil {
		return apierr.Dependency(err)
	}
	s.showRunning(c, cur)
	return s.change(c, req, cur, dry)
}

// change prepares req, a patch or replace, against cur and makes it: with
// dry, only says what it would change; and when it would change nothing,
// answers with the job as it is without writing (a replace sent twice is
// one change, not two generations).
func (s *Server) change(c *echo.Context, req *jobspec.Request, cur *job.Job, dry bool) error {
	now := s.now()
	var change *jobspec.Change
	if err := s.evaluate(c, req.Schedules(), func() (err error) {
		change, err = req.Prepare(requestBudget(c), cur, now, s.limits)
		return err
	}); err != nil {
		return err
	}
	// The change on a copy of the job as read: what a dry run answers, and
	// whether there is anything to write.
	next := *cur
	started := cur.LastRun != nil
	var refused error
	if err := change.Apply(&next, started); err != nil {
		refused = err
	}
	if refused == nil {
		changes := jobspec.Diff(cur, &next, s.limits.Box)
		if dry || len(changes) == 0 {
			action := ActionUpdate
			if len(changes) == 0 {
				action, next = ActionUnchanged, *cur
			}
			if !dry {
				return writeJSON(c, http.StatusOK, s.jobView(cur, now))
			}
			if changes == nil {
				changes = []jobspec.FieldChange{}
			}
			return writeJSON(c, http.StatusOK, DryRun{DryRun: true, Action: action, Changes: changes, Job: s.jobView(&next, now)})
		}
	} else if dry {
		return editError(refused, refused)
	}
	return s.edit(c, cur.ID, now, store.ActionJobUpdate, change.Apply)
}

// pauseJob stops a scheduled job from running until it is resumed. What the
// due set holds for it belongs to the old generation and never starts.
func (s *Server) pauseJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	return s.edit(c, id, s.now(), store.ActionJobPause, jobspec.Pause)
}

// resumeJob schedules a paused job again from now and, when it is due within
// the horizon, loads it at once.
func (s *Server) resumeJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	now := s.now()
	return s.edit(c, id, now, store.ActionJobResume, jobspec.Resume(now))
}

// now reads the clock at tock's precision: UTC milliseconds.
func (s *Server) now() time.Time { return s.clock().UTC().Truncate(time.Millisecond) }

// edit applies e to a job of the caller's (lifecycle.Edit) and answers with
// the job as it now is.
func (s *Server) edit(c *echo.Context, id uuid.UUID, now time.Time, action string, e store.Edit) error {
	var refused error
	after, err := s.jobs.Edit(c.Request().Context(), access.Caller(c).Owner(), id, now, func(j *job.Job, started bool) error {
		refused = e(j, started)
		return refused
	}, store.Update{Audit: access.Caller(c).Audit(action), Rates: s.ownerRates(c), MaxFlowKeys: s.quotas.MaxFlowKeys})
	if err != nil {
		return editError(err, refused)
	}
	s.showRunning(c, after)
	return writeJSON(c, http.StatusOK, s.jobView(after, now))
}

// editError maps a failed edit, using the edit's own words when it refused:
// they say why ("a paused job cannot be paused"), which the sentinel alone
// cannot.
func editError(err, refused error) error {
	var fe *job.FieldError
	var re *store.RateError
	var ke *store.FlowKeysError
	var de *store.DebounceTakenError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.As(err, &de):
		return debounceTakenError(de)
	case errors.As(err, &ke):
		return flowKeysError(ke)
	case errors.As(err, &re):
		return rateError(re)
	case errors.Is(err, job.ErrConflict):
		msg := "the job's state does not allow this change"
		if refused != nil {
			if m, ok := strings.CutPrefix(refused.Error(), job.ErrConflict.Error()+": "); ok {
				msg = m
			}
		}
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "", msg)
	case errors.Is(err, job.ErrInvalid) && refused != nil:
		msg, _ := strings.CutPrefix(refused.Error(), job.ErrInvalid.Error()+": ")
		return apierr.Invalid("", msg)
	}
	return apierr.Dependency(err)
}

// triggerJob runs a scheduled job once more, now, in addition to its
// schedule: one extra occurrence at the current millisecond, under the job's
// current generation and priority. Its idempotency key is its own, so a
// target tells it apart from the scheduled ones.
func (s *Server) triggerJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	now := s.now()
	p := access.Caller(c)
	occ, err := s.jobs.Trigger(c.Request().Context(), p.Owner(), id, now, p.Audit(store.ActionJobTrigger))
	if err != nil {
		return editError(err, err)
	}
	return writeJSON(c, http.StatusAccepted, Triggered{JobID: occ.JobID, ScheduledFor: Time{now}, IdempotencyKey: occ.Key()})
}

// retryRequest is the optional body of POST /api/v1/jobs/{id}/retry.
type retryRequest struct {
	// ScheduledFor picks the occurrence; absent, the latest that failed
	// permanently.
	ScheduledFor Time `json:"scheduled_for"`
}

// Retried is the answer of POST /api/v1/jobs/{id}/retry: the attempt that
// was put in the due set, due now, under its occurrence's idempotency key.
type Retried struct {
	JobID          uuid.UUID `json:"job_id"`
	ScheduledFor   Time      `json:"scheduled_for"`
	Attempt        int       `json:"attempt"`
	IdempotencyKey string    `json:"idempotency_key"`
}

// retryJob gives a permanently failed occurrence one more attempt, now. A
// one-off job that ended permanently_failed is scheduled again until that
// attempt ends; a recurring job keeps its schedule.
func (s *Server) retryJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	var req retryRequest
	if c.Request().ContentLength != 0 {
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
	}
	p := access.Caller(c)
	occ, err := s.jobs.Retry(c.Request().Context(), p.Owner(), id, req.ScheduledFor.Time, s.now(), p.Audit(store.ActionJobRetry))
	if err != nil {
		return editError(err, errors.Unwrap(err))
	}
	return writeJSON(c, http.StatusAccepted, Retried{JobID: occ.JobID, ScheduledFor: Time{occ.ScheduledFor}, Attempt: occ.Attempt, IdempotencyKey: occ.Key()})
}
