package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// Backfills: POST /api/v1/jobs/{id}/backfill runs the occurrences of a
// recurring job whose nominal times fall in a past range [from, to) and
// that never ran; the scheduler's leader queues them a few at a time
// (services/scheduler/backfill.go). GET and DELETE /api/v1/backfills/{id}
// show its progress and cancel it.

// MaxBackfill bounds the occurrences one backfill may run.
const MaxBackfill = 10_000

// backfillRequest is the body of POST /api/v1/jobs/{id}/backfill.
type backfillRequest struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Overlap string `json:"overlap"`
}

// Backfill is a backfill as the API shows it.
type Backfill struct {
	ID      uuid.UUID `json:"id"`
	JobID   uuid.UUID `json:"job_id"`
	From    Time      `json:"from"`
	To      Time      `json:"to"`
	Overlap string    `json:"overlap"`
	// Status is running, completed or cancelled; Reason says why it was
	// cancelled.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Total is the occurrences in the range; Existing those left alone
	// because they had run already; Queued those queued so far, of which
	// Running have no final outcome yet and Completed, Failed and Skipped
	// ended so; Remaining those not reached yet.
	Total     int  `json:"total"`
	Existing  int  `json:"existing"`
	Queued    int  `json:"queued"`
	Running   int  `json:"running"`
	Completed int  `json:"completed"`
	Failed    int  `json:"failed"`
	Skipped   int  `json:"skipped"`
	Remaining int  `json:"remaining"`
	CreatedAt Time `json:"created_at"`
	// FinishedAt is when it completed or was cancelled; null while it runs.
	FinishedAt Time `json:"finished_at"`
}

// BackfillList is the answer of GET /api/v1/jobs/{id}/backfills: the
// job's newest backfills first, at most MaxPageSize.
type BackfillList struct {
	Backfills []Backfill `json:"backfills"`
}

func backfillView(b *store.Backfill) Backfill {
	return Backfill{ID: b.ID, JobID: b.JobID, From: Time{b.From}, To: Time{b.To}, Overlap: string(b.Overlap),
		Status: b.Status, Reason: b.Reason, Total: b.Total, Existing: b.Existing, Queued: b.Queued,
		Running: len(b.Inflight), Completed: b.Completed, Failed: b.Failed, Skipped: b.Skipped,
		Remaining: b.Remaining(), CreatedAt: Time{b.CreatedAt}, FinishedAt: Time{b.FinishedAt}}
}

var errBackfillNotFound = apierr.New(http.StatusNotFound, apierr.CodeNotFound, "", "backfill not found")

// backfillJob starts a backfill of a scheduled recurring job of the
// caller's, answered 202 with it (Location names it).
func (s *Server) backfillJob(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	var req backfillRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	now := s.now()
	from, to, err := backfillRange(req, now)
	if err != nil {
		return err
	}
	p := access.Caller(c)
	ctx := c.Request().Context()
	j, err := s.store.GetJob(ctx, p.Owner(), id)
	if err != nil {
		return editError(err, err)
	}
	overlap, err := backfillOverlap(req.Overlap, j)
	if err != nil {
		return err
	}
	switch {
	case len(j.Schedule) == 0:
		return apierr.Invalid("", "this is a one-off job: only a recurring job has occurrences to backfill")
	case j.Status != job.StatusScheduled:
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "",
			fmt.Sprintf("a %s job cannot be backfilled; only a scheduled one can", j.Status))
	}
	if err := s.checkRunDays(c, from, to, now); err != nil {
		return err
	}
	total, err := s.countOccurrences(c, j, from, to)
	if err != nil {
		return err
	}
	b := &store.Backfill{ID: job.NewID(), Owner: j.Owner, JobID: j.ID, From: from, To: to,
		Overlap: overlap, Total: total, CreatedAt: now}
	if err := s.store.CreateBackfill(ctx, b, p.Audit(store.ActionJobBackfill)); err != nil {
		if errors.Is(err, store.ErrTooManyBackfills) {
			return apierr.New(http.StatusConflict, apierr.CodeConflict, "", err.Error())
		}
		return apierr.Dependency(err)
	}
	c.Response().Header().Set("Location", "/api/v1/backfills/"+b.ID.String())
	return writeJSON(c, http.StatusAccepted, backfillView(b))
}

// backfillRange reads and checks a backfill's range: both ends given as
// RFC 3339 instants (kept to the millisecond, as every time tock stores),
// to after from, and nothing in the future (what is still to come runs
// anyway).
func backfillRange(req backfillRequest, now time.Time) (from, to time.Time, err error) {
	parse := func(field, v, what string) (time.Time, error) {
		if v == "" {
			return time.Time{}, apierr.Invalid(field, "is required: "+what+", an RFC 3339 instant such as 2026-11-20T00:00:00Z")
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, apierr.Invalid(field, "is not an RFC 3339 instant such as 2026-11-20T00:00:00Z")
		}
		return t.UTC().Truncate(time.Millisecond), nil
	}
	if from, err = parse("from", req.From, "the start of the range"); err != nil {
		return
	}
	if to, err = parse("to", req.To, "the end of the range (excluded)"); err != nil {
		return
	}
	switch {
	case !to.After(from):
		err = apierr.Invalid("to", "must be after from")
	case to.After(now):
		err = apierr.Invalid("to", "must not be in the future: a backfill runs past occurrences (the schedule runs the others)")
	}
	return
}

// backfillOverlap is the overlap policy a backfill asks for, its job's
// when none.
func backfillOverlap(v string, j *job.Job) (job.Overlap, error) {
	switch o := job.Overlap(v); o {
	case "":
		if j.Overlap == "" {
			return job.OverlapAllow, nil
		}
		return j.Overlap, nil
	case job.OverlapAllow, job.OverlapSkip, job.OverlapBufferOne:
		return o, nil
	}
	return "", apierr.Invalid("overlap", "must be allow, skip or buffer_one")
}

// maxBackfillDays bounds the days a backfill's range spans: each needs
// its day partition of job_runs.
const maxBackfillDays = 366

// checkRunDays refuses a range that reaches days whose runs retention
// drops (before the first day TOCK_RUN_RETENTION keeps whole, as the
// scheduler recorded it; before the oldest day partition while no
// scheduler has), and makes sure every day of it has its job_runs
// partition, so that its runs are kept and dropped as any other.
func (s *Server) checkRunDays(c *echo.Context, from, to, now time.Time) error {
	ctx := c.Request().Context()
	if to.Sub(from) > maxBackfillDays*24*time.Hour {
		return apierr.Invalid("to", fmt.Sprintf("a backfill spans at most %d days", maxBackfillDays))
	}
	retention, known, err := s.store.RunRetention(ctx)
	if err != nil {
		return apierr.Dependency(err)
	}
	var floor time.Time
	switch {
	case known && retention > 0:
		floor = now.Add(-retention).UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	case !known:
		if floor, err = s.store.OldestRunDay(ctx); err != nil {
			return apierr.Dependency(err)
		}
	}
	if from.Before(floor) {
		return apierr.Invalid("from", fmt.Sprintf("must not be before %s: runs of earlier days are past TOCK_RUN_RETENTION", floor.Format(time.DateOnly)))
	}
	if _, err := s.store.EnsureRunPartitions(ctx, from, to); err != nil {
		return apierr.Dependency(err)
	}
	return nil
}

// countUnits and countTime bound the walk of a backfill's range: 10,000
// occurrences of any rule a job may hold (an RRULE's Next costs some 300
// units), a few times what one request's other schedule work may take.
const (
	countUnits = 5 * schedule.RequestUnits
	countTime  = 500 * time.Millisecond
)

// countOccurrences counts j's occurrences whose nominal times fall in
// [from, to), by its rule whatever its start_at and end_at, refusing a range with none or more than MaxBackfill, or one
// too costly to walk within the request's budget.
func (s *Server) countOccurrences(c *echo.Context, j *job.Job, from, to time.Time) (int, error) {
	sched, err := schedule.FromJSONWithin(schedule.NewBudget(c.Request().Context(), countUnits, countTime), j.Schedule)
	if err != nil {
		return 0, apierr.Dependency(err)
	}
	sched = sched.Unbounded()
	n, after := 0, from.Add(-time.Millisecond)
	for {
		at, ok := sched.Next(after)
		if !ok || !at.Before(to) {
			break
		}
		if n++; n > MaxBackfill {
			return 0, apierr.Invalid("to", fmt.Sprintf("the range holds more than %d occurrences of the job's schedule; a backfill runs at most %d", MaxBackfill, MaxBackfill))
		}
		after = at
	}
	if err := sched.Err(); err != nil {
		return 0, apierr.Invalid("to", "the range is too costly to walk within one request; backfill a shorter one")
	}
	if n == 0 {
		return 0, apierr.Invalid("from", "the range holds no occurrence of the job's schedule")
	}
	return n, nil
}

// backfillID reads the {backfill} path parameter.
func backfillID(c *echo.Context, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param(name))
	if err != nil {
		return uuid.Nil, errBackfillNotFound
	}
	return id, nil
}

// findBackfill reads the backfill the path names, the caller's (an
// administrator's: anyone's); under /jobs/{id}/backfills/{backfill}, it
// must be that job's.
func (s *Server) findBackfill(c *echo.Context) (*store.Backfill, error) {
	id, err := backfillID(c, "backfill")
	if err != nil {
		return nil, err
	}
	b, err := s.store.GetBackfill(c.Request().Context(), access.Caller(c).Owner(), id)
	if errors.Is(err, job.ErrNotFound) {
		return nil, errBackfillNotFound
	}
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	if v := c.Param("id"); v != "" {
		if id, err := uuid.Parse(v); err != nil || id != b.JobID {
			return nil, errBackfillNotFound
		}
	}
	return b, nil
}

// getBackfill shows a backfill and its progress.
func (s *Server) getBackfill(c *echo.Context) error {
	b, err := s.findBackfill(c)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, backfillView(b))
}

// cancelBackfill cancels a running backfill: nothing more of it is queued,
// and no occurrence of it starts afterwards (one running ends as it
// would). Cancelling one cancelled already answers it as it is; a
// completed one is a 409.
func (s *Server) cancelBackfill(c *echo.Context) error {
	b, err := s.findBackfill(c)
	if err != nil {
		return err
	}
	p := access.Caller(c)
	after, err := s.store.CancelBackfill(c.Request().Context(), p.Owner(), b.ID, s.now(), p.Audit(store.ActionBackfillCancel))
	switch {
	case errors.Is(err, job.ErrNotFound):
		return errBackfillNotFound
	case errors.Is(err, job.ErrConflict):
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "", "the backfill completed already")
	case err != nil:
		return apierr.Dependency(err)
	}
	return writeJSON(c, http.StatusOK, backfillView(after))
}

// listBackfills lists a job's backfills, newest first.
func (s *Server) listBackfills(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	owner := access.Caller(c).Owner()
	if _, err := s.store.GetJob(c.Request().Context(), owner, id); err != nil {
		return editError(err, err)
	}
	bs, err := s.store.ListBackfills(c.Request().Context(), owner, id, MaxPageSize)
	if err != nil {
		return apierr.Dependency(err)
	}
	out := BackfillList{Backfills: make([]Backfill, len(bs))}
	for i, b := range bs {
		out.Backfills[i] = backfillView(b)
	}
	return writeJSON(c, http.StatusOK, out)
}
