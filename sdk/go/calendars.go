package tock

import (
	"context"
	"iter"
	"net/http"
	"net/url"
)

// CalendarsService holds the routes under /api/v1/calendars: an owner's
// named days off (dates, time ranges and RRULEs) that the recurring jobs
// naming them in SkipCalendars do not run on. It acts on the caller's
// calendars; Of acts on another user's.
type CalendarsService struct {
	c *Client
	// owner, when set, is sent as ?owner= on every call (administrators).
	owner string
}

// Of returns the service acting on the calendars of the user with id owner
// instead of the caller's: allowed to administrators (a user may name only
// themself). c.Calendars.Of(id).Put(ctx, "de-holidays", req).
func (s *CalendarsService) Of(owner string) *CalendarsService {
	return &CalendarsService{c: s.c, owner: owner}
}

func (s *CalendarsService) query() url.Values {
	q := query{}
	q.str("owner", s.owner)
	return url.Values(q)
}

// Put creates the calendar name (created true) or replaces it as a whole:
// a list req leaves out is emptied, and an empty Timezone is UTC. It holds
// from the next occurrence a worker starts. A refused calendar is an
// *Error whose Field names the entry at fault ("dates[1]", "ranges[0].to",
// "rrules[0]", "timezone"). Like Jobs.Put it carries an Idempotency-Key,
// random unless given, the same on every retry, so a retry whose first try
// created the calendar still says created.
func (s *CalendarsService) Put(ctx context.Context, name string, req CalendarRequest, opts ...CallOption) (cal *Calendar, created bool, err error) {
	var out Calendar
	var code int
	rq := call{method: http.MethodPut, path: path("/api/v1/calendars", name), query: s.query(), body: req, create: true, status: &code}
	if err := s.c.do(ctx, rq, &out, opts...); err != nil {
		return nil, false, err
	}
	return &out, code == http.StatusCreated, nil
}

// Get returns one calendar; one the owner does not have is IsNotFound.
func (s *CalendarsService) Get(ctx context.Context, name string) (*Calendar, error) {
	var out Calendar
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/calendars", name), query: s.query()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List returns one page of calendars in name order; limit 0 is the
// server's default, cursor "" the first page.
func (s *CalendarsService) List(ctx context.Context, limit int, cursor string) (*CalendarList, error) {
	q := query(s.query())
	q.int("limit", limit)
	q.str("cursor", cursor)
	var out CalendarList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/calendars", query: url.Values(q)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// All yields every calendar, page after page, in name order.
func (s *CalendarsService) All(ctx context.Context) iter.Seq2[Calendar, error] {
	return all(ctx, "", func(ctx context.Context, cursor string) ([]Calendar, string, error) {
		page, err := s.List(ctx, 0, cursor)
		if err != nil {
			return nil, "", err
		}
		return page.Calendars, page.NextCursor, nil
	})
}

// Delete removes a calendar. While a job that can still run names it in
// its SkipCalendars the server refuses (IsConflict): take it out of those
// jobs first.
func (s *CalendarsService) Delete(ctx context.Context, name string, opts ...CallOption) error {
	return s.c.do(ctx, call{method: http.MethodDelete, path: path("/api/v1/calendars", name), query: s.query()}, nil, opts...)
}

// Occurrences is a preview's whole answer: the coming occurrences that
// run, and those before the last of them that a calendar of the job's (or
// of the preview's SkipCalendars) skips, each with why.
type Occurrences struct {
	// Next is earliest first; empty when nothing is left to run.
	Next []Upcoming `json:"next"`
	// Skipped is nil when no calendar skips any.
	Skipped []SkippedUpcoming `json:"skipped,omitempty"`
}

func occurrences(l upcomingList) *Occurrences {
	return &Occurrences{Next: l.Next, Skipped: l.Skipped}
}
