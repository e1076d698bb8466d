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
	// after < w <= limit, in increasing order; it reports false when done,
	// or when b ran out.
	walls(after, limit int64, b *Budget) func() (int64, bool)
}

// Schedule is a compiled, valid Spec. It is immutable; one bound to a
// Budget (Within) is as safe for concurrent use as its budget, which is not.
type Schedule struct {
	// budget bounds the work of every evaluation; nil gives each call a
	// budget of its own.
	budget      *Budget
	spec        Spec
	loc         *time.Location
	zone        zone
	rule        rule
	startMs     int64
	endMs       int64
	hasEnd      bool
	gapSkip     bool
	overlapBoth bool
	// offsetMs shifts every occurrence later by a job's jitter offset
	// (Jittered): the rule, start_at and end_at are evaluated as written,
	// and each instant they yield is then offsetMs later.
	offsetMs int64
}

// Within returns the schedule bound to b: every evaluation spends from it,
// and once it has run out answers "no occurrence" (see Err).
func (s *Schedule) Within(b *Budget) *Schedule {
	c := *s
	c.budget = b
	return &c
}

// Jittered returns the schedule with every occurrence moved later by
// offset, a job's stable jitter offset: a whole shift, so the order of
// occurrences, their count and the gaps between them stay as the rule says,
// and every evaluation (Next, Load, Misfired, Rewind...) answers in the
// shifted times.
func (s *Schedule) Jittered(offset time.Duration) *Schedule {
	c := *s
	c.offsetMs = offset.Milliseconds()
	return &c
}

// Unbounded returns the schedule without its start_at and end_at: its rule
// in its time zone, from 1970 on, as a backfill walks a past range its
// owner names (which may lie before the job was created). An RRULE has no
// occurrence before its DTSTART all the same.
func (s *Schedule) Unbounded() *Schedule {
	c := *s
	c.startMs, c.hasEnd = minStart.UnixMilli(), false
	return &c
}

// Err says why an evaluation answered "no occurrence" when the answer is not
// that none exists: ErrTooExpensive, or the budget's context's error. It is
// nil for a schedule without a budget of its own.
func (s *Schedule) Err() error { return s.budget.Err() }

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
		lower = max(lower, t.UnixMilli()-s.offsetMs)
	}
	sec, ok := s.next(lower)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(sec*1000 + s.offsetMs).UTC(), true
}

// First returns the first occurrence at or after start_at.
func (s *Schedule) First() (time.Time, bool) {
	return s.Next(time.UnixMilli(s.startMs - 1 + s.offsetMs))
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
	b := s.budget
	if b == nil {
		b = unitsOnly()
	}
	if !b.spend(1) {
		return 0, false
	}
	w0 := s.zone.wallFloor(ts)
	limit := min(w0+searchYears*366*86400, maxTime.Unix())
	if s.hasEnd {
		limit = min(limit, floorDiv(s.endMs, 1000)+maxOffset) // later walls fall past end_at
	}
	walls := s.rule.walls(w0-1, limit, b)

	var (
		best, stop int64
		found      bool
		buf        [4]int64
	)
	for range maxSteps {
		w, ok := walls()
		if !ok || found && w > stop || !b.spend(1) {
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
	if !found || s.hasEnd && best*1000 >= s.endMs || b.Err() != nil {
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

// rateSample bounds the occurrences PerHour looks at.
const rateSample = 1000

// PerHour is how many times an hour the schedule runs from after: the number
// of occurrences in the hour that starts with the first one after after, or,
// when its first rateSample occurrences come sooner, their number scaled to
// an hour. Starting at the first occurrence rather than at after means a rule
// that runs every second between 09:00 and 10:00 counts 3,600 whenever it is
// asked. It is 0 when nothing follows after (or the budget ran out: see Err).
func (s *Schedule) PerHour(after time.Time) int {
	first, ok := s.Next(after)
	if !ok {
		return 0
	}
	end := first.Add(time.Hour)
	n, t := 1, first
	for n < rateSample {
		next, ok := s.Next(t)
		if !ok || !next.Before(end) {
			return n
		}
		n, t = n+1, next
	}
	// n occurrences span n-1 intervals.
	span := t.Sub(first)
	if span <= 0 {
		return n * 3600
	}
	return int(min(int64(n-1)*int64(time.Hour)/int64(span), math.MaxInt32))
}

// UsedBefore counts the occurrences from start_at that lie before t, at most
// Count (0 for an unlimited schedule): what a start_at in the past spends of
// a count.
func (s *Schedule) UsedBefore(t time.Time) int {
	c := s.spec.Count
	if c == 0 {
		return 0
	}
	k := 0
	at, ok := s.First()
	for ; ok && at.Before(t) && k < c; k++ {
		at, ok = s.Next(at)
	}
	return k
}
