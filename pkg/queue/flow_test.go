package queue_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
)

// flowed is a first attempt of a fresh job of ownerA through flow key key,
// due at at.
func flowed(key string, at time.Time) job.Occurrence {
	return routed(ownerA, "0000000a", at).Through(key)
}

func (b *bundle) setFlow(t *testing.T, f queue.FlowLimits) {
	t.Helper()
	require.NoError(t, b.q.SetFlows(b.ctx, []queue.FlowLimits{f}))
}

func (b *bundle) flowState(t *testing.T, lane string) queue.FlowState {
	t.Helper()
	st, err := b.q.FlowStates(b.ctx, []string{lane})
	require.NoError(t, err)
	return st[0]
}

func TestFlowKeys(t *testing.T) {
	t.Parallel()
	lane := job.FlowLane(ownerA, "customer-42")

	t.Run("ConcurrencyHoldsTheRestInDueOrderAndReleasesOneForOne", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.setFlow(t, queue.FlowLimits{Lane: lane, Concurrency: 2})
			var occs []job.Occurrence
			// Due in the past by Redis's clock, which the settle reads.
			past := time.Now().Add(-time.Second)
			for i := range 5 {
				occs = append(occs, flowed("customer-42", past.Add(-time.Duration(10-i)*time.Millisecond)))
			}
			other := flowed("customer-7", past)
			b.enqueue(t, append(occs, other)...)
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			p, err := b.q.Publish(b.ctx, 100, time.Time{}, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 3, p.Sent, "two of the key and the other key's one")
			require.Equal(t, queue.FlowState{InFlight: 2, Waiting: 3}, b.flowState(t, lane))
			held, err := b.rdb.ZRange(b.ctx, b.keys.Held(queue.FlowLane(lane)), 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, memberOf(occs[2:]...), held, "held in due order")
			msgs, err := b.q.Read(b.ctx, "w1", 100, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 3)
			// One ends: exactly one more of the key comes out, the oldest, and
			// it says how long it waited behind its key.
			var ended string
			for _, m := range msgs {
				if m.Occurrence.JobID == occs[0].JobID {
					ended = m.ID
				}
			}
			require.NoError(t, b.q.Settle(b.ctx, []string{ended}, nil))
			require.Equal(t, queue.FlowState{InFlight: 2, Waiting: 2}, b.flowState(t, lane))
			next, err := b.q.Read(b.ctx, "w1", 100, noBlock)
			require.NoError(t, err)
			require.Len(t, next, 1)
			require.Equal(t, occs[2].JobID, next[0].Occurrence.JobID)
			require.Positive(t, next[0].Throttled, "the wait is recorded as throttled")
			require.True(t, next[0].Capped, "it takes the key's last place: its end is awaited")
			for _, m := range msgs {
				want := m.Occurrence.JobID == occs[1].JobID
				require.Equal(t, want, m.Capped, "only the key's second took its last place")
			}
		})
	})

	t.Run("RateStartsNoMoreThanItsCountInAnyPeriod", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.setFlow(t, queue.FlowLimits{Lane: lane, Rate: job.Rate{Count: 3, Period: 300 * time.Millisecond}})
			var occs []job.Occurrence
			for i := range 7 {
				occs = append(occs, flowed("customer-42", base.Add(time.Duration(i)*time.Millisecond)))
			}
			b.enqueue(t, occs...)
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			p, err := b.q.Publish(b.ctx, 100, base.Add(time.Second), queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 3, p.Sent)
			require.False(t, p.Wake.IsZero(), "the publisher is told when the window reopens")
			p, err = b.q.Publish(b.ctx, 100, base.Add(time.Second), queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 0, p.Sent, "nothing more within the period")
			require.Equal(t, base.Add(time.Second+300*time.Millisecond), p.Wake)
			p, err = b.q.Publish(b.ctx, 100, p.Wake, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 3, p.Sent, "the next three once the period has passed")
			require.Equal(t, memberOf(occs[:6]...), membersOf(b.streamOccurrences(t)), "in due order")
		})
	})

	t.Run("PauseHoldsEverythingAndResumeLetsItOut", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.setFlow(t, queue.FlowLimits{Lane: lane, Paused: true})
			b.enqueue(t, flowed("customer-42", base), flowed("customer-42", base))
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 0, p.Sent)
			b.setFlow(t, queue.FlowLimits{Lane: lane})
			p, err = b.q.Publish(b.ctx, 100, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 2, p.Sent, "a resume wakes the key")
			// Due a second ago by Redis's clock: the wait is recorded.
			b.setFlow(t, queue.FlowLimits{Lane: lane, Paused: true})
			b.enqueue(t, flowed("customer-42", time.Now().Add(-time.Second)))
			_, err = b.q.Publish(b.ctx, 100, time.Time{}, queue.Caps{})
			require.NoError(t, err)
			b.setFlow(t, queue.FlowLimits{Lane: lane})
			p, err = b.q.Publish(b.ctx, 100, time.Time{}, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 1, p.Sent)
			msgs, err := b.q.Read(b.ctx, "w1", 100, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 3)
			require.GreaterOrEqual(t, msgs[2].Throttled, time.Second)
		})
	})

	t.Run("AWaitingKeyLetsOthersBorrow", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.setFlow(t, queue.FlowLimits{Lane: lane, Concurrency: 1})
			b.enqueue(t, flowed("customer-42", base), flowed("customer-42", base))
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			_, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 2, Host: 100, Borrow: 100})
			require.NoError(t, err)
			var occs []job.Occurrence
			for range 4 {
				occs = append(occs, routed(ownerB, "0000000b", base))
			}
			b.enqueue(t, occs...)
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 2, Host: 100, Borrow: 100})
			require.NoError(t, err)
			require.Equal(t, 4, p.Sent, "B borrows past its cap: A's key waits on its own limit, not for slots")
		})
	})

	t.Run("RecountCountsFlowLanes", func(t *testing.T) {
		t.Parallel()
		onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			r := queue.New(rdb, prefix, 1)
			b := &bundle{ctx: t.Context(), rdb: rdb, q: r.Home(), keys: r.Home().Keys()}
			b.setFlow(t, queue.FlowLimits{Lane: lane, Concurrency: 3})
			b.enqueue(t, flowed("customer-42", base), flowed("customer-42", base))
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			_, err := b.q.Publish(b.ctx, 100, base, queue.Caps{})
			require.NoError(t, err)
			require.NoError(t, rdb.HDel(b.ctx, b.keys.Inflight(), queue.FlowLane(lane)).Err())
			require.NoError(t, r.Recount(b.ctx))
			require.Equal(t, int64(2), b.flowState(t, lane).InFlight)
		})
	})
}

func TestNewJobIDLandsInTheFlowShard(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	r := queue.New(rdb, "x", 5)
	lane := job.FlowLane(ownerA, "k")
	for range 50 {
		id := r.NewJobID(lane)
		require.Equal(t, r.FlowShard(lane), queue.ShardOf(id, 5))
		require.True(t, r.InFlowShard(id, lane))
	}
}

func membersOf(occs []job.Occurrence) []string { return memberOf(occs...) }
