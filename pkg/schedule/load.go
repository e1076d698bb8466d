package schedule

import (
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// The walk of Load stops after loadSpan or loadOccurrences, whichever comes
// first. Eight days see every weekday, and a UTC day twice, so a weekly rule
// shows all its hours; 4,000 occurrences are more than an hour of a rule
// that runs every second, so every minute and second such a rule fires in
// is seen, and the walk of the densest rule stays a few thousand steps.
// offsetSpan is how far ahead Load looks for the zone's other offsets.
const (
	loadSpan        = 8 * 24 * time.Hour
	loadOccurrences = 4000
	offsetSpan      = 366 * 24 * time.Hour
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
// A job whose zone changes its offset in the coming year fires at other UTC
// times then (09:00 in Berlin is 07:00Z in summer, 08:00Z in winter), which
// eight days from now do not see: unless its count or end_at ends it
// sooner, the load counts its wall times in every offset the zone has in
// the year from its first occurrence, so a load found in summer still holds
// in winter.
//
// A cron rule without a count is not walked: its load comes from its
// fields (cronLoad), which is cheaper for a dense rule, and exact where the
// walk of a rule that fires on few days would stop on the number of
// occurrences without seeing them all.
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
	if s.offsetMs != 0 {
		// The rule's own load, moved by the jitter offset's whole seconds
		// (the rule fires on whole seconds, so that is the second each
		// shifted occurrence falls in).
		off := s.offsetMs / 1000
		l := s.Jittered(0).Load(after.Add(-time.Duration(s.offsetMs)*time.Millisecond), used)
		if off == 0 || l.Empty() {
			return l
		}
		return shifted(job.Load{}, l.Hours, l.Minutes, l.Seconds, -off)
	}
	left := loadOccurrences
	if c := s.spec.Count; c > 0 {
		left = min(left, c-max(used, 0))
	}
	if left <= 0 {
		return job.Load{}
	}
	first, ok := s.Next(after)
	if !ok {
		return job.Load{}
	}
	b := s.budget
	if b == nil {
		b = unitsOnly()
	}
	// Instants (unix seconds) from the first occurrence: up to hi the walk,
	// up to year the offsets; neither past end_at.
	lo := first.Unix()
	hi := lo + int64(loadSpan/time.Second)
	year := lo + int64(offsetSpan/time.Second)
	if s.hasEnd {
		end := floorDiv(s.endMs-1, 1000) + 1
		hi, year = min(hi, end), min(year, end)
	}
	if r, ok := s.rule.(*cronRule); ok && s.spec.Count == 0 {
		return s.cronLoad(r, lo, year, b)
	}
	l, reach, ended := s.walkLoad(lo, hi, left, b)
	if ended || l.Empty() {
		return l
	}
	// The offsets the walk met, and those it did not: the wall times it saw
	// in each of the first fall in each of the others too.
	met, walked := s.zone.offsets(lo, lo+reach+1), l
	for _, o := range s.zone.offsets(lo, year) {
		if !slices.Contains(met, o) {
			for _, m := range met {
				l = shifted(l, walked.Hours, walked.Minutes, walked.Seconds, o-m)
			}
		}
	}
	return l
}

// walkLoad folds the occurrences in [lo, hi) (unix seconds, lo the first
// one), at most left of them, into a load. reach is how far past lo the
// last one folded lies, and ended says that left ran out: the schedule has
// no occurrence beyond them.
func (s *Schedule) walkLoad(lo, hi int64, left int, b *Budget) (l job.Load, reach int64, ended bool) {
	walls := s.rule.walls(s.zone.wallFloor(lo-1)-1, min(s.zone.wallCeil(lo, hi-1), maxTime.Unix()), b)
	var (
		n    int
		last = lo - 1
		buf  [4]int64
		// p is the period of the last wall time resolved: while every
		// instant a wall time could be lies in it, the wall time is one
		// instant, found without asking the zone again (as resolve would).
		p period
	)
	for {
		w, ok := walls()
		if !ok || !b.spend(1) {
			return l, reach, false
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
			reach = max(reach, i-lo)
			if n++; n == left {
				if n < loadOccurrences {
					return l, reach, true
				}
				if reach < 86400 {
					l.Hours = job.AllHours
				}
				return l, reach, false
			}
		}
	}
}

// cronLoad is the load of cron rule r from its fields rather than a walk,
// for the instants [lo, hi) (unix seconds: a year, or to end_at). Every day
// a cron fires, it fires at the same wall times, the product of its hour,
// minute and second fields (the day fields only choose the days), so its
// UTC times are those wall times less each offset the zone has from lo to
// hi, and, under dst.gap "shift", the transition a gap moves one of them
// to. Like the walk, it may count too much, where an offset or a gap holds
// only part of a day, never too little.
func (s *Schedule) cronLoad(r *cronRule, lo, hi int64, b *Budget) job.Load {
	var l job.Load
	hours := uint32(r.spec.Hour) & job.AllHours
	minutes, seconds := r.spec.Minute&cronField, r.spec.Second&cronField
	// gap adds the transition at from's end if it is a gap that shifts a
	// wall time of the rule to it.
	gap := func(from, to period) {
		if to.off > from.off && !s.gapSkip && firesWithin(hours, minutes, seconds, from.end+from.off, from.end+to.off) {
			day := from.end - floorDiv(from.end, 86400)*86400
			l.Add(int(day/3600), int(day/60%60), int(day%60))
		}
	}
	p := s.zone.periodAt(lo)
	if p.start == lo {
		gap(s.zone.periodAt(lo-1), p) // lo may be a gap's transition itself
	}
	for n := 0; n < 64 && b.spend(cronNextUnits); n++ {
		l = shifted(l, hours, minutes, seconds, p.off)
		if p.end >= hi || p.end == math.MaxInt64 {
			break
		}
		q := s.zone.periodAt(p.end)
		gap(p, q)
		p = q
	}
	return l
}

// shifted adds to l the UTC times of the wall times hours × minutes ×
// seconds in a period of offset off (seconds east of UTC).
func shifted(l job.Load, hours uint32, minutes, seconds uint64, off int64) job.Load {
	if off%60 != 0 {
		// No zone has had an offset of odd seconds since the 1970s; each
		// wall time on its own, then.
		for h := hours; h != 0; h &= h - 1 {
			for m := minutes; m != 0; m &= m - 1 {
				for sec := seconds; sec != 0; sec &= sec - 1 {
					w := int64(bits.TrailingZeros32(h)*3600 + bits.TrailingZeros64(m)*60 + bits.TrailingZeros64(sec))
					u := (w - off%86400 + 2*86400) % 86400
					l.Add(int(u/3600), int(u/60%60), int(u%60))
				}
			}
		}
		return l
	}
	l.Seconds |= seconds
	offMin := off / 60 % 1440
	for h := hours; h != 0; h &= h - 1 {
		for m := minutes; m != 0; m &= m - 1 {
			u := (int64(bits.TrailingZeros32(h)*60+bits.TrailingZeros64(m)) - offMin + 2*1440) % 1440
			l.Hours |= 1 << (u / 60)
			l.Minutes |= 1 << (u % 60)
		}
	}
	return l
}

// firesWithin reports whether a wall time of hours × minutes × seconds lies
// in [from, to) (wall unix seconds; a gap, at most a day).
func firesWithin(hours uint32, minutes, seconds uint64, from, to int64) bool {
	for w := from; w < min(to, from+86400); w++ {
		day := w - floorDiv(w, 86400)*86400
		if hours&(1<<(day/3600)) != 0 && minutes&(1<<(day/60%60)) != 0 && seconds&(1<<(day%60)) != 0 {
			return true
		}
	}
	return false
}

// offsets returns the offsets the zone has over the instants [lo, hi), each
// once.
func (z zone) offsets(lo, hi int64) []int64 {
	var out []int64
	p := z.periodAt(lo)
	for range 64 {
		if !slices.Contains(out, p.off) {
			out = append(out, p.off)
		}
		if p.end >= hi || p.end == math.MaxInt64 {
			break
		}
		p = z.periodAt(p.end)
	}
	return out
}
