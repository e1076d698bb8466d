package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

// mask sets the given bits.
func mask(bits ...int) uint64 {
	var m uint64
	for _, b := range bits {
		m |= 1 << b
	}
	return m
}

// every returns from, from+step, ... below 60.
func every(from, step int) []int {
	var out []int
	for i := from; i < 60; i += step {
		out = append(out, i)
	}
	return out
}

// units is a request's budget without its time, so that a busy machine
// cannot fail the test.
func units(t *testing.T) *schedule.Budget {
	return schedule.NewBudget(t.Context(), schedule.RequestUnits, 0)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	// A Tuesday in summer (CEST, UTC+2), far from a change of offset.
	summer := time.Date(2026, 6, 2, 10, 30, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		spec schedule.Spec
		now  time.Time
		used int
		want job.Load
	}{
		{
			// 4,000 occurrences are 67 minutes: every minute and second seen,
			// and every hour counted, though the walk saw two.
			name: "EverySecond", spec: schedule.Spec{Cron: "* * * * * *"}, now: summer,
			want: job.Load{Hours: job.AllHours, Minutes: job.AllMinutes, Seconds: job.AllSeconds},
		},
		{
			// The burst of the defect: every second of minute 51, each hour.
			// 60 an hour, so the walk covers 66 hours and sees every hour.
			name: "EverySecondOfMinute51", spec: schedule.Spec{Cron: "* 51 * * * *"}, now: summer,
			want: job.Load{Hours: job.AllHours, Minutes: mask(51), Seconds: job.AllSeconds},
		},
		{
			name: "HourlyAt21Minutes", spec: schedule.Spec{Cron: "0 21 * * * *"}, now: summer,
			want: job.Load{Hours: job.AllHours, Minutes: mask(21), Seconds: mask(0)},
		},
		{
			name: "Every10Minutes", spec: schedule.Spec{Cron: "*/10 * * * *"}, now: summer,
			want: job.Load{Hours: job.AllHours, Minutes: mask(every(0, 10)...), Seconds: mask(0)},
		},
		{
			// 09:00 in Berlin is 07:00Z all summer, which the walk sees, and
			// 08:00Z from October, which it does not: both count.
			name: "DailyBerlinSummer", spec: schedule.Spec{Every: "day", At: "09:00", Timezone: "Europe/Berlin"}, now: summer,
			want: job.Load{Hours: 1<<7 | 1<<8, Minutes: mask(0), Seconds: mask(0)},
		},
		{
			// Unless it ends before the clocks change.
			name: "DailyBerlinEndingInSummer",
			spec: schedule.Spec{Every: "day", At: "09:00", Timezone: "Europe/Berlin", EndAt: new(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC))},
			now:  summer, want: job.Load{Hours: 1 << 7, Minutes: mask(0), Seconds: mask(0)},
		},
		{
			name: "DailyBerlinCountedOut", spec: schedule.Spec{Every: "day", At: "09:00", Timezone: "Europe/Berlin", Count: 3}, now: summer,
			want: job.Load{Hours: 1 << 7, Minutes: mask(0), Seconds: mask(0)},
		},
		{
			// The eight days from 2026-03-27 cross the change to CEST on
			// 03-29: 08:00Z before it, 07:00Z after.
			name: "DailyBerlinAcrossTheChange", spec: schedule.Spec{Every: "day", At: "09:00", Timezone: "Europe/Berlin"},
			now:  time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC),
			want: job.Load{Hours: 1<<7 | 1<<8, Minutes: mask(0), Seconds: mask(0)},
		},
		{
			// Every second of minutes 0 to 9: 600 an hour, so 4,000 are
			// seen within seven hours; the other hours are counted too.
			name: "StoppedByTheOccurrencesBeforeADay", spec: schedule.Spec{Cron: "* 0-9 * * * *"}, now: summer,
			want: job.Load{Hours: job.AllHours, Minutes: mask(every(0, 1)[:10]...), Seconds: job.AllSeconds},
		},
		{
			// Every second from 09:00 to 10:00 UTC: 3,600 a day, so the
			// walk ends on its 4,000th occurrence the next day, a day
			// covered: only hour 9.
			name: "StoppedByTheOccurrencesAfterADay", spec: schedule.Spec{Cron: "* * 9 * * *"}, now: summer,
			want: job.Load{Hours: 1 << 9, Minutes: job.AllMinutes, Seconds: job.AllSeconds},
		},
		{
			// Every second from 00:00 to 12:59 on Mondays, from a Monday
			// noon: a walk would see hour 12 and a few minutes of next
			// Monday's hour 0, and end on its 4,000th occurrence with a
			// day covered. The rule's fields say every hour it fires in.
			name: "CronOnFewDays", spec: schedule.Spec{Cron: "* * 0-12 * * 1"}, now: time.Date(2026, 6, 1, 11, 59, 59, 0, time.UTC),
			want: job.Load{Hours: 1<<13 - 1, Minutes: job.AllMinutes, Seconds: job.AllSeconds},
		},
		{
			// A cron rule in Berlin, at both its offsets of the year.
			name: "CronInAZone", spec: schedule.Spec{Cron: "30 9 * * *", Timezone: "Europe/Berlin"}, now: summer,
			want: job.Load{Hours: 1<<7 | 1<<8, Minutes: mask(30), Seconds: mask(0)},
		},
		{
			// India's offset, 5:30, moves the minutes too.
			name: "CronInAHalfHourZone", spec: schedule.Spec{Cron: "15 9,23 * * *", Timezone: "Asia/Kolkata"}, now: summer,
			want: job.Load{Hours: 1<<3 | 1<<17, Minutes: mask(45), Seconds: mask(0)},
		},
		{
			// count 5 with none used: five seconds of one minute, nothing
			// more, although the rule alone runs all day.
			name: "CountLimited", spec: schedule.Spec{Cron: "* * * * * *", Count: 5}, now: summer,
			want: job.Load{Hours: 1 << 10, Minutes: mask(30), Seconds: mask(1, 2, 3, 4, 5)},
		},
		{
			name: "CountSpent", spec: schedule.Spec{Cron: "* * * * * *", Count: 5}, now: summer, used: 5,
			want: job.Load{},
		},
		{
			// A monthly job shows when it fires, though that is weeks away.
			name: "MonthlyBeyondTheSpan", spec: schedule.Spec{Cron: "15 4 1 * *"}, now: summer,
			want: job.Load{Hours: 1 << 4, Minutes: mask(15), Seconds: mask(0)},
		},
		{
			name: "Ended", spec: schedule.Spec{Cron: "* * * * *", EndAt: new(summer.Add(-time.Hour))}, now: summer,
			want: job.Load{},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := tt.now.Add(-24 * time.Hour)
			if tt.spec.EndAt != nil && tt.spec.EndAt.Before(tt.now) {
				start = tt.spec.EndAt.Add(-48 * time.Hour)
			}
			tt.spec.StartAt = &start
			s, err := tt.spec.Compile(start)
			require.NoError(t, err)
			b := units(t)
			got := s.Within(b).Load(tt.now, tt.used)
			require.NoError(t, b.Err(), "within one request's units")
			require.Equal(t, tt.want, got)
		})
	}
}

// TestLoadBudget shows a walk cut short by its budget: the caller learns it
// from Err, rather than take a partial load for the whole.
func TestLoadBudget(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 2, 10, 30, 0, 0, time.UTC)
	s, err := schedule.Spec{RRule: "FREQ=SECONDLY"}.Compile(now)
	require.NoError(t, err)

	b := schedule.NewBudget(context.Background(), 2_000, 0)
	got := s.Within(b).Load(now, 0)
	require.True(t, errors.Is(b.Err(), schedule.ErrTooExpensive), "err = %v", b.Err())
	require.NotEqual(t, job.AllHours, got.Hours, "a partial walk is not mistaken for a full one")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b = schedule.NewBudget(ctx, schedule.RequestUnits, 0)
	s.Within(b).Load(now, 0)
	require.ErrorIs(t, b.Err(), context.Canceled)
}

// nextLoad is Load the slow way, one Next per occurrence: what Load's single
// walk over wall times must agree with.
func nextLoad(s *schedule.Schedule, after time.Time, used int) job.Load {
	var l job.Load
	left := 4000
	if c := s.Count(); c > 0 {
		left = min(left, c-used)
	}
	first, ok := s.Next(after)
	if !ok || left <= 0 {
		return l
	}
	for t, n := first, 1; ; n++ {
		l.Add(t.Hour(), t.Minute(), t.Second())
		if n == left {
			if n == 4000 && t.Sub(first) < 24*time.Hour {
				l.Hours = job.AllHours
			}
			return l
		}
		next, ok := s.Next(t)
		if !ok || !next.Before(first.Add(8*24*time.Hour)) {
			return l
		}
		t = next
	}
}

// TestLoadMatchesNext compares Load with a walk of Next over rules, zones
// and DST policies, from days around both changes of offset in Berlin and
// New York, and Lord Howe's half-hour one: the same load in UTC or under a
// count, and one that holds the walk's in a zone whose offset changes.
func TestLoadMatchesNext(t *testing.T) {
	t.Parallel()
	skip, both := &schedule.DSTPolicy{Gap: schedule.GapSkip}, &schedule.DSTPolicy{Overlap: schedule.OverlapBoth}
	specs := []schedule.Spec{
		{Cron: "*/7 * * * * *"},
		{Cron: "30 2 * * *"},
		{Cron: "30 2 * * *", DST: skip},
		{Cron: "30 2 * * *", DST: both},
		{Cron: "*/5 * * * *", DST: both},
		{Cron: "0 */2 * * *", DST: skip},
		{Cron: "0 9 * * 1"},
		{RRule: "FREQ=SECONDLY;INTERVAL=97"},
		{RRule: "FREQ=MINUTELY;BYSECOND=0,30"},
		{RRule: "FREQ=HOURLY;BYMINUTE=15,45", DST: both},
		{RRule: "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=2;BYMINUTE=30"},
		{Every: "day", At: "02:30:10"},
		{Every: "month", On: []byte("1"), At: "03:00"},
		{Cron: "* * * * * *", Count: 1234},
		{Cron: "0 * * * *", Count: 30},
	}
	var froms []time.Time
	for _, day := range []string{"2026-03-07T20:00:00Z", "2026-03-28T23:59:30Z", "2026-10-24T12:00:00Z", "2026-11-01T05:00:00Z", "2026-04-04T14:00:00Z"} {
		froms = append(froms, utc(t, day))
	}
	for _, zone := range []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"} {
		for _, spec := range specs {
			for _, from := range froms {
				spec.Timezone = zone
				start := from.Add(-time.Hour)
				spec.StartAt = &start
				s, err := spec.Compile(start)
				require.NoError(t, err)
				b := units(t)
				got := s.Within(b).Load(from, 0)
				name := fmt.Sprintf("%s%s%s in %s from %s", spec.Cron, spec.RRule, spec.Every, zone, from)
				require.NoError(t, b.Err(), name)
				walked := nextLoad(s, from, 0)
				if zone == "UTC" || spec.Count > 0 {
					require.Equal(t, walked, got, name)
					continue
				}
				// In a zone that changes its offset, the load counts the
				// wall times in each offset of the year, and a cron rule's
				// comes from its fields: more than the walk, never less
				// (none of these rules makes the walk count every hour for
				// want of a whole day).
				require.True(t, walked.Within(got), "%s: walked %+v, got %+v", name, walked, got)
			}
		}
	}
}
