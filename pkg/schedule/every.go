package schedule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// everyRule is the every/at/on shorthand: a time of day on every day, on one
// weekday of every week, or on one day of every month.
type everyRule struct {
	unit    string       // "day", "week" or "month"
	clock   int64        // seconds after midnight
	weekday time.Weekday // unit "week"
	mday    int          // unit "month": 1..31, or -1 for the last day
}

// weekdayNamed reads a lower-case weekday name, full ("monday") or short
// ("mon").
func weekdayNamed(name string) (time.Weekday, bool) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if full := strings.ToLower(d.String()); name == full || name == full[:3] {
			return d, true
		}
	}
	return 0, false
}

// parseAt reads "HH:MM" or "HH:MM:SS" as seconds after midnight.
func parseAt(at string) (int64, error) {
	parts := strings.Split(at, ":")
	if len(parts) != 2 && len(parts) != 3 {
		return 0, errors.New(`must be "HH:MM" or "HH:MM:SS"`)
	}
	limits := []int{23, 59, 59}
	var secs int64
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if len(p) != 2 || err != nil || n < 0 || n > limits[i] {
			return 0, errors.New(`must be "HH:MM" or "HH:MM:SS" with HH 00-23 and MM, SS 00-59`)
		}
		secs = secs*60 + int64(n)
	}
	if len(parts) == 2 {
		secs *= 60
	}
	return secs, nil
}

// parseOn reads the "on" value for unit and returns the rule fields and the
// normalized JSON. A missing "on" takes start's weekday or day of month.
func parseOn(unit string, raw json.RawMessage, start time.Time) (time.Weekday, int, json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		switch unit {
		case "week":
			raw = json.RawMessage(strconv.Quote(strings.ToLower(start.Weekday().String())))
		case "month":
			raw = json.RawMessage(strconv.Itoa(start.Day()))
		default:
			return 0, 0, nil, nil
		}
	}
	switch unit {
	case "week":
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return 0, 0, nil, errors.New(`with every=week must be a weekday name such as "monday" or "mon"`)
		}
		d, ok := weekdayNamed(strings.ToLower(strings.TrimSpace(name)))
		if !ok {
			return 0, 0, nil, fmt.Errorf(`%q is not a weekday: use "monday".."sunday" or "mon".."sun"`, name)
		}
		return d, 0, json.RawMessage(strconv.Quote(strings.ToLower(d.String()))), nil
	case "month":
		var n int
		if err := json.Unmarshal(raw, &n); err != nil || n == 0 || n < -1 || n > 31 {
			return 0, 0, nil, errors.New("with every=month must be a day of month 1..31, or -1 for the last day")
		}
		return 0, n, json.RawMessage(strconv.Itoa(n)), nil
	}
	return 0, 0, nil, errors.New("is only allowed with every=week or every=month")
}

// at returns the rule's wall time on day (a naive UTC midnight).
func (r *everyRule) at(day time.Time) int64 { return day.Unix() + r.clock }

// first returns the rule's first wall time strictly after w.
func (r *everyRule) first(w int64) int64 {
	day := time.Unix(w, 0).UTC().Truncate(24 * time.Hour)
	switch r.unit {
	case "week":
		day = day.AddDate(0, 0, (int(r.weekday)-int(day.Weekday())+7)%7)
		if r.at(day) <= w {
			day = day.AddDate(0, 0, 7)
		}
	case "month":
		month := time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, time.UTC)
		for range 2 {
			d := r.dayIn(month)
			if r.at(d) > w {
				return r.at(d)
			}
			month = month.AddDate(0, 1, 0)
		}
		return r.at(r.dayIn(month))
	default:
		if r.at(day) <= w {
			day = day.AddDate(0, 0, 1)
		}
	}
	return r.at(day)
}

// dayIn returns the rule's day in the month starting at month: its day of
// month, or the last day when the month is shorter or mday is -1.
func (r *everyRule) dayIn(month time.Time) time.Time {
	last := month.AddDate(0, 1, -1).Day()
	d := r.mday
	if d == -1 || d > last {
		d = last
	}
	return month.AddDate(0, 0, d-1)
}

func (r *everyRule) walls(after, limit int64, b *Budget) func() (int64, bool) {
	cur := after
	return func() (int64, bool) {
		if !b.spend(1) {
			return 0, false
		}
		w := r.first(cur)
		if w > limit {
			return 0, false
		}
		cur = w
		return w, true
	}
}
