package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tockhq/tock/pkg/schedule/internal/rrule"

	"github.com/tockhq/tock/pkg/schedule"
)

// TestRRuleMatchesLibraryFromAnyPoint checks that Next, which restarts the
// rule from a DTSTART near its argument rather than from start_at, yields
// exactly what rrule-go yields when iterating from start_at (in UTC, where
// wall time and instant coincide).
func TestRRuleMatchesLibraryFromAnyPoint(t *testing.T) {
	t.Parallel()

	start := time.Date(2026, 2, 11, 13, 37, 21, 0, time.UTC) // a Wednesday
	for _, rule := range []string{
		"FREQ=SECONDLY",
		"FREQ=SECONDLY;INTERVAL=37",
		"FREQ=SECONDLY;INTERVAL=7;BYMINUTE=0,30;BYHOUR=9",
		"FREQ=MINUTELY;INTERVAL=13",
		"FREQ=MINUTELY;INTERVAL=45;BYHOUR=1,2,3;BYSECOND=5,50",
		"FREQ=HOURLY;INTERVAL=7",
		"FREQ=HOURLY;INTERVAL=5;BYHOUR=3,8,23;BYMINUTE=0,59",
		"FREQ=HOURLY;BYDAY=SA,SU",
		"FREQ=DAILY",
		"FREQ=DAILY;INTERVAL=3;BYHOUR=0,12",
		"FREQ=DAILY;INTERVAL=10;BYMONTH=1,7",
		"FREQ=WEEKLY",
		"FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR",
		"FREQ=WEEKLY;INTERVAL=3;BYDAY=SU,TU;WKST=SU",
		"FREQ=WEEKLY;INTERVAL=4;BYDAY=SA;WKST=TH;BYHOUR=6",
		"FREQ=MONTHLY",
		"FREQ=MONTHLY;INTERVAL=5;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
		"FREQ=MONTHLY;BYMONTHDAY=-1,15;BYHOUR=8,20",
		"FREQ=MONTHLY;INTERVAL=2;BYDAY=-2SU",
		"FREQ=MONTHLY;BYMONTHDAY=31",
		"FREQ=YEARLY",
		"FREQ=YEARLY;INTERVAL=3;BYWEEKNO=1,52;BYDAY=MO",
		"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
		"FREQ=YEARLY;BYYEARDAY=1,100,-1",
		"FREQ=YEARLY;BYDAY=20MO",
		"FREQ=YEARLY;INTERVAL=2;BYMONTH=3,11;BYDAY=1SU,-1SA;BYHOUR=2;BYMINUTE=30",
	} {
		t.Run(rule, func(t *testing.T) {
			t.Parallel()
			s, err := schedule.Spec{RRule: rule, StartAt: &start}.Compile(start)
			require.NoError(t, err)

			opt, err := rrule.StrToROption(rule)
			require.NoError(t, err)
			opt.Dtstart = start
			// tock's one deliberate departure from RFC 5545 (see explicitDefaults):
			// a rule that names a time of day means its finer parts are zero.
			if len(opt.Byhour) > 0 && len(opt.Byminute) == 0 && opt.Freq < rrule.MINUTELY {
				opt.Byminute = []int{0}
			}
			if (len(opt.Byhour) > 0 || len(opt.Byminute) > 0) && len(opt.Bysecond) == 0 && opt.Freq < rrule.SECONDLY {
				opt.Bysecond = []int{0}
			}
			lib, err := rrule.NewRRule(*opt)
			require.NoError(t, err)

			// One pass of the library's own iterator from DTSTART serves
			// every starting point, in increasing order.
			next := lib.Iterator()
			var buf []time.Time
			for _, from := range []time.Time{
				start.Add(-time.Second),
				start,
				start.Add(59 * time.Second),
				start.Add(3*time.Hour + 17*time.Minute),
				start.AddDate(0, 0, 9),
				start.AddDate(0, 1, 3).Add(time.Hour),
				start.AddDate(0, 11, 0),
				start.AddDate(2, 5, 17).Add(11 * time.Minute),
				start.AddDate(7, 0, 0),
			} {
				if rule == "FREQ=SECONDLY" && from.After(start.AddDate(0, 0, 10)) {
					break // the library would take minutes to walk there
				}
				for len(buf) > 0 && !buf[0].After(from) {
					buf = buf[1:]
				}
				for len(buf) < 5 {
					at, ok := next()
					if !ok {
						break
					}
					if at.After(from) {
						buf = append(buf, at)
					}
				}
				require.Equal(t, buf, s.Upcoming(from, 5, 0), "from %s", from)
			}
		})
	}
}

func TestRRuleTimeOfDayIsExact(t *testing.T) {
	t.Parallel()
	// Created at 10:17:45 Berlin time: a rule naming 09:00 runs at 09:00:00,
	// not at 09:00:45 (the seconds of creation).
	start := time.Date(2026, 11, 22, 9, 17, 45, 0, time.UTC)
	for _, tt := range []struct {
		rule string
		want time.Time
	}{
		{"FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0", time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)},
		{"FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9", time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)},
		{"FREQ=DAILY;BYMINUTE=30", time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)},
		{"FREQ=DAILY", time.Date(2026, 11, 23, 9, 17, 45, 0, time.UTC)},
	} {
		sched, err := schedule.Spec{RRule: tt.rule, Timezone: "Europe/Berlin", StartAt: &start}.Compile(start)
		require.NoError(t, err, tt.rule)
		first, ok := sched.Next(start)
		require.True(t, ok)
		require.Equal(t, tt.want, first, tt.rule)
	}
}
