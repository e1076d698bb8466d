package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
)

// TestExpiredEndsTheJob: a one-off job whose only attempt expired ends
// expired, and the worker reads its expiry with the attempt.
func TestExpiredEndsTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := newJob(ownerA, b.now.Add(-time.Hour), func(j *job.Job) { j.ExpiresAfter = time.Minute })
	o := b.claimed(t, j)[0]
	fetched, err := b.st.Fetch(b.ctx, []job.Occurrence{o}, b.now)
	require.NoError(t, err)
	require.Len(t, fetched, 1)
	require.Equal(t, time.Minute, fetched[0].Job.ExpiresAfter)

	res := b.outcome(t, o, job.RunExpired)
	res.Error = "expired"
	b.finish(t, res)
	got := b.job(t, j.ID)
	require.Equal(t, job.StatusExpired, got.Status)
	require.Equal(t, time.Minute, got.ExpiresAfter)
	require.Equal(t, job.RunExpired, got.LastRun.Status)
	require.Equal(t, "expired", got.LastRun.Error)
}
