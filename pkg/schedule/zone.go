package schedule

import (
	"math"
	"time"
)

// maxOffset bounds the UTC offset of any zone, in seconds, with a margin: real
// offsets lie within -12h..+14h. Wall/instant searches use it as their slack.
const maxOffset = 26 * 3600

// period is one stretch of a zone with a constant UTC offset: instants in
// [start, end) (unix seconds) have wall time instant+off. An unbounded side is
// math.MinInt64 or math.MaxInt64.
type period struct {
	off, start, end int64
}

// zone converts between wall times (unix seconds of the wall clock read as if
// it were UTC) and instants (unix seconds) in one location.
type zone struct {
	loc *time.Location
}

func (z zone) periodAt(s int64) period {
	t := time.Unix(s, 0).In(z.loc)
	_, off := t.Zone()
	start, end := t.ZoneBounds()
	p := period{off: int64(off), start: math.MinInt64, end: math.MaxInt64}
	if !start.IsZero() {
		p.start = start.Unix()
	}
	if !end.IsZero() {
		p.end = end.Unix()
	}
	return p
}

// wall returns the wall time of instant s.
func (z zone) wall(s int64) int64 {
	return s + z.periodAt(s).off
}

// wallFloor returns a wall time at or above which lie all wall times that can
// yield an instant after ts: an instant i in a period has wall i+offset, and a
// gap shift to a transition comes from walls at or above the transition plus
// the offset before it. Only periods starting within 2*maxOffset of ts can
// reach below ts+offset(ts).
func (z zone) wallFloor(ts int64) int64 {
	p := z.periodAt(ts)
	floor := ts + p.off + 1
	for n := 0; p.end != math.MaxInt64 && p.end <= ts+2*maxOffset; n++ {
		if n == 64 {
			return ts - maxOffset
		}
		p = z.periodAt(p.end)
		floor = min(floor, p.start+p.off)
	}
	return floor
}

// wallCeil returns the largest wall time of any instant in [from, to]; no
// wall time above it yields an instant in that range (a gap shift to a
// transition T comes from walls below T plus the offset after it).
func (z zone) wallCeil(from, to int64) int64 {
	p := z.periodAt(from)
	ceil := min(p.end-1, to) + p.off
	for n := 0; p.end != math.MaxInt64 && p.end <= to; n++ {
		if n == 1000 {
			return to + maxOffset
		}
		p = z.periodAt(p.end)
		ceil = max(ceil, min(p.end-1, to)+p.off)
	}
	return ceil
}

// resolve appends to buf the instants of wall time w under the DST policy, in
// increasing order: one instant if w exists once; the transition (gap shift)
// or nothing (gap skip) if w falls in a gap; the first or both instants if w
// occurs twice.
func (z zone) resolve(w int64, gapSkip, overlapBoth bool, buf []int64) []int64 {
	lo, hi := w-maxOffset, w+maxOffset
	p := z.periodAt(lo)
	if p.end > hi {
		// One offset covers every instant w could be: the common case.
		return append(buf, w-p.off)
	}
	n0 := len(buf)
	gap, hasGap := int64(0), false
	for n := 0; n < 64; n++ {
		if i := w - p.off; i >= p.start && i < p.end {
			buf = append(buf, i)
		}
		if p.end > hi || p.end == math.MaxInt64 {
			break
		}
		q := z.periodAt(p.end)
		if t := p.end; !hasGap && w >= t+p.off && w < t+q.off {
			gap, hasGap = t, true
		}
		p = q
	}
	switch exact := len(buf) - n0; {
	case exact == 0 && hasGap && !gapSkip:
		return append(buf, gap)
	case exact > 1 && !overlapBoth:
		return buf[:n0+1]
	}
	return buf
}
