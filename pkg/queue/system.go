package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Consumer is one worker as the ready stream's group knows it.
type Consumer struct {
	Name string
	// Pending is how many entries it holds unacknowledged.
	Pending int64
	// Idle is how long since it last read or claimed.
	Idle time.Duration
}

// Consumers lists the workers that ever read through the group, with how
// long each has been idle: a live worker polls, so a long idle means a gone
// one. No group yet is no consumers.
func (q *Shard) Consumers(ctx context.Context) ([]Consumer, error) {
	infos, err := q.rdb.XInfoConsumers(ctx, q.keys.Ready(), Group).Result()
	if err != nil {
		if errors.Is(err, redis.Nil) || redis.HasErrorPrefix(err, errNoGroup) || strings.Contains(err.Error(), "no such key") {
			return nil, nil
		}
		return nil, fmt.Errorf("list consumers: %w", err)
	}
	out := make([]Consumer, len(infos))
	for i, c := range infos {
		out[i] = Consumer{Name: c.Name, Pending: c.Pending, Idle: c.Idle}
	}
	return out, nil
}

// LoaderLockTTL says whether a scheduler holds the loader lock and for how
// much longer unless it renews it. The lock's value is a random token, not
// the holder's name, so that is all Redis can tell.
func (q *Shard) LoaderLockTTL(ctx context.Context) (held bool, ttl time.Duration, err error) {
	d, err := q.rdb.PTTL(ctx, q.keys.LoaderLock()).Result()
	if err != nil {
		return false, 0, fmt.Errorf("loader lock ttl: %w", err)
	}
	// PTTL answers -2 (as a negative duration) for a missing key.
	if d < 0 {
		return false, 0, nil
	}
	return true, d, nil
}

// DuePerMinute counts the due set's members in each of the minutes minutes
// from from (truncated to the minute), in one round trip of ZCOUNTs: each
// is a range count, so the cost does not grow with the set.
func (q *Shard) DuePerMinute(ctx context.Context, from time.Time, minutes int) ([]int64, error) {
	start := from.Truncate(time.Minute).UnixMilli()
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, minutes)
	for i := range cmds {
		lo := start + int64(i)*time.Minute.Milliseconds()
		cmds[i] = pipe.ZCount(ctx, q.keys.Due(), fmt.Sprint(lo), fmt.Sprintf("(%d", lo+time.Minute.Milliseconds()))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("count due per minute: %w", err)
	}
	out := make([]int64, minutes)
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// Instance is one scheduler instance as its heartbeats tell it.
type Instance struct {
	Name     string
	LastSeen time.Time
	// Leader says it holds the loader lock.
	Leader bool
}

// instanceMemory is how long a silent instance stays listed, as gone.
const instanceMemory = time.Hour

// Heartbeat records that the scheduler instance name is alive at now, and,
// when it leads, that it holds the loader lock for ttl more. One round trip;
// instances silent for an hour are forgotten.
func (q *Shard) Heartbeat(ctx context.Context, name string, now time.Time, leader bool, ttl time.Duration) error {
	pipe := q.rdb.Pipeline()
	pipe.ZAdd(ctx, q.keys.Schedulers(), redis.Z{Score: float64(now.UnixMilli()), Member: name})
	pipe.ZRemRangeByScore(ctx, q.keys.Schedulers(), "-inf", fmt.Sprint(now.Add(-instanceMemory).UnixMilli()))
	if leader {
		pipe.Set(ctx, q.keys.LoaderHolder(), name, ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("heartbeat %s: %w", name, err)
	}
	return nil
}

// Schedulers lists the scheduler instances heard from in the last hour, the
// most recent first, with the one that holds the loader lock marked.
func (q *Shard) Schedulers(ctx context.Context) ([]Instance, error) {
	pipe := q.rdb.Pipeline()
	members := pipe.ZRevRangeWithScores(ctx, q.keys.Schedulers(), 0, 99)
	holder := pipe.Get(ctx, q.keys.LoaderHolder())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("list schedulers: %w", err)
	}
	out := make([]Instance, 0, len(members.Val()))
	for _, z := range members.Val() {
		name, _ := z.Member.(string)
		out = append(out, Instance{Name: name, LastSeen: time.UnixMilli(int64(z.Score)).UTC(), Leader: name == holder.Val()})
	}
	return out, nil
}

// workerBeatScript records a worker's heartbeat and slots, and forgets the
// workers silent for longer than ARGV[4] ms, in both keys at once.
//
// KEYS[1] workers sorted set
// KEYS[2] worker slots hash
// ARGV[1] worker name
// ARGV[2] now in unix ms
// ARGV[3] its slots
// ARGV[4] how long a silent worker is remembered, ms
var workerBeatScript = redis.NewScript(`
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[4]), 'LIMIT', 0, 100)
for _, name in ipairs(gone) do
  redis.call('ZREM', KEYS[1], name)
  redis.call('HDEL', KEYS[2], name)
end
return #gone
`)

// WorkerBeat records in the home shard that the worker name is alive at now
// with slots slots; workers silent for an hour are forgotten.
func (q *Shard) WorkerBeat(ctx context.Context, name string, slots int, now time.Time) error {
	err := workerBeatScript.Run(ctx, q.rdb, []string{q.keys.Workers(), q.keys.WorkerSlots()},
		name, now.UnixMilli(), slots, instanceMemory.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("worker heartbeat %s: %w", name, err)
	}
	return nil
}

// poolScript adds up the slots of the workers heard from since ARGV[1].
//
// KEYS[1] workers sorted set
// KEYS[2] worker slots hash
// ARGV[1] the oldest heartbeat that counts, unix ms
// Returns {slots, workers}
var poolScript = redis.NewScript(`
local names = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf')
local slots = 0
for _, name in ipairs(names) do
  slots = slots + (tonumber(redis.call('HGET', KEYS[2], name) or '0') or 0)
end
return {slots, #names}
`)

// Pool is the slots of the workers heard from in the last fresh before now,
// and how many workers that is: what the scheduler derives the default caps
// on attempts in flight from.
func (q *Shard) Pool(ctx context.Context, now time.Time, fresh time.Duration) (slots, workers int, err error) {
	res, err := poolScript.Run(ctx, q.rdb, []string{q.keys.Workers(), q.keys.WorkerSlots()}, now.Add(-fresh).UnixMilli()).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("worker pool: %w", err)
	}
	return int(res[0]), int(res[1]), nil
}

// DashboardBeat records in the home shard that dashboard n (its process
// number) is alive for ttl more. The dashboard claims one-off jobs and adds
// them to the due set after its commit; once its beat expires, the leader
// re-adds what it left out (DeadDashboards).
func (q *Shard) DashboardBeat(ctx context.Context, n int32, ttl time.Duration) error {
	pipe := q.rdb.TxPipeline()
	pipe.SAdd(ctx, q.keys.Dashboards(), n)
	pipe.Set(ctx, q.keys.DashboardBeat(n), 1, ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("dashboard heartbeat %d: %w", n, err)
	}
	return nil
}

// DashboardGone forgets dashboard n: it stopped after its last request, or
// the leader re-added what it left out.
func (q *Shard) DashboardGone(ctx context.Context, n int32) error {
	pipe := q.rdb.TxPipeline()
	pipe.SRem(ctx, q.keys.Dashboards(), n)
	pipe.Del(ctx, q.keys.DashboardBeat(n))
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("forget dashboard %d: %w", n, err)
	}
	return nil
}

// DeadDashboards lists the dashboards that registered and stopped beating
// without saying they stopped: they may have died between committing claims
// and adding them to the due set. Two round trips, the second only when
// any dashboard is registered.
func (q *Shard) DeadDashboards(ctx context.Context) ([]int32, error) {
	members, err := q.rdb.SMembers(ctx, q.keys.Dashboards()).Result()
	if err != nil || len(members) == 0 {
		if err != nil {
			err = fmt.Errorf("list dashboards: %w", err)
		}
		return nil, err
	}
	ns := make([]int32, 0, len(members))
	pipe := q.rdb.Pipeline()
	beats := make([]*redis.IntCmd, 0, len(members))
	for _, m := range members {
		n, err := strconv.ParseInt(m, 10, 32)
		if err != nil {
			continue // not ours; left alone
		}
		ns = append(ns, int32(n))
		beats = append(beats, pipe.Exists(ctx, q.keys.DashboardBeat(int32(n))))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("check dashboards: %w", err)
	}
	var dead []int32
	for i, b := range beats {
		if b.Val() == 0 {
			dead = append(dead, ns[i])
		}
	}
	return dead, nil
}
