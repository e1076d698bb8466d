package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// maxExdates bounds the EXDATE values of one rule.
const maxExdates = 1000

// exdates are the instants and days an RRULE's EXDATE lines take out of
// it, as wall clock seconds (naive UTC, as the rule's walls) and as days
// (wall seconds / 86400).
type exdates struct {
	walls map[int64]bool
	days  map[int64]bool
}

// excludes says whether wall w is taken out.
func (e exdates) excludes(w int64) bool {
	return e.walls[w] || e.days[floorDiv(w, 86400)]
}

// splitRRule separates the EXDATE properties of an rrule text from its
// rule: the rule's body, normalized as normalizeRRule does; what the
// EXDATEs take out, in the schedule's zone loc; and their canonical text,
// one line per kind ("EXDATE:20261225T090000,..." for instants as wall
// times in loc, "EXDATE;VALUE=DATE:20261225,..." for whole days), sorted,
// to store after the body. EXDATE takes a local time (in the schedule's
// zone), a UTC time ending in Z, a time with ;TZID=<zone>, or a date with
// ;VALUE=DATE.
func splitRRule(text string, loc *time.Location) (body string, ex exdates, lines string, err error) {
	var rule strings.Builder
	var walls, days []string
	for _, tok := range strings.Fields(text) {
		upper := strings.ToUpper(tok)
		if !strings.HasPrefix(upper, "EXDATE") {
			rule.WriteString(tok)
			continue
		}
		params, values, ok := strings.Cut(tok, ":")
		if !ok || values == "" {
			return "", ex, "", fmt.Errorf("%q is not EXDATE:<values>", tok)
		}
		zone, isDate := loc, false
		for _, p := range strings.Split(params, ";")[1:] {
			k, v, _ := strings.Cut(p, "=")
			switch strings.ToUpper(k) {
			case "VALUE":
				switch strings.ToUpper(v) {
				case "DATE":
					isDate = true
				case "DATE-TIME":
				default:
					return "", ex, "", fmt.Errorf("EXDATE VALUE=%s: want DATE or DATE-TIME", v)
				}
			case "TZID":
				if zone, err = time.LoadLocation(v); err != nil || v == "Local" {
					return "", ex, "", fmt.Errorf("EXDATE TZID=%s: unknown time zone", v)
				}
			default:
				return "", ex, "", fmt.Errorf("EXDATE parameter %q is not supported", k)
			}
		}
		for _, v := range strings.Split(values, ",") {
			if isDate {
				d, err := time.Parse("20060102", v)
				if err != nil {
					return "", ex, "", fmt.Errorf("EXDATE value %q is not a date such as 20261225", v)
				}
				days = append(days, d.Format("20060102"))
				continue
			}
			var t time.Time
			if strings.HasSuffix(strings.ToUpper(v), "Z") {
				t, err = time.Parse("20060102T150405Z", strings.ToUpper(v))
			} else {
				t, err = time.ParseInLocation("20060102T150405", strings.ToUpper(v), zone)
			}
			if err != nil {
				return "", ex, "", fmt.Errorf("EXDATE value %q is not a time such as 20261225T090000", v)
			}
			walls = append(walls, t.In(loc).Format("20060102T150405"))
		}
	}
	if len(walls)+len(days) > maxExdates {
		return "", ex, "", fmt.Errorf("EXDATE takes at most %d values", maxExdates)
	}
	body = normalizeRRule(rule.String())
	if strings.Contains(body, "EXDATE") {
		return "", ex, "", errors.New("EXDATE goes on a line of its own, after the rule")
	}
	slices.Sort(walls)
	walls = slices.Compact(walls)
	slices.Sort(days)
	days = slices.Compact(days)
	ex = exdates{walls: map[int64]bool{}, days: map[int64]bool{}}
	var b strings.Builder
	if len(walls) > 0 {
		b.WriteString("\nEXDATE:" + strings.Join(walls, ","))
		for _, w := range walls {
			t, _ := time.Parse("20060102T150405", w) // naive UTC: the wall clock
			ex.walls[t.Unix()] = true
		}
	}
	if len(days) > 0 {
		b.WriteString("\nEXDATE;VALUE=DATE:" + strings.Join(days, ","))
		for _, d := range days {
			t, _ := time.Parse("20060102", d)
			ex.days[floorDiv(t.Unix(), 86400)] = true
		}
	}
	return body, ex, b.String(), nil
}
