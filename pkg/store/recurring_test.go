package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
			o := job.Occurrence{JobID: j.ID, ScheduledFor: at, Attempt: 1, Owner: j.Owner}
			status := job.RunPermanentlyFailed
			if j == recovering && k == 4 {
				status = job.RunCompleted
			}
			b.finish(t, b.outcome(t, o, status))
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

	entries := b.auditLog(t, store.AuditFilter{Target: failing.ID, Action: store.ActionJobPause})
	require.Len(t, entries, 1, "the pause is audited once, with it")
	require.Equal(t, store.TockActor, entries[0].Actor)
	require.Contains(t, string(entries[0].Change), "last 5 occurrences failed permanently")
	require.Empty(t, b.auditLog(t, store.AuditFilter{Target: recovering.ID, Action: store.ActionJobPause}))
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
		func(_ context.Context, occs []job.Occurrence, _ int64) error {
			planned = append(planned, occs...)
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, 1, c.Jobs)

	// run_once: every occurrence more than a minute late is superseded by a
	// later one already due, so it is skipped; one run row says how many.
	for _, o := range planned {
		require.False(t, o.ScheduledFor.Before(b.now.Add(-time.Minute)), "a missed occurrence was planned: %s", o.ScheduledFor)
		require.True(t, o.ScheduledFor.Before(until))
	}
	require.NotEmpty(t, planned)
	var rows int
	var reason string
	require.NoError(t, b.st.Pool().QueryRow(b.ctx,
		`SELECT count(*), max(error) FROM job_runs WHERE job_id = $1 AND status = 'skipped' AND error LIKE 'misfire: superseded by %'`, j.ID).Scan(&rows, &reason))
	require.Equal(t, 1, rows, "one row sums up the round's skipped occurrences")
	require.Equal(t, 1, c.SkipRows)
	require.Contains(t, reason, fmt.Sprintf("skipped %d occurrences from %s", c.Skipped, start.Format(time.RFC3339)))
	require.Equal(t, c.Occurrences+c.Skipped, int(until.Sub(start)/time.Minute)+1-boolInt(until.Truncate(time.Minute).Equal(until)))

	// The cursor moved to the first occurrence beyond the window.
	got := b.job(t, j.ID)
	require.True(t, !got.DueAt.Before(until) && got.DueAt.Before(until.Add(time.Minute)), "cursor %s", got.DueAt)
	require.Equal(t, c.Occurrences+c.Skipped, got.Occurrences)

	// A second claim of the same window finds nothing left to do.
	again, err := b.st.ClaimDue(b.ctx, store.Window{Until: until, Limit: 10, Now: b.now, MisfireThreshold: time.Minute},
		func(context.Context, []job.Occurrence, int64) error { return nil })
	require.NoError(t, err)
	require.Zero(t, again.Jobs)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestClaimDueBacklog gives every-second jobs a cursor in 1970, as a job
// stored before recurrences started from now, or an outage of decades, would
// have: one claim round deals with 56 years of missed occurrences in bounded
// work, records them in one run row per job, and plans what the policy runs.
func TestClaimDueBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	epoch := time.Unix(0, 0).UTC()
	every := func(misfire string, max int) func(*job.Job) {
		return func(j *job.Job) {
			sched, err := schedule.Spec{Cron: "* * * * * *", StartAt: &epoch, Misfire: misfire, MisfireMax: max}.Compile(epoch)
			require.NoError(t, err)
			raw, err := json.Marshal(sched.Spec())
			require.NoError(t, err)
			j.Schedule, j.RunAt, j.DueAt, j.PerHour = raw, time.Time{}, epoch, 3600
		}
	}
	runOnce := newJob(ownerA, epoch, every("run_once", 0))
	skip := newJob(ownerA, epoch, every("skip", 0))
	catchUp := newJob(ownerA, epoch, every("catch_up", 10000))
	b.create(t, runOnce, skip, catchUp)

	now := b.now.Truncate(time.Second).Add(500 * time.Millisecond)
	until := now.Add(10 * time.Second)
	w := store.Window{Until: until, Limit: 10, Now: now, MisfireThreshold: time.Minute}
	planned := map[uuid.UUID][]time.Time{}
	enqueue := func(_ context.Context, occs []job.Occurrence, _ int64) error {
		for _, o := range occs {
			planned[o.JobID] = append(planned[o.JobID], o.ScheduledFor)
		}
		return nil
	}
	// Planning 10,000 catch-up runs may take more than one round's budget
	// for the job: rounds go on until every cursor is past the window.
	rounds := 0
	for ; rounds < 20; rounds++ {
		c, err := b.st.ClaimDue(b.ctx, w, enqueue)
		require.NoError(t, err)
		if c.Jobs == 0 {
			break
		}
	}
	t.Logf("the backlog took %d rounds", rounds)

	missedBefore := now.Add(-time.Minute)
	// run_once: the latest occurrence at or before now, then every second.
	ro := planned[runOnce.ID]
	require.Equal(t, now.Truncate(time.Second), ro[0])
	require.Equal(t, until.Truncate(time.Second), ro[len(ro)-1])
	require.Equal(t, 11, len(ro))
	// skip: nothing missed; from the first occurrence not missed on.
	sk := planned[skip.ID]
	require.Equal(t, missedBefore.Truncate(time.Second).Add(time.Second), sk[0])
	// catch_up: the newest 10,000 at or before now, then on.
	cu := planned[catchUp.ID]
	require.Equal(t, now.Truncate(time.Second).Add(-9999*time.Second), cu[0])
	require.Equal(t, 10000+10, len(cu))
	for i := 1; i < len(cu); i++ {
		require.Equal(t, time.Second, cu[i].Sub(cu[i-1]), "planned once each, in order")
	}

	for _, j := range []*job.Job{runOnce, skip, catchUp} {
		var n int
		var reason string
		require.NoError(t, b.st.Pool().QueryRow(b.ctx,
			`SELECT count(*), max(error) FROM job_runs WHERE job_id = $1 AND status = 'skipped'`, j.ID).Scan(&n, &reason))
		// One row a round at most: the backlog takes one round unless the
		// machine is so busy that the job's budget runs out first.
		require.True(t, n >= 1 && n <= rounds, "%d skipped rows in %d rounds", n, rounds)
		require.Contains(t, reason, "skipped more than 1000 occurrences from 1970-01-01T00:00:00Z")
		got := b.job(t, j.ID)
		require.Equal(t, until.Truncate(time.Second).Add(time.Second), got.DueAt, "the cursor is past the window")
	}

	// The next round finds nothing missed: no more rows.
	w.Now, w.Until = now.Add(time.Second), until.Add(time.Second)
	c, err := b.st.ClaimDue(b.ctx, w, enqueue)
	require.NoError(t, err)
	require.Zero(t, c.Skipped)
	require.Zero(t, c.SkipRows)
}

// TestCancelWinsOverTheLoader cancels, pauses and disables while a loader
// keeps locking the job's row and moving it to another partition, round after
// round: each change goes through (a serialization failure is retried, never
// answered as an outage).
func TestCancelWinsOverTheLoader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.addUser(t, "busy", store.Limits{})
	start := b.now.Truncate(time.Minute)
	jobs := []*job.Job{newJob(owner.ID, start, recurring(t, start)), newJob(owner.ID, start, recurring(t, start)), newJob(owner.ID, start, recurring(t, start))}
	b.create(t, jobs...)

	ctx, stop := context.WithCancel(b.ctx)
	loaderDone := make(chan struct{})
	go func() {
		defer close(loaderDone)
		for ctx.Err() == nil {
			// A round: lock every job, hold them, move each one's cursor an
			// hour on (another partition), commit, and go again after 20 ms
			// (the real loader waits TOCK_LOAD_INTERVAL, 1 s, and holds its
			// rows for a round's budget, 200 ms at most).
			_ = pgx.BeginFunc(ctx, b.st.Pool(), func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SELECT id FROM jobs WHERE status = 'scheduled' AND due_at IS NOT NULL FOR UPDATE SKIP LOCKED`); err != nil {
					return err
				}
				time.Sleep(200 * time.Millisecond)
				_, err := tx.Exec(ctx, `UPDATE jobs SET due_at = due_at + interval '1 hour',
					due_hour = extract(hour FROM (due_at + interval '1 hour') AT TIME ZONE 'UTC')::smallint
					WHERE status = 'scheduled' AND due_at IS NOT NULL`)
				return err
			})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { stop(); <-loaderDone }()

	time.Sleep(50 * time.Millisecond) // let the first round take the rows
	began := time.Now()
	_, _, err := b.st.CancelJob(b.ctx, store.AnyOwner, jobs[0].ID, b.now, store.Audit{}, nil)
	require.NoError(t, err)
	_, _, err = b.st.UpdateJob(b.ctx, store.AnyOwner, jobs[1].ID, b.now, func(j *job.Job, _ bool) error {
		j.Status = job.StatusPaused
		j.Generation++
		return nil
	}, store.Update{})
	require.NoError(t, err)
	_, err = b.st.UpdateUser(b.ctx, owner.ID, b.now, func(u *store.User) error { u.DisabledAt = b.now; return nil }, store.Audit{})
	require.NoError(t, err)
	t.Logf("cancel, pause and disable took %s together against a busy loader", time.Since(began).Round(time.Millisecond))
	require.Equal(t, job.StatusCancelled, b.job(t, jobs[0].ID).Status)
	require.Equal(t, job.StatusPaused, b.job(t, jobs[1].ID).Status)
	require.Equal(t, job.StatusPaused, b.job(t, jobs[2].ID).Status)
}
