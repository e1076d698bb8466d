// Package calendar holds an owner's exclusion calendars: named sets of days
// and time ranges (public holidays, a maintenance window) on which the
// occurrences of the recurring jobs that name them in skip_calendars do not
// run, recorded skipped with the reason calendar instead.
package calendar

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

// Bounds on one calendar and on a job's list of them.
const (
	MaxDates     = 1000
	MaxRanges    = 1000
	MaxRRules    = 20
	MaxPerJob    = 10
	MaxPerOwner  = 1000
	maxNameBytes = 63
)

// DateLayout is how a calendar's dates are written: a day in its time zone.
const DateLayout = "2006-01-02"

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// ValidName checks a calendar's name: 1 to 63 of a-z, 0-9, '_', '.' and
// '-', starting with a letter or digit.
func ValidName(name string) bool { return len(name) <= maxNameBytes && nameRE.MatchString(name) }

// Range is a span of time [From, To) a calendar skips.
type Range struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Calendar is a named set of days and ranges. An instant is skipped when,
// in the calendar's time zone, it falls on one of Dates, inside one of
// Ranges, or on a day one of RRules has an occurrence on.
type Calendar struct {
	Name     string
	Timezone string
	Dates    []string
	Ranges   []Range
	RRules   []string

	loc    *time.Location
	dates  map[string]bool
	rrules []*schedule.Schedule
}

// rruleAnchor is where a calendar's RRULEs start (their DTSTART, in the
// calendar's zone): an INTERVAL counts from it.
var rruleAnchor = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Compile checks c and readies it for Skips. Its errors are
// *job.FieldError naming the field (timezone, dates[i], ranges[i].to,
// rrules[i]).
func (c *Calendar) Compile() error {
	if c.Timezone == "" {
		c.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil || c.Timezone == "Local" {
		return &job.FieldError{Field: "timezone", Message: fmt.Sprintf("unknown time zone %q", c.Timezone)}
	}
	c.loc = loc
	switch {
	case len(c.Dates) > MaxDates:
		return &job.FieldError{Field: "dates", Message: fmt.Sprintf("at most %d dates", MaxDates)}
	case len(c.Ranges) > MaxRanges:
		return &job.FieldError{Field: "ranges", Message: fmt.Sprintf("at most %d ranges", MaxRanges)}
	case len(c.RRules) > MaxRRules:
		return &job.FieldError{Field: "rrules", Message: fmt.Sprintf("at most %d rules", MaxRRules)}
	}
	c.dates = make(map[string]bool, len(c.Dates))
	for i, d := range c.Dates {
		t, err := time.Parse(DateLayout, d)
		if err != nil || t.Format(DateLayout) != d {
			return &job.FieldError{Field: fmt.Sprintf("dates[%d]", i), Message: "must be a day written YYYY-MM-DD"}
		}
		c.dates[d] = true
	}
	for i, r := range c.Ranges {
		switch {
		case r.From.IsZero():
			return &job.FieldError{Field: fmt.Sprintf("ranges[%d].from", i), Message: "is required: an RFC 3339 instant"}
		case !r.To.After(r.From):
			return &job.FieldError{Field: fmt.Sprintf("ranges[%d].to", i), Message: "must be after from"}
		}
	}
	c.rrules = c.rrules[:0]
	for i, text := range c.RRules {
		anchor := time.Date(rruleAnchor.Year(), rruleAnchor.Month(), rruleAnchor.Day(), 0, 0, 0, 0, loc)
		s, err := schedule.Spec{RRule: text, Timezone: c.Timezone, StartAt: &anchor}.Compile(anchor)
		if err != nil {
			msg := err.Error()
			var fe *job.FieldError
			if errors.As(err, &fe) {
				msg = fe.Message
			}
			return &job.FieldError{Field: fmt.Sprintf("rrules[%d]", i), Message: msg}
		}
		c.rrules = append(c.rrules, s)
	}
	slices.SortFunc(c.Ranges, func(a, b Range) int { return a.From.Compare(b.From) })
	return nil
}

// Skips says whether c skips instant t, and why ("2026-12-25", the range,
// or the rule), for the run's reason.
func (c *Calendar) Skips(t time.Time) (bool, string) {
	local := t.In(c.loc)
	day := local.Format(DateLayout)
	if c.dates[day] {
		return true, "date " + day
	}
	for _, r := range c.Ranges {
		if r.From.After(t) {
			break
		}
		if t.Before(r.To) {
			return true, "range " + r.From.UTC().Format(time.RFC3339) + " to " + r.To.UTC().Format(time.RFC3339)
		}
	}
	if len(c.rrules) > 0 {
		start := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, c.loc)
		end := start.AddDate(0, 0, 1)
		for i, s := range c.rrules {
			if at, ok := s.Next(start.Add(-time.Millisecond)); ok && at.Before(end) {
				return true, fmt.Sprintf("rule %q on %s", c.RRules[i], day)
			}
		}
	}
	return false, ""
}

// Skip says which of cals, if any, skips t: the reason a skipped run
// records ("calendar de-holidays: date 2026-12-25"), "" for none.
func Skip(cals []*Calendar, t time.Time) string {
	for _, c := range cals {
		if ok, why := c.Skips(t); ok {
			return "calendar " + c.Name + ": " + why
		}
	}
	return ""
}
