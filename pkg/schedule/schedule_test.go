package schedule_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

func TestFirstMondayOfMonth(t *testing.T) {
	t.Parallel()

	// 2027: CEST from 03-28 to 10-31, so 09:00 Berlin is 08:00Z in Jan-Mar
	// and Nov-Dec, 07:00Z in Apr-Oct.
	want := utcs(t,
		"2027-01-04T08:00:00Z", "2027-02-01T08:00:00Z", "2027-03-01T08:00:00Z",
		"2027-04-05T07:00:00Z", "2027-05-03T07:00:00Z", "2027-06-07T07:00:00Z",
		"2027-07-05T07:00:00Z", "2027-08-02T07:00:00Z", "2027-09-06T07:00:00Z",
		"2027-10-04T07:00:00Z", "2027-11-01T08:00:00Z", "2027-12-06T08:00:00Z",
	)
	for _, spec := range []schedule.Spec{
		{RRule: "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0"},
		{RRule: "RRULE:FREQ=MONTHLY;BYDAY=+1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0"},
		{RRule: "freq=monthly;byday=1mo;byhour=9;byminute=0;bysecond=0"},
		{Cron: "0 9 * * 1#1"},
		{Cron: "0 9 * * MON#1"},
		{Cron: "0 0 9 * * mon#1"},
	} {
		t.Run(spec.RRule+spec.Cron, func(t *testing.T) {
			t.Parallel()
			spec.Timezone = "Europe/Berlin"
			s := compile(t, spec)
			require.Equal(t, want, s.Upcoming(utc(t, "2026-12-31T23:00:00Z"), 20, 0)[:12])
		})
	}
}

// sequence returns n instants from first, step apart.
func sequence(first time.Time, step time.Duration, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = first.Add(time.Duration(i) * step)
	}
	return out
}

func TestFrequent(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name  string
		spec  schedule.Spec
		from  string // may fall between seconds
		first string
		step  time.Duration
	}{
		{"EverySecond", schedule.Spec{Cron: "* * * * * *"}, "2026-05-01T10:00:00.5Z", "2026-05-01T10:00:01Z", time.Second},
		{"EverySecondOnTheSecond", schedule.Spec{Cron: "* * * * * *"}, "2026-05-01T10:00:00Z", "2026-05-01T10:00:01Z", time.Second},
		{"EverySecondInZone", schedule.Spec{Cron: "* * * * * *", Timezone: "Asia/Kolkata"}, "2026-05-01T10:00:00.999Z", "2026-05-01T10:00:01Z", time.Second},
		{"Every15Seconds", schedule.Spec{Cron: "*/15 * * * * *"}, "2026-05-01T10:00:07Z", "2026-05-01T10:00:15Z", 15 * time.Second},
		{"Every15SecondsList", schedule.Spec{Cron: "0,15,30,45 * * * * *"}, "2026-05-01T10:00:59.999Z", "2026-05-01T10:01:00Z", 15 * time.Second},
		{"EveryMinute", schedule.Spec{Cron: "* * * * *"}, "2026-05-01T10:00:00Z", "2026-05-01T10:01:00Z", time.Minute},
		{"Every5Minutes", schedule.Spec{Cron: "*/5 * * * *"}, "2026-05-01T10:02:00Z", "2026-05-01T10:05:00Z", 5 * time.Minute},
		{"Hourly", schedule.Spec{Cron: "@hourly"}, "2026-05-01T10:02:00Z", "2026-05-01T11:00:00Z", time.Hour},
		{"RRuleSecondly", schedule.Spec{RRule: "FREQ=SECONDLY;INTERVAL=15"}, "2026-05-01T10:00:07Z", "2026-05-01T10:00:15Z", 15 * time.Second},
		{"RRuleMinutely", schedule.Spec{RRule: "FREQ=MINUTELY;INTERVAL=5"}, "2026-05-01T10:02:00Z", "2026-05-01T10:05:00Z", 5 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := compile(t, tt.spec)
			want := sequence(utc(t, tt.first), tt.step, 50)
			require.Equal(t, want, s.Upcoming(utc(t, tt.from), 50, 0))
		})
	}

	t.Run("YearsAfterStartSearchesFromT", func(t *testing.T) {
		t.Parallel()
		s := compile(t, schedule.Spec{Cron: "* * * * * *"})
		from := time.Date(2036, 7, 1, 12, 0, 0, 250_000_000, time.UTC)
		next, ok := s.Next(from)
		require.True(t, ok)
		require.Equal(t, time.Date(2036, 7, 1, 12, 0, 1, 0, time.UTC), next)
	})
}

func TestCronSemantics(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name string
		cron string
		from string
		want []string
	}{
		// crontab(5): restricted day-of-month and day-of-week combine with OR.
		{"DomOrDow", "0 0 13 * FRI", "2026-03-01T00:00:00Z",
			[]string{"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z", "2026-03-20T00:00:00Z", "2026-03-27T00:00:00Z", "2026-04-03T00:00:00Z", "2026-04-10T00:00:00Z", "2026-04-13T00:00:00Z"}},
		{"DomOnly", "0 0 13 * *", "2026-03-01T00:00:00Z",
			[]string{"2026-03-13T00:00:00Z", "2026-04-13T00:00:00Z"}},
		{"DowOnlySundayAs7", "0 0 * * 7", "2026-03-01T00:00:00Z",
			[]string{"2026-03-08T00:00:00Z", "2026-03-15T00:00:00Z"}},
		{"LastDayOfMonth", "0 0 L * *", "2026-01-31T00:00:00Z",
			[]string{"2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z"}},
		{"LastFridayOfMonth", "0 12 * * 5#L", "2026-03-01T00:00:00Z",
			[]string{"2026-03-27T12:00:00Z", "2026-04-24T12:00:00Z", "2026-05-29T12:00:00Z"}},
		{"Weekly", "@weekly", "2026-03-01T00:00:00Z",
			[]string{"2026-03-08T00:00:00Z", "2026-03-15T00:00:00Z"}},
		{"Monthly", "@monthly", "2026-03-01T00:00:00Z",
			[]string{"2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z"}},
		{"Yearly", "@yearly", "2026-03-01T00:00:00Z",
			[]string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{"Feb29", "0 0 29 2 *", "2026-03-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"WrapAroundHours", "0 22-2 * * *", "2026-03-01T21:00:00Z",
			[]string{"2026-03-01T22:00:00Z", "2026-03-01T23:00:00Z", "2026-03-02T00:00:00Z", "2026-03-02T01:00:00Z", "2026-03-02T02:00:00Z", "2026-03-02T22:00:00Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := utcs(t, tt.want...)
			require.Equal(t, want, compile(t, schedule.Spec{Cron: tt.cron}).Upcoming(utc(t, tt.from), len(want), 0))
		})
	}
}

func TestEvery(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name string
		spec schedule.Spec
		from string
		want []string
	}{
		{"DayAtSeconds", schedule.Spec{Every: "day", At: "23:59:30"}, "2026-05-01T23:59:30Z",
			[]string{"2026-05-02T23:59:30Z", "2026-05-03T23:59:30Z"}},
		{"DayDefaultMidnight", schedule.Spec{Every: "day", Timezone: "Asia/Tokyo"}, "2026-05-01T00:00:00Z",
			[]string{"2026-05-01T15:00:00Z", "2026-05-02T15:00:00Z"}},
		{"WeekMonday0900", schedule.Spec{Every: "week", On: json.RawMessage(`"monday"`), At: "09:00", Timezone: "Europe/Berlin"}, "2026-03-20T00:00:00Z",
			[]string{"2026-03-23T08:00:00Z", "2026-03-30T07:00:00Z", "2026-04-06T07:00:00Z"}},
		{"WeekShortName", schedule.Spec{Every: "week", On: json.RawMessage(`"Fri"`), At: "17:30"}, "2026-05-01T17:30:00Z",
			[]string{"2026-05-08T17:30:00Z", "2026-05-15T17:30:00Z"}},
		{"Month31", schedule.Spec{Every: "month", On: json.RawMessage(`31`), At: "12:00"}, "2026-01-01T00:00:00Z",
			[]string{"2026-01-31T12:00:00Z", "2026-02-28T12:00:00Z", "2026-03-31T12:00:00Z", "2026-04-30T12:00:00Z", "2026-05-31T12:00:00Z"}},
		{"Month31LeapYear", schedule.Spec{Every: "month", On: json.RawMessage(`31`)}, "2028-02-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2028-03-31T00:00:00Z"}},
		{"Month30", schedule.Spec{Every: "month", On: json.RawMessage(`30`)}, "2026-01-30T00:00:00Z",
			[]string{"2026-02-28T00:00:00Z", "2026-03-30T00:00:00Z"}},
		{"MonthLastDay", schedule.Spec{Every: "month", On: json.RawMessage(`-1`), At: "18:00"}, "2026-01-31T18:00:00Z",
			[]string{"2026-02-28T18:00:00Z", "2026-03-31T18:00:00Z", "2026-04-30T18:00:00Z"}},
		{"MonthFirst", schedule.Spec{Every: "month", On: json.RawMessage(`1`), At: "00:00:01"}, "2026-12-15T00:00:00Z",
			[]string{"2027-01-01T00:00:01Z", "2027-02-01T00:00:01Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := utcs(t, tt.want...)
			require.Equal(t, want, compile(t, tt.spec).Upcoming(utc(t, tt.from), len(want), 0))
		})
	}

	t.Run("OnDefaultsFromStartAt", func(t *testing.T) {
		t.Parallel()
		// 2026-01-01 is a Thursday; in Auckland it is already 13:00 then.
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		week := compile(t, schedule.Spec{Every: "week", StartAt: &start})
		require.JSONEq(t, `"thursday"`, string(week.Spec().On))
		month := compile(t, schedule.Spec{Every: "month", StartAt: &start, Timezone: "Pacific/Auckland"})
		require.JSONEq(t, `1`, string(month.Spec().On))
		first, ok := month.First()
		require.True(t, ok)
		require.Equal(t, utc(t, "2026-01-31T11:00:00Z"), first) // 2026-02-01 00:00 NZDT
	})
}

func TestBounds(t *testing.T) {
	t.Parallel()

	start := time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC)
	end := time.Date(2026, 5, 1, 10, 5, 0, 0, time.UTC)

	t.Run("StartAt", func(t *testing.T) {
		t.Parallel()
		s := compile(t, schedule.Spec{Cron: "* * * * *", StartAt: &start})
		first, ok := s.First()
		require.True(t, ok)
		require.Equal(t, utc(t, "2026-05-01T10:01:00Z"), first)
		next, ok := s.Next(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
		require.True(t, ok)
		require.Equal(t, first, next)
		next, ok = s.Next(time.Time{})
		require.True(t, ok)
		require.Equal(t, first, next)
	})

	t.Run("UnboundedWalksTheRuleBeforeStartAndAfterEnd", func(t *testing.T) {
		t.Parallel()
		end := start.Add(2 * time.Hour)
		s := compile(t, schedule.Spec{Cron: "0 * * * *", StartAt: &start, EndAt: &end, Timezone: "Europe/Berlin"}).Unbounded()
		next, ok := s.Next(time.Date(2026, 4, 30, 0, 0, 0, 0, time.UTC))
		require.True(t, ok)
		require.Equal(t, utc(t, "2026-04-30T01:00:00Z"), next, "the rule, before start_at")
		next, ok = s.Next(end.Add(time.Hour))
		require.True(t, ok)
		require.Equal(t, utc(t, "2026-05-01T14:00:00Z"), next, "and after end_at")
		next, ok = s.Jittered(1500 * time.Millisecond).Next(time.Date(2026, 4, 30, 0, 0, 0, 0, time.UTC))
		require.True(t, ok)
		require.Equal(t, utc(t, "2026-04-30T00:00:01.5Z"), next, "jittered too")
	})

	t.Run("StartAtIsInclusive", func(t *testing.T) {
		t.Parallel()
		at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		s := compile(t, schedule.Spec{Cron: "* * * * *", StartAt: &at})
		first, ok := s.First()
		require.True(t, ok)
		require.Equal(t, at, first)

		// A start a fraction of a millisecond later excludes it.
		late := at.Add(time.Microsecond)
		s = compile(t, schedule.Spec{Cron: "* * * * *", StartAt: &late})
		first, ok = s.First()
		require.True(t, ok)
		require.Equal(t, at.Add(time.Minute), first)
	})

	t.Run("EndAtIsExclusive", func(t *testing.T) {
		t.Parallel()
		s := compile(t, schedule.Spec{Cron: "* * * * *", StartAt: &start, EndAt: &end})
		require.Equal(t, sequence(utc(t, "2026-05-01T10:01:00Z"), time.Minute, 4), s.Upcoming(start, 100, 0))
		_, ok := s.Next(utc(t, "2026-05-01T10:04:00Z"))
		require.False(t, ok)
	})

	t.Run("CountWithUsed", func(t *testing.T) {
		t.Parallel()
		s := compile(t, schedule.Spec{Every: "day", At: "09:00", StartAt: &start, Count: 3})
		require.Equal(t, 3, s.Count())
		all := s.Upcoming(start, 10, 0)
		require.Equal(t, utcs(t, "2026-05-02T09:00:00Z", "2026-05-03T09:00:00Z", "2026-05-04T09:00:00Z"), all)
		require.Equal(t, all[1:], s.Upcoming(all[0], 10, 1))
		require.Equal(t, all[2:], s.Upcoming(all[1], 10, 2))
		require.Empty(t, s.Upcoming(all[2], 10, 3))
		require.Empty(t, s.Upcoming(all[2], 10, 7))
		require.Equal(t, all[:2], s.Upcoming(start, 2, 0))
		// Next does not apply count.
		next, ok := s.Next(all[2])
		require.True(t, ok)
		require.Equal(t, utc(t, "2026-05-05T09:00:00Z"), next)
	})

	t.Run("UnlimitedCount", func(t *testing.T) {
		t.Parallel()
		s := compile(t, schedule.Spec{Cron: "@daily", StartAt: &start})
		require.Zero(t, s.Count())
		require.Len(t, s.Upcoming(start, 400, 1_000_000), 400)
	})

	t.Run("RRuleAnchoredAtStartAt", func(t *testing.T) {
		t.Parallel()
		// DTSTART is start_at's wall clock: FREQ=DAILY;INTERVAL=2 runs every
		// other day at start_at's time of day.
		at := time.Date(2026, 5, 1, 7, 15, 0, 0, time.UTC) // 09:15 CEST
		s := compile(t, schedule.Spec{RRule: "FREQ=DAILY;INTERVAL=2", StartAt: &at, Timezone: "Europe/Berlin"})
		require.Equal(t, utcs(t, "2026-05-01T07:15:00Z", "2026-05-03T07:15:00Z", "2026-05-05T07:15:00Z"), s.Upcoming(at.Add(-time.Second), 3, 0))
		// Far from start_at the phase holds: 2026-05-01 + 2*k days.
		next, ok := s.Next(time.Date(2031, 12, 30, 0, 0, 0, 0, time.UTC))
		require.True(t, ok)
		require.Equal(t, utc(t, "2031-12-31T08:15:00Z"), next) // 09:15 CET
	})
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()

	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	before := start.Add(-time.Hour)
	far := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	huge := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	old := time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		spec  schedule.Spec
		field string
	}{
		{"None", schedule.Spec{Timezone: "UTC"}, "schedule"},
		{"CronAndRRule", schedule.Spec{Cron: "* * * * *", RRule: "FREQ=DAILY"}, "schedule"},
		{"CronAndEvery", schedule.Spec{Cron: "* * * * *", Every: "day"}, "schedule"},
		{"AllThree", schedule.Spec{Cron: "* * * * *", RRule: "FREQ=DAILY", Every: "day"}, "schedule"},

		{"CronGarbage", schedule.Spec{Cron: "every day"}, "schedule.cron"},
		{"CronBlank", schedule.Spec{Cron: "   "}, "schedule.cron"},
		{"CronFourFields", schedule.Spec{Cron: "* * * *"}, "schedule.cron"},
		{"CronSevenFields", schedule.Spec{Cron: "0 0 0 1 1 * 2030"}, "schedule.cron"},
		{"CronMinuteRange", schedule.Spec{Cron: "60 * * * *"}, "schedule.cron"},
		{"CronHourRange", schedule.Spec{Cron: "0 24 * * *"}, "schedule.cron"},
		{"CronBadStep", schedule.Spec{Cron: "*/0 * * * *"}, "schedule.cron"},
		{"CronBadName", schedule.Spec{Cron: "0 0 * * FUNDAY"}, "schedule.cron"},
		{"CronUnknownDescriptor", schedule.Spec{Cron: "@reboot"}, "schedule.cron"},
		{"CronEvery", schedule.Spec{Cron: "@every 5m"}, "schedule.cron"},
		{"CronTZPrefix", schedule.Spec{Cron: "CRON_TZ=Europe/Berlin 0 9 * * *"}, "schedule.cron"},
		{"CronHash", schedule.Spec{Cron: "H * * * *"}, "schedule.cron"},
		{"CronEmptyField", schedule.Spec{Cron: ", * * * * *"}, "schedule.cron"},
		{"CronNeverFeb30", schedule.Spec{Cron: "0 0 30 2 *"}, "schedule.cron"},
		{"CronEndBeforeFirst", schedule.Spec{Cron: "0 0 1 1 *", StartAt: &start, EndAt: ptr(start.AddDate(0, 6, 0))}, "schedule.cron"},

		{"RRuleGarbage", schedule.Spec{RRule: "every monday"}, "schedule.rrule"},
		{"RRuleNoFreq", schedule.Spec{RRule: "BYDAY=MO"}, "schedule.rrule"},
		{"RRuleBadFreq", schedule.Spec{RRule: "FREQ=FORTNIGHTLY"}, "schedule.rrule"},
		{"RRuleUnknownPart", schedule.Spec{RRule: "FREQ=DAILY;FOO=1"}, "schedule.rrule"},
		{"RRuleDTSTART", schedule.Spec{RRule: "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY"}, "schedule.rrule"},
		{"RRuleDTSTARTInline", schedule.Spec{RRule: "FREQ=DAILY;DTSTART=20260101T000000Z"}, "schedule.rrule"},
		{"RRuleCount", schedule.Spec{RRule: "FREQ=DAILY;COUNT=3"}, "schedule.rrule"},
		{"RRuleUntil", schedule.Spec{RRule: "FREQ=DAILY;UNTIL=20270101T000000Z"}, "schedule.rrule"},
		{"RRuleDuplicate", schedule.Spec{RRule: "FREQ=DAILY;FREQ=WEEKLY"}, "schedule.rrule"},
		{"RRuleBadHour", schedule.Spec{RRule: "FREQ=DAILY;BYHOUR=24"}, "schedule.rrule"},
		{"RRuleBadMonthDay", schedule.Spec{RRule: "FREQ=MONTHLY;BYMONTHDAY=0"}, "schedule.rrule"},
		{"RRuleZeroInterval", schedule.Spec{RRule: "FREQ=DAILY;INTERVAL=0"}, "schedule.rrule"},
		{"RRuleNegativeInterval", schedule.Spec{RRule: "FREQ=DAILY;INTERVAL=-2"}, "schedule.rrule"},
		{"RRuleOrdinalDaily", schedule.Spec{RRule: "FREQ=DAILY;BYDAY=1MO"}, "schedule.rrule"},
		{"RRuleOrdinalTooBig", schedule.Spec{RRule: "FREQ=MONTHLY;BYDAY=6MO"}, "schedule.rrule"},
		{"RRuleEaster", schedule.Spec{RRule: "FREQ=YEARLY;BYEASTER=0"}, "schedule.rrule"},
		{"RRuleNeverFeb30", schedule.Spec{RRule: "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"}, "schedule.rrule"},
		{"RRuleUnreachableHour", schedule.Spec{RRule: "FREQ=HOURLY;INTERVAL=2;BYHOUR=1", StartAt: &start}, "schedule.rrule"},
		{"RRuleTooDense", schedule.Spec{RRule: "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=" + upTo(24) + ";BYMINUTE=" + upTo(60)}, "schedule.rrule"},

		{"EveryUnknown", schedule.Spec{Every: "fortnight"}, "schedule.every"},
		{"AtMalformed", schedule.Spec{Every: "day", At: "9am"}, "schedule.at"},
		{"AtOneDigit", schedule.Spec{Every: "day", At: "9:00"}, "schedule.at"},
		{"AtHour24", schedule.Spec{Every: "day", At: "24:00"}, "schedule.at"},
		{"AtMinute60", schedule.Spec{Every: "day", At: "12:60"}, "schedule.at"},
		{"AtSecondsBad", schedule.Spec{Every: "day", At: "12:00:61"}, "schedule.at"},
		{"AtWithCron", schedule.Spec{Cron: "* * * * *", At: "09:00"}, "schedule.at"},
		{"OnWithCron", schedule.Spec{Cron: "* * * * *", On: json.RawMessage(`"monday"`)}, "schedule.on"},
		{"OnWithDay", schedule.Spec{Every: "day", On: json.RawMessage(`"monday"`)}, "schedule.on"},
		{"OnWeekNotAName", schedule.Spec{Every: "week", On: json.RawMessage(`"someday"`)}, "schedule.on"},
		{"OnWeekNumber", schedule.Spec{Every: "week", On: json.RawMessage(`1`)}, "schedule.on"},
		{"OnMonthZero", schedule.Spec{Every: "month", On: json.RawMessage(`0`)}, "schedule.on"},
		{"OnMonth32", schedule.Spec{Every: "month", On: json.RawMessage(`32`)}, "schedule.on"},
		{"OnMonthMinus2", schedule.Spec{Every: "month", On: json.RawMessage(`-2`)}, "schedule.on"},
		{"OnMonthString", schedule.Spec{Every: "month", On: json.RawMessage(`"15"`)}, "schedule.on"},
		{"OnMonthFraction", schedule.Spec{Every: "month", On: json.RawMessage(`1.5`)}, "schedule.on"},

		{"UnknownTimezone", schedule.Spec{Cron: "* * * * *", Timezone: "Mars/Olympus_Mons"}, "schedule.timezone"},
		{"LocalTimezone", schedule.Spec{Cron: "* * * * *", Timezone: "Local"}, "schedule.timezone"},
		{"PathTimezone", schedule.Spec{Cron: "* * * * *", Timezone: "../../etc/passwd"}, "schedule.timezone"},
		{"EndBeforeStart", schedule.Spec{Cron: "* * * * *", StartAt: &start, EndAt: &before}, "schedule.end_at"},
		{"EndEqualsStart", schedule.Spec{Cron: "* * * * *", StartAt: &start, EndAt: &far}, "schedule.end_at"},
		{"EndTooLate", schedule.Spec{Cron: "* * * * *", StartAt: &start, EndAt: &huge}, "schedule.end_at"},
		{"StartBefore1970", schedule.Spec{Cron: "* * * * *", StartAt: &old}, "schedule.start_at"},
		{"CountNegative", schedule.Spec{Cron: "* * * * *", Count: -1}, "schedule.count"},
		{"CountTooLarge", schedule.Spec{Cron: "* * * * *", Count: schedule.MaxCount + 1}, "schedule.count"},
		{"MisfireUnknown", schedule.Spec{Cron: "* * * * *", Misfire: "later"}, "schedule.misfire"},
		{"MisfireMaxNegative", schedule.Spec{Cron: "* * * * *", MisfireMax: -1}, "schedule.misfire_max"},
		{"MisfireMaxTooLarge", schedule.Spec{Cron: "* * * * *", MisfireMax: schedule.MaxMisfireMax + 1}, "schedule.misfire_max"},
		{"DSTGap", schedule.Spec{Cron: "* * * * *", DST: &schedule.DSTPolicy{Gap: "forward"}}, "schedule.dst.gap"},
		{"DSTOverlap", schedule.Spec{Cron: "* * * * *", DST: &schedule.DSTPolicy{Overlap: "last"}}, "schedule.dst.overlap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := tt.spec.Compile(created)
			require.Error(t, err)
			require.Nil(t, s)
			require.ErrorIs(t, err, job.ErrInvalid)
			var fe *job.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tt.field, fe.Field, fe.Message)
			require.NotEmpty(t, fe.Message)
		})
	}

	t.Run("MessagesNameTheFix", func(t *testing.T) {
		t.Parallel()
		for spec, want := range map[*schedule.Spec]string{
			{}:                                       "set one of cron, rrule or every",
			{Cron: "* * * * *", RRule: "FREQ=DAILY"}: "set only one of cron, rrule or every (got cron and rrule)",
			{RRule: "FREQ=DAILY;DTSTART=20260101T000000Z"}:       "DTSTART is not allowed: use start_at",
			{Cron: "0 0 30 2 *"}:                                 "has no occurrence in the 50 years after start_at",
			{Cron: "* * * * *", StartAt: &start, EndAt: &before}: "must be after start_at",
		} {
			_, err := spec.Compile(created)
			var fe *job.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, want, fe.Message)
		}
	})
}

// upTo lists 0..n-1 for an RRULE BYxxx part.
func upTo(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i)
	}
	return strings.Join(parts, ",")
}

func ptr[T any](v T) *T { return &v }

func TestSpecRoundTrip(t *testing.T) {
	t.Parallel()

	start := time.Date(2026, 3, 20, 8, 17, 42, 123_456_789, time.UTC)
	for _, spec := range []schedule.Spec{
		{Cron: " 30 2 * * * ", Timezone: "Europe/Berlin"},
		{Cron: "*/15 * * * * *", DST: &schedule.DSTPolicy{Overlap: "both"}},
		{RRule: "RRULE:FREQ=WEEKLY;INTERVAL=3", Timezone: "America/New_York"},
		{RRule: "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17", Timezone: "Australia/Sydney", Misfire: "catch_up", MisfireMax: 7},
		{RRule: "FREQ=HOURLY;INTERVAL=5", StartAt: &start},
		{Every: "week", Timezone: "Europe/Berlin"},
		{Every: "month", At: "06:45:10", DST: &schedule.DSTPolicy{Gap: "skip"}},
		{Every: "day", Count: 5, EndAt: ptr(created.AddDate(2, 0, 0))},
	} {
		t.Run(fmt.Sprintf("%s%s%s", spec.Cron, spec.RRule, spec.Every), func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 3, 20, 8, 17, 42, 987_654_321, time.UTC)
			s, err := spec.Compile(now)
			require.NoError(t, err)

			norm := s.Spec()
			require.NotEmpty(t, norm.Timezone)
			require.NotNil(t, norm.StartAt)
			require.NotEmpty(t, norm.Misfire)
			require.NotZero(t, norm.MisfireMax)
			require.NotNil(t, norm.DST)
			require.NotEmpty(t, norm.DST.Gap)
			require.NotEmpty(t, norm.DST.Overlap)

			raw, err := json.Marshal(norm)
			require.NoError(t, err)
			var back schedule.Spec
			require.NoError(t, json.Unmarshal(raw, &back))
			// Compiled later, the stored spec means the same schedule.
			again, err := back.Compile(now.AddDate(1, 0, 0))
			require.NoError(t, err)
			require.Equal(t, norm, again.Spec())

			from := now.Add(-time.Hour)
			require.Equal(t, s.Upcoming(from, 50, 0), again.Upcoming(from, 50, 0))
			first, ok := s.First()
			require.True(t, ok)
			againFirst, ok := again.First()
			require.True(t, ok)
			require.Equal(t, first, againFirst)
		})
	}

	t.Run("DefaultsFilled", func(t *testing.T) {
		t.Parallel()
		now := time.Date(2026, 3, 20, 8, 17, 42, 123_400_000, time.UTC)
		s, err := schedule.Spec{Every: "week"}.Compile(now)
		require.NoError(t, err)
		raw, err := json.Marshal(s.Spec())
		require.NoError(t, err)
		require.JSONEq(t, `{
			"every": "week", "at": "00:00", "on": "friday", "timezone": "UTC",
			"start_at": "2026-03-20T08:17:42.124Z",
			"misfire": "run_once", "misfire_max": 100,
			"dst": {"gap": "shift", "overlap": "first"}
		}`, string(raw))
	})
}

func TestFieldErrorsAreFieldErrors(t *testing.T) {
	t.Parallel()
	_, err := schedule.Spec{Cron: "nope"}.Compile(created)
	var fe *job.FieldError
	require.True(t, errors.As(err, &fe))
	require.True(t, errors.Is(err, job.ErrInvalid))
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()

	// A compiled schedule is shared by the loader's goroutines.
	for _, spec := range []schedule.Spec{
		{Cron: "*/15 * * * * *", Timezone: "Europe/Berlin"},
		{RRule: "FREQ=MONTHLY;BYDAY=1MO,-1FR;BYHOUR=9", Timezone: "America/New_York"},
		{Every: "month", On: json.RawMessage(`-1`), Timezone: "Asia/Tokyo"},
	} {
		s := compile(t, spec)
		want := s.Upcoming(created, 40, 0)
		done := make(chan []time.Time)
		for range 8 {
			go func() { done <- s.Upcoming(created, 40, 0) }()
		}
		for range 8 {
			require.Equal(t, want, <-done)
		}
	}
}

func TestPerHour(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		spec schedule.Spec
		want int
	}{
		{schedule.Spec{Cron: "* * * * * *"}, 3600},
		{schedule.Spec{Cron: "*/10 * * * * *"}, 360},
		{schedule.Spec{Cron: "* * * * *"}, 60},
		{schedule.Spec{Cron: "0 * * * *"}, 1},
		{schedule.Spec{Cron: "0 9 * * *"}, 1},
		// Every second between 09:00 and 10:00 counts as every second, at any
		// time of day: the hour from its next occurrence is measured.
		{schedule.Spec{Cron: "* * 9 * * *"}, 3600},
		{schedule.Spec{RRule: "FREQ=SECONDLY;INTERVAL=2"}, 1800},
	} {
		t.Run(tt.spec.Cron+tt.spec.RRule, func(t *testing.T) {
			t.Parallel()
			sp := tt.spec
			sp.StartAt = &start
			s, err := sp.Compile(start)
			require.NoError(t, err)
			require.Equal(t, tt.want, s.PerHour(start.Add(11*time.Hour)))
		})
	}
}

// A jittered schedule is the rule's occurrences, each moved later by the
// offset, whatever the evaluation: Next, First, Upcoming, Misfired, Load.
func TestJitteredShiftsEveryOccurrence(t *testing.T) {
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	spec := schedule.Spec{Cron: "0 9 * * *", StartAt: &start}
	sched, err := spec.Compile(start)
	if err != nil {
		t.Fatal(err)
	}
	off := 37*time.Second + 250*time.Millisecond
	j := sched.Jittered(off)

	first, _ := j.First()
	if want := time.Date(2026, 11, 2, 9, 0, 37, 250e6, time.UTC); !first.Equal(want) {
		t.Fatalf("First = %v, want %v", first, want)
	}
	// After the nominal time but before the shifted one: still that day's.
	next, _ := j.Next(time.Date(2026, 11, 3, 9, 0, 10, 0, time.UTC))
	if want := time.Date(2026, 11, 3, 9, 0, 37, 250e6, time.UTC); !next.Equal(want) {
		t.Fatalf("Next = %v, want %v", next, want)
	}
	for i, at := range j.Upcoming(start, 3, 0) {
		nominal := sched.Upcoming(start, 3, 0)[i]
		if at.Sub(nominal) != off {
			t.Fatalf("occurrence %d at %v, nominal %v: not moved by %v", i, at, nominal, off)
		}
	}
	// A day late, run_once: superseded by the next shifted occurrence.
	late := time.Date(2026, 11, 4, 9, 0, 40, 0, time.UTC)
	if run, reason := j.Misfired(first.Add(24*time.Hour), late, time.Minute); run || reason != "superseded by 2026-11-04T09:00:37Z" {
		t.Fatalf("Misfired = %v %q", run, reason)
	}
	l := j.Load(start, 0)
	if l.Hours != 1<<9 || l.Minutes != 1 || l.Seconds != 1<<37 {
		t.Fatalf("Load = %+v, want 09:00:37 only", l)
	}
	// An offset that crosses midnight folds onto the next hour and day.
	l = sched.Jittered(15*time.Hour+30*time.Minute).Load(start, 0)
	if l.Hours != 1<<0 || l.Minutes != 1<<30 || l.Seconds != 1 {
		t.Fatalf("Load = %+v, want 00:30:00", l)
	}
}
