package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/store"
)

func TestCreateJobs(t *testing.T) {
	t.Parallel()

	t.Run("StoresOneJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		want := newJob(ownerA, time.Date(2030, 1, 15, 14, 3, 7, 123_000_000, time.UTC), func(j *job.Job) {
			j.Name, j.Type, j.Priority, j.MaxRetries, j.Timeout = "hook", jobtype.TypeWebhook, -7, 0, 1500*time.Millisecond
			j.Payload = json.RawMessage(`{"url":"https://example.com/x","method":"POST","body":{"n":[1,2]}}`)
		})
		b.create(t, want)

		got := b.job(t, want.ID)
		require.JSONEq(t, string(want.Payload), string(got.Payload))
		got.Payload = want.Payload
		require.Equal(t, want, got)
		part, hour := b.placement(t, want.ID)
		require.Equal(t, "jobs_h14", part)
		require.Equal(t, 14, hour)
	})

	t.Run("StoresZeroDueAtAsClaimed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, time.Date(2030, 1, 15, 14, 0, 0, 0, time.UTC), func(j *job.Job) { j.DueAt = time.Time{} })
		b.create(t, j)
		part, hour := b.placement(t, j.ID)
		require.Equal(t, "jobs_idle", part, "the dashboard ZADDs it itself after the commit")
		require.Equal(t, -1, hour)
		require.True(t, b.job(t, j.ID).DueAt.IsZero())
		require.Empty(t, b.claim(t, time.Time{}, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), 10))
	})

	t.Run("CopiesABatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		start := time.Date(2030, 1, 15, 0, 0, 0, 0, time.UTC)
		jobs := make([]*job.Job, 2000)
		for i := range jobs {
			jobs[i] = newJob(ownerA, start.Add(time.Duration(i)*time.Minute+time.Duration(i)*time.Millisecond), func(j *job.Job) {
				j.Priority = i%200 - 100
			})
		}
		b.create(t, jobs...)

		perHour := map[string]int{}
		rows, err := b.st.Pool().Query(b.ctx, `SELECT tableoid::regclass::text, count(*) FROM jobs GROUP BY 1`)
		require.NoError(t, err)
		for rows.Next() {
			var part string
			var n int
			require.NoError(t, rows.Scan(&part, &n))
			perHour[part] = n
		}
		require.NoError(t, rows.Err())
		want := map[string]int{}
		for _, j := range jobs {
			want[fmt.Sprintf("jobs_h%02d", j.DueAt.Hour())]++
		}
		require.Equal(t, want, perHour, "every job lands in its due hour's partition")

		for _, i := range []int{0, 999, 1999} {
			got := b.job(t, jobs[i].ID)
			require.Equal(t, jobs[i].DueAt, got.DueAt)
			require.Equal(t, jobs[i].Priority, got.Priority)
		}
	})

	t.Run("NothingIsANoOp", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.st.CreateJobs(b.ctx, nil, store.Create{}))
	})

	t.Run("DuplicateIsConflict", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, time.Date(2030, 1, 15, 14, 0, 0, 0, time.UTC))
		b.create(t, j)
		require.ErrorIs(t, b.st.CreateJobs(b.ctx, []*job.Job{j}, store.Create{}), job.ErrConflict)
		other := newJob(ownerA, j.RunAt)
		require.ErrorIs(t, b.st.CreateJobs(b.ctx, []*job.Job{other, j}, store.Create{}), job.ErrConflict, "in a COPY too")
		_, err := b.st.GetJob(b.ctx, store.AnyOwner, other.ID)
		require.ErrorIs(t, err, job.ErrNotFound, "a failed batch stores nothing")
	})
}

func TestGetJob(t *testing.T) {
	t.Parallel()

	t.Run("ScopesToOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, time.Date(2030, 1, 15, 14, 0, 0, 0, time.UTC))
		b.create(t, j)

		got, err := b.st.GetJob(b.ctx, ownerA, j.ID)
		require.NoError(t, err)
		require.Equal(t, j.ID, got.ID)

		_, err = b.st.GetJob(b.ctx, ownerB, j.ID)
		require.ErrorIs(t, err, job.ErrNotFound, "another owner's job is as if it did not exist")

		got, err = b.st.GetJob(b.ctx, store.AnyOwner, j.ID)
		require.NoError(t, err)
		require.Equal(t, ownerA, got.Owner)

		_, err = b.st.GetJob(b.ctx, store.AnyOwner, job.NewID())
		require.ErrorIs(t, err, job.ErrNotFound)
	})
}

func TestListJobs(t *testing.T) {
	t.Parallel()

	// fixture creates, oldest first: for owner A three pings, two webhooks and
	// a paused ping; for owner B two pings.
	fixture := func(t *testing.T) (*bundle, []*job.Job) {
		b := setup(t)
		at := time.Date(2030, 1, 15, 14, 0, 0, 0, time.UTC)
		webhook := func(j *job.Job) {
			j.Type, j.Payload = jobtype.TypeWebhook, json.RawMessage(`{"url":"https://example.com"}`)
		}
		paused := func(j *job.Job) { j.Status = job.StatusPaused }
		jobs := []*job.Job{
			newJob(ownerA, at), newJob(ownerB, at), newJob(ownerA, at, webhook), newJob(ownerA, at),
			newJob(ownerA, at, paused), newJob(ownerB, at), newJob(ownerA, at, webhook), newJob(ownerA, at),
		}
		b.create(t, jobs...)
		return b, jobs
	}
	list := func(t *testing.T, b *bundle, f store.JobFilter) []uuid.UUID {
		t.Helper()
		if f.Limit == 0 {
			f.Limit = 100
		}
		got, err := b.st.ListJobs(b.ctx, f)
		require.NoError(t, err)
		out := make([]uuid.UUID, len(got))
		for i, j := range got {
			out[i] = j.ID
		}
		return out
	}
	// newestFirst returns the ids of jobs at the given indexes, newest first.
	newestFirst := func(jobs []*job.Job, idx ...int) []uuid.UUID {
		out := make([]uuid.UUID, 0, len(idx))
		for _, i := range slices.Backward(idx) {
			out = append(out, jobs[i].ID)
		}
		return out
	}

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		b, jobs := fixture(t)
		for _, tt := range []struct {
			name   string
			filter store.JobFilter
			want   []int
		}{
			{"Owner", store.JobFilter{Owner: ownerA}, []int{0, 2, 3, 4, 6, 7}},
			{"OtherOwner", store.JobFilter{Owner: ownerB}, []int{1, 5}},
			{"AnyOwner", store.JobFilter{Owner: store.AnyOwner}, []int{0, 1, 2, 3, 4, 5, 6, 7}},
			{"Status", store.JobFilter{Owner: ownerA, Status: job.StatusPaused}, []int{4}},
			{"Type", store.JobFilter{Owner: ownerA, Type: jobtype.TypeWebhook}, []int{2, 6}},
			{"StatusAndType", store.JobFilter{Owner: store.AnyOwner, Status: job.StatusScheduled, Type: jobtype.TypePing}, []int{0, 1, 3, 5, 7}},
			{"NoMatch", store.JobFilter{Owner: ownerB, Type: jobtype.TypeWebhook}, nil},
			{"Limit", store.JobFilter{Owner: store.AnyOwner, Limit: 3}, []int{5, 6, 7}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				require.Equal(t, newestFirst(jobs, tt.want...), list(t, b, tt.filter))
			})
		}
	})

	t.Run("PagesWithBefore", func(t *testing.T) {
		t.Parallel()
		b, jobs := fixture(t)
		var pages [][]uuid.UUID
		f := store.JobFilter{Owner: ownerA, Limit: 4}
		for {
			page := list(t, b, f)
			if len(page) == 0 {
				break
			}
			pages = append(pages, page)
			f.Before = page[len(page)-1]
		}
		require.Equal(t, [][]uuid.UUID{newestFirst(jobs, 3, 4, 6, 7), newestFirst(jobs, 0, 2)}, pages)
	})
}

// fencer is a store.Fencer that answers running and err, and keeps the
// jobs and generations it was asked to fence.
type fencer struct {
	running bool
	err     error
	fenced  []fenced
}

type fenced struct {
	id  uuid.UUID
	gen int
}

func (f *fencer) fence(_ context.Context, id uuid.UUID, gen int) (bool, error) {
	f.fenced = append(f.fenced, fenced{id, gen})
	return f.running, f.err
}

func TestCancelJob(t *testing.T) {
	t.Parallel()

	t.Run("CancelsUnstartedJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour))
		b.create(t, j)
		f := &fencer{}

		_, got, err := b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, store.Audit{}, f.fence)
		require.NoError(t, err)
		require.Equal(t, job.StatusCancelled, got.Status)
		require.True(t, got.DueAt.IsZero())
		require.True(t, got.UpdatedAt.Equal(b.now))
		require.Equal(t, j.Generation+1, got.Generation)
		require.Equal(t, []fenced{{j.ID, j.Generation + 1}}, f.fenced, "fenced at the generation it moves to")
		part, _ := b.placement(t, j.ID)
		require.Equal(t, "jobs_idle", part)
		require.Empty(t, b.claim(t, time.Time{}, b.now.Add(2*time.Hour), 10), "a cancelled job is never claimed")
	})

	t.Run("CancelsClaimedUnstartedJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Minute))
		b.create(t, j)
		occs := b.claim(t, b.now, b.now.Add(time.Hour), 10)
		require.Len(t, occs, 1)

		_, _, err := b.st.CancelJob(b.ctx, store.AnyOwner, j.ID, b.now, store.Audit{}, nil)
		require.NoError(t, err, "an administrator cancels anyone's job")
		fetched, err := b.st.Fetch(b.ctx, occs, b.now)
		require.NoError(t, err)
		require.Equal(t, job.StatusCancelled, fetched[0].Job.Status, "a worker that still receives it finds it cancelled")
		require.Greater(t, fetched[0].Job.Generation, occs[0].Generation)
	})

	t.Run("ConflictsOnceARunExists", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		b.claimed(t, j)
		b.finish(t, b.outcome(t, firstAttempt(j), job.RunFailed)) // its retry is still to come

		_, _, err := b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, store.Audit{}, nil)
		require.ErrorIs(t, err, job.ErrConflict)
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status)
	})

	t.Run("ConflictsWhileAnAttemptRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		b.claimed(t, j)
		before := b.job(t, j.ID)
		f := &fencer{running: true}

		_, _, err := b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, store.Audit{Actor: ownerA, Action: store.ActionJobCancel}, f.fence)
		require.ErrorIs(t, err, job.ErrConflict, "its attempt runs, in Redis: it has started")
		require.Equal(t, []fenced{{j.ID, j.Generation + 1}}, f.fenced)
		require.Equal(t, before, b.job(t, j.ID), "nothing changes")
		require.Empty(t, b.auditLog(t, store.AuditFilter{Target: j.ID}))
	})

	t.Run("CancelsRecurringJobWhileAnAttemptRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		start := b.now.Add(-time.Hour).Truncate(time.Minute)
		j := newJob(ownerA, start, recurring(t, start))
		b.create(t, j)
		f := &fencer{running: true}

		_, got, err := b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, store.Audit{}, f.fence)
		require.NoError(t, err, "a recurring job stops its future occurrences whatever runs")
		require.Equal(t, job.StatusCancelled, got.Status)
		require.Equal(t, []fenced{{j.ID, j.Generation + 1}}, f.fenced)
		require.Equal(t, j.Generation+1, got.Generation, "what Redis holds of it goes stale")
	})

	t.Run("FencerErrorChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour))
		b.create(t, j)
		before := b.job(t, j.ID)
		redisDown := errors.New("redis: connection refused")
		f := &fencer{err: redisDown}

		_, _, err := b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, store.Audit{Actor: ownerA, Action: store.ActionJobCancel}, f.fence)
		require.ErrorIs(t, err, redisDown)
		require.Equal(t, before, b.job(t, j.ID), "nothing changes")
		require.Empty(t, b.auditLog(t, store.AuditFilter{Target: j.ID}))
	})

	t.Run("ConflictsWhenAlreadyCancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour))
		b.create(t, j)
		_, _, err := b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, store.Audit{}, nil)
		require.NoError(t, err)
		f := &fencer{}
		_, _, err = b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, store.Audit{}, f.fence)
		require.ErrorIs(t, err, job.ErrConflict)
		require.Empty(t, f.fenced, "a job that has ended is not fenced")
	})

	t.Run("NotFoundForAnotherOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour))
		b.create(t, j)
		f := &fencer{}

		_, _, err := b.st.CancelJob(b.ctx, ownerB, j.ID, b.now, store.Audit{}, f.fence)
		require.ErrorIs(t, err, job.ErrNotFound)
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status)
		require.Empty(t, f.fenced, "another owner's job is not fenced")

		_, _, err = b.st.CancelJob(b.ctx, ownerA, job.NewID(), b.now, store.Audit{}, nil)
		require.ErrorIs(t, err, job.ErrNotFound)
	})
}

func TestAbortJob(t *testing.T) {
	t.Parallel()
	abort := store.Audit{Actor: ownerA, Action: store.ActionJobAbort}
	// runningOf is an attempt of j that Redis holds running.
	runningOf := func(j *job.Job, at time.Time) job.Run {
		return job.Run{ID: job.NewID(), JobID: j.ID, Owner: j.Owner, ScheduledFor: at, Attempt: 1, Status: job.RunRunning}
	}

	t.Run("CancelsAOneOffJobFencedFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		b.claimed(t, j)
		f := &fencer{running: true}

		require.NoError(t, b.st.AbortJob(b.ctx, ownerA, j.ID, b.now, abort, []job.Run{runningOf(j, j.RunAt)}, f.fence))
		require.Equal(t, []fenced{{j.ID, j.Generation + 1}}, f.fenced)
		got := b.job(t, j.ID)
		require.Equal(t, job.StatusCancelled, got.Status, "no attempt of it starts again")
		require.Equal(t, j.Generation+1, got.Generation)
		e := b.onlyAudit(t, store.AuditFilter{Target: j.ID})
		require.Equal(t, store.ActionJobAbort, e.Action)
		require.JSONEq(t, `{"attempts": 1, "status": {"from": "scheduled", "to": "cancelled"}}`, string(e.Change))
	})

	t.Run("RecurringJobKeepsItsSchedule", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		start := b.now.Add(-time.Hour).Truncate(time.Minute)
		j := newJob(ownerA, start, recurring(t, start))
		b.create(t, j)
		f := &fencer{running: true}

		running := []job.Run{runningOf(j, start), runningOf(j, start.Add(time.Minute))}
		require.NoError(t, b.st.AbortJob(b.ctx, ownerA, j.ID, b.now, abort, running, f.fence))
		require.Empty(t, f.fenced, "its next occurrences still run")
		got := b.job(t, j.ID)
		require.Equal(t, job.StatusScheduled, got.Status)
		require.Equal(t, j.Generation, got.Generation)
		require.JSONEq(t, `{"attempts": 2}`, string(b.onlyAudit(t, store.AuditFilter{Target: j.ID}).Change))
	})

	t.Run("NothingRunningConflicts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		b.claimed(t, j)
		f := &fencer{}

		err := b.st.AbortJob(b.ctx, ownerA, j.ID, b.now, abort, nil, f.fence)
		require.ErrorIs(t, err, job.ErrConflict)
		require.Empty(t, f.fenced)
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status)
		require.Empty(t, b.auditLog(t, store.AuditFilter{Target: j.ID}))
	})

	t.Run("FencerErrorChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		b.claimed(t, j)
		before := b.job(t, j.ID)
		redisDown := errors.New("redis: connection refused")

		err := b.st.AbortJob(b.ctx, ownerA, j.ID, b.now, abort, []job.Run{runningOf(j, j.RunAt)}, (&fencer{err: redisDown}).fence)
		require.ErrorIs(t, err, redisDown)
		require.Equal(t, before, b.job(t, j.ID))
		require.Empty(t, b.auditLog(t, store.AuditFilter{Target: j.ID}))
	})

	t.Run("NotFoundForAnotherOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		b.claimed(t, j)
		f := &fencer{}

		err := b.st.AbortJob(b.ctx, ownerB, j.ID, b.now, abort, []job.Run{runningOf(j, j.RunAt)}, f.fence)
		require.ErrorIs(t, err, job.ErrNotFound)
		require.Empty(t, f.fenced)
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status)
	})
}

func TestReleaseClaim(t *testing.T) {
	t.Parallel()

	t.Run("ReturnsJobToItsHourPartition", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := time.Date(2030, 1, 15, 14, 2, 0, 0, time.UTC)
		j := newJob(ownerA, at)
		b.create(t, j)
		since, until := at.Add(-5*time.Minute), at.Add(5*time.Minute)
		require.Len(t, b.claim(t, since, until, 10), 1)
		part, _ := b.placement(t, j.ID)
		require.Equal(t, "jobs_idle", part)

		require.NoError(t, b.st.ReleaseClaim(b.ctx, j.ID))
		part, hour := b.placement(t, j.ID)
		require.Equal(t, "jobs_h14", part)
		require.Equal(t, 14, hour)
		require.Equal(t, at, b.job(t, j.ID).DueAt)

		require.Equal(t, []job.Occurrence{firstAttempt(j)}, b.claim(t, since, until, 10), "the loader finds it again")
	})

	t.Run("LeavesUnclaimedAndCancelledJobsAlone", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		unclaimed, cancelled := newJob(ownerA, b.now.Add(time.Hour)), newJob(ownerA, b.now.Add(time.Hour))
		b.create(t, unclaimed, cancelled)
		_, _, err := b.st.CancelJob(b.ctx, ownerA, cancelled.ID, b.now, store.Audit{}, nil)
		require.NoError(t, err)

		require.NoError(t, b.st.ReleaseClaim(b.ctx, unclaimed.ID))
		require.NoError(t, b.st.ReleaseClaim(b.ctx, cancelled.ID))
		require.NoError(t, b.st.ReleaseClaim(b.ctx, job.NewID()))

		require.Equal(t, unclaimed.DueAt, b.job(t, unclaimed.ID).DueAt)
		part, _ := b.placement(t, cancelled.ID)
		require.Equal(t, "jobs_idle", part)
		require.Equal(t, job.StatusCancelled, b.job(t, cancelled.ID).Status)
	})
}
