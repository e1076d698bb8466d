package schedule

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// Misfire policies: what happens to an occurrence that could not start on time.
const (
	MisfireRunOnce = "run_once" // run the latest missed occurrence, skip older ones
	MisfireCatchUp = "catch_up" // run missed occurrences, at most misfire_max of them
	MisfireSkip    = "skip"     // skip every missed occurrence
)

// DST policies; see the package documentation.
const (
	GapShift     = "shift" // a wall time in a spring-forward gap runs at the end of the gap
	GapSkip      = "skip"  // a wall time in a gap does not run
	OverlapFirst = "first" // a repeated wall time runs at its earlier instant only
	OverlapBoth  = "both"  // a repeated wall time runs at both instants
)

// Limits on a spec.
const (
	MaxCount          = 1_000_000 // count
	DefaultMisfireMax = 100       // misfire_max when unset
	MaxMisfireMax     = 10_000    // misfire_max
)

// Spec is the "schedule" object of a recurring job, as clients send it and as
// it is stored. Exactly one of Cron, RRule and Every is set.
type Spec struct {
	// Cron: 5 fields (minute hour day-of-month month day-of-week) or 6 with a
	// leading seconds field, or a descriptor such as @daily.
	Cron string `json:"cron,omitempty"`
	// RRule: an RFC 5545 RRULE body such as "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9",
	// with an optional "RRULE:" prefix. DTSTART, COUNT and UNTIL are refused:
	// start_at, count and end_at say those.
	RRule string `json:"rrule,omitempty"`
	// Every: "day", "week" or "month", with At and On.
	Every string `json:"every,omitempty"`
	// At: with Every, the local time "HH:MM" or "HH:MM:SS" (default "00:00").
	At string `json:"at,omitempty"`
	// On: with every=week a weekday name ("monday" or "mon"); with
	// every=month a day of month 1..31 (a shorter month runs on its last day)
	// or -1 for the last day. Default: start_at's weekday or day of month.
	On json.RawMessage `json:"on,omitempty"`
	// Timezone: the IANA zone the rule is evaluated in; default "UTC".
	Timezone string `json:"timezone,omitempty"`
	// StartAt: no occurrence lies before it; default the creation time.
	StartAt *time.Time `json:"start_at,omitempty"`
	// EndAt: exclusive upper bound, after StartAt.
	EndAt *time.Time `json:"end_at,omitempty"`
	// Count: total occurrences from StartAt; 0 is unlimited.
	Count int `json:"count,omitempty"`
	// Misfire: "run_once" (default), "catch_up" or "skip".
	Misfire string `json:"misfire,omitempty"`
	// MisfireMax: with catch_up, at most this many missed occurrences run
	// (default 100).
	MisfireMax int `json:"misfire_max,omitempty"`
	// DST: what wall times in a gap or an overlap do; see the package doc.
	DST *DSTPolicy `json:"dst,omitempty"`
}

// DSTPolicy says what happens to wall times that a time zone change skips
// (Gap) or repeats (Overlap).
type DSTPolicy struct {
	Gap     string `json:"gap,omitempty"`     // "shift" (default) or "skip"
	Overlap string `json:"overlap,omitempty"` // "first" (default) or "both"
}

// minStart and maxTime bound start_at and end_at: tock stores unix
// milliseconds, and JSON cannot carry years past 9999.
var (
	minStart = time.Date(1970, time.January, 1, 0, 0, 0, 0, time.UTC)
	maxTime  = time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)
)

// locations caches loaded zones by name: time.LoadLocation reads and parses a
// file on every call, and the loader compiles many schedules per round. Only
// names that loaded are kept, so the cache is bounded by the IANA database.
var locations sync.Map // string -> *time.Location

func loadLocation(name string) (*time.Location, error) {
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	locations.Store(name, loc)
	return loc, nil
}

func invalid(field, format string, args ...any) error {
	return &job.FieldError{Field: "schedule." + field, Message: fmt.Sprintf(format, args...)}
}

// ceilMilli rounds t up to a whole millisecond, in UTC. Occurrences fall on
// whole seconds, so "at or after start" and "before end" keep their meaning.
func ceilMilli(t time.Time) time.Time {
	u := t.UTC()
	if r := u.Truncate(time.Millisecond); !r.Equal(u) {
		return r.Add(time.Millisecond)
	}
	return u.Truncate(time.Millisecond)
}

// Compile validates the spec and compiles it, with a budget of its own for
// the check and none for later evaluations (each gets its own): see
// CompileWithin, which callers serving a request or a loader round use.
func (s Spec) Compile(now time.Time) (*Schedule, error) { return s.CompileWithin(nil, now) }

// CompileWithin validates the spec and compiles it, spending from b, and
// returns the schedule bound to b (see Within). now is the creation time, the
// default start_at. Every error is a *job.FieldError naming the field
// ("schedule.cron", "schedule.timezone", ...), so it matches job.ErrInvalid,
// except that a context that ended is returned as its error. A schedule
// without any occurrence after start_at (and before end_at) is an error on
// its expression field, and so is one whose first occurrence costs more than
// b allows ("is too expensive to evaluate").
func (s Spec) CompileWithin(b *Budget, now time.Time) (*Schedule, error) {
	n := Spec{Count: s.Count}

	var kinds []string
	if s.Cron != "" {
		kinds = append(kinds, "cron")
	}
	if s.RRule != "" {
		kinds = append(kinds, "rrule")
	}
	if s.Every != "" {
		kinds = append(kinds, "every")
	}
	switch len(kinds) {
	case 0:
		return nil, &job.FieldError{Field: "schedule", Message: "set one of cron, rrule or every"}
	case 1:
	default:
		return nil, &job.FieldError{Field: "schedule", Message: fmt.Sprintf("set only one of cron, rrule or every (got %s)", strings.Join(kinds, " and "))}
	}
	kind := kinds[0]

	n.Timezone = strings.TrimSpace(s.Timezone)
	if n.Timezone == "" {
		n.Timezone = "UTC"
	}
	if n.Timezone == "Local" {
		return nil, invalid("timezone", `"Local" is not an IANA zone name`)
	}
	loc, err := loadLocation(n.Timezone)
	if err != nil {
		return nil, invalid("timezone", "unknown time zone %q", n.Timezone)
	}

	start := now
	if s.StartAt != nil {
		start = *s.StartAt
	}
	start = ceilMilli(start)
	if start.Before(minStart) || start.After(maxTime) {
		return nil, invalid("start_at", "must be between 1970-01-01 and 9999-12-31")
	}
	n.StartAt = &start
	if s.EndAt != nil {
		end := ceilMilli(*s.EndAt)
		if !end.After(start) {
			return nil, invalid("end_at", "must be after start_at")
		}
		if end.After(maxTime) {
			return nil, invalid("end_at", "must be before 9999-12-31")
		}
		n.EndAt = &end
	}

	if s.Count < 0 || s.Count > MaxCount {
		return nil, invalid("count", "must be between 0 (unlimited) and %d", MaxCount)
	}

	n.Misfire = s.Misfire
	if n.Misfire == "" {
		n.Misfire = MisfireRunOnce
	}
	if n.Misfire != MisfireRunOnce && n.Misfire != MisfireCatchUp && n.Misfire != MisfireSkip {
		return nil, invalid("misfire", "must be %q, %q or %q", MisfireRunOnce, MisfireCatchUp, MisfireSkip)
	}
	n.MisfireMax = s.MisfireMax
	if n.MisfireMax == 0 {
		n.MisfireMax = DefaultMisfireMax
	}
	if n.MisfireMax < 1 || n.MisfireMax > MaxMisfireMax {
		return nil, invalid("misfire_max", "must be between 1 and %d", MaxMisfireMax)
	}

	dst := DSTPolicy{Gap: GapShift, Overlap: OverlapFirst}
	if s.DST != nil {
		if s.DST.Gap != "" {
			dst.Gap = s.DST.Gap
		}
		if s.DST.Overlap != "" {
			dst.Overlap = s.DST.Overlap
		}
	}
	if dst.Gap != GapShift && dst.Gap != GapSkip {
		return nil, invalid("dst.gap", "must be %q or %q", GapShift, GapSkip)
	}
	if dst.Overlap != OverlapFirst && dst.Overlap != OverlapBoth {
		return nil, invalid("dst.overlap", "must be %q or %q", OverlapFirst, OverlapBoth)
	}
	n.DST = &dst

	if kind != "every" {
		if s.At != "" {
			return nil, invalid("at", "is only allowed with every")
		}
		if len(s.On) != 0 && string(s.On) != "null" {
			return nil, invalid("on", "is only allowed with every")
		}
	}

	// The wall clock of start_at anchors an rrule and defaults "on".
	wallStart := start.In(loc)
	anchor := time.Date(wallStart.Year(), wallStart.Month(), wallStart.Day(),
		wallStart.Hour(), wallStart.Minute(), wallStart.Second(), 0, time.UTC)

	var r rule
	switch kind {
	case "cron":
		n.Cron = strings.TrimSpace(s.Cron)
		c, err := parseCron(n.Cron)
		if err != nil {
			return nil, invalid("cron", "%s", err)
		}
		r = c
	case "rrule":
		body, ex, lines, err := splitRRule(s.RRule, loc)
		if err != nil {
			return nil, invalid("rrule", "%s", err)
		}
		n.RRule = body + lines
		rr, err := parseRRule(body, anchor)
		if err != nil {
			return nil, invalid("rrule", "%s", err)
		}
		rr.ex = ex
		r = rr
	case "every":
		e := &everyRule{unit: strings.ToLower(strings.TrimSpace(s.Every))}
		if e.unit != "day" && e.unit != "week" && e.unit != "month" {
			return nil, invalid("every", `must be "day", "week" or "month"`)
		}
		n.Every = e.unit
		n.At = strings.TrimSpace(s.At)
		if n.At == "" {
			n.At = "00:00"
		}
		if e.clock, err = parseAt(n.At); err != nil {
			return nil, invalid("at", "%s", err)
		}
		if e.unit == "day" && len(s.On) != 0 && string(s.On) != "null" {
			return nil, invalid("on", "is only allowed with every=week or every=month")
		}
		if e.weekday, e.mday, n.On, err = parseOn(e.unit, s.On, anchor); err != nil {
			return nil, invalid("on", "%s", err)
		}
		r = e
	}

	sc := &Schedule{
		spec:        n,
		loc:         loc,
		zone:        zone{loc: loc},
		rule:        r,
		startMs:     start.UnixMilli(),
		gapSkip:     dst.Gap == GapSkip,
		overlapBoth: dst.Overlap == OverlapBoth,
	}
	if n.EndAt != nil {
		sc.endMs, sc.hasEnd = n.EndAt.UnixMilli(), true
	}
	sc.budget = b
	check := b
	if check == nil {
		check = unitsOnly()
	}
	if _, ok := sc.Within(check).First(); !ok {
		if err := check.Err(); err != nil {
			return nil, s.BudgetError(err)
		}
		if sc.hasEnd {
			return nil, invalid(kind, "has no occurrence between start_at and end_at")
		}
		return nil, invalid(kind, "has no occurrence in the %d years after start_at", searchYears)
	}
	return sc, nil
}
