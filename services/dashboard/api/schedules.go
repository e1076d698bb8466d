package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/calendar"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// How many occurrences GET /jobs/{id}/next and POST /schedules/preview list.
const (
	DefaultUpcoming = 10
	MaxUpcoming     = 100
)

// maxCountScan bounds the walk over the occurrences loaded ahead that works
// out how much of a count limit is used (at most a horizon's worth).
const maxCountScan = 100_000

// nextRuns lists a job's next occurrences, at most ?n= of them (default 10):
// a one-off job's run_at while it is pending, a recurring job's occurrences
// from now on, and nothing for a job that will not run again.
func (s *Server) nextRuns(c *echo.Context) error {
	id, err := jobID(c)
	if err != nil {
		return err
	}
	n, err := upcomingCount(c.QueryParam("n"))
	if err != nil {
		return err
	}
	j, err := s.store.GetJob(c.Request().Context(), access.Caller(c).Owner(), id)
	if err != nil {
		return apierr.Dependency(err)
	}
	cals, err := s.ownerCalendars(c, j.Owner, j.SkipCalendars, "", false)
	if err != nil {
		return err
	}
	times, err := upcoming(requestBudget(c), j, s.clock(), walkFor(n, cals))
	if err != nil {
		return err
	}
	run, skipped := skipCalendars(times, j.JitterOffset, cals, n, jobLocation(j))
	view := upcomingView(run, jobLocation(j))
	view.Skipped = skipped
	return writeJSON(c, http.StatusOK, view)
}

// walkFor is how many occurrences a preview of n walks: more when
// calendars may skip some, to still list n.
func walkFor(n int, cals []*calendar.Calendar) int {
	if len(cals) == 0 {
		return n
	}
	return n*10 + 100
}

// upcomingCount reads ?n=, DefaultUpcoming when absent.
func upcomingCount(v string) (int, error) {
	if v == "" {
		return DefaultUpcoming, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxUpcoming {
		return 0, apierr.Invalid("n", "must be an integer from 1 to "+strconv.Itoa(MaxUpcoming))
	}
	return n, nil
}

// jobLocation is the zone j is shown in; UTC if its name no longer loads.
func jobLocation(j *job.Job) *time.Location {
	if j.Timezone == "" || j.Timezone == "UTC" {
		return time.UTC
	}
	loc, err := time.LoadLocation(j.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// upcoming returns up to n occurrences of j at or after now, each at its
// due time (moved by the job's jitter offset). A one-off job
// has its run_at while it is scheduled or paused. A recurring job has its
// schedule's occurrences from now on, within what its count leaves, up to
// its final occurrence once the loader has found it; none once the job has
// ended, finished or been cancelled. The walk stops where b runs out, with
// what it found so far: the rule was checked when the job was stored.
func upcoming(b *schedule.Budget, j *job.Job, now time.Time, n int) ([]time.Time, error) {
	pending := j.Status == job.StatusScheduled || j.Status == job.StatusPaused
	if !j.Recurring() {
		if !pending || j.RunAt.IsZero() {
			return nil, nil
		}
		return []time.Time{j.RunAt}, nil
	}
	// The loader clears due_at once nothing is left to load, and records the
	// final occurrence in last_at (zero if the count ran out before any).
	ended := j.DueAt.IsZero() && (j.LastAt.IsZero() || !j.LastAt.After(now))
	if !pending || ended {
		return nil, nil
	}
	sched, err := schedule.FromJSONWithin(b, j.Schedule)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", j.ID, err)
	}
	sched = sched.Jittered(j.JitterOffset)
	used := 0
	if sched.Count() > 0 {
		used = j.Occurrences - loadedAhead(j, sched, now)
	}
	times := sched.Upcoming(now.Add(-time.Millisecond), n, used)
	if j.DueAt.IsZero() {
		for i, t := range times {
			if t.After(j.LastAt) {
				return times[:i], nil
			}
		}
	}
	return times, nil
}

// loadedAhead counts the occurrences of j the loader has planned (and so
// counted in j.Occurrences) that are still at or after now: those before its
// cursor due_at, or up to its final occurrence last_at once it has ended.
func loadedAhead(j *job.Job, sched *schedule.Schedule, now time.Time) int {
	k := 0
	t, ok := sched.Next(now.Add(-time.Millisecond))
	for ; ok && k < j.Occurrences && k < maxCountScan; k++ {
		if j.DueAt.IsZero() && t.After(j.LastAt) || !j.DueAt.IsZero() && !t.Before(j.DueAt) {
			break
		}
		t, ok = sched.Next(t)
	}
	return k
}

// previewRequest is the body of POST /api/v1/schedules/preview: the timing
// fields of a job spec, and how many occurrences to list.
type previewRequest struct {
	RunAt    *time.Time     `json:"run_at"`
	Delay    string         `json:"delay"`
	RunOn    string         `json:"run_on"`
	Timezone string         `json:"timezone"`
	Schedule *schedule.Spec `json:"schedule"`
	Jitter   string         `json:"jitter"`
	// SkipCalendars names calendars of the caller's whose days the
	// preview leaves out, as a job's skip_calendars.
	SkipCalendars json.RawMessage `json:"skip_calendars"`
	N             *int            `json:"n"`
}

// previewSchedule lists the occurrences a job with the given timing would
// have if it were created now, without creating anything. It applies the
// rules of POST /api/v1/jobs to the timing fields alone, so an error names
// only a field the request holds.
func (s *Server) previewSchedule(c *echo.Context) error {
	var req previewRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	n := DefaultUpcoming
	if req.N != nil {
		if *req.N < 1 || *req.N > MaxUpcoming {
			return apierr.Invalid("n", "must be an integer from 1 to "+strconv.Itoa(MaxUpcoming))
		}
		n = *req.N
	}
	var cals []*calendar.Calendar
	if len(req.SkipCalendars) > 0 {
		names, err := jobspec.ParseSkipCalendars(req.SkipCalendars)
		if err != nil {
			return err
		}
		if len(names) > 0 && req.Schedule == nil {
			return apierr.Invalid("skip_calendars", "applies to recurring jobs only")
		}
		if cals, err = s.ownerCalendars(c, access.Caller(c).User, names, "skip_calendars", true); err != nil {
			return err
		}
	}
	var times []time.Time
	var loc *time.Location
	if err := s.evaluate(c, req.Schedule != nil, func() (err error) {
		times, loc, err = req.preview(requestBudget(c), s.clock().UTC().Truncate(time.Millisecond), walkFor(n, cals))
		return err
	}); err != nil {
		return err
	}
	run, skipped := skipCalendars(times, 0, cals, n, loc)
	view := upcomingView(run, loc)
	view.Skipped = skipped
	return writeJSON(c, http.StatusOK, view)
}

// preview mirrors jobspec's timing rules: exactly one of run_at, delay,
// run_on (with timezone) or schedule; a recurring job's zone goes inside its
// schedule; a one-off time must not be past. A rule whose occurrences cost
// more than b to find is refused on its field.
func (r *previewRequest) preview(b *schedule.Budget, now time.Time, n int) ([]time.Time, *time.Location, error) {
	given := 0
	for _, set := range []bool{r.RunAt != nil, r.Delay != "", r.RunOn != "", r.Schedule != nil} {
		if set {
			given++
		}
	}
	switch {
	case given == 0:
		return nil, nil, apierr.Invalid("run_at", "one of run_at, delay, run_on or schedule is required")
	case given > 1:
		field := "schedule"
		if r.Schedule == nil {
			field = "run_at"
		}
		return nil, nil, apierr.Invalid(field, "give only one of run_at, delay, run_on or schedule")
	}
	if r.Schedule != nil {
		if r.Timezone != "" {
			return nil, nil, apierr.Invalid("timezone", "goes inside schedule for a recurring job")
		}
		sched, err := r.Schedule.CompileWithin(b, now)
		if err != nil {
			return nil, nil, err
		}
		used := sched.UsedBefore(now)
		times := sched.Upcoming(now.Add(-time.Millisecond), n, used)
		if err := sched.Err(); err != nil {
			return nil, nil, r.Schedule.BudgetError(err)
		}
		if r.Jitter != "" {
			d, err := jobspec.ParseJitter(r.Jitter)
			if err != nil {
				return nil, nil, err
			}
			if err := jobspec.JitterFits(sched, d, now); err != nil {
				return nil, nil, err
			}
		}
		return times, sched.Location(), nil
	}
	loc := time.UTC
	if r.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(r.Timezone); err != nil || r.Timezone == "Local" {
			return nil, nil, apierr.Invalid("timezone", "is not an IANA time zone such as Europe/Berlin")
		}
	}
	var at time.Time
	switch {
	case r.RunAt != nil:
		if at = r.RunAt.UTC().Truncate(time.Millisecond); at.Before(now) {
			return nil, nil, apierr.Invalid("run_at", "is in the past")
		}
	case r.Delay != "":
		d, err := jobspec.ParseDelay(r.Delay)
		if err != nil {
			return nil, nil, apierr.Invalid("delay", err.Error())
		}
		at = now.Add(d)
	default:
		if r.Timezone == "" {
			return nil, nil, apierr.Invalid("timezone", "is required with run_on (the date's local midnight)")
		}
		day, err := time.ParseInLocation("2006-01-02", r.RunOn, loc)
		if err != nil {
			return nil, nil, apierr.Invalid("run_on", "is not a date such as 2026-12-24")
		}
		if at = day.UTC(); at.Before(now) {
			return nil, nil, apierr.Invalid("run_on", "is in the past")
		}
	}
	if r.Jitter != "" {
		if _, err := jobspec.ParseJitter(r.Jitter); err != nil {
			return nil, nil, err
		}
	}
	return []time.Time{at}, loc, nil
}
