package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/schedule"
)

func TestMisfired(t *testing.T) {
	t.Parallel()

	const threshold = 5 * time.Second
	now := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	// An every-second schedule whose runner woke up 30 s late: the
	// occurrences due at now-30s .. now are all being started at now.
	due := sequence(now.Add(-30*time.Second), time.Second, 31)

	for _, tt := range []struct {
		name    string
		spec    schedule.Spec
		runs    []time.Time
		reasons map[time.Time]string // some expected skip reasons
	}{
		{
			// Every missed occurrence is superseded by a later one that is
			// already due (the next second), so only those within the
			// threshold run: the newest occurrence runs, once.
			name: "RunOnce",
			spec: schedule.Spec{Cron: "* * * * * *"},
			runs: due[25:],
			reasons: map[time.Time]string{
				due[0]:  "superseded by 2026-06-01T12:00:01Z",
				due[24]: "superseded by 2026-06-01T12:00:25Z",
			},
		},
		{
			name: "Skip",
			spec: schedule.Spec{Cron: "* * * * * *", Misfire: schedule.MisfireSkip},
			runs: due[25:], // only those not missed (late <= 5 s)
			reasons: map[time.Time]string{
				due[0]:  "misfire skip",
				due[24]: "misfire skip",
			},
		},
		{
			name: "CatchUpBoundedTo10",
			spec: schedule.Spec{Cron: "* * * * * *", Misfire: schedule.MisfireCatchUp, MisfireMax: 10},
			runs: due[21:], // the last 10
			reasons: map[time.Time]string{
				due[0]:  "beyond catch_up bound of 10",
				due[20]: "beyond catch_up bound of 10",
			},
		},
		{
			name: "CatchUpDefaultRunsAll",
			spec: schedule.Spec{Cron: "* * * * * *", Misfire: schedule.MisfireCatchUp},
			runs: due,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := compile(t, tt.spec)
			var runs []time.Time
			for _, at := range due {
				run, reason := s.Misfired(at, now, threshold)
				if run {
					require.Empty(t, reason)
					runs = append(runs, at)
					continue
				}
				require.NotEmpty(t, reason)
				if want, ok := tt.reasons[at]; ok {
					require.Equal(t, want, reason, "at %s", at)
				}
			}
			require.Equal(t, tt.runs, runs)
		})
	}

	t.Run("RunOnceRunsNewestMissed", func(t *testing.T) {
		t.Parallel()
		// Every 10 s, woken at 12:00:28: 12:00:00, :10 and :20 are missed;
		// only :20 runs, as nothing later is due yet.
		s := compile(t, schedule.Spec{Cron: "*/10 * * * * *"})
		wake := time.Date(2026, 6, 1, 12, 0, 28, 0, time.UTC)
		missed := sequence(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), 10*time.Second, 3)
		run, reason := s.Misfired(missed[0], wake, threshold)
		require.False(t, run)
		require.Equal(t, "superseded by 2026-06-01T12:00:10Z", reason)
		run, reason = s.Misfired(missed[1], wake, threshold)
		require.False(t, run)
		require.Equal(t, "superseded by 2026-06-01T12:00:20Z", reason)
		run, reason = s.Misfired(missed[2], wake, threshold)
		require.True(t, run)
		require.Empty(t, reason)
	})

	t.Run("NotMissedAlwaysRuns", func(t *testing.T) {
		t.Parallel()
		for _, policy := range []string{schedule.MisfireRunOnce, schedule.MisfireSkip, schedule.MisfireCatchUp} {
			s := compile(t, schedule.Spec{Cron: "* * * * * *", Misfire: policy, MisfireMax: 1})
			run, reason := s.Misfired(now.Add(-threshold), now, threshold)
			require.True(t, run, policy)
			require.Empty(t, reason)
		}
	})

	t.Run("RunOnceLastBeforeEndRuns", func(t *testing.T) {
		t.Parallel()
		// With no later occurrence at all, the missed one is the latest.
		end := time.Date(2026, 6, 1, 12, 0, 1, 0, time.UTC)
		start := end.Add(-time.Hour)
		s := compile(t, schedule.Spec{Cron: "0 * * * * *", StartAt: &start, EndAt: &end})
		run, reason := s.Misfired(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), now.Add(time.Hour), threshold)
		require.True(t, run)
		require.Empty(t, reason)
	})
}

func TestLastBefore(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		spec schedule.Spec
		t    time.Time
		k    int
		want []time.Time
	}{
		{"EverySecondLastThree", schedule.Spec{Cron: "* * * * * *"}, start.Add(time.Hour), 3,
			[]time.Time{start.Add(time.Hour - 2*time.Second), start.Add(time.Hour - time.Second), start.Add(time.Hour)}},
		{"MonthlyOneYearOn", schedule.Spec{Every: "month", On: []byte("1")}, start.AddDate(1, 0, 14), 1,
			[]time.Time{start.AddDate(1, 0, 0)}},
		{"FewerThanAsked", schedule.Spec{Cron: "0 0 * * *"}, start.Add(50 * time.Hour), 10,
			[]time.Time{start, start.Add(24 * time.Hour), start.Add(48 * time.Hour)}},
		{"TenThousandOfEverySecond", schedule.Spec{Cron: "* * * * * *"}, start.Add(24 * time.Hour), 10000, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sp := tt.spec
			sp.StartAt = &start
			s, err := sp.Compile(start)
			require.NoError(t, err)
			got := s.LastBefore(start, tt.t, tt.k)
			if tt.want == nil {
				require.Len(t, got, tt.k)
				require.Equal(t, tt.t, got[len(got)-1])
				require.Equal(t, tt.t.Add(-time.Duration(tt.k-1)*time.Second), got[0])
				return
			}
			require.Equal(t, tt.want, got)
		})
	}
}
