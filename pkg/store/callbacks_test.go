package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

func TestCallbacks(t *testing.T) {
	t.Parallel()

	t.Run("WrittenWithTheOutcomeOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j, k, plain := newJob(ownerA, b.now), newJob(ownerA, b.now), newJob(ownerA, b.now)
		occs := b.claimed(t, j, k, plain)
		done := b.outcome(t, occs[0], job.RunCompleted)
		done.Callback = []byte(`{"event":"completed"}`)
		failed := b.outcome(t, occs[1], job.RunPermanentlyFailed)
		failed.Callback = []byte(`{"event":"permanently_failed"}`)
		b.finish(t, done, failed, b.outcome(t, occs[2], job.RunCompleted))
		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status, "the outcome ends its job as ever")
		require.Equal(t, job.StatusPermanentlyFailed, b.job(t, k.ID).Status)

		// A late duplicate of an attempt records nothing, and sends nothing.
		late := b.outcome(t, occs[0], job.RunCompleted)
		late.Callback = []byte(`{"event":"again"}`)
		b.finish(t, late)

		cbs, err := b.st.ClaimCallbacks(b.ctx, b.now, b.now.Add(time.Minute), 10, 10, uuid.Nil, nil)
		require.NoError(t, err)
		require.Len(t, cbs, 2)
		byJob := map[uuid.UUID]store.Callback{}
		for _, cb := range cbs {
			byJob[cb.Occurrence.JobID] = cb
		}
		require.Equal(t, job.NotifyCompleted, byJob[j.ID].Event)
		require.JSONEq(t, `{"event":"completed"}`, string(byJob[j.ID].Body))
		require.True(t, byJob[j.ID].Occurrence.ScheduledFor.Equal(occs[0].ScheduledFor))
		require.Equal(t, 1, byJob[j.ID].Tries)
		require.Equal(t, job.NotifyPermanentlyFailed, byJob[k.ID].Event)

		// Leased: not claimed again until the lease ends.
		again, err := b.st.ClaimCallbacks(b.ctx, b.now.Add(time.Second), b.now.Add(time.Minute), 10, 10, uuid.Nil, nil)
		require.NoError(t, err)
		require.Empty(t, again)

		require.NoError(t, b.st.CallbackDone(b.ctx, byJob[j.ID].ID))
		require.NoError(t, b.st.CallbackLater(b.ctx, byJob[k.ID].ID, b.now.Add(5*time.Second), "status 503"))
		early, err := b.st.ClaimCallbacks(b.ctx, b.now.Add(4*time.Second), b.now.Add(time.Minute), 10, 10, uuid.Nil, nil)
		require.NoError(t, err)
		require.Empty(t, early, "put off by its backoff")
		retry, err := b.st.ClaimCallbacks(b.ctx, b.now.Add(5*time.Second), b.now.Add(time.Minute), 10, 10, uuid.Nil, nil)
		require.NoError(t, err)
		require.Len(t, retry, 1)
		require.Equal(t, k.ID, retry[0].Occurrence.JobID)
		require.Equal(t, 2, retry[0].Tries)
	})

	t.Run("ClaimsAreFairAmongOwners", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var jobs []*job.Job
		for range 6 {
			jobs = append(jobs, newJob(ownerA, b.now))
		}
		other := newJob(ownerB, b.now.Add(time.Millisecond))
		occs := b.claimed(t, append(jobs, other)...)
		var results []store.Result
		for _, o := range occs {
			r := b.outcome(t, o, job.RunCompleted)
			r.Callback = []byte(`{}`)
			results = append(results, r)
		}
		b.finish(t, results...)

		got, err := b.st.ClaimCallbacks(b.ctx, b.now, b.now.Add(time.Minute), 4, 2, uuid.Nil, nil)
		require.NoError(t, err)
		owners := map[uuid.UUID]int{}
		for _, cb := range got {
			owners[cb.Owner]++
		}
		require.Equal(t, map[uuid.UUID]int{ownerA: 2, ownerB: 1}, owners, "at most 2 of one owner, and the other's too")

		busy, err := b.st.ClaimCallbacks(b.ctx, b.now.Add(time.Hour), b.now.Add(2*time.Hour), 10, 4, uuid.Nil, map[uuid.UUID]int{ownerA: 4})
		require.NoError(t, err)
		require.Len(t, busy, 1, "an owner at its cap in flight is left for later")
		require.Equal(t, ownerB, busy[0].Owner)

		some, err := b.st.ClaimCallbacks(b.ctx, b.now.Add(3*time.Hour), b.now.Add(4*time.Hour), 10, 4, uuid.Nil, map[uuid.UUID]int{ownerA: 3})
		require.NoError(t, err)
		n := 0
		for _, cb := range some {
			if cb.Owner == ownerA {
				n++
			}
		}
		require.Equal(t, 1, n, "an owner with 3 in flight takes 1 more under a cap of 4")
	})
}
