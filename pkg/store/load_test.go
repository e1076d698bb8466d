package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
)

// bitsOf sets the given bits.
func bitsOf(bits ...int) uint64 {
	var m uint64
	for _, b := range bits {
		m |= 1 << b
	}
	return m
}

// evenSeconds fires in seconds 0, 2, ..., 58.
var evenSeconds = func() uint64 {
	var m uint64
	for s := 0; s < 60; s += 2 {
		m |= 1 << s
	}
	return m
}()

// Loads of the cron rules the tests use.
var (
	minute51   = job.Load{Hours: job.AllHours, Minutes: bitsOf(51), Seconds: job.AllSeconds} // * 51 * * * *
	hourlyAt21 = job.Load{Hours: job.AllHours, Minutes: bitsOf(21), Seconds: bitsOf(0)}      // 0 21 * * * *
	everySec   = job.Load{Hours: job.AllHours, Minutes: job.AllMinutes, Seconds: job.AllSeconds}
)

// dailyAt fires once a day at h:m:00 UTC.
func dailyAt(h, m int) job.Load {
	return job.Load{Hours: 1 << h, Minutes: bitsOf(m), Seconds: bitsOf(0)}
}

func TestBusiest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                 string
		groups               map[job.Load]int
		adding               []job.Load
		minuteAt, secondAt   time.Duration
		perMinute, perSecond int
	}{
		{
			// The defect: every second of minute 51. Ten such jobs fire 600
			// times in minute 51 of each hour; an eleventh makes 660.
			name: "EverySecondOfAMinute", groups: map[job.Load]int{minute51: 10}, adding: []job.Load{minute51},
			minuteAt: 51 * time.Minute, perMinute: 660, secondAt: 51 * time.Minute, perSecond: 11,
		},
		{
			// The other defect: all at second 0 of minute 21.
			name: "OneSecondEachHour", groups: map[job.Load]int{hourlyAt21: 100}, adding: []job.Load{hourlyAt21},
			minuteAt: 21 * time.Minute, perMinute: 101, secondAt: 21 * time.Minute, perSecond: 101,
		},
		{
			// Daily jobs at other minutes, or at the same minute of
			// other hours, never meet the new one.
			name:   "SpreadOverMinutesAndHours",
			groups: map[job.Load]int{dailyAt(9, 1): 5, dailyAt(10, 0): 5, dailyAt(9, 0): 2},
			adding: []job.Load{dailyAt(9, 0)}, minuteAt: 9 * time.Hour, perMinute: 3, secondAt: 9 * time.Hour, perSecond: 3,
		},
		{
			// Every-second jobs count in full in every minute and second;
			// the jobs at even seconds of every minute, 30 a minute each,
			// only in the even seconds; the new job fires in the odd
			// seconds of 03:05.
			name: "SecondsOfDifferentMasks",
			groups: map[job.Load]int{
				everySec: 2,
				{Hours: job.AllHours, Minutes: job.AllMinutes, Seconds: evenSeconds}: 3,
			},
			adding:   []job.Load{{Hours: 1 << 3, Minutes: bitsOf(5), Seconds: job.AllSeconds &^ evenSeconds}},
			minuteAt: 3*time.Hour + 5*time.Minute, perMinute: 2*60 + 3*30 + 30,
			secondAt: 3*time.Hour + 5*time.Minute + time.Second, perSecond: 3,
		},
		{
			// An owner already past the limit in minute 51 (an administrator
			// lowered it) may still add a job that stays out of it.
			name:   "CountsOnlyWhereTheNewJobsFire",
			groups: map[job.Load]int{minute51: 100},
			adding: []job.Load{dailyAt(9, 0)}, minuteAt: 9 * time.Hour, perMinute: 1, secondAt: 9 * time.Hour, perSecond: 1,
		},
		{
			// A batch counts its own jobs together, and names the earliest
			// of equally busy minutes.
			name: "BatchTogether", adding: []job.Load{dailyAt(9, 0), dailyAt(9, 0), dailyAt(8, 30), hourlyAt21},
			minuteAt: 9 * time.Hour, perMinute: 2, secondAt: 9 * time.Hour, perSecond: 2,
		},
		{
			name: "NothingAdded", groups: map[job.Load]int{minute51: 10}, adding: []job.Load{{}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			minuteAt, perMinute, secondAt, perSecond := store.Busiest(tt.groups, tt.adding...)
			require.Equal(t, tt.perMinute, perMinute, "occurrences in the busiest minute")
			require.Equal(t, tt.minuteAt, minuteAt, "busiest minute")
			require.Equal(t, tt.perSecond, perSecond, "occurrences in the busiest second")
			require.Equal(t, tt.secondAt, secondAt, "busiest second")
		})
	}
}

// cron turns a job into a recurring one of the rule, with its load from
// now as the dashboard computes it.
func cron(t *testing.T, expr string, now time.Time) func(*job.Job) {
	return func(j *job.Job) {
		sched, err := schedule.Spec{Cron: expr}.Compile(now)
		require.NoError(t, err)
		raw, err := json.Marshal(sched.Spec())
		require.NoError(t, err)
		first, ok := sched.Next(now)
		require.True(t, ok)
		l := sched.Load(now, 0)
		j.Schedule, j.RunAt, j.DueAt, j.Load = raw, time.Time{}, first, &l
	}
}

// cronJobs returns n jobs of owner on the rule.
func cronJobs(t *testing.T, owner uuid.UUID, n int, expr string, now time.Time) []*job.Job {
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = newJob(owner, now, cron(t, expr, now))
	}
	return jobs
}

// defaultRates are the API's defaults.
var defaultRates = store.Rates{PerMinute: 600, PerSecond: 100}

func TestRates(t *testing.T) {
	t.Parallel()

	t.Run("RefusesTheMinuteThatPassesTheLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := store.Create{Rates: defaultRates}
		require.NoError(t, b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 10, "* 51 * * * *", b.now), c))
		err := b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 1, "* 51 * * * *", b.now), c)
		var re *store.RateError
		require.ErrorAs(t, err, &re)
		require.Equal(t, store.RateError{Per: time.Minute, At: 51 * time.Minute, Count: 660, Max: 600, Jobs: 1}, *re)
		require.Contains(t, re.Error(), "660 occurrences in the busiest minute (00:51 UTC) would pass the limit of 600")

		// Other owners, other minutes: unaffected.
		require.NoError(t, b.st.CreateJobs(b.ctx, cronJobs(t, ownerB, 10, "* 51 * * * *", b.now), c))
		require.NoError(t, b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 10, "* 52 * * * *", b.now), c))
	})

	t.Run("RefusesTheSecondThatPassesTheLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := store.Create{Rates: defaultRates}
		err := b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 101, "0 21 * * * *", b.now), c)
		var re *store.RateError
		require.ErrorAs(t, err, &re, "a batch is refused as a whole")
		require.Equal(t, store.RateError{Per: time.Second, At: 21 * time.Minute, Count: 101, Max: 100, Jobs: 101}, *re)
		require.Equal(t, "101 occurrences in the busiest second (00:21:00 UTC) would pass the limit of 100", re.Error())
		require.NoError(t, b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 100, "0 21 * * * *", b.now), c))
		require.NoError(t, b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 100, "1 21 * * * *", b.now), c), "the next second is another")
	})

	t.Run("CountsOnlyScheduledJobsOfKnownLoad", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := store.Create{Rates: store.Rates{PerMinute: 120}}
		paused := cronJobs(t, ownerA, 5, "* 51 * * * *", b.now)
		unknown := cronJobs(t, ownerA, 5, "* 51 * * * *", b.now)
		for i := range paused {
			paused[i].Status = job.StatusPaused
			unknown[i].Load = nil // stored by the previous release
		}
		oneOff := newJob(ownerA, b.now.Add(time.Hour))
		require.NoError(t, b.st.CreateJobs(b.ctx, append(append(paused, unknown...), oneOff), store.Create{}))
		require.NoError(t, b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 2, "* 51 * * * *", b.now), c))
		var re *store.RateError
		require.ErrorAs(t, b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 1, "* 51 * * * *", b.now), c), &re)
		require.Equal(t, 180, re.Count)
	})

	t.Run("ChecksEditsAndResumes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rates := store.Rates{PerMinute: 100}
		c := store.Create{Rates: rates}
		full := cronJobs(t, ownerA, 1, "* 51 * * * *", b.now)[0]
		even := cronJobs(t, ownerA, 1, "*/2 51 * * * *", b.now)[0]
		require.NoError(t, b.st.CreateJobs(b.ctx, []*job.Job{full, even}, c), "60 and 30 in minute 51")
		u := store.Update{Rates: func(_ context.Context, owner uuid.UUID) (store.Rates, error) {
			require.Equal(t, ownerA, owner)
			return rates, nil
		}}
		edit := func(id uuid.UUID, e store.Edit) error {
			_, _, err := b.st.UpdateJob(b.ctx, ownerA, id, b.now, e, u)
			return err
		}
		var re *store.RateError
		pause := func(j *job.Job, _ bool) error { j.Status = job.StatusPaused; return nil }
		resume := func(j *job.Job, _ bool) error { j.Status = job.StatusScheduled; return nil }
		to := func(l job.Load) store.Edit { return func(j *job.Job, _ bool) error { j.Load = &l; return nil } }

		// A job's own occurrences are not counted twice.
		require.NoError(t, edit(full.ID, func(j *job.Job, _ bool) error { j.Name = "renamed"; return nil }))
		require.NoError(t, edit(full.ID, to(*even.Load)), "within its own load")
		require.NoError(t, edit(full.ID, to(minute51)), "back to every second: 90")
		require.ErrorAs(t, edit(even.ID, to(minute51)), &re)
		require.Equal(t, store.RateError{Per: time.Minute, At: 51 * time.Minute, Count: 120, Max: 100, Jobs: 1}, *re)

		// Pausing makes room; the room taken, resuming is refused.
		require.NoError(t, edit(full.ID, pause))
		require.NoError(t, b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 1, "* 51 * * * *", b.now), c))
		require.ErrorAs(t, edit(full.ID, resume), &re)
		require.Equal(t, 150, re.Count)
		got, err := b.st.GetJob(b.ctx, ownerA, full.ID)
		require.NoError(t, err)
		require.Equal(t, job.StatusPaused, got.Status, "a refused resume changes nothing")
		require.Equal(t, minute51, *got.Load, "the load is stored and read back")
	})
}

func TestBackfillLoads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := func(j *job.Job) { j.Load = nil } // as the previous release stored it
	scheduled := newJob(ownerA, b.now, cron(t, "* 51 * * * *", b.now), old)
	paused := newJob(ownerA, b.now, cron(t, "0 21 * * * *", b.now), old, func(j *job.Job) { j.Status = job.StatusPaused })
	cancelled := newJob(ownerA, b.now, cron(t, "0 21 * * * *", b.now), old, func(j *job.Job) { j.Status = job.StatusCancelled })
	broken := newJob(ownerA, b.now, cron(t, "0 21 * * * *", b.now), old, func(j *job.Job) { j.Schedule = json.RawMessage(`{"cron": "0 21 * * * *"}`) })
	known := newJob(ownerA, b.now, cron(t, "0 21 * * * *", b.now), func(j *job.Job) { j.Load, j.Status = &everySec, job.StatusPaused })
	oneOff := newJob(ownerA, b.now.Add(time.Hour))
	b.create(t, scheduled, paused, cancelled, broken, known, oneOff)
	many := cronJobs(t, ownerB, store.BackfillBatch+5, "*/10 * * * *", b.now)
	for _, j := range many {
		j.Load = nil
	}
	b.create(t, many...)

	filled, skipped, err := b.st.BackfillLoads(b.ctx, b.now)
	require.NoError(t, err)
	require.Equal(t, 2+len(many), filled, "the scheduled and paused ones, over more than one batch")
	require.Equal(t, 1, skipped, "a stored schedule without start_at cannot be compiled")

	for _, tt := range []struct {
		j    *job.Job
		want *job.Load
	}{
		{scheduled, &minute51},
		{paused, &hourlyAt21},
		{cancelled, nil},
		{broken, nil},
		{known, &everySec}, // kept as it was
		{oneOff, nil},
		{many[len(many)-1], &job.Load{Hours: job.AllHours, Minutes: bitsOf(0, 10, 20, 30, 40, 50), Seconds: bitsOf(0)}},
	} {
		got, err := b.st.GetJob(b.ctx, store.AnyOwner, tt.j.ID)
		require.NoError(t, err)
		require.Equal(t, tt.want, got.Load, tt.j.Name)
	}

	// The limit now counts them.
	err = b.st.CreateJobs(b.ctx, cronJobs(t, ownerA, 10, "* 51 * * * *", b.now), store.Create{Rates: defaultRates})
	var re *store.RateError
	require.True(t, errors.As(err, &re), "err = %v", err)
	require.Equal(t, 660, re.Count)

	filled, skipped, err = b.st.BackfillLoads(b.ctx, b.now)
	require.NoError(t, err)
	require.Equal(t, 0, filled, "nothing left")
	require.Equal(t, 1, skipped)
}
