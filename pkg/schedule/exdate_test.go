package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/schedule"
)

func TestExdate(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	next := func(t *testing.T, s *schedule.Schedule, from string, n int) []time.Time {
		t.Helper()
		var out []time.Time
		at := utc(t, from)
		for range n {
			v, ok := s.Next(at)
			require.True(t, ok)
			out, at = append(out, v), v
		}
		return out
	}

	t.Run("TakesOutItsInstantsInEveryForm", func(t *testing.T) {
		t.Parallel()
		// 09:00 in Berlin is 08:00 UTC in winter: the same instant three ways.
		for _, text := range []string{
			"FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0\nEXDATE:20261225T090000",
			"RRULE:FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0\nEXDATE:20261225T080000Z",
			"FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0 EXDATE;TZID=America/New_York:20261225T030000",
			"FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0\nexdate;value=date:20261225",
		} {
			s := compile(t, schedule.Spec{RRule: text, Timezone: "Europe/Berlin", StartAt: &start})
			require.Equal(t, []time.Time{utc(t, "2026-12-24T08:00:00Z"), utc(t, "2026-12-26T08:00:00Z")},
				next(t, s, "2026-12-24T07:00:00Z", 2), text)
		}
	})

	t.Run("StoresACanonicalText", func(t *testing.T) {
		t.Parallel()
		s := compile(t, schedule.Spec{RRule: "freq=daily;byhour=9\nEXDATE:20270101T090000,20261225T080000Z\nEXDATE;VALUE=DATE:20261231",
			Timezone: "Europe/Berlin", StartAt: &start})
		want := "FREQ=DAILY;BYHOUR=9\nEXDATE:20261225T090000,20270101T090000\nEXDATE;VALUE=DATE:20261231"
		require.Equal(t, want, s.Spec().RRule)
		again := compile(t, schedule.Spec{RRule: want, Timezone: "Europe/Berlin", StartAt: &start})
		require.Equal(t, want, again.Spec().RRule, "compiling the stored text changes nothing")
		plain := compile(t, schedule.Spec{RRule: "RRULE:FREQ=DAILY;BYHOUR=9;", StartAt: &start})
		require.Equal(t, "FREQ=DAILY;BYHOUR=9", plain.Spec().RRule, "a rule without EXDATE is stored as before")
	})

	t.Run("RefusesWhatItCannotRead", func(t *testing.T) {
		t.Parallel()
		for _, text := range []string{
			"FREQ=DAILY\nEXDATE:",
			"FREQ=DAILY\nEXDATE:2026-12-25",
			"FREQ=DAILY\nEXDATE;VALUE=PERIOD:20261225",
			"FREQ=DAILY\nEXDATE;TZID=Mars/Olympus:20261225T090000",
			"FREQ=DAILY\nEXDATE;X-FOO=1:20261225T090000",
			"FREQ=DAILY;EXDATE=20261225T090000",
		} {
			_, err := schedule.Spec{RRule: text, StartAt: &start}.Compile(start)
			require.Error(t, err, text)
		}
	})
}
