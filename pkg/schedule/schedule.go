package schedule

import (
	"encoding/json"
	"math"
	"sync/atomic"
	"time"
)

const (
	// searchYears is how far past its argument Next looks before answering
	// that there is no occurrence. Long enough for the rarest calendar
	// rules people write (a weekday falling on 29 February recurs after 28
	// or 40 years), short enough to keep a fruitless search cheap.
	searchYears = 50
	// maxSteps bounds the wall times one Next examines. Only an overlap
	// with a dense rule needs more than a handful (every second through a
	// repeated hour: about 3,600).
	maxSteps = 200_000
)

// rule is a recurrence over wall times (unix seconds of the wall clock read
// as UTC).
type rule interface {
	// walls returns an iterator over the rule's wall times w with
	// after < w <= limit, in increasing order; it reports false when done.
	walls(after, limit int64) func() (int64, bool)
}

// Schedule is a compiled, valid Spec. It is immutable and safe for
// concurrent use.
type Schedule struct {
	spec        Spec
	loc         *time.Location
	zone        zone
	rule        rule
	startMs     int64
	endMs       int64
	hasEnd      bool
	gapSkip     bool
	overlapBoth bool
}

// Location returns the time zone the schedule is evaluated in.
func (s *Schedule) Location() *time.Location { return s.loc }

// Spec returns the normalized spec, every default filled in (timezone,
// start_at, misfire, misfire_max, dst, and at/on for every), ready to be
// stored: compiling it again gives the same occurrences.
func (s *Schedule) Spec() Spec {
	out := s.spec
	if out.StartAt != nil {
		t := *out.StartAt
		out.StartAt = &t
	}
	if out.EndAt != nil {
		t := *out.EndAt
		out.EndAt = &t
	}
	if out.DST != nil {
		d := *out.DST
		out.DST = &d
	}
	out.On = append(json.RawMessage(nil), out.On...)
	if len(out.On) == 0 {
		out.On = nil
	}
	return out
}

// Count returns the total number of occurrences the schedule allows from
// start_at, 0 for unlimited. Next does not apply it: callers count the
// occurrences they have used.
func (s *Schedule) Count() int { return s.spec.Count }

// Next returns the first occurrence strictly after t, in UTC with millisecond
// precision, honouring start_at (nothing before it happens) and end_at. It
// reports false when there is none within the search horizon. Count is not
// applied.
//
// The search starts from t, never from start_at, so its cost does not grow
// with the age of a schedule.
func (s *Schedule) Next(t time.Time) (time.Time, bool) {
	if t.After(maxTime) {
		return time.Time{}, false
	}
	lower := s.startMs - 1
	if !t.Before(minStart) {
		lower = max(lower, t.UnixMilli())
	}
	sec, ok := s.next(lower)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(sec * 1000).UTC(), true
}

// First returns the first occurrence at or after start_at.
func (s *Schedule) First() (time.Time, bool) {
	return s.Next(time.UnixMilli(s.startMs - 1))
}

// MaxUpcoming bounds the n of Upcoming.
const MaxUpcoming = 100_000

// Upcoming returns up to n (at most MaxUpcoming) occurrences strictly after
// t, fewer when count allows fewer after used occurrences were already used.
// It is meant for previews.
func (s *Schedule) Upcoming(t time.Time, n, used int) []time.Time {
	n = min(n, MaxUpcoming)
	if c := s.spec.Count; c > 0 {
		n = min(n, c-max(used, 0))
	}
	if n <= 0 {
		return nil
	}
	out := make([]time.Time, 0, min(n, 1024))
	for len(out) < n {
		next, ok := s.Next(t)
		if !ok {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// next returns the first occurrence (unix seconds) whose instant is after
// lowerMs (unix milliseconds).
//
// Walls are visited in increasing order from the lowest that can yield an
// instant after ts (zone.wallFloor). Once a candidate best is known, walls
// above the largest wall of any instant in (ts, best) cannot improve on it
// (zone.wallCeil), so the walk stops there: usually at once, and within an
// overlap after the repeated stretch.
func (s *Schedule) next(lowerMs int64) (int64, bool) {
	ts := floorDiv(lowerMs, 1000) // want the first occurrence i > ts (whole seconds)
	if s.hasEnd && (ts+1)*1000 >= s.endMs {
		return 0, false
	}
	w0 := s.zone.wallFloor(ts)
	limit := min(w0+searchYears*366*86400, maxTime.Unix())
	if s.hasEnd {
		limit = min(limit, floorDiv(s.endMs, 1000)+maxOffset) // later walls fall past end_at
	}
	walls := s.rule.walls(w0-1, limit)

	var (
		best, stop int64
		found      bool
		buf        [4]int64
	)
	for range maxSteps {
		w, ok := walls()
		if !ok || found && w > stop {
			break
		}
		if s.hasEnd && (w-maxOffset)*1000 >= s.endMs {
			break // every instant of w and later walls is at or past end_at
		}
		for _, i := range s.zone.resolve(w, s.gapSkip, s.overlapBoth, buf[:0]) {
			if i > ts && (!found || i < best) {
				best, found = i, true
				stop = math.MinInt64
				if best-1 > ts {
					stop = s.zone.wallCeil(ts+1, best-1)
				}
			}
		}
		if found && w >= stop {
			break
		}
	}
	if !found || s.hasEnd && best*1000 >= s.endMs {
		return 0, false
	}
	return best, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// libraryPanics counts panics recovered from the cron and rrule libraries;
// tests assert it stays 0.
var libraryPanics atomic.Int64

// guard runs f, which calls into a parsing library, and turns a panic into a
// false result so that one bad schedule cannot take a service down.
func guard(f func()) (ok bool) {
	defer func() {
		if recover() != nil {
			libraryPanics.Add(1)
			ok = false
		}
	}()
	f()
	return true
}
