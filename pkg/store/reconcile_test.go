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
		// started ran once and failed: its retry is still to come.
		b.finish(t, b.outcome(t, firstAttempt(started), job.RunFailed))
		_, _, err := b.st.CancelJob(b.ctx, ownerA, cancelled.ID, b.now, store.Audit{}, nil)
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
		b.finish(t, b.outcome(t, occs[0], job.RunCompleted))
		got, err := b.st.UnstartedClaims(b.ctx, b.now, 100)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

// legacyRunning inserts the running row an older release wrote when one of
// its workers started o, leased until until.
func (b *bundle) legacyRunning(t *testing.T, o job.Occurrence, until time.Time) {
	t.Helper()
	_, err := b.st.Pool().Exec(b.ctx, `INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until)
SELECT $1, $2, $3, 'running', $4, owner_id, $2, $2, $5 FROM jobs WHERE id = $1`, o.JobID, o.ScheduledFor, o.Attempt, job.NewID(), until)
	require.NoError(t, err)
}

func TestLegacyRunning(t *testing.T) {
	t.Parallel()

	t.Run("FindsRowsOfAnOlderReleasePastTheirLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		stalled := newJob(ownerA, b.now, func(j *job.Job) { j.Priority = 12 })
		earlier := newJob(ownerA, b.now)
		live := newJob(ownerA, b.now)
		finished := newJob(ownerA, b.now)
		occs := b.claimed(t, stalled, earlier, live, finished)
		b.legacyRunning(t, occs[0], b.now.Add(5*time.Second))
		b.legacyRunning(t, occs[1], b.now.Add(time.Second))
		b.legacyRunning(t, occs[2], b.now.Add(time.Hour))
		b.legacyRunning(t, occs[3], b.now.Add(time.Second))
		b.finish(t, b.outcome(t, occs[3], job.RunCompleted))

		none, err := b.st.LegacyRunning(b.ctx, b.now, 100)
		require.NoError(t, err)
		require.Empty(t, none, "every lease still holds")

		got, err := b.st.LegacyRunning(b.ctx, b.now.Add(10*time.Second), 100)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{earlier.ID, stalled.ID}, ids(got), "earliest lease first; a finished row is no longer running")
		require.Equal(t, 12, got[1].Priority)

		got, err = b.st.LegacyRunning(b.ctx, b.now.Add(10*time.Second), 1)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{earlier.ID}, ids(got))
	})

	t.Run("IgnoresJobsNoLongerScheduled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		b.legacyRunning(t, occs[0], b.now)
		_, err := b.st.Pool().Exec(b.ctx, `UPDATE jobs SET status = 'paused' WHERE id = $1`, j.ID)
		require.NoError(t, err)
		got, err := b.st.LegacyRunning(b.ctx, b.now.Add(time.Hour), 100)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}
