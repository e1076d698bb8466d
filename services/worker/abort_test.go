package main

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestAbort(t *testing.T) {
	t.Parallel()
	actor := uuid.MustParse("00000000-0000-0000-0000-000000000001")

	t.Run("StopsTheJobsRunningAttemptsAndRecordsThemAborted", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := holding()
		stopped, other := b.claimedJob(), b.claimedJob()
		b.create(t, stopped, other)
		require.Equal(t, 2, b.publish(t))
		testenv.GoRun(t, b.consumer(r).Run)
		testenv.WaitUntil(t, 5*time.Second, func() bool { running, _ := r.concurrency(); return running == 2 }, "both attempts did not start")

		require.NoError(t, b.queue.Abort(b.ctx, queue.AbortRequest{Job: stopped.ID, Actor: actor, At: time.Now()}))
		testenv.WaitUntil(t, 5*time.Second, func() bool {
			runs := b.runs(t, stopped.ID)
			return len(runs) == 1 && runs[0].Status == job.RunAborted
		}, "the attempt was not recorded aborted")
		runs := b.runs(t, stopped.ID)
		require.Equal(t, "aborted by "+actor.String(), runs[0].Error)
		running, _ := r.concurrency()
		require.Equal(t, 1, running, "the other job's attempt runs on")
		require.Empty(t, b.runs(t, other.ID))
		require.Len(t, b.leases(t, other.ID), 1, "it still runs")

		// Never retried, and the job ends: a one-off job whose attempt was
		// aborted is cancelled.
		r.let(t, 1)
		testenv.WaitUntil(t, 5*time.Second, func() bool { return b.settled(t) }, "entries were not settled")
		require.Len(t, b.runs(t, stopped.ID), 1)
		require.Equal(t, job.StatusCancelled, b.job(t, stopped.ID).Status)
		require.Equal(t, job.StatusCompleted, b.job(t, other.ID).Status)
	})

	t.Run("ARequestThatLandsOutOfOrderIsSeen", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := holding()
		first, second := b.claimedJob(), b.claimedJob()
		b.create(t, first, second)
		require.Equal(t, 2, b.publish(t))
		testenv.GoRun(t, b.consumer(r).Run)
		testenv.WaitUntil(t, 5*time.Second, func() bool { running, _ := r.concurrency(); return running == 2 }, "the attempts did not start")
		// Stamped later, written first (two dashboards, or one slow write).
		earlier := time.Now()
		require.NoError(t, b.queue.Abort(b.ctx, queue.AbortRequest{Job: first.ID, Actor: actor, At: earlier.Add(time.Second)}))
		time.Sleep(2 * abortPoll)
		require.NoError(t, b.queue.Abort(b.ctx, queue.AbortRequest{Job: second.ID, Actor: actor, At: earlier}))
		testenv.WaitUntil(t, 5*time.Second, func() bool { return b.settled(t) }, "both attempts were not stopped")
		require.Equal(t, job.RunAborted, b.runs(t, second.ID)[0].Status)
	})

	t.Run("AnOwnersAbortStopsAllTheirAttemptsThatStartedBeforeIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := holding()
		jobs := []*job.Job{b.claimedJob(), b.claimedJob(), b.claimedJob()}
		b.create(t, jobs...)
		require.Equal(t, 3, b.publish(t))
		testenv.GoRun(t, b.consumer(r).Run)
		testenv.WaitUntil(t, 5*time.Second, func() bool { running, _ := r.concurrency(); return running == 3 }, "the attempts did not start")

		// A request made before they started does not touch them.
		require.NoError(t, b.queue.Abort(b.ctx, queue.AbortRequest{Owner: owner, Actor: actor, At: b.now.Add(-time.Second)}))
		time.Sleep(2 * abortPoll)
		running, _ := r.concurrency()
		require.Equal(t, 3, running)

		require.NoError(t, b.queue.Abort(b.ctx, queue.AbortRequest{Owner: owner, Actor: actor, At: time.Now()}))
		testenv.WaitUntil(t, 5*time.Second, func() bool { return b.settled(t) }, "the attempts were not stopped and settled")
		for _, j := range jobs {
			runs := b.runs(t, j.ID)
			require.Len(t, runs, 1)
			require.Equal(t, job.RunAborted, runs[0].Status)
			require.Contains(t, runs[0].Error, "owner was disabled")
		}
	})
}
