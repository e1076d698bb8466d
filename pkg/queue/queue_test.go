package queue_test

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
)

// onBothRedisQueue runs a queue case on miniredis and on the real Redis server.
func onBothRedisQueue(t *testing.T, shards int, fn func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient)) {
	t.Helper()
	onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		fn(t, queue.New(rdb, prefix, shards), rdb)
	})
}

func TestShardOf(t *testing.T) {
	t.Parallel()
	counts := make([]int, 8)
	for range 8000 {
		id := job.NewID()
		i := queue.ShardOf(id, 8)
		require.Equal(t, i, queue.ShardOf(id, 8), "stable")
		counts[i]++
	}
	for i, n := range counts {
		require.InDelta(t, 1000, n, 150, "shard %d holds %d of 8000", i, n)
	}
	require.Zero(t, queue.ShardOf(job.NewID(), 1))
	require.Zero(t, queue.ShardOf(job.NewID(), 0))
}

func TestSlot(t *testing.T) {
	t.Parallel()
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	require.Equal(t, 12182, queue.Slot("foo"))
	require.Equal(t, 12739, queue.Slot("123456789"), "CRC-16/XMODEM check value 0x31C3, modulo 16384")
	require.Equal(t, queue.Slot("user1000"), queue.Slot("{user1000}.following"))
	require.Equal(t, queue.Slot("{}x"), queue.Slot("{}x"), "an empty tag hashes the whole key")
}

func TestShardTag(t *testing.T) {
	t.Parallel()
	require.Equal(t, "s0", queue.ShardTag(0, 1))
	for _, n := range []int{2, 3, 4, 6, 8, 12, 16, 64, 256} {
		seen := map[string]bool{}
		for i := range n {
			tag := queue.ShardTag(i, n)
			require.False(t, seen[tag])
			seen[tag] = true
			slot := queue.Slot(tag)
			require.GreaterOrEqual(t, slot, i*16384/n, "shard %d of %d", i, n)
			require.Less(t, slot, (i+1)*16384/n, "shard %d of %d", i, n)
		}
	}
	// Six shards on three masters owning equal slot ranges: two each.
	per := make([]int, 3)
	for i := range 6 {
		per[queue.Slot(queue.ShardTag(i, 6))*3/16384]++
	}
	require.Equal(t, []int{2, 2, 2}, per)
}

func TestQueueOfShards(t *testing.T) {
	t.Parallel()

	t.Run("KeysOfEachShardShareOneHashTag", func(t *testing.T) {
		t.Parallel()
		r := queue.New(nil, "tock", 4)
		require.Len(t, r.Shards(), 4)
		for i, q := range r.Shards() {
			k := q.Keys()
			require.Equal(t, i, k.Shard)
			tag := "{" + queue.ShardTag(i, 4) + "}"
			for _, key := range []string{k.Due(), k.Ready(), k.Dead(), k.Marker(), k.LoaderLock()} {
				require.Contains(t, key, tag)
				require.Equal(t, queue.Slot(k.Due()), queue.Slot(key), "one slot per shard")
			}
		}
		require.Same(t, r.Shard(0), r.Home())
		require.Equal(t, "tock", r.Prefix())
		require.Equal(t, "tock:{s0}:due", queue.New(nil, "tock", 1).Home().Keys().Due(), "one shard keeps its tag")
	})

	t.Run("EnqueuesEachOccurrenceInItsJobsShard", func(t *testing.T) {
		t.Parallel()
		onBothRedisQueue(t, 4, func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient) {
			ctx := t.Context()
			var entries []queue.Entry
			var occs []job.Occurrence
			for range 40 {
				o := occ(base, 0)
				occs = append(occs, o)
				entries = append(entries, entry(o))
			}
			require.NoError(t, r.Enqueue(ctx, entries))
			used := map[int]bool{}
			for _, o := range occs {
				q := r.Of(o.JobID)
				used[q.Keys().Shard] = true
				require.NoError(t, rdb.ZScore(ctx, q.Keys().Due(), o.Member()).Err(), "in its own shard")
			}
			require.Greater(t, len(used), 2, "40 jobs spread over the shards")

			in, err := r.Scheduled(ctx, append(occs[:3:3], occ(base, 0)))
			require.NoError(t, err)
			require.Equal(t, []bool{true, true, true, false}, in, "answers in the order asked")

			st, err := r.Stats(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 40, st.Due, "summed over the shards")

			require.NoError(t, r.Remove(ctx, occs[:10]))
			in, err = r.Scheduled(ctx, occs[:11])
			require.NoError(t, err)
			require.Equal(t, append(make([]bool, 10), true), in)
			counts, err := r.DuePerMinute(ctx, base, 2)
			require.NoError(t, err)
			require.Equal(t, []int64{30, 0}, counts)
		})
	})

	t.Run("SettlesEachShardRetryFirst", func(t *testing.T) {
		t.Parallel()
		onBothRedisQueue(t, 3, func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient) {
			ctx := t.Context()
			require.NoError(t, r.EnsureGroup(ctx))
			var entries []queue.Entry
			for range 30 {
				entries = append(entries, entry(occ(base, 0)))
			}
			require.NoError(t, r.Enqueue(ctx, entries))
			done := map[int]queue.Settlement{}
			read := 0
			for i, q := range r.Shards() {
				_, err := q.Publish(ctx, 100, base, queue.Caps{})
				require.NoError(t, err)
				msgs, err := q.Read(ctx, "c1", 100, noBlock)
				require.NoError(t, err)
				read += len(msgs)
				s := queue.Settlement{}
				for _, m := range msgs {
					require.Equal(t, i, m.Shard, "a message knows its shard")
					s.IDs = append(s.IDs, m.ID)
					s.Retries = append(s.Retries, queue.Entry{Occurrence: m.Occurrence.Next(), DueAt: base.Add(time.Second)})
				}
				done[i] = s
			}
			require.Equal(t, 30, read)
			st, err := r.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, queue.Stats{Ready: 30, Pending: 30}, st)

			require.NoError(t, r.Settle(ctx, done))
			st, err = r.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, queue.Stats{Due: 30}, st, "acknowledged and deleted; every retry in the due sets")
			for i, q := range r.Shards() {
				n, err := rdb.ZCard(ctx, q.Keys().Due()).Result()
				require.NoError(t, err)
				require.EqualValues(t, len(done[i].Retries), n, "shard %d holds its own retries", i)
			}
			cs, err := r.Consumers(ctx)
			require.NoError(t, err)
			require.Len(t, cs, 1, "one worker, however many shards it reads")
			require.Equal(t, "c1", cs[0].Name)
			require.Zero(t, cs[0].Pending)
		})
	})

	t.Run("IsIntactOnlyWithEveryMarker", func(t *testing.T) {
		t.Parallel()
		onBothRedisQueue(t, 3, func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient) {
			ctx := t.Context()
			ok, err := r.Intact(ctx, 0)
			require.NoError(t, err)
			require.False(t, ok)
			require.NoError(t, r.MarkIntact(ctx, 7))
			ok, err = r.Intact(ctx, 7)
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, rdb.Del(ctx, r.Shard(2).Keys().Marker()).Err())
			ok, err = r.Intact(ctx, 7)
			require.NoError(t, err)
			require.False(t, ok, "one shard lost its data")
		})
	})

	// A claim's writes carry its load mark to every shard: a shard restored
	// from before the claim (a failover to a lagging replica) holds a lower
	// mark than Postgres committed, and is not intact, though its marker is
	// there.
	t.Run("MarksEveryShardWithTheClaim", func(t *testing.T) {
		t.Parallel()
		onBothRedisQueue(t, 3, func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient) {
			ctx := t.Context()
			occ := job.Occurrence{JobID: job.NewID(), ScheduledFor: time.UnixMilli(1_700_000_000_000).UTC(), Attempt: 1}
			require.NoError(t, r.EnqueueMarked(ctx, queue.AsScheduled([]job.Occurrence{occ}), 3))
			ok, err := r.Intact(ctx, 0)
			require.NoError(t, err)
			require.False(t, ok, "a claim does not create a marker that Redis lost: the leader must rebuild first")

			require.NoError(t, r.MarkIntact(ctx, 3))
			require.NoError(t, r.EnqueueMarked(ctx, queue.AsScheduled([]job.Occurrence{occ}), 4))
			ok, err = r.Intact(ctx, 4)
			require.NoError(t, err)
			require.True(t, ok, "every shard carries the mark, the shards without entries too")
			require.NoError(t, r.EnqueueMarked(ctx, queue.AsScheduled([]job.Occurrence{occ}), 2))
			ok, err = r.Intact(ctx, 4)
			require.NoError(t, err)
			require.True(t, ok, "a lower mark (a stale leader's) never lowers the marker")

			require.NoError(t, rdb.Set(ctx, r.Shard(1).Keys().Marker(), 3, 0).Err())
			ok, err = r.Intact(ctx, 4)
			require.NoError(t, err)
			require.False(t, ok, "shard 1 lost the last claim's writes")
		})
	})

	t.Run("FindsDashboardsThatStoppedBeating", func(t *testing.T) {
		t.Parallel()
		onBothRedisQueue(t, 1, func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient) {
			ctx := t.Context()
			home := r.Home()
			dead, err := home.DeadDashboards(ctx)
			require.NoError(t, err)
			require.Empty(t, dead)
			require.NoError(t, home.DashboardBeat(ctx, 1, time.Minute))
			require.NoError(t, home.DashboardBeat(ctx, 2, time.Minute))
			require.NoError(t, home.DashboardBeat(ctx, 3, time.Minute))
			require.NoError(t, rdb.Del(ctx, home.Keys().DashboardBeat(2)).Err()) // its beat expired
			require.NoError(t, home.DashboardGone(ctx, 3))                       // stopped cleanly
			dead, err = home.DeadDashboards(ctx)
			require.NoError(t, err)
			require.Equal(t, []int32{2}, dead)
			require.NoError(t, home.DashboardGone(ctx, 2))
			dead, err = home.DeadDashboards(ctx)
			require.NoError(t, err)
			require.Empty(t, dead)
		})
	})
}

// privateRedis starts a redis-server of the test's own on a free port, for a
// case that changes server settings; it skips when redis-server is missing,
// except under CI=true.
func privateRedis(t *testing.T) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is required under CI=true: %v", err)
		}
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--maxmemory-policy", "noeviction")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	t.Cleanup(func() { _ = rdb.Close() })
	require.Eventually(t, func() bool { return rdb.Ping(t.Context()).Err() == nil }, 10*time.Second, 20*time.Millisecond)
	return rdb
}

func TestSettleIsAtomic(t *testing.T) {
	t.Parallel()
	// Redis out of memory under noeviction refuses the retry's ZADD: the
	// entry must stay pending, to be handled again, not be acknowledged
	// with its retry lost.
	rdb := privateRedis(t)
	ctx := t.Context()
	r := queue.New(rdb, "tock", 1)
	q := r.Home()
	require.NoError(t, r.EnsureGroup(ctx))
	o := occ(base, 0)
	require.NoError(t, r.Enqueue(ctx, []queue.Entry{entry(o)}))
	_, err := q.Publish(ctx, 10, base, queue.Caps{})
	require.NoError(t, err)
	msgs, err := q.Read(ctx, "c1", 10, noBlock)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	retry := queue.Entry{Occurrence: o.Next(), DueAt: base.Add(time.Second)}

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "1").Err())
	err = r.Settle(ctx, map[int]queue.Settlement{0: {IDs: []string{msgs[0].ID}, Retries: []queue.Entry{retry}}})
	require.ErrorContains(t, err, "OOM")
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())

	st, err := r.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, queue.Stats{Ready: 1, Pending: 1}, st, "still pending, nothing scheduled")

	require.NoError(t, r.Settle(ctx, map[int]queue.Settlement{0: {IDs: []string{msgs[0].ID}, Retries: []queue.Entry{retry}}}))
	st, err = r.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, queue.Stats{Due: 1}, st, "once memory allows: the retry scheduled, the entry gone")
}

func TestConnect(t *testing.T) {
	t.Parallel()
	c, err := queue.Connect("redis://127.0.0.1:6379/0", false, nil)
	require.NoError(t, err)
	require.IsType(t, &redis.Client{}, c)
	_ = c.Close()

	c, err = queue.Connect("rediss://user:pw@clustercfg.example:6379", true, []string{"10.0.0.2:6379", "clustercfg.example:6379"})
	require.NoError(t, err)
	cc, ok := c.(*redis.ClusterClient)
	require.True(t, ok, "a cluster client")
	require.Equal(t, []string{"clustercfg.example:6379", "10.0.0.2:6379"}, cc.Options().Addrs, "the URL's host and the seeds, once each")
	require.Equal(t, "pw", cc.Options().Password)
	require.NotNil(t, cc.Options().TLSConfig, "rediss means TLS to every node")
	_ = c.Close()

	c, err = queue.Connect("redis://h:6379", false, []string{"h2:6379"})
	require.NoError(t, err)
	require.IsType(t, &redis.ClusterClient{}, c, "seed addresses imply a cluster")
	_ = c.Close()

	_, err = queue.Connect("redis://h:6379/5", true, nil)
	require.ErrorContains(t, err, "database 0 only")
}

func TestCheckShards(t *testing.T) {
	t.Parallel()
	onBothRedisQueue(t, 4, func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient) {
		ctx := t.Context()
		require.NoError(t, r.CheckShards(ctx), "the first records its count")
		require.NoError(t, r.CheckShards(ctx), "the same count agrees")
		other := queue.New(rdb, r.Prefix(), 2)
		err := other.CheckShards(ctx)
		require.ErrorIs(t, err, queue.ErrShardsDiffer)
		require.ErrorContains(t, err, "TOCK_REDIS_SHARDS=2 here, 4 in Redis")
		require.NoError(t, rdb.Del(ctx, r.ShardsKey()).Err())
		require.NoError(t, other.CheckShards(ctx), "after the key is deleted (a flush, a deliberate change) the next one records its own")
		require.ErrorIs(t, r.CheckShards(ctx), queue.ErrShardsDiffer)
	})
}

func TestScriptsRunAfterRedisForgotThem(t *testing.T) {
	t.Parallel()
	// Releases and settles call their scripts by hash; a Redis that forgot
	// its scripts (restarted, failed over, SCRIPT FLUSH) is sent them again.
	rdb := privateRedis(t)
	ctx := t.Context()
	r := queue.New(rdb, "tock", 1)
	q := r.Home()
	require.NoError(t, r.EnsureGroup(ctx))
	first, second := routed(ownerA, "0000000a", base), routed(ownerA, "0000000a", base)
	require.NoError(t, r.Enqueue(ctx, []queue.Entry{entry(first), entry(second)}))
	_, err := q.Publish(ctx, 10, base, queue.Caps{Owner: 100, Host: 100})
	require.NoError(t, err)
	msgs, err := q.Read(ctx, "c1", 10, noBlock)
	require.NoError(t, err)
	require.Len(t, msgs, 2)

	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	require.NoError(t, r.Release(ctx, map[int][]string{0: {msgs[0].ID}}))
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	require.NoError(t, r.Settle(ctx, map[int]queue.Settlement{0: {IDs: []string{msgs[0].ID, msgs[1].ID}}}))

	st, err := r.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, queue.Stats{}, st, "both settled")
	left, err := rdb.HLen(ctx, q.Keys().Inflight()).Result()
	require.NoError(t, err)
	require.Zero(t, left, "both places given back, once each")
}

// TestEnqueueSoon: an entry due within the publish lead is in the stream
// when EnqueueSoon returns, without a publisher's call; one due later
// waits in the due set for the publisher, as Enqueue leaves it.
func TestEnqueueSoon(t *testing.T) {
	t.Parallel()
	onBothRedisQueue(t, 2, func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient) {
		ctx := t.Context()
		require.NoError(t, r.EnsureGroup(ctx))
		now := time.Now().UTC().Truncate(time.Millisecond)
		soon := job.Occurrence{JobID: job.NewID(), ScheduledFor: now, Attempt: 1}
		later := job.Occurrence{JobID: job.NewID(), ScheduledFor: now.Add(10 * time.Second), Attempt: 1}
		require.NoError(t, r.EnqueueSoon(ctx, queue.AsScheduled([]job.Occurrence{soon, later}), now))

		var streamed []string
		for _, q := range r.Shards() {
			entries, err := rdb.XRange(ctx, q.Keys().Ready(), "-", "+").Result()
			require.NoError(t, err)
			for _, e := range entries {
				streamed = append(streamed, e.Values["m"].(string))
			}
		}
		require.Equal(t, []string{soon.Member()}, streamed, "the entry due now is published at once")
		due, err := rdb.ZRange(ctx, r.Of(later.JobID).Keys().Due(), 0, -1).Result()
		require.NoError(t, err)
		require.Equal(t, []string{later.Member()}, due, "the later one waits for the publisher")
	})
}
