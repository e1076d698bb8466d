package queue_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

// BenchmarkAttemptFlow runs attempts through every Redis step of their path
// (enqueue, publish, read, start, release, settle) in batches of the size a
// steady load makes (2) and a burst makes (256), on the real Redis, and
// reports Redis's own CPU per attempt (read from /proc when Redis runs on
// this machine): the figure the scripts' changes move. The bench
// (scripts/bench) measures the whole path.
func BenchmarkAttemptFlow(b *testing.B) {
	for _, batch := range []int{2, 16, 256} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			rdb, ctx, r, q := benchQueue(b)
			owners := []uuid.UUID{job.NewID(), job.NewID()}
			before := redisCPU(b, rdb)
			at := time.Now().UTC().Truncate(time.Millisecond)
			b.ResetTimer()
			done := 0
			for done < b.N {
				at = at.Add(time.Millisecond)
				entries := make([]queue.Entry, batch)
				for i := range entries {
					o := job.Occurrence{JobID: job.NewID(), ScheduledFor: at, Attempt: 1}
					o.Owner, o.Target = owners[i%len(owners)], "target-"+strconv.Itoa(i%3)
					entries[i] = queue.Entry{Occurrence: o, DueAt: at}
				}
				if err := r.Enqueue(ctx, entries); err != nil {
					b.Fatal(err)
				}
				if _, err := q.Publish(ctx, 1000, at, queue.Caps{Owner: 1000, Host: 1000, Borrow: 4000, Unread: 512}); err != nil {
					b.Fatal(err)
				}
				msgs, err := q.Read(ctx, "w1", batch, -1)
				if err != nil || len(msgs) != batch {
					b.Fatalf("read %d of %d: %v", len(msgs), batch, err)
				}
				runAll(b, r, msgs, "w1", at)
				done += batch
			}
			b.StopTimer()
			if cpu := redisCPU(b, rdb) - before; cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(done), "redis-µs/attempt")
			}
		})
	}
}

// BenchmarkBurstFlow runs b.N attempts due at one instant through the
// Redis path a burst takes: one owner and one host, so that past the unread
// limit every member is held in its owner's lane by the publisher and comes
// out as an earlier entry's place is released (the hold and unhold that a
// burst pays per job and BenchmarkAttemptFlow's uncapped batches never do).
// Two readers take 256 entries at a time, as two workers do. With flow keys,
// the attempts are spread over that many keys of concurrency 5 (the bench's
// -burst-flow-keys). It reports Redis's own CPU per attempt.
func BenchmarkBurstFlow(b *testing.B) {
	for _, keys := range []int{0, 10_000} {
		b.Run("flow-keys="+strconv.Itoa(keys), func(b *testing.B) { burstFlow(b, keys) })
	}
}

func burstFlow(b *testing.B, keys int) {
	rdb, ctx, r, q := benchQueue(b)
	owner := job.NewID()
	lanes := make([]string, keys)
	limits := make([]queue.FlowLimits, keys)
	for i := range lanes {
		lanes[i] = job.FlowLane(owner, "key-"+strconv.Itoa(i))
		limits[i] = queue.FlowLimits{Lane: lanes[i], Concurrency: 5}
	}
	if err := r.SetFlows(ctx, limits); err != nil {
		b.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	caps := queue.Caps{Owner: 200, Host: 400, Borrow: 200, Unread: 512}
	before := redisCPU(b, rdb)
	b.ResetTimer()
	for i := 0; i < b.N; i += 1000 {
		entries := make([]queue.Entry, min(1000, b.N-i))
		for j := range entries {
			o := job.Occurrence{JobID: job.NewID(), ScheduledFor: at, Attempt: 1, Owner: owner, Target: "receiver"}
			if keys > 0 {
				o.Flow = lanes[(i+j)%keys]
			}
			entries[j] = queue.Entry{Occurrence: o, DueAt: at}
		}
		if err := r.Enqueue(ctx, entries); err != nil {
			b.Fatal(err)
		}
	}
	done := 0
	for turn := 0; done < b.N; turn++ {
		if _, err := q.Publish(ctx, 1000, at, caps); err != nil {
			b.Fatal(err)
		}
		consumer := "w" + strconv.Itoa(turn%2)
		msgs, err := q.Read(ctx, consumer, queue.ReadSize, -1)
		if err != nil {
			b.Fatal(err)
		}
		if len(msgs) == 0 {
			continue
		}
		runAll(b, r, msgs, consumer, at)
		done += len(msgs)
	}
	b.StopTimer()
	if cpu := redisCPU(b, rdb) - before; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(done), "redis-µs/attempt")
	}
}

// runAll takes the attempts of msgs (read from shard 0) through the rest of
// their Redis path as a worker does: start, release, settle.
func runAll(b *testing.B, r *queue.Queue, msgs []queue.Message, consumer string, at time.Time) {
	b.Helper()
	ctx := b.Context()
	starts := make([]queue.Start, len(msgs))
	ids := make([]string, len(msgs))
	ended := make([]job.Occurrence, len(msgs))
	for i, m := range msgs {
		starts[i] = queue.Start{Lease: queue.Lease{Occurrence: m.Occurrence, Worker: consumer, Run: job.NewID(),
			StartedAt: at, Until: at.Add(time.Minute), DueAt: at, Entry: m.ID, Member: m.Occurrence.Member()}}
		ids[i], ended[i] = m.ID, m.Occurrence
	}
	if _, err := r.Home().Start(ctx, starts, at, time.Second); err != nil {
		b.Fatal(err)
	}
	if err := r.Release(ctx, map[int][]string{0: ids}); err != nil {
		b.Fatal(err)
	}
	if err := r.Settle(ctx, map[int]queue.Settlement{0: {IDs: ids, Ended: ended, Now: at}}); err != nil {
		b.Fatal(err)
	}
}

// redisCPU is the Redis server's user and system CPU so far, or 0 when it
// is not a process of this machine.
func redisCPU(b *testing.B, rdb redis.UniversalClient) time.Duration {
	info, err := rdb.Info(b.Context(), "server").Result()
	if err != nil {
		b.Fatal(err)
	}
	var pid string
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid = v
		}
	}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100
}

// benchQueue is a one-shard queue on the real Redis under a prefix of b's
// own, its consumer group made, and its shard.
func benchQueue(b *testing.B) (redis.UniversalClient, context.Context, *queue.Queue, *queue.Shard) {
	rdb, prefix := testenv.Redis(b)
	r := queue.New(rdb, prefix, 1)
	if err := r.EnsureGroup(b.Context()); err != nil {
		b.Fatal(err)
	}
	return rdb, b.Context(), r, r.Home()
}
