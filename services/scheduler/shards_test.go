package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestLeaderShardCount(t *testing.T) {
	t.Parallel()

	t.Run("DoesNotLeadWithAnotherShardCountThanTheDeployments", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// The deployment runs 3 shards; this scheduler was started with 1.
		require.NoError(t, b.rdb.Set(b.ctx, b.queue.ShardsKey(), 3, 0).Err())
		soon := newJob(b.now.Add(2 * time.Second))
		b.create(t, soon)

		l, logs := b.leader(nil)
		testenv.GoRun(t, l.Run)
		testenv.WaitUntil(t, 5*time.Second, func() bool { return count(logs, "not_leading_shard_count_differs") >= 2 },
			"the leader did not refuse to lead")
		require.Zero(t, count(logs, "leadership_gained"))
		require.False(t, b.scheduled(t, firstAttempt(soon)), "nothing loaded into keys the deployment does not read")
		require.Equal(t, job.StatusScheduled, b.job(t, soon.ID).Status)

		// The operator finishes the change (the key deleted with the shards'
		// keys): the scheduler records its count and leads.
		require.NoError(t, b.rdb.Del(b.ctx, b.queue.ShardsKey()).Err())
		testenv.WaitUntil(t, 5*time.Second, func() bool { return b.loaded(t, soon) }, "the scheduler did not lead once the counts agreed")
	})
}
