package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

const deadReason = "dead-lettered: delivered 11 times without an outcome (TOCK_MAX_DELIVERIES is 10)"

// deadLetter dead-letters occs at now with deadReason and returns the
// occurrences it ended.
func (b *bundle) deadLetter(t *testing.T, now time.Time, occs ...job.Occurrence) []store.DeadLettered {
	t.Helper()
	reqs := make([]store.DeadLetter, len(occs))
	for i, o := range occs {
		reqs[i] = store.DeadLetter{Occurrence: o, DueAt: o.ScheduledFor, Reason: deadReason}
	}
	done, err := b.st.DeadLetter(b.ctx, reqs, now)
	require.NoError(t, err)
	return done
}

// runCount is how many run rows a job has.
func (b *bundle) runCount(t *testing.T, j *job.Job) int {
	t.Helper()
	runs, err := b.st.ListRuns(b.ctx, store.RunFilter{JobID: j.ID, Limit: 100})
	require.NoError(t, err)
	return len(runs)
}

func TestDeadLetter(t *testing.T) {
	t.Parallel()

	t.Run("WritesRowOfAttemptThatNeverStartedAndEndsOneOffJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j, other := newJob(ownerA, b.now), newJob(ownerA, b.now)
		occs := b.claimed(t, j, other)
		later := b.now.Add(time.Minute)

		done := b.deadLetter(t, later, occs[0])
		require.Equal(t, []store.DeadLettered{{Occurrence: occs[0]}}, done)
		r := b.run(t, occs[0])
		require.Equal(t, job.RunPermanentlyFailed, r.Status)
		require.Equal(t, deadReason, r.Error)
		require.Equal(t, ownerA, r.Owner)
		require.True(t, r.StartedAt.Equal(later) && r.FinishedAt.Equal(later), "started %s, finished %s", r.StartedAt, r.FinishedAt)
		require.True(t, r.DueAt.Equal(occs[0].ScheduledFor))
		require.NotZero(t, r.ID)
		got := b.job(t, j.ID)
		require.Equal(t, job.StatusPermanentlyFailed, got.Status)
		require.True(t, got.UpdatedAt.Equal(later))

		require.Equal(t, job.StatusScheduled, b.job(t, other.ID).Status, "only the job asked for")
		require.Zero(t, b.runCount(t, other))
		require.Empty(t, b.deadLetter(t, later, occs[0]), "dead-lettered once")
	})

	t.Run("LeavesAttemptLeasedToALiveWorker", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		started := b.start(t, occs...)

		require.Empty(t, b.deadLetter(t, started[0].Run.LeaseUntil, occs...), "the lease holds at its last instant")
		r := b.run(t, occs[0])
		require.Equal(t, job.RunRunning, r.Status)
		require.Empty(t, r.Error)
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status)
	})

	t.Run("EndsAttemptPastItsLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		started := b.start(t, occs...)
		later := started[0].Run.LeaseUntil.Add(time.Millisecond)

		require.Len(t, b.deadLetter(t, later, occs...), 1)
		r := b.run(t, occs[0])
		require.Equal(t, started[0].Run.ID, r.ID, "the same run row")
		require.Equal(t, job.RunPermanentlyFailed, r.Status)
		require.Equal(t, deadReason, r.Error)
		require.True(t, r.StartedAt.Equal(b.now), "started when its worker started it")
		require.True(t, r.FinishedAt.Equal(later))
		require.Equal(t, job.StatusPermanentlyFailed, b.job(t, j.ID).Status)
	})

	t.Run("LeavesFinishedAttempts", func(t *testing.T) {
		t.Parallel()
		for _, status := range []job.RunStatus{job.RunCompleted, job.RunFailed, job.RunPermanentlyFailed} {
			t.Run(string(status), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				j := newJob(ownerA, b.now, func(j *job.Job) { j.MaxRetries = 3 })
				occs := b.claimed(t, j)
				b.start(t, occs...)
				require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occs[0], Status: status, FinishedAt: b.now, Error: "HTTP 503"}}, b.now))
				want := b.job(t, j.ID).Status

				require.Empty(t, b.deadLetter(t, b.now.Add(time.Hour), occs...))
				r := b.run(t, occs[0])
				require.Equal(t, status, r.Status)
				require.Equal(t, "HTTP 503", r.Error)
				require.Equal(t, want, b.job(t, j.ID).Status)
			})
		}
	})

	t.Run("LeavesJobNoLongerScheduled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cancelled, edited := newJob(ownerA, b.now), newJob(ownerA, b.now)
		occs := b.claimed(t, cancelled, edited)
		_, err := b.st.CancelJob(b.ctx, ownerA, cancelled.ID, b.now, store.Audit{})
		require.NoError(t, err)
		stale := occs[1]
		stale.Generation-- // planned under a schedule the job has left

		require.Empty(t, b.deadLetter(t, b.now.Add(time.Minute), occs[0], stale))
		require.Zero(t, b.runCount(t, cancelled))
		require.Zero(t, b.runCount(t, edited))
		require.Equal(t, job.StatusCancelled, b.job(t, cancelled.ID).Status)
		require.Equal(t, job.StatusScheduled, b.job(t, edited.ID).Status)

		// The current generation's copy, beside the stale one, is the one ended.
		done := b.deadLetter(t, b.now.Add(time.Minute), stale, occs[1])
		require.Equal(t, []store.DeadLettered{{Occurrence: occs[1]}}, done)
	})

	t.Run("LeavesRecurringJobScheduledAndLetsGoOfItsHold", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		start := b.now.Add(-time.Hour).Truncate(time.Minute)
		j := newJob(ownerA, start, recurring(t, start), func(j *job.Job) { j.Overlap = job.OverlapSkip })
		b.create(t, j)
		first := job.Occurrence{JobID: j.ID, ScheduledFor: start, Attempt: 1}
		second := job.Occurrence{JobID: j.ID, ScheduledFor: start.Add(time.Minute), Attempt: 1}
		started := b.start(t, first)
		require.Equal(t, store.GateRun, started[0].Gate, "the first occurrence holds the job")

		later := started[0].Run.LeaseUntil.Add(time.Millisecond)
		done := b.deadLetter(t, later, first, second)
		require.ElementsMatch(t, []store.DeadLettered{{Occurrence: first, Recurring: true}, {Occurrence: second, Recurring: true}}, done)
		for _, o := range []job.Occurrence{first, second} {
			r := b.run(t, o)
			require.Equal(t, job.RunPermanentlyFailed, r.Status)
			require.Equal(t, deadReason, r.Error)
		}
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status, "later occurrences still run")
		var held *time.Time
		require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT overlap_for FROM jobs WHERE id = $1`, j.ID).Scan(&held))
		require.Nil(t, held, "the dead-lettered occurrence no longer holds the job")
	})
}
