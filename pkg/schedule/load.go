package schedule

import (
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// The walk of Load stops after loadSpan or loadOccurrences, whichever comes
// first. Eight days see every weekday, and a UTC day twice, so a weekly rule
// and one that moves with a change of offset show all their hours; 4,000
// occurrences are more than an hour of a rule that runs every second, so
// every minute and second such a rule fires in is seen, and the walk of the
// densest rule stays a few thousand steps of Next.
const (
	loadSpan        = 8 * 24 * time.Hour
	loadOccurrences = 4000
)

// Load is when the schedule fires, folded onto the UTC day (see job.Load):
// the hours, minutes and seconds of its occurrences from the first one after
// after, for loadSpan or loadOccurrences of them, whichever comes first, and
// no more than its count allows once used occurrences are spent. Starting at
// the first occurrence rather than at after means a job that starts next
// month, or runs once a month, still shows when it fires.
//
// A walk that stopped on the number of occurrences before it covered a whole
// day has not seen every hour the rule may fire in: it counts every hour.
// The minutes and seconds need no such care, since 4,000 occurrences at most
// one a second span more than an hour.
//
// Past the first occurrence, the walk follows one iterator over the rule's
// wall times, as Next does within one call, rather than calling Next for
// each occurrence: an RRULE restarts its expansion on every Next, which
// would spend a whole request's budget on 4,000 occurrences of
// FREQ=SECONDLY. Wall times come in order, and so do their instants, but in
// an hour the clock repeats under dst.overlap "both", where the walk takes
// the two instants of each wall time together; only a count (or the walk's
// 4,000) that runs out within that hour can then fold a slightly different
// set of occurrences.
//
// Nothing following after is an empty Load. So is a budget that ran out, or
// whatever the walk saw until then: the caller checks Err.
func (s *Schedule) Load(after time.Time, used int) job.Load {
	var l job.Load
	left := loadOccurrences
	if c := s.spec.Count; c > 0 {
		left = min(left, c-max(used, 0))
	}
	if left <= 0 {
		return l
	}
	first, ok := s.Next(after)
	if !ok {
		return l
	}
	b := s.budget
	if b == nil {
		b = unitsOnly()
	}
	// Instants i (unix seconds) in [lo, hi): from the first occurrence, for
	// loadSpan, before end_at.
	lo := first.Unix()
	hi := lo + int64(loadSpan/time.Second)
	if s.hasEnd {
		hi = min(hi, floorDiv(s.endMs-1, 1000)+1)
	}
	walls := s.rule.walls(s.zone.wallFloor(lo-1)-1, min(s.zone.wallCeil(lo, hi-1), maxTime.Unix()), b)
	var (
		n, reach int
		last     = lo - 1
		buf      [4]int64
		// p is the period of the last wall time resolved: while every
		// instant a wall time could be lies in it, the wall time is one
		// instant, found without asking the zone again (as resolve would).
		p period
	)
	for {
		w, ok := walls()
		if !ok || !b.spend(1) {
			return l
		}
		instants := buf[:0]
		if w-maxOffset >= p.start && w+maxOffset < p.end {
			instants = append(instants, w-p.off)
		} else {
			p = s.zone.periodAt(w - maxOffset)
			instants = s.zone.resolve(w, s.gapSkip, s.overlapBoth, instants)
		}
		for _, i := range instants {
			// A gap shifts every wall time in it to one instant: count it once.
			if i < lo || i >= hi || i == last {
				continue
			}
			last = i
			day := i - floorDiv(i, 86400)*86400
			l.Add(int(day/3600), int(day/60%60), int(day%60))
			reach = max(reach, int(i-lo))
			if n++; n == left {
				if n == loadOccurrences && reach < 86400 {
					l.Hours = job.AllHours
				}
				return l
			}
		}
	}
}
