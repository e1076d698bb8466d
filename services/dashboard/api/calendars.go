package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/calendar"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// The calendar routes. A calendar is an owner's named set of days, time
// ranges and RRULEs whose days the recurring jobs that name it in
// skip_calendars do not run on. An administrator acts on another user's
// calendars with ?owner=.

// Calendar is a calendar as the API shows it.
type Calendar struct {
	Name      string          `json:"name"`
	Timezone  string          `json:"timezone"`
	Dates     []string        `json:"dates"`
	Ranges    []CalendarRange `json:"ranges"`
	RRules    []string        `json:"rrules"`
	CreatedAt Time            `json:"created_at"`
	UpdatedAt Time            `json:"updated_at"`
}

// CalendarRange is a span of time [from, to) a calendar skips.
type CalendarRange struct {
	From Time `json:"from"`
	To   Time `json:"to"`
}

// CalendarList is one page of GET /api/v1/calendars, in name order;
// NextCursor is "" on the last page.
type CalendarList struct {
	Calendars  []Calendar `json:"calendars"`
	NextCursor string     `json:"next_cursor"`
}

// calendarRequest is the body of PUT /api/v1/calendars/{name}: the
// calendar as a whole (a list left out is empty).
type calendarRequest struct {
	Timezone string   `json:"timezone"`
	Dates    []string `json:"dates"`
	Ranges   []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"ranges"`
	RRules []string `json:"rrules"`
}

var errCalendarNotFound = apierr.New(http.StatusNotFound, apierr.CodeNotFound, "name", "no such calendar")

func calendarView(c *store.StoredCalendar) Calendar {
	out := Calendar{Name: c.Name, Timezone: c.Timezone, Dates: nonNilStrings(c.Dates), Ranges: []CalendarRange{},
		RRules: nonNilStrings(c.RRules), CreatedAt: Time{c.CreatedAt}, UpdatedAt: Time{c.UpdatedAt}}
	for _, r := range c.Ranges {
		out.Ranges = append(out.Ranges, CalendarRange{From: Time{r.From}, To: Time{r.To}})
	}
	return out
}

func nonNilStrings(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// calendarOwner is whose calendars the request acts on: the caller's, or
// for an administrator the user named by ?owner=.
func calendarOwner(c *echo.Context) (uuid.UUID, error) { return ownerParam(c, "calendars") }

// calendarName reads the {name} path parameter.
func calendarName(c *echo.Context) (string, error) {
	name := c.Param("name")
	if !calendar.ValidName(name) {
		return "", apierr.Invalid("name", "is not a calendar name: 1 to 63 of a-z, 0-9, _, . and -, starting with a letter or digit")
	}
	return name, nil
}

// putCalendar creates or replaces a calendar: 201 when new, 200 otherwise.
// It holds from the next occurrence a worker starts on.
func (s *Server) putCalendar(c *echo.Context) error {
	owner, err := calendarOwner(c)
	if err != nil {
		return err
	}
	name, err := calendarName(c)
	if err != nil {
		return err
	}
	var req calendarRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	cal := &calendar.Calendar{Name: name, Timezone: req.Timezone, Dates: req.Dates, RRules: req.RRules}
	if len(req.Ranges) > calendar.MaxRanges {
		return apierr.Invalid("ranges", fmt.Sprintf("at most %d ranges", calendar.MaxRanges))
	}
	for i, r := range req.Ranges {
		var rg calendar.Range
		for _, end := range []struct {
			field, v string
			into     *time.Time
		}{{"from", r.From, &rg.From}, {"to", r.To, &rg.To}} {
			t, err := time.Parse(time.RFC3339Nano, end.v)
			if err != nil {
				return apierr.Invalid(fmt.Sprintf("ranges[%d].%s", i, end.field), "is not an RFC 3339 instant such as 2026-12-24T00:00:00Z")
			}
			*end.into = t.UTC().Truncate(time.Millisecond)
		}
		cal.Ranges = append(cal.Ranges, rg)
	}
	if err := cal.Compile(); err != nil {
		return err
	}
	p := access.Caller(c)
	out, created, err := s.store.PutCalendar(c.Request().Context(), owner, cal, s.now(), p.Audit(store.ActionCalendarPut))
	switch {
	case errors.Is(err, store.ErrTooManyCalendars):
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "name", fmt.Sprintf("you hold %d calendars already", calendar.MaxPerOwner))
	case err != nil:
		return apierr.Dependency(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(c, status, calendarView(out))
}

// getCalendar shows one calendar.
func (s *Server) getCalendar(c *echo.Context) error {
	owner, err := calendarOwner(c)
	if err != nil {
		return err
	}
	name, err := calendarName(c)
	if err != nil {
		return err
	}
	cal, err := s.store.GetCalendar(c.Request().Context(), owner, name)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return errCalendarNotFound
	case err != nil:
		return apierr.Dependency(err)
	}
	return writeJSON(c, http.StatusOK, calendarView(cal))
}

// listCalendars lists the owner's calendars in name order, a page at a
// time (?limit=, ?cursor= the last name of the page before).
func (s *Server) listCalendars(c *echo.Context) error {
	owner, err := calendarOwner(c)
	if err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	after := c.QueryParam("cursor")
	cals, err := s.store.ListCalendars(c.Request().Context(), owner, after, limit+1)
	if err != nil {
		return apierr.Dependency(err)
	}
	out := CalendarList{Calendars: []Calendar{}}
	for i, cal := range cals {
		if i == limit {
			out.NextCursor = cals[i-1].Name
			break
		}
		out.Calendars = append(out.Calendars, calendarView(cal))
	}
	return writeJSON(c, http.StatusOK, out)
}

// deleteCalendar removes a calendar no job that can still run names
// (409 otherwise): 204.
func (s *Server) deleteCalendar(c *echo.Context) error {
	owner, err := calendarOwner(c)
	if err != nil {
		return err
	}
	name, err := calendarName(c)
	if err != nil {
		return err
	}
	err = s.store.DeleteCalendar(c.Request().Context(), owner, name, s.now(), access.Caller(c).Audit(store.ActionCalendarDelete))
	var inUse *store.CalendarInUseError
	switch {
	case errors.Is(err, job.ErrNotFound):
		return errCalendarNotFound
	case errors.As(err, &inUse):
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "name", inUse.Error()+": take it out of their skip_calendars first")
	case err != nil:
		return apierr.Dependency(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// SkippedUpcoming is an occurrence a preview leaves out because a calendar
// skips it, and why.
type SkippedUpcoming struct {
	At     string `json:"at"`
	UTC    string `json:"utc"`
	Reason string `json:"reason"`
}

// maxSkippedShown bounds the skipped occurrences a preview lists.
const maxSkippedShown = 100

// ownerCalendars reads the named calendars of owner's, compiled, for a
// preview; a name the owner has no calendar of is a 400 on field when
// strict, and left out otherwise.
func (s *Server) ownerCalendars(c *echo.Context, owner uuid.UUID, names []string, field string, strict bool) ([]*calendar.Calendar, error) {
	if len(names) == 0 {
		return nil, nil
	}
	keys := make([]store.CalendarKey, len(names))
	for i, n := range names {
		keys[i] = store.CalendarKey{Owner: owner, Name: n}
	}
	got, err := s.store.Calendars(c.Request().Context(), keys)
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	out := make([]*calendar.Calendar, 0, len(names))
	for _, k := range keys {
		cal := got[k]
		switch {
		case cal == nil && strict:
			return nil, apierr.Invalid(field, fmt.Sprintf("you have no calendar named %q", k.Name))
		case cal != nil:
			out = append(out, cal)
		}
	}
	return out, nil
}

// skipCalendars splits times, due times that are their nominal ones plus
// offset, into the first n that cals let run and those they skip before
// the last of those (at most maxSkippedShown), shown in loc.
func skipCalendars(times []time.Time, offset time.Duration, cals []*calendar.Calendar, n int, loc *time.Location) ([]time.Time, []SkippedUpcoming) {
	if len(cals) == 0 {
		return times[:min(n, len(times))], nil
	}
	var run []time.Time
	var skipped []SkippedUpcoming
	for _, t := range times {
		if len(run) == n {
			break
		}
		if why := calendar.Skip(cals, t.Add(-offset)); why != "" {
			if len(skipped) < maxSkippedShown {
				skipped = append(skipped, SkippedUpcoming{At: t.In(loc).Format(time.RFC3339Nano), UTC: t.UTC().Format(time.RFC3339Nano), Reason: why})
			}
			continue
		}
		run = append(run, t)
	}
	return run, skipped
}
