package main

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

// occurrence is a first attempt of a job that exists only in Redis: the
// publisher never looks at Postgres.
func occurrence(at time.Time, prio int) job.Occurrence {
	return job.Occurrence{JobID: job.NewID(), ScheduledFor: at.UTC().Truncate(time.Millisecond), Attempt: 1, Priority: prio}
}

func (b *bundle) publisher(batch int) *Publisher {
	return &Publisher{queue: b.q, log: zap.NewNop(), batch: batch, tick: 50 * time.Millisecond,
		metrics: metrics.NewScheduler(prometheus.NewRegistry())}
}

func TestPublisher(t *testing.T) {
	t.Parallel()

	t.Run("PublishesEachMemberAtItsTime", func(t *testing.T) {
		t.Parallel()
		b := setupRedis(t)
		now := time.Now()
		overdue, soon, later := occurrence(now.Add(-time.Second), 0), occurrence(now.Add(300*time.Millisecond), 0), occurrence(now.Add(time.Hour), 0)
		require.NoError(t, b.q.Enqueue(b.ctx, []queue.Entry{
			{Occurrence: overdue, DueAt: overdue.ScheduledFor},
			{Occurrence: soon, DueAt: soon.ScheduledFor},
			{Occurrence: later, DueAt: later.ScheduledFor},
		}))

		p := b.publisher(100)
		stop, done := testenv.GoRun(t, p.Run)
		testenv.WaitUntil(t, 5*time.Second, func() bool { return len(b.stream(t)) >= 2 }, "the two due members were not published")

		entries := b.stream(t)
		require.Len(t, entries, 2, "only the two due members are published")
		require.Equal(t, []job.Occurrence{overdue, soon}, []job.Occurrence{entries[0].occ, entries[1].occ}, "published in due order")
		for i, o := range []job.Occurrence{overdue, soon} {
			require.Equal(t, o.ScheduledFor.UnixMilli(), entries[i].due, "the d field carries the due time")
			require.GreaterOrEqual(t, entries[i].ms, entries[i].due,
				"entry %s of %s was appended at %d, before its due time %d", entries[i].id, o.Member(), entries[i].ms, entries[i].due)
		}
		require.True(t, b.scheduled(t, later), "the member due in an hour stays in the due set")
		require.False(t, b.scheduled(t, overdue))
		require.False(t, b.scheduled(t, soon))

		stop()
		testenv.Returned(t, done, 10*time.Second)
		require.Equal(t, 2.0, testutil.ToFloat64(p.metrics.Moved), "tock_publisher_moved_total counts the members moved")
	})

	t.Run("PublishesMemberAddedWhileAsleep", func(t *testing.T) {
		t.Parallel()
		b := setupRedis(t)
		far := occurrence(time.Now().Add(time.Hour), 0)
		require.NoError(t, b.q.Enqueue(b.ctx, []queue.Entry{{Occurrence: far, DueAt: far.ScheduledFor}}))
		testenv.GoRun(t, b.publisher(100).Run)

		// The publisher sleeps towards the member due in an hour, but never
		// longer than its tick: one added now is seen within a tick.
		now := occurrence(time.Now(), 0)
		require.NoError(t, b.q.Enqueue(b.ctx, []queue.Entry{{Occurrence: now, DueAt: now.ScheduledFor}}))
		testenv.WaitUntil(t, 5*time.Second, func() bool { return len(b.stream(t)) == 1 }, "the member added while the publisher slept was not published")
		require.Equal(t, now, b.stream(t)[0].occ)
		require.True(t, b.scheduled(t, far))
	})

	t.Run("TwoPublishersNeverPublishAMemberTwice", func(t *testing.T) {
		t.Parallel()
		b := setupRedis(t)
		// Both run before the members arrive, so they race for every batch.
		testenv.GoRun(t, b.publisher(50).Run)
		testenv.GoRun(t, b.publisher(50).Run)

		const n = 2000
		now := time.Now()
		entries := make([]queue.Entry, n)
		for i := range entries {
			o := occurrence(now, i%7)
			entries[i] = queue.Entry{Occurrence: o, DueAt: o.ScheduledFor}
		}
		require.NoError(t, b.q.Enqueue(b.ctx, entries))

		testenv.WaitUntil(t, 10*time.Second, func() bool {
			due, err := b.rdb.ZCard(b.ctx, b.keys.Due()).Result()
			require.NoError(t, err)
			return due == 0
		}, "the due set was not drained")

		xlen, err := b.rdb.XLen(b.ctx, b.keys.Ready()).Result()
		require.NoError(t, err)
		require.EqualValues(t, n, xlen, "every member is published exactly once")
		seen := make(map[string]bool, n)
		for _, e := range b.stream(t) {
			m := e.occ.Member()
			require.False(t, seen[m], "member %s published twice", m)
			seen[m] = true
		}
		for _, e := range entries {
			require.True(t, seen[e.Occurrence.Member()], "member %s never published", e.Occurrence.Member())
		}
	})

	t.Run("ReturnsWhenContextEnds", func(t *testing.T) {
		t.Parallel()
		b := setupRedis(t)
		p := b.publisher(100)
		ctx, cancel := context.WithCancel(b.ctx)
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return within 5s of its context ending")
		}
	})
}
