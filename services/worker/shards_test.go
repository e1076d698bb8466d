package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestConsumerShards(t *testing.T) {
	t.Parallel()

	t.Run("RunsEveryShardAndRetriesWithinIt", func(t *testing.T) {
		t.Parallel()
		b := setupShards(t, 4)
		jobs := make([]*job.Job, 40)
		used := map[int]bool{}
		for i := range jobs {
			jobs[i] = b.claimedJob(func(j *job.Job) { j.MaxRetries = 1 })
			used[queue.ShardOf(jobs[i].ID, 4)] = true
		}
		require.Greater(t, len(used), 2, "40 jobs spread over the shards")
		b.create(t, jobs...)
		b.publishing(t)

		// The first attempt of every other job fails; its retry succeeds.
		flaky := map[string]bool{}
		for i, j := range jobs {
			if i%2 == 0 {
				flaky[firstAttempt(j).Key()] = true
			}
		}
		r := newRunner()
		r.outcome = func(task jobtype.Task) jobtype.Outcome {
			if task.Attempt == 1 && flaky[task.Key] {
				return failing(task)
			}
			return jobtype.Outcome{OK: true, StatusCode: 200}
		}
		testenv.GoRun(t, b.consumer(r, func(c *Worker) { c.Concurrency, c.Batch = 8, 8 }).Run)
		testenv.WaitUntil(t, 15*time.Second, func() bool {
			for _, j := range jobs {
				if b.finished(t, j) == "" {
					return false
				}
			}
			return true
		}, "not every job finished")

		for i, j := range jobs {
			require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
			runs := b.runs(t, j.ID)
			if i%2 == 0 {
				require.Len(t, runs, 2, "failed once, then retried")
				require.Equal(t, job.RunFailed, runs[0].Status)
				require.Equal(t, job.RunCompleted, runs[1].Status)
			} else {
				require.Len(t, runs, 1)
			}
		}
		require.Equal(t, 60, r.calls(), "40 first attempts and 20 retries, none twice")
		testenv.WaitUntil(t, 5*time.Second, func() bool {
			st, err := b.queue.Stats(b.ctx)
			require.NoError(t, err)
			return st == queue.Stats{}
		}, "every shard's stream and due set is empty")
	})
}
