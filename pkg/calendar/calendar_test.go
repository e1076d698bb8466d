package calendar_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/calendar"
	"github.com/tockhq/tock/pkg/job"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

func TestCalendar(t *testing.T) {
	t.Parallel()

	t.Run("SkipsItsDaysInItsZone", func(t *testing.T) {
		t.Parallel()
		c := &calendar.Calendar{Name: "de-holidays", Timezone: "Europe/Berlin", Dates: []string{"2026-12-25"}}
		require.NoError(t, c.Compile())
		// 23:30 UTC on the 24th is 00:30 on the 25th in Berlin.
		ok, why := c.Skips(at(t, "2026-12-24T23:30:00Z"))
		require.True(t, ok)
		require.Equal(t, "date 2026-12-25", why)
		ok, _ = c.Skips(at(t, "2026-12-24T22:59:59Z"))
		require.False(t, ok, "the 24th in Berlin")
		ok, _ = c.Skips(at(t, "2026-12-25T23:00:00Z"))
		require.False(t, ok, "the 26th in Berlin")
		require.Equal(t, "calendar de-holidays: date 2026-12-25", calendar.Skip([]*calendar.Calendar{c}, at(t, "2026-12-25T09:00:00Z")))
	})

	t.Run("SkipsItsRangesHalfOpen", func(t *testing.T) {
		t.Parallel()
		c := &calendar.Calendar{Name: "window", Ranges: []calendar.Range{
			{From: at(t, "2026-06-01T02:00:00Z"), To: at(t, "2026-06-01T04:00:00Z")},
			{From: at(t, "2026-01-01T00:00:00Z"), To: at(t, "2026-01-01T00:00:01Z")}}}
		require.NoError(t, c.Compile())
		for s, want := range map[string]bool{"2026-06-01T01:59:59Z": false, "2026-06-01T02:00:00Z": true,
			"2026-06-01T03:59:59Z": true, "2026-06-01T04:00:00Z": false, "2026-01-01T00:00:00Z": true} {
			ok, _ := c.Skips(at(t, s))
			require.Equal(t, want, ok, s)
		}
	})

	t.Run("SkipsTheDaysOfItsRules", func(t *testing.T) {
		t.Parallel()
		c := &calendar.Calendar{Name: "weekends-and-christmas", Timezone: "America/New_York",
			RRules: []string{"FREQ=WEEKLY;BYDAY=SA,SU", "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25"}}
		require.NoError(t, c.Compile())
		for s, want := range map[string]bool{
			"2026-11-28T15:00:00Z": true,  // a Saturday
			"2026-11-30T15:00:00Z": false, // a Monday
			"2026-11-30T03:00:00Z": true,  // Sunday 22:00 in New York
			"2030-12-25T12:00:00Z": true,
			"2030-12-24T12:00:00Z": false,
		} {
			ok, _ := c.Skips(at(t, s))
			require.Equal(t, want, ok, s)
		}
	})

	t.Run("RefusesBadInputByField", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			c     calendar.Calendar
			field string
		}{
			{calendar.Calendar{Timezone: "Mars/Olympus"}, "timezone"},
			{calendar.Calendar{Dates: []string{"2026-12-25", "25.12.2026"}}, "dates[1]"},
			{calendar.Calendar{Dates: []string{"2026-02-30"}}, "dates[0]"},
			{calendar.Calendar{Ranges: []calendar.Range{{From: at(t, "2026-01-02T00:00:00Z"), To: at(t, "2026-01-01T00:00:00Z")}}}, "ranges[0].to"},
			{calendar.Calendar{Ranges: []calendar.Range{{To: at(t, "2026-01-01T00:00:00Z")}}}, "ranges[0].from"},
			{calendar.Calendar{RRules: []string{"FREQ=SOMETIMES"}}, "rrules[0]"},
			{calendar.Calendar{Dates: make([]string, calendar.MaxDates+1)}, "dates"},
		} {
			err := tt.c.Compile()
			var fe *job.FieldError
			require.ErrorAs(t, err, &fe, tt.field)
			require.Equal(t, tt.field, fe.Field)
		}
		require.True(t, calendar.ValidName("de-holidays.2026_v1"))
		for _, n := range []string{"", "-x", "De", "a b", "a/b", string(make([]byte, 64))} {
			require.False(t, calendar.ValidName(n), n)
		}
	})
}
