package schedule

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
)

// cronParser accepts 5 fields or 6 with leading seconds, the descriptors, the
// Quartz L/W/# extensions, and crontab(5)'s OR of day-of-month and
// day-of-week (go-cron's default is AND, which would silently change the
// meaning of expressions copied from a crontab).
var cronParser = cron.MustNewParser(
	cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow |
		cron.Descriptor | cron.Extended | cron.DowOrDom,
).WithMaxSearchYears(searchYears + 1)

// cronRule is a parsed cron expression evaluated over wall times.
type cronRule struct {
	spec *cron.SpecSchedule
}

func parseCron(expr string) (*cronRule, error) {
	if expr == "" {
		return nil, errors.New("is empty")
	}
	upper := strings.ToUpper(expr)
	if strings.HasPrefix(upper, "TZ=") || strings.HasPrefix(upper, "CRON_TZ=") {
		return nil, errors.New("time zone prefix not allowed: use the timezone field")
	}
	if strings.HasPrefix(expr, "@every") {
		return nil, errors.New(`@every is not supported: use a 6-field cron such as "*/15 * * * * *" or an rrule with INTERVAL`)
	}
	if !strings.HasPrefix(expr, "@") {
		if n := len(strings.Fields(expr)); n != 5 && n != 6 {
			return nil, fmt.Errorf("has %d fields: want 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)", n)
		}
	}
	var parsed cron.Schedule
	var err error
	if !guard(func() { parsed, err = cronParser.Parse(expr) }) {
		return nil, errors.New("cannot be parsed")
	}
	if err != nil {
		if e := rangeError(expr, err); e != nil {
			return nil, e
		}
		return nil, err // the message goes to the client as is
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, errors.New("is not a calendar expression")
	}
	// A field such as "," parses to no value at all; go-cron would then walk
	// second by second through its whole search window.
	const anyBit = 1 << 63 // go-cron marks "*" with the top bit
	for _, f := range []struct {
		name  string
		bits  uint64
		extra int
	}{
		{"seconds", spec.Second, 0},
		{"minute", spec.Minute, 0},
		{"hour", spec.Hour, 0},
		{"day-of-month", spec.Dom, len(spec.DomConstraints)},
		{"month", spec.Month, 0},
		{"day-of-week", spec.Dow, len(spec.DowConstraints)},
	} {
		if f.bits&^anyBit == 0 && f.extra == 0 {
			return nil, fmt.Errorf("%s field has no value", f.name)
		}
	}
	// Evaluate in the naive wall-clock frame: UTC has no transitions.
	spec.Location = time.UTC
	return &cronRule{spec: spec}, nil
}

// cronNextUnits is what one go-cron Next costs at most: it steps through
// months, days, hours, minutes and seconds, skipping whole fields that
// cannot match, within its search window.
const cronNextUnits = 16

func (r *cronRule) walls(after, limit int64, b *Budget) func() (int64, bool) {
	cur := time.Unix(after, 0).UTC()
	return func() (int64, bool) {
		if !b.spend(cronNextUnits) {
			return 0, false
		}
		var next time.Time
		if !guard(func() { next = r.spec.Next(cur) }) || next.IsZero() {
			return 0, false
		}
		w := next.Unix()
		if w <= cur.Unix() || w > limit {
			return 0, false
		}
		cur = r.rest(next)
		return w, true
	}
}

// cronField masks the 60 values of go-cron's seconds and minutes fields,
// whose top bit marks "*".
const cronField = 1<<60 - 1

// rest returns the last wall time of w's minute, or of its hour, when the
// rule has no match later in it, else w: the next match lies after it as
// well. go-cron looks for the next match second by second within a minute
// and minute by minute within an hour, so without this a rule that fires at
// second 0 of every minute took 59 steps to find each occurrence, and
// walking a few thousand of them (Load) took milliseconds.
func (r *cronRule) rest(w time.Time) time.Time {
	sec, minute := w.Second(), w.Minute()
	if (r.spec.Second&cronField)>>(sec+1) != 0 {
		return w
	}
	w = w.Add(time.Duration(59-sec) * time.Second)
	if (r.spec.Minute&cronField)>>(minute+1) != 0 {
		return w
	}
	return w.Add(time.Duration(59-minute) * time.Minute)
}

// cronFields names the fields of a 6-field expression and their ranges, as
// go-cron bounds them; a 5-field one has no seconds.
var cronFields = []struct {
	name     string
	min, max int
}{{"second", 0, 59}, {"minute", 0, 59}, {"hour", 0, 23}, {"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 0, 7}}

// outOfRange matches go-cron's errors for a value out of its field's range,
// such as `end of range (25) above maximum (23): "25"`.
var outOfRange = regexp.MustCompile(`\((\d+)\) (above maximum|below minimum) \((\d+)\): "([^"]*)"$`)

// rangeError rewrites go-cron's error for a value out of range (err) to
// name the field it is in and the field's range, such as `hour 25 is out
// of range: hours go from 0 to 23`; nil when err is another error or the
// field cannot be told.
func rangeError(expr string, err error) error {
	m := outOfRange.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	value, _ := strconv.Atoi(m[1])
	bound, _ := strconv.Atoi(m[3])
	fields := strings.Fields(expr)
	names := cronFields
	if len(fields) == 5 {
		names = cronFields[1:]
	}
	if len(fields) != len(names) {
		return nil
	}
	for i, f := range fields {
		n := names[i]
		if (m[2] == "above maximum" && bound != n.max) || (m[2] == "below minimum" && bound != n.min) {
			continue
		}
		for _, part := range strings.Split(f, ",") {
			if part == m[4] || strings.SplitN(part, "/", 2)[0] == m[4] {
				in := ""
				if f != strconv.Itoa(value) {
					in = fmt.Sprintf(" (in %q)", f)
				}
				return fmt.Errorf("%s %d%s is out of range: the %s field goes from %d to %d", n.name, value, in, n.name, n.min, n.max)
			}
		}
	}
	return nil
}
