package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// Aborted is the answer of POST /api/v1/jobs/{id}/abort: the attempts that
// were running and are being stopped.
type Aborted struct {
	JobID    uuid.UUID        `json:"job_id"`
	Attempts []AbortedAttempt `json:"attempts"`
}

// AbortedAttempt is one attempt being stopped.
type AbortedAttempt struct {
	ScheduledFor Time `json:"scheduled_for"`
	Attempt      int  `json:"attempt"`
	StartedAt    Time `json:"started_at"`
}

// abortJob stops a job's running attempts: the workers running them end them
// within about a second, and record them aborted, with who asked, never to be
// retried. A one-off job is cancelled with it; a recurring job keeps its
// schedule (cancel it to stop what follows). 409 when nothing is running.
func (s *Server) abortJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	p := access.Caller(c)
	now := s.now()
	ctx := c.Request().Context()
	runs, err := s.jobs.Abort(ctx, p.Owner(), id, now, p.Audit(store.ActionJobAbort))
	if errors.Is(err, job.ErrConflict) {
		msg := "no attempt of this job is running"
		if _, m, ok := strings.Cut(err.Error(), job.ErrConflict.Error()+": "); ok {
			msg = m
		}
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "", msg)
	}
	if err != nil {
		return apierr.Dependency(err)
	}
	out := Aborted{JobID: id, Attempts: make([]AbortedAttempt, len(runs))}
	for i, r := range runs {
		out.Attempts[i] = AbortedAttempt{ScheduledFor: Time{r.ScheduledFor}, Attempt: r.Attempt, StartedAt: Time{r.StartedAt}}
	}
	return writeJSON(c, http.StatusAccepted, out)
}
