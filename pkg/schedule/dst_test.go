package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/schedule"
)

var created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// utc parses "2026-03-29T01:00:00Z"-style instants for the tables.
func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v.UTC()
}

func utcs(t *testing.T, ss ...string) []time.Time {
	t.Helper()
	out := make([]time.Time, 0, len(ss))
	for _, s := range ss {
		out = append(out, utc(t, s))
	}
	return out
}

func compile(t *testing.T, spec schedule.Spec) *schedule.Schedule {
	t.Helper()
	s, err := spec.Compile(created)
	require.NoError(t, err)
	return s
}

func TestDST(t *testing.T) {
	t.Parallel()

	const (
		berlin  = "Europe/Berlin"
		newYork = "America/New_York"
	)
	var (
		shift = &schedule.DSTPolicy{}
		skip  = &schedule.DSTPolicy{Gap: schedule.GapSkip}
		both  = &schedule.DSTPolicy{Overlap: schedule.OverlapBoth}
		daily = []schedule.Spec{
			{Cron: "30 2 * * *"},
			{Every: "day", At: "02:30"},
			{RRule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0"},
		}
		hourly = []schedule.Spec{
			{Cron: "0 * * * *"},
			{Cron: "0 0 * * * *"},
			{RRule: "FREQ=HOURLY;BYMINUTE=0;BYSECOND=0"},
		}
	)

	for _, tt := range []struct {
		name  string
		specs []schedule.Spec
		zone  string
		dst   *schedule.DSTPolicy
		from  string
		want  []string
	}{
		// Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST at 01:00Z;
		// 2026-10-25 03:00 CEST -> 02:00 CET at 01:00Z.
		{"Berlin/Daily/SpringShift", daily, berlin, nil, "2026-03-28T00:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Berlin/Daily/SpringShiftExplicit", daily, berlin, shift, "2026-03-28T00:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Berlin/Daily/SpringSkip", daily, berlin, skip, "2026-03-28T00:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}},
		{"Berlin/Daily/FallFirst", daily, berlin, nil, "2026-10-24T00:00:00Z",
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Berlin/Daily/FallBoth", daily, berlin, both, "2026-10-24T00:00:00Z",
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Berlin/Hourly/SpringShift", hourly, berlin, nil, "2026-03-28T22:30:00Z",
			[]string{"2026-03-28T23:00:00Z", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"Berlin/Hourly/SpringSkip", hourly, berlin, skip, "2026-03-28T22:30:00Z",
			[]string{"2026-03-28T23:00:00Z", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"Berlin/Hourly/FallFirst", hourly, berlin, nil, "2026-10-24T22:30:00Z",
			[]string{"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},
		{"Berlin/Hourly/FallBoth", hourly, berlin, both, "2026-10-24T22:30:00Z",
			[]string{"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},

		// America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT at 07:00Z;
		// 2026-11-01 02:00 EDT -> 01:00 EST at 06:00Z (02:30 exists once).
		{"NewYork/Daily/SpringShift", daily, newYork, nil, "2026-03-07T00:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"NewYork/Daily/SpringSkip", daily, newYork, skip, "2026-03-07T00:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{"NewYork/Daily/FallFirst", daily, newYork, nil, "2026-10-31T00:00:00Z",
			[]string{"2026-10-31T06:30:00Z", "2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"}},
		{"NewYork/Daily/FallBoth", daily, newYork, both, "2026-10-31T00:00:00Z",
			[]string{"2026-10-31T06:30:00Z", "2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"}},
		{"NewYork/Hourly/SpringShift", hourly, newYork, nil, "2026-03-08T04:30:00Z",
			[]string{"2026-03-08T05:00:00Z", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"NewYork/Hourly/SpringSkip", hourly, newYork, skip, "2026-03-08T04:30:00Z",
			[]string{"2026-03-08T05:00:00Z", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"NewYork/Hourly/FallFirst", hourly, newYork, nil, "2026-11-01T03:30:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
		{"NewYork/Hourly/FallBoth", hourly, newYork, both, "2026-11-01T03:30:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := utcs(t, tt.want...)
			for _, spec := range tt.specs {
				spec.Timezone, spec.DST = tt.zone, tt.dst
				s := compile(t, spec)
				got := s.Upcoming(utc(t, tt.from), len(want), 0)
				require.Equal(t, want, got, "%+v", spec)

				// Next from just before each occurrence, and from the
				// occurrence before it, agree with the sequence.
				prev := utc(t, tt.from)
				for _, w := range want {
					next, ok := s.Next(prev)
					require.True(t, ok)
					require.Equal(t, w, next, "%+v after %s", spec, prev)
					next, ok = s.Next(w.Add(-time.Millisecond))
					require.True(t, ok)
					require.Equal(t, w, next, "%+v after %s", spec, w.Add(-time.Millisecond))
					prev = w
				}
			}
		})
	}

	t.Run("EveryFifteenMinutesThroughRepeatedHour", func(t *testing.T) {
		t.Parallel()
		// With overlap=both the repeated hour's occurrences come in time
		// order, interleaving nothing: 02:00..02:45 CEST then CET.
		for _, tt := range []struct {
			name string
			dst  *schedule.DSTPolicy
			want []string
		}{
			{"First", nil, []string{"2026-10-24T23:45:00Z", "2026-10-25T00:00:00Z", "2026-10-25T00:15:00Z", "2026-10-25T00:30:00Z", "2026-10-25T00:45:00Z", "2026-10-25T02:00:00Z"}},
			{"Both", both, []string{"2026-10-24T23:45:00Z", "2026-10-25T00:00:00Z", "2026-10-25T00:15:00Z", "2026-10-25T00:30:00Z", "2026-10-25T00:45:00Z",
				"2026-10-25T01:00:00Z", "2026-10-25T01:15:00Z", "2026-10-25T01:30:00Z", "2026-10-25T01:45:00Z", "2026-10-25T02:00:00Z"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				s := compile(t, schedule.Spec{Cron: "*/15 * * * *", Timezone: berlin, DST: tt.dst})
				want := utcs(t, tt.want...)
				require.Equal(t, want, s.Upcoming(utc(t, "2026-10-24T23:30:00Z"), len(want), 0))
				// Starting inside the first pass of the hour.
				next, ok := s.Next(utc(t, "2026-10-25T00:50:00Z"))
				require.True(t, ok)
				require.Equal(t, want[5], next)
			})
		}
	})

	t.Run("EverySecondThroughChanges", func(t *testing.T) {
		t.Parallel()
		// Every second across the spring change is every UTC second; across
		// the fall change it is every UTC second with overlap=both, and with
		// overlap=first the repeated wall hour (01:00Z-02:00Z) does not run
		// a second time.
		for _, tt := range []struct {
			name string
			dst  *schedule.DSTPolicy
			from string
			jump string // the one instant after which the next is not +1 s
			to   string
		}{
			{"Spring", nil, "2026-03-29T00:59:00Z", "", ""},
			{"FallBoth", both, "2026-10-25T00:59:00Z", "", ""},
			{"FallFirst", nil, "2026-10-25T00:59:00Z", "2026-10-25T00:59:59Z", "2026-10-25T02:00:00Z"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				s := compile(t, schedule.Spec{Cron: "* * * * * *", Timezone: berlin, DST: tt.dst})
				at := utc(t, tt.from)
				for range 120 {
					want := at.Add(time.Second)
					if tt.jump != "" && at.Equal(utc(t, tt.jump)) {
						want = utc(t, tt.to)
					}
					next, ok := s.Next(at)
					require.True(t, ok)
					require.Equal(t, want, next)
					at = next
				}
			})
		}
	})
}
