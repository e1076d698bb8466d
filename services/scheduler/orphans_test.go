package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
)

// A Redis that lost a claim's writes but kept its marker (a failover to a
// replica that lagged) holds a lower load mark than Postgres committed: the
// next loader round rebuilds, and the recurring job's lost occurrence is
// planned again.
func TestLostClaimWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.now.Add(-time.Hour)
	sched, err := schedule.Spec{Cron: "* * * * *", StartAt: &start}.Compile(start)
	require.NoError(t, err)
	raw, err := json.Marshal(sched.Spec())
	require.NoError(t, err)
	next := b.now.Truncate(time.Minute).Add(time.Minute)
	cron := newJob(time.Time{}, func(j *job.Job) { j.Schedule, j.RunAt, j.DueAt = raw, time.Time{}, next })
	b.create(t, cron)
	occ := job.Occurrence{JobID: cron.ID, ScheduledFor: next, Attempt: 1, Priority: cron.Priority}.Route(cron.Owner, cron.Payload)

	l, logs := b.leader(func() time.Time { return b.now })
	l.reconcile(b.ctx) // as a new leader does: reads the mark, loads
	require.True(t, b.scheduled(t, occ), "the next occurrence is loaded")
	ok, err := b.queue.Intact(b.ctx, 1)
	require.NoError(t, err)
	require.True(t, ok, "the claim raised the marker to its mark")

	// The failover: the replica had the marker but not the claim's writes.
	require.NoError(t, b.rdb.ZRem(b.ctx, b.keys.Due(), occ.Member()).Err())
	require.NoError(t, b.rdb.Set(b.ctx, b.keys.Marker(), 0, 0).Err())

	l.load(b.ctx)
	require.True(t, b.scheduled(t, occ), "the lost occurrence is planned again at the next round")
	require.Equal(t, 1, count(logs, "redis_rebuilt"))
	ok, err = b.queue.Intact(b.ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	l.load(b.ctx)
	require.Equal(t, 1, count(logs, "redis_rebuilt"), "an intact Redis is not rebuilt again")
}

// A dashboard that died between committing claimed jobs and adding them to
// the due set: once its beat expires, the leader re-adds those of its claims
// that are not in Redis, and forgets it. A live dashboard's claims are left
// to it.
func TestAdoptOrphans(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dead, err := b.st.ProcessNumber(b.ctx)
	require.NoError(t, err)
	live, err := b.st.ProcessNumber(b.ctx)
	require.NoError(t, err)
	require.NoError(t, b.q.DashboardBeat(b.ctx, dead, time.Minute))
	require.NoError(t, b.q.DashboardBeat(b.ctx, live, time.Minute))

	create := func(n int32, jobs ...*job.Job) {
		require.NoError(t, b.st.CreateJobs(b.ctx, jobs, store.Create{ClaimedBy: n}))
	}
	lost := []*job.Job{newJob(b.now.Add(-time.Second), claimed), newJob(b.now.Add(3*time.Minute), claimed)}
	added := newJob(b.now, claimed)
	create(dead, append(lost, added)...)
	require.NoError(t, b.queue.Enqueue(b.ctx, queue.AsScheduled([]job.Occurrence{firstAttempt(added)})))
	pending := newJob(b.now, claimed)
	create(live, pending)

	l, logs := b.leader(func() time.Time { return b.now })
	l.adoptOrphans(b.ctx)
	require.False(t, b.scheduled(t, firstAttempt(lost[0])), "nothing is done while the dashboard beats")

	require.NoError(t, b.rdb.Del(b.ctx, b.keys.DashboardBeat(dead)).Err()) // its beat expired
	l.adoptOrphans(b.ctx)
	for _, j := range lost {
		require.True(t, b.scheduled(t, firstAttempt(j)), "the dead dashboard's claim %s is re-added", j.RunAt)
		require.Equal(t, j.RunAt, b.score(t, firstAttempt(j)), "due when the job is due")
	}
	require.False(t, b.scheduled(t, firstAttempt(pending)), "a live dashboard's claim is its own")
	entries := logs.FilterMessage("dead_dashboards_adopted").All()
	require.Len(t, entries, 1)
	require.EqualValues(t, 2, entries[0].ContextMap()["requeued_claims"], "the claim already in Redis is not counted")
	gone, err := b.q.DeadDashboards(b.ctx)
	require.NoError(t, err)
	require.Empty(t, gone, "a dashboard adopted is forgotten")
}
