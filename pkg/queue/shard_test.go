package queue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noBlock makes Read return at once when nothing is there. A zero block would
// make XREADGROUP wait forever (go-redis sends BLOCK 0 for any block >= 0).
const noBlock = -1

// base is a fixed instant for injected clocks: 2030-01-15 14:00:00 UTC.
var base = time.Date(2030, 1, 15, 14, 0, 0, 0, time.UTC)

// bundle is what each queue case works with, on one backend.
type bundle struct {
	ctx  context.Context
	rdb  redis.UniversalClient
	q    *queue.Shard
	keys queue.Keys
}

// onBothRedis runs the same case on miniredis and on the real Redis server
// (STYLE 7). Each backend gets its own unique key prefix, so cases run in
// parallel without FLUSHDB.
func onBothRedis(t *testing.T, fn func(t *testing.T, b *bundle)) {
	t.Helper()
	onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) { fn(t, setup(t, rdb, prefix)) })
}

// onBothServers runs fn on a fresh miniredis and on the real Redis server,
// in parallel, each with a client and a key prefix of its own.
func onBothServers(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		fn(t, rdb, testenv.Name(t))
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		rdb, prefix := testenv.Redis(t)
		fn(t, rdb, prefix)
	})
}

func setup(t *testing.T, rdb redis.UniversalClient, prefix string) *bundle {
	t.Helper()
	keys := queue.Keys{Prefix: prefix, Shard: 3}
	return &bundle{ctx: t.Context(), rdb: rdb, q: queue.NewShard(rdb, keys), keys: keys}
}

// occ returns a first attempt of a fresh job, due at at, with priority prio.
func occ(at time.Time, prio int) job.Occurrence {
	return job.Occurrence{JobID: job.NewID(), ScheduledFor: at.UTC().Truncate(time.Millisecond), Attempt: 1, Priority: prio}
}

// entry puts o into the due set at its scheduled time.
func entry(o job.Occurrence) queue.Entry { return queue.Entry{Occurrence: o, DueAt: o.ScheduledFor} }

// streamOccurrences decodes every entry of the ready stream, in stream order.
func (b *bundle) streamOccurrences(t *testing.T) []job.Occurrence {
	t.Helper()
	xs, err := b.rdb.XRange(b.ctx, b.keys.Ready(), "-", "+").Result()
	require.NoError(t, err)
	out := make([]job.Occurrence, 0, len(xs))
	for _, x := range xs {
		m, ok := x.Values["m"].(string)
		require.True(t, ok, "entry %s has no member", x.ID)
		o, err := job.ParseMember(m)
		require.NoError(t, err)
		out = append(out, o)
	}
	return out
}

func (b *bundle) dueMembers(t *testing.T) []string {
	t.Helper()
	ms, err := b.rdb.ZRange(b.ctx, b.keys.Due(), 0, -1).Result()
	require.NoError(t, err)
	return ms
}

func (b *bundle) enqueue(t *testing.T, occs ...job.Occurrence) {
	t.Helper()
	entries := make([]queue.Entry, len(occs))
	for i, o := range occs {
		entries[i] = entry(o)
	}
	require.NoError(t, b.q.Enqueue(b.ctx, entries))
}

// publishAndRead moves everything due by base into the stream and reads it.
func (b *bundle) publishAndRead(t *testing.T, consumer string, n int) []queue.Message {
	t.Helper()
	require.NoError(t, b.q.EnsureGroup(b.ctx))
	p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{})
	require.NoError(t, err)
	require.Equal(t, n, p.Moved)
	msgs, err := b.q.Read(b.ctx, consumer, 100, noBlock)
	require.NoError(t, err)
	require.Len(t, msgs, n)
	return msgs
}

func memberOf(occs ...job.Occurrence) []string {
	out := make([]string, len(occs))
	for i, o := range occs {
		out[i] = o.Member()
	}
	return out
}

func TestKeys(t *testing.T) {
	t.Parallel()

	t.Run("ShareOneHashTagPerShard", func(t *testing.T) {
		t.Parallel()
		// miniredis cannot report CROSSSLOT, so the hash tag is checked here: every
		// key a script touches must hash to the shard's one Cluster slot.
		for _, shard := range []int{0, 1, 7, 15, 1023} {
			k := queue.Keys{Prefix: "tock", Shard: shard}
			want := fmt.Sprintf("s%d", shard)
			for _, key := range []string{k.Due(), k.Ready(), k.Dead(), k.LoaderLock(), k.Inflight(), k.Caps(),
				k.HeldLanes(), k.HeldPrefix() + "o:x", k.Held("h:0badc0de"), k.Workers(), k.WorkerSlots(), k.Aborts()} {
				require.Equal(t, want, hashTag(t, key), "key %q", key)
			}
		}
	})

	t.Run("DifferBetweenShardsAndPrefixes", func(t *testing.T) {
		t.Parallel()
		a, b, c := queue.Keys{Prefix: "tock", Shard: 0}, queue.Keys{Prefix: "tock", Shard: 1}, queue.Keys{Prefix: "other", Shard: 0}
		require.NotEqual(t, a.Due(), b.Due())
		require.NotEqual(t, a.Due(), c.Due())
		require.True(t, strings.HasPrefix(c.Ready(), "other:"))
		all := []string{a.Due(), a.Ready(), a.Dead(), a.LoaderLock()}
		slices.Sort(all)
		require.Len(t, slices.Compact(all), 4, "each key of a shard is distinct")
	})
}

// hashTag returns what Redis Cluster hashes for key: the text between the first
// { and the next }, when that text is not empty.
func hashTag(t *testing.T, key string) string {
	t.Helper()
	open := strings.IndexByte(key, '{')
	require.GreaterOrEqual(t, open, 0, "key %q has no hash tag", key)
	end := strings.IndexByte(key[open+1:], '}')
	require.Greater(t, end, 0, "key %q has no closed, non-empty hash tag", key)
	return key[open+1 : open+1+end]
}

func TestPublish(t *testing.T) {
	t.Parallel()

	t.Run("PopsOnlyDueMembers", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			past, now := occ(base.Add(-time.Minute), 0), occ(base, 0)
			soon, later := occ(base.Add(time.Millisecond), 0), occ(base.Add(time.Hour), 0)
			b.enqueue(t, later, past, soon, now)

			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 2, p.Moved)
			require.True(t, p.Now.Equal(base), "now %s", p.Now)
			require.True(t, p.Next.Equal(soon.ScheduledFor), "next %s, want the earliest remaining score", p.Next)
			require.Equal(t, time.UTC, p.Next.Location())

			require.ElementsMatch(t, memberOf(soon, later), b.dueMembers(t))
			require.Equal(t, []job.Occurrence{past, now}, b.streamOccurrences(t), "published in due order")

			p, err = b.q.Publish(b.ctx, 100, base, queue.Caps{})
			require.NoError(t, err)
			require.Zero(t, p.Moved, "a second call at the same instant has nothing left")

			p, err = b.q.Publish(b.ctx, 100, base.Add(2*time.Hour), queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 2, p.Moved)
			require.True(t, p.Next.IsZero(), "nothing left, so no next: %s", p.Next)
			require.Empty(t, b.dueMembers(t))
		})
	})

	t.Run("RespectsBatchLimit", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			var occs []job.Occurrence
			for i := range 7 {
				occs = append(occs, occ(base.Add(-time.Duration(7-i)*time.Second), 0))
			}
			b.enqueue(t, occs...)

			p, err := b.q.Publish(b.ctx, 5, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 5, p.Moved)
			require.True(t, p.Next.Equal(occs[5].ScheduledFor), "next is the first member the limit left behind")
			require.Len(t, b.dueMembers(t), 2)

			p, err = b.q.Publish(b.ctx, 5, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 2, p.Moved, "the second call takes the rest")
			require.True(t, p.Next.IsZero())
			require.Equal(t, occs, b.streamOccurrences(t))
		})
	})

	t.Run("PublishesHigherPriorityFirstAmongEqualScores", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			at := base.Add(-time.Second)
			prios := []int{0, job.MinPriority, 5, job.MaxPriority, -5, 100}
			var occs []job.Occurrence
			for _, p := range prios {
				occs = append(occs, occ(at, p))
			}
			earlier := occ(at.Add(-time.Millisecond), job.MinPriority)
			b.enqueue(t, append(occs, earlier)...)

			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, len(prios)+1, p.Moved)

			got := b.streamOccurrences(t)
			require.Equal(t, earlier, got[0], "an earlier score goes first whatever its priority")
			var order []int
			for _, o := range got[1:] {
				order = append(order, o.Priority)
			}
			require.Equal(t, []int{job.MaxPriority, 100, 5, 0, -5, job.MinPriority}, order)
		})
	})

	t.Run("UsesRedisTimeWhenNowIsZero", func(t *testing.T) {
		t.Parallel()
		// miniredis answers TIME inside scripts from the wall clock, like Redis.
		onBothRedis(t, func(t *testing.T, b *bundle) {
			wall := time.Now()
			past, future := occ(wall.Add(-time.Hour), 0), occ(wall.Add(time.Hour), 0)
			b.enqueue(t, past, future)

			p, err := b.q.Publish(b.ctx, 100, time.Time{}, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 1, p.Moved)
			require.WithinDuration(t, wall, p.Now, time.Minute, "now comes from Redis TIME")
			require.True(t, p.Next.Equal(future.ScheduledFor))
			require.Equal(t, []job.Occurrence{past}, b.streamOccurrences(t))
		})
	})
}

func TestEnqueue(t *testing.T) {
	t.Parallel()

	t.Run("TwiceKeepsOneMember", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			o := occ(base, 7)
			b.enqueue(t, o)
			moved := entry(o)
			moved.DueAt = base.Add(time.Minute)
			require.NoError(t, b.q.Enqueue(b.ctx, []queue.Entry{moved}))

			require.Equal(t, []string{o.Member()}, b.dueMembers(t))
			score, err := b.rdb.ZScore(b.ctx, b.keys.Due(), o.Member()).Result()
			require.NoError(t, err)
			require.Equal(t, float64(base.Add(time.Minute).UnixMilli()), score, "the second enqueue sets the score")
		})
	})

	t.Run("NothingIsANoOp", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.Enqueue(b.ctx, nil))
			require.NoError(t, b.q.Remove(b.ctx, nil))
			require.NoError(t, b.q.Settle(b.ctx, nil, nil))
			require.NoError(t, b.q.SetAside(b.ctx, nil))
			in, err := b.q.Scheduled(b.ctx, nil)
			require.NoError(t, err)
			require.Empty(t, in)
			n, err := b.rdb.Exists(b.ctx, b.keys.Due(), b.keys.Ready(), b.keys.Dead()).Result()
			require.NoError(t, err)
			require.Zero(t, n)
		})
	})

	t.Run("ChunksLargeBatches", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			occs := make([]job.Occurrence, 2500)
			for i := range occs {
				occs[i] = occ(base.Add(time.Duration(i)*time.Millisecond), 0)
			}
			b.enqueue(t, occs...)
			n, err := b.rdb.ZCard(b.ctx, b.keys.Due()).Result()
			require.NoError(t, err)
			require.EqualValues(t, 2500, n)
		})
	})
}

func TestRemove(t *testing.T) {
	t.Parallel()

	t.Run("TakesOutOnlyTheGivenMembers", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			a, c, keep := occ(base, 0), occ(base, 1), occ(base, 2)
			b.enqueue(t, a, c, keep)
			absent := occ(base, 3)
			require.NoError(t, b.q.Remove(b.ctx, []job.Occurrence{a, c, absent}), "an absent member is no error")
			require.Equal(t, []string{keep.Member()}, b.dueMembers(t))
		})
	})
}

func TestScheduled(t *testing.T) {
	t.Parallel()

	t.Run("ReportsMembershipInOrder", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			in1, out, in2 := occ(base, 0), occ(base, 0), occ(base.Add(time.Hour), 0)
			b.enqueue(t, in1, in2)
			got, err := b.q.Scheduled(b.ctx, []job.Occurrence{in1, out, in2, out.Next()})
			require.NoError(t, err)
			require.Equal(t, []bool{true, false, true, false}, got)
		})
	})

	t.Run("MissingDueSetIsAllFalse", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			got, err := b.q.Scheduled(b.ctx, []job.Occurrence{occ(base, 0)})
			require.NoError(t, err)
			require.Equal(t, []bool{false}, got)
		})
	})
}

func TestEnsureGroup(t *testing.T) {
	t.Parallel()

	t.Run("IsIdempotent", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			groups, err := b.rdb.XInfoGroups(b.ctx, b.keys.Ready()).Result()
			require.NoError(t, err)
			require.Len(t, groups, 1)
			require.Equal(t, queue.Group, groups[0].Name)
		})
	})
}

func TestRead(t *testing.T) {
	t.Parallel()

	t.Run("DecodesMessages", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			first, second := occ(base.Add(-2*time.Second), 3), occ(base.Add(-time.Second), -3)
			b.enqueue(t, first, second)
			msgs := b.publishAndRead(t, "w1", 2)

			xs, err := b.rdb.XRange(b.ctx, b.keys.Ready(), "-", "+").Result()
			require.NoError(t, err)
			require.Len(t, xs, 2)
			for i, want := range []job.Occurrence{first, second} {
				m := msgs[i]
				require.NoError(t, m.Err)
				require.Equal(t, xs[i].ID, m.ID, "the message carries its stream entry id")
				require.Equal(t, want, m.Occurrence)
				require.True(t, m.DueAt.Equal(want.ScheduledFor), "due %s", m.DueAt)
				require.Equal(t, time.UTC, m.DueAt.Location())
			}

			again, err := b.q.Read(b.ctx, "w2", 100, noBlock)
			require.NoError(t, err)
			require.Empty(t, again, "a delivered entry is not handed to another consumer by Read")
		})
	})

	t.Run("DueAtIsTheRetryTimeNotTheOccurrence", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			o := occ(base.Add(-time.Hour), 0).Next()
			retryAt := base.Add(-time.Minute)
			require.NoError(t, b.q.Enqueue(b.ctx, []queue.Entry{{Occurrence: o, DueAt: retryAt}}))
			msgs := b.publishAndRead(t, "w1", 1)
			require.Equal(t, o, msgs[0].Occurrence)
			require.Equal(t, 2, msgs[0].Occurrence.Attempt)
			require.True(t, msgs[0].DueAt.Equal(retryAt))
		})
	})

	t.Run("EmptyStreamReturnsNothing", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			msgs, err := b.q.Read(b.ctx, "w1", 10, 10*time.Millisecond)
			require.NoError(t, err)
			require.Empty(t, msgs)
		})
	})

	t.Run("RecreatesLostGroup", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			require.NoError(t, b.rdb.Del(b.ctx, b.keys.Ready()).Err(), "as if Redis restarted empty")

			msgs, err := b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err, "NOGROUP is repaired, not reported")
			require.Empty(t, msgs)

			groups, err := b.rdb.XInfoGroups(b.ctx, b.keys.Ready()).Result()
			require.NoError(t, err)
			require.Len(t, groups, 1)

			b.enqueue(t, occ(base, 0))
			b.publishAndRead(t, "w1", 1)
		})
	})

	t.Run("FlagsPoisonEntries", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			good := occ(base, 0)
			for _, vals := range []map[string]any{
				{"m": "garbage", "d": "1"},
				{"m": good.Member(), "d": "soon"},
				{"x": "no member"},
			} {
				require.NoError(t, b.rdb.XAdd(b.ctx, &redis.XAddArgs{Stream: b.keys.Ready(), Values: vals}).Err())
			}
			msgs, err := b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 3)
			for _, m := range msgs {
				require.Error(t, m.Err, "entry %v", m.Raw)
				require.NotEmpty(t, m.ID)
				require.NotEmpty(t, m.Raw)
			}
		})
	})
}

func TestSettle(t *testing.T) {
	t.Parallel()

	t.Run("AddsRetriesThenAcksAndDeletes", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			ok, failed := occ(base.Add(-time.Second), 0), occ(base.Add(-time.Second), 9)
			b.enqueue(t, ok, failed)
			msgs := b.publishAndRead(t, "w1", 2)

			retry := queue.Entry{Occurrence: failed.Next(), DueAt: base.Add(30 * time.Second)}
			require.NoError(t, b.q.Settle(b.ctx, []string{msgs[0].ID, msgs[1].ID}, []queue.Entry{retry}))

			require.Equal(t, []string{retry.Occurrence.Member()}, b.dueMembers(t))
			score, err := b.rdb.ZScore(b.ctx, b.keys.Due(), retry.Occurrence.Member()).Result()
			require.NoError(t, err)
			require.Equal(t, float64(retry.DueAt.UnixMilli()), score)

			n, err := b.rdb.XLen(b.ctx, b.keys.Ready()).Result()
			require.NoError(t, err)
			require.Zero(t, n, "settled entries are deleted")
			pending, err := b.rdb.XPending(b.ctx, b.keys.Ready(), queue.Group).Result()
			require.NoError(t, err)
			require.Zero(t, pending.Count, "settled entries are acknowledged")
		})
	})

	t.Run("RetriesAloneNeedNoIDs", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			retry := queue.Entry{Occurrence: occ(base, 0).Next(), DueAt: base}
			require.NoError(t, b.q.Settle(b.ctx, nil, []queue.Entry{retry}))
			require.Equal(t, []string{retry.Occurrence.Member()}, b.dueMembers(t))
		})
	})
}

func TestReclaim(t *testing.T) {
	t.Parallel()

	t.Run("TakesOverEntriesIdleLongerThanMinIdle", func(t *testing.T) {
		t.Parallel()
		// Idle time is set with XCLAIM ... IDLE rather than waited for; miniredis
		// supports both XCLAIM IDLE and XAUTOCLAIM, so both backends run the case.
		onBothRedis(t, func(t *testing.T, b *bundle) {
			stale, fresh := occ(base.Add(-2*time.Second), 0), occ(base.Add(-time.Second), 0)
			b.enqueue(t, stale, fresh)
			msgs := b.publishAndRead(t, "dead-worker", 2)
			require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "dead-worker", 0, msgs[0].ID,
				"IDLE", time.Hour.Milliseconds()).Err())

			none, err := b.q.Reclaim(b.ctx, "w2", 2*time.Hour, 10)
			require.NoError(t, err)
			require.Empty(t, none, "nothing has been idle for two hours")

			got, err := b.q.Reclaim(b.ctx, "w2", 30*time.Minute, 10)
			require.NoError(t, err)
			require.Len(t, got, 1, "only the entry idle past minIdle")
			require.Equal(t, msgs[0].ID, got[0].ID)
			require.Equal(t, stale, got[0].Occurrence)
			require.True(t, got[0].DueAt.Equal(stale.ScheduledFor))

			owners, err := b.rdb.XPendingExt(b.ctx, &redis.XPendingExtArgs{
				Stream: b.keys.Ready(), Group: queue.Group, Start: "-", End: "+", Count: 10,
			}).Result()
			require.NoError(t, err)
			byID := map[string]string{}
			for _, p := range owners {
				byID[p.ID] = p.Consumer
			}
			require.Equal(t, map[string]string{msgs[0].ID: "w2", msgs[1].ID: "dead-worker"}, byID)
		})
	})

	// The worker dead-letters an entry delivered too often; the count comes
	// from XPENDING, which miniredis answers as Redis does, so both run it.
	t.Run("CountsDeliveries", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			first, second := occ(base.Add(-2*time.Second), 0), occ(base.Add(-time.Second), 0)
			b.enqueue(t, first, second)
			msgs := b.publishAndRead(t, "w1", 2)
			for _, m := range msgs {
				require.Equal(t, 1, m.Deliveries, "read fresh: its first delivery")
			}

			for want := 2; want <= 3; want++ {
				got, err := b.q.Reclaim(b.ctx, "w2", 0, 10)
				require.NoError(t, err)
				require.Len(t, got, 2)
				for _, m := range got {
					require.Equal(t, want, m.Deliveries, "entry %s", m.ID)
				}
			}

			// A count set by hand, as after many reclaims.
			require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "w3", 0, msgs[1].ID, "RETRYCOUNT", 41).Err())
			require.NoError(t, b.q.Settle(b.ctx, []string{msgs[0].ID}, nil))
			got, err := b.q.Reclaim(b.ctx, "w2", 0, 10)
			require.NoError(t, err)
			require.Len(t, got, 1, "an acknowledged entry is not reclaimed")
			require.Equal(t, msgs[1].ID, got[0].ID)
			require.Equal(t, second, got[0].Occurrence)
			require.Equal(t, 42, got[0].Deliveries)
		})
	})

	t.Run("RecreatesLostGroup", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			got, err := b.q.Reclaim(b.ctx, "w1", time.Second, 10)
			require.NoError(t, err)
			require.Empty(t, got)
			groups, err := b.rdb.XInfoGroups(b.ctx, b.keys.Ready()).Result()
			require.NoError(t, err)
			require.Len(t, groups, 1)
		})
	})
}

func TestGiveBack(t *testing.T) {
	t.Parallel()

	// pendingOf reads the owner, delivery count and idle time of each
	// pending entry, by id.
	type pel struct {
		consumer   string
		deliveries int
		idle       time.Duration
	}
	pendingOf := func(t *testing.T, b *bundle) map[string]pel {
		t.Helper()
		ps, err := b.rdb.XPendingExt(b.ctx, &redis.XPendingExtArgs{
			Stream: b.keys.Ready(), Group: queue.Group, Start: "-", End: "+", Count: 10,
		}).Result()
		require.NoError(t, err)
		out := map[string]pel{}
		for _, p := range ps {
			out[p.ID] = pel{consumer: p.Consumer, deliveries: int(p.RetryCount), idle: p.Idle}
		}
		return out
	}

	// The worker gives back the reclaims of attempts that still run; XCLAIM
	// RETRYCOUNT ... JUSTID inside a script works on miniredis as on Redis,
	// so both run every case.
	t.Run("LeavesTheCountWhereItWasBeforeTheReclaim", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.enqueue(t, occ(base.Add(-2*time.Second), 0), occ(base.Add(-time.Second), 0))
			msgs := b.publishAndRead(t, "w1", 2)
			for range 5 {
				got, err := b.q.Reclaim(b.ctx, "w2", 0, 10)
				require.NoError(t, err)
				require.Len(t, got, 2)
				for _, m := range got {
					require.Equal(t, 2, m.Deliveries, "read once, and each reclaim before given back")
				}
				n, err := b.q.GiveBack(b.ctx, "w2", got)
				require.NoError(t, err)
				require.Equal(t, 2, n)
				for id, p := range pendingOf(t, b) {
					require.Equal(t, pel{consumer: "w2", deliveries: 1, idle: p.idle}, p, "entry %s", id)
				}
			}
			require.Len(t, pendingOf(t, b), len(msgs))
		})
	})

	t.Run("KeepsTheIdleTime", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.enqueue(t, occ(base.Add(-time.Second), 0))
			b.publishAndRead(t, "w1", 1)
			got, err := b.q.Reclaim(b.ctx, "w2", 0, 10)
			require.NoError(t, err)
			require.Len(t, got, 1)
			// As if the give-back came an hour after the reclaim: the entry
			// is reclaimed a visibility timeout after the reclaim, not after
			// the give-back.
			require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "w2", 0, got[0].ID,
				"IDLE", time.Hour.Milliseconds(), "RETRYCOUNT", got[0].Deliveries, "JUSTID").Err())
			n, err := b.q.GiveBack(b.ctx, "w2", got)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			p := pendingOf(t, b)[got[0].ID]
			require.Equal(t, 1, p.deliveries)
			require.GreaterOrEqual(t, p.idle, time.Hour)
			again, err := b.q.Reclaim(b.ctx, "w3", 30*time.Minute, 10)
			require.NoError(t, err)
			require.Len(t, again, 1)
			require.Equal(t, 2, again[0].Deliveries)
		})
	})

	t.Run("GivesBackOnlyWhatTheConsumerStillHolds", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.enqueue(t, occ(base.Add(-3*time.Second), 0), occ(base.Add(-2*time.Second), 0), occ(base.Add(-time.Second), 0))
			fresh := b.publishAndRead(t, "w1", 3)
			got, err := b.q.Reclaim(b.ctx, "w2", 0, 10)
			require.NoError(t, err)
			require.Len(t, got, 3)
			for _, m := range got {
				require.Equal(t, 2, m.Deliveries)
			}
			taken, acked, kept := got[0], got[1], got[2]
			// Another consumer reclaimed the first since: its count holds
			// both reclaims, and it gives back its own if it finds the lease.
			require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "w3", 0, taken.ID).Err())
			// The attempt's worker acknowledged the second.
			require.NoError(t, b.q.Settle(b.ctx, []string{acked.ID}, nil))

			n, err := b.q.GiveBack(b.ctx, "w2", got)
			require.NoError(t, err)
			require.Equal(t, 1, n, "only the entry w2 still holds at the count it saw")
			ps := pendingOf(t, b)
			require.Len(t, ps, 2, "the acknowledged entry is not made pending again")
			require.Equal(t, "w3", ps[taken.ID].consumer)
			require.Equal(t, 3, ps[taken.ID].deliveries)
			require.Equal(t, "w2", ps[kept.ID].consumer)
			require.Equal(t, 1, ps[kept.ID].deliveries)

			// Entries read fresh have no reclaim to give back.
			n, err = b.q.GiveBack(b.ctx, "w1", fresh)
			require.NoError(t, err)
			require.Zero(t, n)
			n, err = b.q.GiveBack(b.ctx, "w1", nil)
			require.NoError(t, err)
			require.Zero(t, n)
		})
	})
}

// TestClaimEnded runs on the real Redis only: it is about XCLAIM's minimum
// idle time, which miniredis does not honour (it claims an entry read a
// moment ago), and runs no script of ours.
func TestClaimEnded(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	func(t *testing.T, b *bundle) {
		b.enqueue(t, occ(base.Add(-2*time.Second), 0), occ(base.Add(-time.Second), 0))
		msgs := b.publishAndRead(t, "w1", 2)
		// w1 leases both, one until 1 s from now, one until 10 s, then dies.
		var starts []queue.Start
		for i, m := range msgs {
			o := m.Occurrence
			starts = append(starts, queue.Start{Generation: o.Generation, Lease: queue.Lease{Occurrence: o, Worker: "w1", Run: job.NewID(),
				StartedAt: base, Until: base.Add(time.Duration(1+9*i) * time.Second), DueAt: m.DueAt, Entry: m.ID, Member: o.Member()}})
		}
		ans, err := b.q.Start(b.ctx, starts, base, time.Second)
		require.NoError(t, err)
		require.Equal(t, []int{queue.StartRun, queue.StartRun}, ans)

		got, next, err := b.q.ClaimEnded(b.ctx, "w2", base.Add(500*time.Millisecond), 10)
		require.NoError(t, err)
		require.Empty(t, got, "no lease has ended")
		require.Equal(t, base.Add(time.Second), next, "the earliest lease's end: when to look again")
		got, next, err = b.q.ClaimEnded(b.ctx, "w2", base.Add(2*time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, got, "an entry delivered within the last second is left alone")
		require.Equal(t, base.Add(time.Second), next, "a lease has ended: look again soon")
		// As if w1 read them 5 s ago: far less than a visibility timeout.
		for _, m := range msgs {
			require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "w1", 0, m.ID, "IDLE", 5000, "JUSTID").Err())
		}
		got, _, err = b.q.ClaimEnded(b.ctx, "w2", base.Add(2*time.Second), 10)
		require.NoError(t, err)
		require.Len(t, got, 1, "the lease that ended, at once")
		require.Equal(t, msgs[0].ID, got[0].ID)
		require.Equal(t, 2, got[0].Deliveries)
		again, _, err := b.q.ClaimEnded(b.ctx, "w3", base.Add(2*time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, again, "another worker's look at the same lease does not claim it twice")
		// The start script takes the ended lease over.
		o := got[0].Occurrence
		ans, err = b.q.Start(b.ctx, []queue.Start{{Generation: o.Generation, Lease: queue.Lease{Occurrence: o, Worker: "w2", Run: job.NewID(),
			StartedAt: base.Add(2 * time.Second), Until: base.Add(time.Minute), DueAt: got[0].DueAt, Entry: got[0].ID, Member: o.Member()}}},
			base.Add(2*time.Second), time.Second)
		require.NoError(t, err)
		require.Equal(t, []int{queue.StartRun}, ans)
		// w2's settle of its attempt and of the other leaves no lease.
		require.NoError(t, b.rdb.Del(b.ctx, b.keys.Leases()).Err())
		got, next, err = b.q.ClaimEnded(b.ctx, "w3", base.Add(3*time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, got)
		require.True(t, next.IsZero(), "no lease runs: nothing to wait for")
	}(t, setup(t, rdb, prefix))
}

func TestSetAside(t *testing.T) {
	t.Parallel()

	t.Run("MovesPoisonToDeadStreamAndAcks", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			require.NoError(t, b.rdb.XAdd(b.ctx, &redis.XAddArgs{
				Stream: b.keys.Ready(), Values: map[string]any{"m": "not-a-member", "d": "123"},
			}).Err())
			msgs, err := b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			require.Error(t, msgs[0].Err)

			require.NoError(t, b.q.SetAside(b.ctx, msgs))

			dead, err := b.rdb.XRange(b.ctx, b.keys.Dead(), "-", "+").Result()
			require.NoError(t, err)
			require.Len(t, dead, 1)
			require.Equal(t, msgs[0].ID, dead[0].Values["id"])
			require.Equal(t, "not-a-member", dead[0].Values["f_m"])
			require.Equal(t, "123", dead[0].Values["f_d"])
			require.Contains(t, dead[0].Values["error"], "parse member")
			require.Equal(t, "1", dead[0].Values["deliveries"])

			st, err := b.q.Stats(b.ctx)
			require.NoError(t, err)
			require.Equal(t, queue.Stats{}, st, "acknowledged and deleted from the ready stream")
		})
	})
}

func TestStats(t *testing.T) {
	t.Parallel()

	t.Run("CountsDueReadyAndPending", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			st, err := b.q.Stats(b.ctx)
			require.NoError(t, err, "no keys yet is not an error")
			require.Equal(t, queue.Stats{}, st)

			var occs []job.Occurrence
			for i := range 5 {
				occs = append(occs, occ(base.Add(time.Duration(i-2)*time.Second), 0))
			}
			b.enqueue(t, occs...)
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 3, p.Moved)
			msgs, err := b.q.Read(b.ctx, "w1", 2, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 2)

			st, err = b.q.Stats(b.ctx)
			require.NoError(t, err)
			require.Equal(t, queue.Stats{Due: 2, Ready: 3, Pending: 2}, st)
		})
	})
}

// TestUnread: the entries pending to a consumer that it does not know, as
// a read whose answer was lost leaves them, found without counting another
// delivery.
func TestUnread(t *testing.T) {
	t.Parallel()
	onBothRedis(t, func(t *testing.T, b *bundle) {
		occs := make([]job.Occurrence, 6)
		for i := range occs {
			occs[i] = occ(base.Add(-time.Duration(10-i)*time.Second), 0)
		}
		b.enqueue(t, occs...)
		msgs := b.publishAndRead(t, "w1", 6)
		// The last entry is another consumer's.
		require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "w2", 0, msgs[5].ID, "JUSTID").Err())
		// One more, taken again by w1's reclaimer: it holds it.
		occs = append(occs, occ(base.Add(-time.Second), 0))
		b.enqueue(t, occs[6])
		reclaimed := b.publishAndRead(t, "w0", 1)
		require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "w1", 0, reclaimed[0].ID).Err())
		known := func(id string) bool { return id == msgs[1].ID }

		got, resume, err := b.q.Unread(b.ctx, "w1", msgs[0].ID, 2, known)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, []string{msgs[2].ID, msgs[3].ID}, []string{got[0].ID, got[1].ID}, "after msgs[0], not the known msgs[1]")
		require.Equal(t, occs[2], got[0].Occurrence)
		require.True(t, got[0].DueAt.Equal(occs[2].ScheduledFor))
		require.Equal(t, 1, got[0].Deliveries)
		require.Equal(t, msgs[3].ID, resume, "two found: the look goes on after the second")

		got, resume, err = b.q.Unread(b.ctx, "w1", resume, 2, known)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, msgs[4].ID, got[0].ID, "not w2's entry")
		require.Empty(t, resume, "nothing is left")

		all, resume, err := b.q.Unread(b.ctx, "w1", "", 10, known)
		require.NoError(t, err)
		require.Len(t, all, 4, "from the start: all of w1's read once but the known one")
		require.Empty(t, resume)
		p, err := b.rdb.XPendingExt(b.ctx, &redis.XPendingExtArgs{Stream: b.keys.Ready(), Group: queue.Group,
			Start: "-", End: "+", Count: 10}).Result()
		require.NoError(t, err)
		for _, e := range p {
			if e.Consumer == "w1" && e.ID != reclaimed[0].ID { // miniredis counts XCLAIM … JUSTID, Redis does not
				require.EqualValues(t, 1, e.RetryCount, "looking counts no delivery")
			}
		}
	})
}
