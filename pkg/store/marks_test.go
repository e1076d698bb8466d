package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// The load mark counts the claims that handed occurrences to Redis, passes
// each one's count to enqueue, and counts only those that committed.
func TestLoadMark(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mark, err := b.st.LoadMark(b.ctx)
	require.NoError(t, err)
	require.Zero(t, mark)

	claim := func(enqueue func(context.Context, []job.Occurrence, int64) error) (store.Claimed, error) {
		return b.st.ClaimDue(b.ctx, store.Window{Until: b.now.Add(time.Hour), Limit: 10, Now: b.now,
			MisfireThreshold: time.Minute}, enqueue)
	}
	_, err = claim(func(context.Context, []job.Occurrence, int64) error {
		t.Error("nothing due: nothing to enqueue")
		return nil
	})
	require.NoError(t, err)
	mark, err = b.st.LoadMark(b.ctx)
	require.NoError(t, err)
	require.Zero(t, mark, "a claim that hands nothing over counts nothing")

	b.create(t, newJob(ownerA, b.now.Add(time.Minute)))
	refused := errors.New("redis refused")
	_, err = claim(func(_ context.Context, _ []job.Occurrence, m int64) error {
		require.EqualValues(t, 1, m)
		return refused
	})
	require.ErrorIs(t, err, refused)
	mark, err = b.st.LoadMark(b.ctx)
	require.NoError(t, err)
	require.Zero(t, mark, "a claim that rolled back counts nothing")

	var got int64
	c, err := claim(func(_ context.Context, _ []job.Occurrence, m int64) error { got = m; return nil })
	require.NoError(t, err)
	require.Equal(t, 1, c.Jobs)
	require.EqualValues(t, 1, got, "the committed claim wrote the count it commits")
	mark, err = b.st.LoadMark(b.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, mark)
}

// A dashboard's number goes on the one-off jobs it stores claimed, and
// OrphanedClaims finds those of given dashboards that never started, page
// by page.
func TestOrphanedClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	n1, err := b.st.ProcessNumber(b.ctx)
	require.NoError(t, err)
	n2, err := b.st.ProcessNumber(b.ctx)
	require.NoError(t, err)
	require.NotEqual(t, n1, n2)

	claimed := func(n int32, at time.Time) *job.Job {
		j := newJob(ownerA, at, func(j *job.Job) { j.DueAt = time.Time{} })
		require.NoError(t, b.st.CreateJobs(b.ctx, []*job.Job{j}, store.Create{ClaimedBy: n}))
		return j
	}
	a1 := claimed(n1, b.now.Add(-2*time.Second))
	a2 := claimed(n1, b.now.Add(5*time.Minute)) // due later: re-added now all the same
	started := claimed(n1, b.now.Add(-time.Second))
	other := claimed(n2, b.now)
	// A batch, and a job left to the loader (due_at set), which nobody claimed.
	batch := []*job.Job{
		newJob(ownerB, b.now.Add(time.Second), func(j *job.Job) { j.DueAt = time.Time{} }),
		newJob(ownerB, b.now.Add(2*time.Second), func(j *job.Job) { j.DueAt = time.Time{} }),
		newJob(ownerB, b.now.Add(time.Hour)),
	}
	require.NoError(t, b.st.CreateJobs(b.ctx, batch, store.Create{ClaimedBy: n1}))
	b.finish(t, b.outcome(t, firstAttempt(started), job.RunFailed)) // it ran once; its retry is in Redis

	var all []job.Occurrence
	var after job.Occurrence
	for {
		page, err := b.st.OrphanedClaims(b.ctx, []int32{n1}, after, 2)
		require.NoError(t, err)
		all = append(all, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1]
	}
	require.Equal(t, []job.Occurrence{firstAttempt(a1), firstAttempt(batch[0]), firstAttempt(batch[1]), firstAttempt(a2)}, all,
		"dashboard 1's claims that never started, in due order, routed like the loader's")

	got, err := b.st.OrphanedClaims(b.ctx, []int32{n2}, job.Occurrence{}, 10)
	require.NoError(t, err)
	require.Equal(t, []job.Occurrence{firstAttempt(other)}, got)
}
