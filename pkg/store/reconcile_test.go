package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

func TestUnstartedClaims(t *testing.T) {
	t.Parallel()

	t.Run("FindsClaimedJobsThatNeverStarted", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		lost := newJob(ownerA, b.now.Add(-10*time.Minute), func(j *job.Job) { j.Priority = -4 })
		lostToo := newJob(ownerB, b.now.Add(-20*time.Minute))
		started := newJob(ownerA, b.now.Add(-10*time.Minute))
		recent := newJob(ownerA, b.now.Add(-time.Minute))
		cancelled := newJob(ownerA, b.now.Add(-10*time.Minute))
		unclaimed := newJob(ownerA, b.now.Add(-10*time.Minute))
		b.create(t, lost, lostToo, started, recent, cancelled)
		require.Len(t, b.claim(t, time.Time{}, b.now, 100), 5)
		b.create(t, unclaimed) // created after the claim: still in its hour partition
		require.Len(t, b.start(t, firstAttempt(started)), 1)
		_, err := b.st.CancelJob(b.ctx, ownerA, cancelled.ID, b.now, store.Audit{})
		require.NoError(t, err)

		olderThan := b.now.Add(-5 * time.Minute)
		got, err := b.st.UnstartedClaims(b.ctx, olderThan, 100)
		require.NoError(t, err)
		require.Equal(t, []job.Occurrence{firstAttempt(lostToo), firstAttempt(lost)}, got, "earliest first, first attempts with priority")

		got, err = b.st.UnstartedClaims(b.ctx, olderThan, 1)
		require.NoError(t, err)
		require.Equal(t, []job.Occurrence{firstAttempt(lostToo)}, got, "at most limit")
	})

	t.Run("FinishedJobsAreNotLost", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(-10*time.Minute))
		occs := b.claimed(t, j)
		b.start(t, occs...)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occs[0], Status: job.RunCompleted, FinishedAt: b.now}}, b.now))
		got, err := b.st.UnstartedClaims(b.ctx, b.now, 100)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

func TestExpiredLeases(t *testing.T) {
	t.Parallel()

	t.Run("FindsRunningAttemptsPastTheirLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		stalled := newJob(ownerA, b.now, func(j *job.Job) { j.Priority = 12 })
		retried := newJob(ownerA, b.now, func(j *job.Job) { j.Timeout = time.Second })
		finished := newJob(ownerA, b.now)
		longer := newJob(ownerA, b.now, func(j *job.Job) { j.Timeout = time.Hour })
		occs := b.claimed(t, stalled, retried, finished, longer)
		b.start(t, occs...)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{
			{Occurrence: occs[1], Status: job.RunFailed, FinishedAt: b.now},
			{Occurrence: occs[2], Status: job.RunCompleted, FinishedAt: b.now},
		}, b.now))
		retry := occs[1].Next()
		require.Len(t, b.start(t, retry), 1)

		none, err := b.st.ExpiredLeases(b.ctx, b.now.Add(2*time.Second), 100)
		require.NoError(t, err)
		require.Empty(t, none, "every lease still holds")

		got, err := b.st.ExpiredLeases(b.ctx, b.now.Add(10*time.Second), 100)
		require.NoError(t, err)
		require.Equal(t, []job.Occurrence{retry, occs[0]}, got, "earliest lease first; the retry's attempt number is kept")
		require.Equal(t, 12, got[1].Priority)

		got, err = b.st.ExpiredLeases(b.ctx, b.now.Add(10*time.Second), 1)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{retried.ID}, ids(got))
	})

	t.Run("IgnoresJobsNoLongerScheduled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		b.start(t, occs...)
		_, err := b.st.Pool().Exec(b.ctx, `UPDATE jobs SET status = 'paused' WHERE id = $1`, j.ID)
		require.NoError(t, err)
		got, err := b.st.ExpiredLeases(b.ctx, b.now.Add(time.Hour), 100)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}
