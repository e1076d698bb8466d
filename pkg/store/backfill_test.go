package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// newBackfill is a backfill of owner's over the day before now, of a job
// that need not exist: the store does not look.
func (b *bundle) newBackfill(t *testing.T, owner uuid.UUID) *store.Backfill {
	t.Helper()
	bf := &store.Backfill{ID: job.NewID(), Owner: owner, JobID: job.NewID(), From: b.now.Add(-24 * time.Hour), To: b.now,
		Overlap: job.OverlapAllow, Total: 24, CreatedAt: b.now}
	require.NoError(t, b.st.CreateBackfill(b.ctx, bf, store.Audit{}))
	return bf
}

func TestBackfills(t *testing.T) {
	t.Parallel()

	t.Run("AnOwnerRunsAtMostTen", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var first *store.Backfill
		for i := range store.MaxRunningBackfills {
			bf := b.newBackfill(t, ownerA)
			if i == 0 {
				first = bf
			}
		}
		err := b.st.CreateBackfill(b.ctx, &store.Backfill{ID: job.NewID(), Owner: ownerA, JobID: job.NewID(),
			From: b.now.Add(-time.Hour), To: b.now, Overlap: job.OverlapAllow, Total: 1, CreatedAt: b.now}, store.Audit{})
		require.ErrorIs(t, err, store.ErrTooManyBackfills)
		require.ErrorIs(t, err, job.ErrConflict)
		b.newBackfill(t, ownerB) // another owner's count is its own

		_, err = b.st.CancelBackfill(b.ctx, ownerA, first.ID, b.now, store.Audit{})
		require.NoError(t, err)
		b.newBackfill(t, ownerA) // a cancelled one frees its place
	})

	t.Run("ACancelStandsAndIsOwned", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		bf := b.newBackfill(t, ownerA)
		got, err := b.st.GetBackfill(b.ctx, ownerA, bf.ID)
		require.NoError(t, err)
		require.Equal(t, store.BackfillRunning, got.Status)
		require.True(t, got.Cursor.Equal(bf.From), "it starts at from")

		_, err = b.st.GetBackfill(b.ctx, ownerB, bf.ID)
		require.ErrorIs(t, err, job.ErrNotFound)
		_, err = b.st.CancelBackfill(b.ctx, ownerB, bf.ID, b.now, store.Audit{})
		require.ErrorIs(t, err, job.ErrNotFound)

		cancelled, err := b.st.CancelBackfill(b.ctx, ownerA, bf.ID, b.now.Add(time.Second), store.Audit{})
		require.NoError(t, err)
		require.Equal(t, store.BackfillCancelled, cancelled.Status)
		require.True(t, cancelled.FinishedAt.Equal(b.now.Add(time.Second)))
		again, err := b.st.CancelBackfill(b.ctx, store.AnyOwner, bf.ID, b.now.Add(2*time.Second), store.Audit{})
		require.NoError(t, err)
		require.Equal(t, cancelled.FinishedAt, again.FinishedAt, "a second cancel changes nothing")

		// The leader's save of a round that began before the cancel does not undo it.
		got.Queued, got.Inflight = 3, []time.Time{b.now.Add(-time.Hour)}
		saved, err := b.st.SaveBackfill(b.ctx, got)
		require.NoError(t, err)
		require.False(t, saved)
		after, err := b.st.GetBackfill(b.ctx, ownerA, bf.ID)
		require.NoError(t, err)
		require.Equal(t, store.BackfillCancelled, after.Status)
		require.Zero(t, after.Queued)

		states, err := b.st.BackfillStates(b.ctx, []uuid.UUID{bf.ID, job.NewID()})
		require.NoError(t, err)
		require.Equal(t, map[uuid.UUID]store.BackfillState{bf.ID: {Running: false}}, states)
	})

	t.Run("ACompletedOneCannotBeCancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		bf := b.newBackfill(t, ownerA)
		at := b.now.Add(-time.Hour)
		bf.Cursor, bf.Inflight, bf.Queued, bf.ProgressedAt = at, []time.Time{at, at.Add(time.Minute)}, 2, b.now
		saved, err := b.st.SaveBackfill(b.ctx, bf)
		require.NoError(t, err)
		require.True(t, saved)
		got, err := b.st.GetBackfill(b.ctx, ownerA, bf.ID)
		require.NoError(t, err)
		require.Equal(t, []time.Time{at, at.Add(time.Minute)}, got.Inflight)
		require.Equal(t, 22, got.Remaining())
		states, err := b.st.BackfillStates(b.ctx, []uuid.UUID{bf.ID})
		require.NoError(t, err)
		require.True(t, states[bf.ID].Running)

		bf.Status, bf.FinishedAt, bf.Inflight = store.BackfillCompleted, b.now, nil
		_, err = b.st.SaveBackfill(b.ctx, bf)
		require.NoError(t, err)
		_, err = b.st.CancelBackfill(b.ctx, ownerA, bf.ID, b.now, store.Audit{})
		require.ErrorIs(t, err, job.ErrConflict)
		list, err := b.st.ListBackfills(b.ctx, ownerA, bf.JobID, 10)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, store.BackfillCompleted, list[0].Status)
	})

	t.Run("RunsNameTheirBackfillAndOutcomesReadTheLatestAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(-3*time.Second))
		o := b.claimed(t, j)[0]
		bf := job.NewID()
		first := o
		first.Backfill = bf
		plain := b.claimed(t, newJob(ownerA, b.now.Add(-2*time.Second)))[0]
		// One batch with and one without: the backfill's variant of the
		// finish statement records both.
		b.finish(t, b.outcome(t, first, job.RunFailed), b.outcome(t, plain, job.RunCompleted))
		got, err := b.st.RunBackfill(b.ctx, o.JobID, o.ScheduledFor, 1)
		require.NoError(t, err)
		require.Equal(t, bf, got)
		got, err = b.st.RunBackfill(b.ctx, plain.JobID, plain.ScheduledFor, 1)
		require.NoError(t, err)
		require.Equal(t, uuid.Nil, got)

		outcomes, err := b.st.Outcomes(b.ctx, o.JobID, []time.Time{o.ScheduledFor, o.ScheduledFor.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, map[int64]job.RunStatus{o.ScheduledFor.UnixMilli(): job.RunFailed}, outcomes)
		b.finish(t, b.outcome(t, first.Next(), job.RunCompleted))
		outcomes, err = b.st.Outcomes(b.ctx, o.JobID, []time.Time{o.ScheduledFor})
		require.NoError(t, err)
		require.Equal(t, map[int64]job.RunStatus{o.ScheduledFor.UnixMilli(): job.RunCompleted}, outcomes, "the retry's")
	})
}
