package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/tockhq/tock/pkg/schedule/internal/rrule"
)

const (
	// maxRRuleLen bounds the text of an rrule (the same bound go-cron puts on
	// a cron expression).
	maxRRuleLen = 1024
	// maxInterval bounds INTERVAL; larger values only produce schedules with
	// no occurrence within the search horizon.
	maxInterval = 100_000
	// maxPerPeriod bounds how many occurrences one FREQ period of an rrule
	// may expand to: rrule-go materializes a whole period at a time, so a
	// denser rule would make every Next slow. A finer FREQ expresses it.
	maxPerPeriod = 10_000
)

// rruleRule is a validated RRULE evaluated over wall times. opt has every
// default that rrule-go would derive from DTSTART made explicit, so the rule
// can be restarted from a later DTSTART (see dtstart) without changing its
// occurrences.
type rruleRule struct {
	opt    rrule.ROption
	anchor time.Time // DTSTART: start_at's wall clock, naive UTC, whole seconds
	ex     exdates   // what its EXDATE lines take out
}

// normalizeRRule returns the rule body as stored: upper case, without the
// optional "RRULE:" prefix or a trailing ";", and without blanks, which no
// RRULE value contains (a line break before a DTSTART line leaves a DTSTART
// that parseRRule refuses by name).
func normalizeRRule(text string) string {
	body := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToUpper(r)
	}, text)
	body = strings.TrimPrefix(body, "RRULE:")
	return strings.TrimSuffix(body, ";")
}

// parseRRule validates a normalized rule body anchored at the wall time anchor.
func parseRRule(body string, anchor time.Time) (*rruleRule, error) {
	switch {
	case body == "":
		return nil, errors.New("is empty")
	case len(body) > maxRRuleLen:
		return nil, fmt.Errorf("is longer than %d characters", maxRRuleLen)
	case strings.Contains(body, "DTSTART"):
		return nil, errors.New("DTSTART is not allowed: use start_at")
	}
	seen := make(map[string]bool)
	for _, part := range strings.Split(body, ";") {
		key, _, ok := strings.Cut(part, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("%q is not NAME=VALUE", part)
		}
		switch key {
		case "COUNT":
			return nil, errors.New("COUNT is not allowed: use count")
		case "UNTIL":
			return nil, errors.New("UNTIL is not allowed: use end_at")
		case "BYEASTER":
			return nil, errors.New("BYEASTER is not supported")
		}
		if seen[key] {
			return nil, fmt.Errorf("%s is given twice", key)
		}
		seen[key] = true
	}

	var opt *rrule.ROption
	var err error
	if !guard(func() { opt, err = rrule.StrToROption(body) }) {
		return nil, errors.New("cannot be parsed")
	}
	if err != nil {
		return nil, err // the message goes to the client as is
	}
	if seen["INTERVAL"] && (opt.Interval < 1 || opt.Interval > maxInterval) {
		return nil, fmt.Errorf("INTERVAL must be between 1 and %d", maxInterval)
	}
	if opt.Interval < 1 {
		opt.Interval = 1
	}
	if err := checkOrdinals(opt); err != nil {
		return nil, err
	}
	opt.Dtstart = anchor
	if !guard(func() { _, err = rrule.NewRRule(*opt) }) {
		return nil, errors.New("cannot be evaluated")
	}
	if err != nil {
		return nil, err // the message goes to the client as is
	}
	explicitDefaults(opt, anchor)
	if n := perPeriod(opt); n > maxPerPeriod {
		return nil, fmt.Errorf("expands to up to %d occurrences per %s period (at most %d): use a finer FREQ", n, opt.Freq, maxPerPeriod)
	}
	if !reachable(opt, anchor) {
		return nil, errors.New("has no occurrence: BYHOUR/BYMINUTE/BYSECOND are never reached with this INTERVAL from start_at")
	}
	return &rruleRule{opt: *opt, anchor: anchor}, nil
}

// checkOrdinals refuses BYDAY ordinals (like 1MO) where RFC 5545 forbids them
// and bounds them where rrule-go would index past its tables.
func checkOrdinals(opt *rrule.ROption) error {
	for i := range opt.Byweekday {
		n := opt.Byweekday[i].N()
		if n == 0 {
			continue
		}
		limit := 53
		switch {
		case opt.Freq == rrule.MONTHLY, opt.Freq == rrule.YEARLY && len(opt.Bymonth) > 0:
			limit = 5
		case opt.Freq != rrule.YEARLY:
			return errors.New("BYDAY with an ordinal (like 1MO) needs FREQ=MONTHLY or FREQ=YEARLY")
		}
		if n < -limit || n > limit {
			return fmt.Errorf("BYDAY ordinal %d is out of range -%d..%d", n, limit, limit)
		}
	}
	return nil
}

var rruleWeekdays = [...]rrule.Weekday{
	time.Sunday: rrule.SU, time.Monday: rrule.MO, time.Tuesday: rrule.TU,
	time.Wednesday: rrule.WE, time.Thursday: rrule.TH, time.Friday: rrule.FR,
	time.Saturday: rrule.SA,
}

// explicitDefaults writes into opt the values rrule-go would otherwise take
// from DTSTART (its buildRRule), so that a later DTSTART keeps the rule's
// meaning. Time lists are also deduplicated.
func explicitDefaults(opt *rrule.ROption, anchor time.Time) {
	if len(opt.Byweekno) == 0 && len(opt.Byyearday) == 0 && len(opt.Bymonthday) == 0 &&
		len(opt.Byweekday) == 0 && len(opt.Byeaster) == 0 {
		switch opt.Freq {
		case rrule.YEARLY:
			if len(opt.Bymonth) == 0 {
				opt.Bymonth = []int{int(anchor.Month())}
			}
			opt.Bymonthday = []int{anchor.Day()}
		case rrule.MONTHLY:
			opt.Bymonthday = []int{anchor.Day()}
		case rrule.WEEKLY:
			opt.Byweekday = []rrule.Weekday{rruleWeekdays[anchor.Weekday()]}
		}
	}
	// A rule that names a time of day means that time exactly: BYHOUR=9 is
	// 09:00:00, and BYHOUR=9;BYMINUTE=30 is 09:30:00, whatever second start_at
	// fell on. Parts the rule leaves out altogether still come from start_at.
	hourGiven, minuteGiven := len(opt.Byhour) > 0, len(opt.Byminute) > 0
	if len(opt.Byhour) == 0 && opt.Freq < rrule.HOURLY {
		opt.Byhour = []int{anchor.Hour()}
	}
	if len(opt.Byminute) == 0 && opt.Freq < rrule.MINUTELY {
		opt.Byminute = []int{anchor.Minute()}
		if hourGiven {
			opt.Byminute = []int{0}
		}
	}
	if len(opt.Bysecond) == 0 && opt.Freq < rrule.SECONDLY {
		opt.Bysecond = []int{anchor.Second()}
		if hourGiven || minuteGiven {
			opt.Bysecond = []int{0}
		}
	}
	opt.Byhour = uniq(opt.Byhour)
	opt.Byminute = uniq(opt.Byminute)
	opt.Bysecond = uniq(opt.Bysecond)
}

func uniq(xs []int) []int {
	if len(xs) == 0 {
		return xs
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return slices.Compact(xs)
}

// perPeriod estimates from above how many occurrences one FREQ period expands
// to, which is what rrule-go computes at a time.
func perPeriod(opt *rrule.ROption) int {
	times := 1
	switch {
	case opt.Freq < rrule.HOURLY:
		times = len(opt.Byhour) * len(opt.Byminute) * len(opt.Bysecond)
	case opt.Freq == rrule.HOURLY:
		times = len(opt.Byminute) * len(opt.Bysecond)
	case opt.Freq == rrule.MINUTELY:
		times = len(opt.Bysecond)
	}
	days := 1
	switch opt.Freq {
	case rrule.WEEKLY:
		seen := map[int]bool{}
		for i := range opt.Byweekday {
			seen[opt.Byweekday[i].Day()] = true
		}
		days = max(1, len(seen))
	case rrule.MONTHLY, rrule.YEARLY:
		months, perMonth := 1, 31
		if opt.Freq == rrule.YEARLY {
			months = 12
			if len(opt.Bymonth) > 0 {
				months = len(opt.Bymonth)
			}
		}
		days = months * perMonth
		if len(opt.Bymonthday) > 0 {
			days = min(days, months*len(opt.Bymonthday))
		}
		if len(opt.Byweekday) > 0 {
			n := 0
			for i := range opt.Byweekday {
				if opt.Byweekday[i].N() != 0 {
					n += months
				} else {
					n += 5 * months
				}
			}
			days = min(days, n)
		}
		if len(opt.Byyearday) > 0 {
			days = min(days, len(opt.Byyearday))
		}
		if len(opt.Byweekno) > 0 {
			days = min(days, 7*len(opt.Byweekno))
		}
	}
	if len(opt.Bysetpos) > 0 {
		return min(days*times, len(opt.Bysetpos))
	}
	return days * times
}

// reachable reports whether an HOURLY, MINUTELY or SECONDLY rule's INTERVAL
// ever lands on its BYHOUR/BYMINUTE/BYSECOND. rrule-go loops forever looking
// for such a slot otherwise ("FREQ=HOURLY;INTERVAL=2;BYHOUR=1" from an even
// hour). The slots visited are the start's slot of the day plus multiples of
// INTERVAL, that is one residue class modulo gcd(INTERVAL, slots per day).
func reachable(opt *rrule.ROption, anchor time.Time) bool {
	var unit int
	switch opt.Freq {
	case rrule.HOURLY:
		unit = 3600
	case rrule.MINUTELY:
		unit = 60
	case rrule.SECONDLY:
		unit = 1
	default:
		return true
	}
	hours, minutes, seconds := orAll(opt.Byhour, 24), []int{0}, []int{0}
	if unit <= 60 {
		minutes = orAll(opt.Byminute, 60)
	}
	if unit == 1 {
		seconds = orAll(opt.Bysecond, 60)
	}
	start := (anchor.Hour()*3600 + anchor.Minute()*60 + anchor.Second()) / unit * unit
	g := gcd(opt.Interval*unit, 86400)
	for _, h := range hours {
		for _, m := range minutes {
			for _, s := range seconds {
				if (h*3600+m*60+s-start)%g == 0 {
					return true
				}
			}
		}
	}
	return false
}

// orAll returns xs, or every value 0..n-1 when xs is empty (no restriction).
func orAll(xs []int, n int) []int {
	if len(xs) > 0 {
		return xs
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// dtstart returns the DTSTART to iterate from so that the first wall time of
// interest, x, is reached without walking from the anchor: the start of the
// latest FREQ period in the rule's INTERVAL phase that begins at or before x.
// Periods are the ones rrule-go uses (years, months, WKST weeks, days,
// hours, minutes, seconds), and every default has been made explicit, so the
// occurrences from there on are the rule's own.
func (r *rruleRule) dtstart(x time.Time) time.Time {
	d := r.anchor
	if !x.After(d) {
		return d
	}
	n := int64(r.opt.Interval)
	fixed := func(base time.Time, unit int64) time.Time {
		k := (x.Unix() - base.Unix()) / (n * unit)
		if k == 0 {
			return d
		}
		return base.Add(time.Duration(k*n*unit) * time.Second)
	}
	day := d.Truncate(24 * time.Hour) // naive UTC: days are 86400 s
	switch r.opt.Freq {
	case rrule.SECONDLY:
		return fixed(d, 1)
	case rrule.MINUTELY:
		return fixed(d.Truncate(time.Minute), 60)
	case rrule.HOURLY:
		return fixed(d.Truncate(time.Hour), 3600)
	case rrule.DAILY:
		return fixed(day, 86400)
	case rrule.WEEKLY:
		// rrule-go weekdays count from Monday = 0, like WKST.
		back := (int(d.Weekday()) + 6 - r.opt.Wkst.Day()) % 7
		return fixed(day.AddDate(0, 0, -back), 7*86400)
	case rrule.MONTHLY:
		months := int64(x.Year()-d.Year())*12 + int64(x.Month()-d.Month())
		if k := months / n; k > 0 {
			return time.Date(d.Year(), d.Month()+time.Month(k*n), 1, 0, 0, 0, 0, time.UTC)
		}
	case rrule.YEARLY:
		if k := int64(x.Year()-d.Year()) / n; k > 0 {
			return time.Date(d.Year()+int(k*n), time.January, 1, 0, 0, 0, 0, time.UTC)
		}
	}
	return d
}

// rruleStartUnits is what starting an rrule-go iterator costs: it builds
// the rule's time set and the first period's masks.
const rruleStartUnits = 256

func (r *rruleRule) walls(after, limit int64, b *Budget) func() (int64, bool) {
	opt := r.opt
	opt.Dtstart = r.dtstart(time.Unix(after+1, 0).UTC())
	opt.Until = time.Unix(limit, 0).UTC()
	var next rrule.Next
	if b.spend(rruleStartUnits) {
		guard(func() {
			if rr, err := rrule.NewRRule(opt); err == nil {
				next = rr.IteratorWithin(b.spend)
			}
		})
	}
	skipped := 0
	return func() (int64, bool) {
		for next != nil {
			var v time.Time
			var ok bool
			if !guard(func() { v, ok = next() }) || !ok {
				break
			}
			w := v.Unix()
			if w > limit {
				break
			}
			if w > after && !r.ex.excludes(w) {
				return w, true
			}
			if skipped++; skipped > 2*maxPerPeriod {
				break
			}
		}
		next = nil
		return 0, false
	}
}
