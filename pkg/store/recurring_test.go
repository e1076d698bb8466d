package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
)

// recurring turns a job into one that runs every minute from start.
func recurring(t *testing.T, start time.Time) func(*job.Job) {
	return func(j *job.Job) {
		sched, err := schedule.Spec{Cron: "* * * * *", StartAt: &start}.Compile(start)
		require.NoError(t, err)
		raw, err := json.Marshal(sched.Spec())
		require.NoError(t, err)
		first, ok := sched.First()
		require.True(t, ok)
		j.Schedule, j.RunAt, j.DueAt = raw, time.Time{}, first
	}
}

func TestAutoPause(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.now.Add(-time.Hour).Truncate(time.Minute)
	failing := newJob(ownerA, start, recurring(t, start))
	recovering := newJob(ownerA, start, recurring(t, start))
	b.create(t, failing, recovering)

	// Five occurrences each: every one of failing's ends permanently_failed;
	// recovering's newest one completes.
	for k := range 5 {
		at := start.Add(time.Duration(k) * time.Minute)
		for _, j := range []*job.Job{failing, recovering} {
			o := job.Occurrence{JobID: j.ID, ScheduledFor: at, Attempt: 1}
			require.Len(t, b.start(t, o), 1)
			status := job.RunPermanentlyFailed
			if j == recovering && k == 4 {
				status = job.RunCompleted
			}
			require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: o, Status: status, FinishedAt: b.now}}, b.now))
		}
	}

	paused, err := b.st.AutoPause(b.ctx, []uuid.UUID{failing.ID, recovering.ID}, 5, b.now)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{failing.ID}, paused, "only the job whose last 5 occurrences all failed")
	got := b.job(t, failing.ID)
	require.Equal(t, job.StatusPaused, got.Status)
	require.Contains(t, got.PausedReason, "last 5 occurrences failed permanently")
	require.Equal(t, failing.Generation+1, got.Generation, "what Redis holds for it is invalidated")
	require.Equal(t, job.StatusScheduled, b.job(t, recovering.ID).Status)

	again, err := b.st.AutoPause(b.ctx, []uuid.UUID{failing.ID}, 5, b.now)
	require.NoError(t, err)
	require.Empty(t, again, "a paused job is not paused twice")
}

func TestClaimDueRecurring(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Every minute since ten minutes ago: the loader finds it late.
	start := b.now.Add(-10 * time.Minute).Truncate(time.Minute)
	j := newJob(ownerA, start, recurring(t, start))
	b.create(t, j)

	var planned []job.Occurrence
	until := b.now.Add(5 * time.Minute)
	c, err := b.st.ClaimDue(b.ctx, store.Window{Until: until, Limit: 10, Now: b.now, MisfireThreshold: time.Minute},
		func(_ context.Context, occs []job.Occurrence) error { planned = append(planned, occs...); return nil })
	require.NoError(t, err)
	require.Equal(t, 1, c.Jobs)

	// run_once: every occurrence more than a minute late is superseded by a
	// later one already due, so it is skipped with a run row saying so.
	for _, o := range planned {
		require.False(t, o.ScheduledFor.Before(b.now.Add(-time.Minute)), "a missed occurrence was planned: %s", o.ScheduledFor)
		require.True(t, o.ScheduledFor.Before(until))
	}
	require.NotEmpty(t, planned)
	var skipped int
	require.NoError(t, b.st.Pool().QueryRow(b.ctx,
		`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'skipped' AND error LIKE 'misfire: superseded by %'`, j.ID).Scan(&skipped))
	require.Equal(t, c.Skipped, skipped)
	require.Equal(t, c.Occurrences+c.Skipped, int(until.Sub(start)/time.Minute)+1-boolInt(until.Truncate(time.Minute).Equal(until)))

	// The cursor moved to the first occurrence beyond the window.
	got := b.job(t, j.ID)
	require.True(t, !got.DueAt.Before(until) && got.DueAt.Before(until.Add(time.Minute)), "cursor %s", got.DueAt)
	require.Equal(t, c.Occurrences+c.Skipped, got.Occurrences)

	// A second claim of the same window finds nothing left to do.
	again, err := b.st.ClaimDue(b.ctx, store.Window{Until: until, Limit: 10, Now: b.now, MisfireThreshold: time.Minute},
		func(context.Context, []job.Occurrence) error { return nil })
	require.NoError(t, err)
	require.Zero(t, again.Jobs)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
