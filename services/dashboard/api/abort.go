package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
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
	p := caller(c)
	now := s.now()
	ctx := c.Request().Context()
	runs, err := s.store.AbortJob(ctx, p.scope(), id, now, p.audit(store.ActionJobAbort))
	if errors.Is(err, job.ErrConflict) {
		msg := "no attempt of this job is running"
		if _, m, ok := strings.Cut(err.Error(), job.ErrConflict.Error()+": "); ok {
			msg = m
		}
		return newError(http.StatusConflict, CodeConflict, "", msg)
	}
	if err != nil {
		return dependency(err)
	}
	// Recorded in Postgres: the workers are told through Redis. Should that
	// fail, the answer says so and a second call tells them again.
	if err := s.queue.Abort(ctx, queue.AbortRequest{Job: id, Actor: p.user, At: now}); err != nil {
		return dependency(err)
	}
	out := Aborted{JobID: id, Attempts: make([]AbortedAttempt, len(runs))}
	for i, r := range runs {
		out.Attempts[i] = AbortedAttempt{ScheduledFor: Time{r.ScheduledFor}, Attempt: r.Attempt, StartedAt: Time{r.StartedAt}}
	}
	return writeJSON(c, http.StatusAccepted, out)
}

// abortOwner tells the workers to stop every running attempt of a user who
// was just disabled. Best effort: the user's jobs are paused in Postgres
// already, so nothing new of theirs starts; a failure leaves what runs to
// end by itself, and is logged.
func (s *Server) abortOwner(ctx context.Context, owner, actor uuid.UUID, at time.Time) {
	ctx, cancel := lifecycle.AfterCommit(ctx)
	defer cancel()
	if err := s.queue.Abort(ctx, queue.AbortRequest{Owner: owner, Actor: actor, At: at}); err != nil {
		s.log.Warn("abort_owner_failed", zap.Stringer("user_id", owner), zap.Error(err))
	}
}
