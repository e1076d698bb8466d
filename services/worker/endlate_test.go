package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// TestAttemptFoundDoneEndsItsJob: a leader killed between its ZADD and its
// commit lets an attempt run and end while its job is not claimed, so the
// finish cannot end the job; the next leader claims the job again and
// re-adds the attempt. The worker, handed the attempt and finding it done,
// ends the job instead of leaving it scheduled for ever, and does not run
// it again.
func TestAttemptFoundDoneEndsItsJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := b.claimedJob()
	b.create(t, j)
	occ := firstAttempt(j)
	require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occ, Owner: j.Owner, Status: job.RunCompleted,
		DueAt: j.RunAt, StartedAt: b.now, FinishedAt: b.now}}, b.now))
	// As the lost claim left it: the outcome recorded, the job scheduled.
	_, err := b.st.Pool().Exec(b.ctx, `UPDATE jobs SET status = 'scheduled', updated_at = $2 WHERE id = $1`, j.ID, b.now.Add(-time.Second))
	require.NoError(t, err)
	require.Equal(t, 1, b.publish(t))

	r := newRunner()
	testenv.GoRun(t, b.consumer(r).Run)
	b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) == job.StatusCompleted },
		"the job of an attempt found done stayed scheduled")
	require.Zero(t, r.calls(), "not run again")
}
