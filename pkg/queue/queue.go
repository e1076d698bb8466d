package queue

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/pkg/job"
)

// Queue is a deployment's queue: N shards, each a Shard with its own hash tag,
// due set and stream. A job lives in one shard, chosen from its id, so a
// Redis Cluster can spread the shards over its masters while every script
// still touches one slot. Keys a deployment has one of (the loader lock, the
// scheduler heartbeats) live in shard 0, the home shard.
//
// Every service of a deployment must use the same N: see docs/operations.md
// for choosing it and for changing it.
type Queue struct {
	rdb    redis.UniversalClient
	shards []*Shard
}

// New returns the queue of n shards (at least 1) under prefix.
func New(rdb redis.UniversalClient, prefix string, n int) *Queue {
	n = max(n, 1)
	r := &Queue{rdb: rdb, shards: make([]*Shard, n)}
	for i := range r.shards {
		r.shards[i] = NewShard(rdb, Keys{Prefix: prefix, Shard: i, Tag: ShardTag(i, n)})
	}
	return r
}

// Shards returns every shard, in order.
func (r *Queue) Shards() []*Shard { return r.shards }

// Shard returns shard i.
func (r *Queue) Shard(i int) *Shard { return r.shards[i] }

// Home is shard 0, which also holds the keys a deployment has one of.
func (r *Queue) Home() *Shard { return r.shards[0] }

// Prefix is the deployment's key prefix.
func (r *Queue) Prefix() string { return r.shards[0].keys.Prefix }

// ShardOf is the shard of a job among n: FNV-1a of its id's bytes, so the
// choice is stable and UUIDv7's random bits spread jobs evenly.
func ShardOf(id uuid.UUID, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write(id[:])
	return int(h.Sum32() % uint32(n))
}

// Of is the shard a job's occurrences live in.
func (r *Queue) Of(id uuid.UUID) *Shard { return r.shards[ShardOf(id, len(r.shards))] }

// Enqueue adds entries to their shards' due sets in one pipelined round trip
// (a cluster client sends each master its part at once).
func (r *Queue) Enqueue(ctx context.Context, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	pipe := r.rdb.Pipeline()
	for i, part := range r.split(entries) {
		r.shards[i].zadd(ctx, pipe, part)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("enqueue %d occurrences: %w", len(entries), err)
	}
	return nil
}

// DefaultPublishLead is how far ahead of their due time the scheduler's
// publisher moves members to the stream by default (TOCK_PUBLISH_LEAD; see
// Shard.PublishAhead), and how close to it EnqueueSoon publishes an entry
// at once. After a call that moved members the publisher sleeps half of
// it, so at a steady load each call, read, Postgres read and lease serves
// 40 ms of members: against 20 ms, that cut the CPU per steady job of the
// whole stack by a fifth, and 80 ms against 40 ms by as much again, the
// lateness unchanged (each attempt still starts at its due time).
const DefaultPublishLead = 80 * time.Millisecond

// soonBatch bounds what EnqueueSoon's publish moves per shard.
const soonBatch = ReadSize

// EnqueueSoon adds entries as Enqueue does, then publishes at once, on
// each shard that got one due within DefaultPublishLead of now, what is
// due there that soon (earliest first, fair dispatch as always), as the
// publisher's next call would: a job created, triggered or retried to run
// now does not wait for a publisher that sleeps up to half its lead at a
// steady load. Only the Enqueue can fail it: an entry the publish misses
// stays in the due set for the publisher.
func (r *Queue) EnqueueSoon(ctx context.Context, entries []Entry, now time.Time) error {
	if err := r.Enqueue(ctx, entries); err != nil {
		return err
	}
	soon := map[int]bool{}
	for _, e := range entries {
		if e.DueAt.Before(now.Add(DefaultPublishLead)) {
			soon[ShardOf(e.Occurrence.JobID, len(r.shards))] = true
		}
	}
	if len(soon) == 0 {
		return nil
	}
	calls := make([]scriptCall, 0, len(soon))
	for i := range soon {
		calls = append(calls, r.shards[i].publishCall(soonBatch, time.Time{}, DefaultPublishLead, Caps{}))
	}
	_, _ = runScripts(ctx, r.rdb, calls)
	return nil
}

// EnqueueMarked adds entries as Enqueue does and, in the same round trip,
// raises every shard's marker to mark (the load mark of the claim that
// hands them over; see Keys.Marker): a shard that later holds less lost
// these writes.
func (r *Queue) EnqueueMarked(ctx context.Context, entries []Entry, mark int64) error {
	pipe := r.rdb.Pipeline()
	for i, part := range r.split(entries) {
		r.shards[i].zadd(ctx, pipe, part)
	}
	for _, q := range r.shards {
		// EVAL, not EVALSHA: in a pipeline a NOSCRIPT could not be retried.
		raiseMarkerScript.Eval(ctx, pipe, []string{q.keys.Marker()}, mark)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("enqueue %d occurrences: %w", len(entries), err)
	}
	return nil
}

func (r *Queue) split(entries []Entry) map[int][]Entry {
	parts := make(map[int][]Entry, len(r.shards))
	for _, e := range entries {
		i := ShardOf(e.Occurrence.JobID, len(r.shards))
		parts[i] = append(parts[i], e)
	}
	return parts
}

// Remove takes occurrences out of their shards' due sets, and out of the
// held sets of their lanes, in one round trip.
func (r *Queue) Remove(ctx context.Context, occs []job.Occurrence) error {
	if len(occs) == 0 {
		return nil
	}
	members := make(map[int][]any, len(r.shards))
	// A lane's held set gets one ZREM for all its members: a recurring
	// job's loaded occurrences (hundreds) share their lanes.
	type held struct {
		shard int
		lane  string
	}
	heldMembers := map[held][]any{}
	for _, o := range occs {
		i := ShardOf(o.JobID, len(r.shards))
		m := o.Member()
		members[i] = append(members[i], m)
		for _, lane := range routeLanes(o) {
			heldMembers[held{i, lane}] = append(heldMembers[held{i, lane}], m)
		}
	}
	pipe := r.rdb.Pipeline()
	for h, m := range heldMembers {
		pipe.ZRem(ctx, r.shards[h.shard].keys.Held(h.lane), m...)
	}
	for i, m := range members {
		pipe.ZRem(ctx, r.shards[i].keys.Due(), m...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("remove %d occurrences: %w", len(occs), err)
	}
	return nil
}

// routeLanes names the lanes an occurrence may be held in: none for one
// without a route.
func routeLanes(o job.Occurrence) []string {
	if o.Owner == (uuid.UUID{}) {
		return nil
	}
	lanes := []string{OwnerLane(job.OwnerKey(o.Owner))}
	if o.Target != "" {
		lanes = append(lanes, TargetLane(o.Target))
	}
	if o.Flow != "" {
		lanes = append(lanes, FlowLane(o.Flow))
	}
	return lanes
}

// Scheduled reports which of occs are in their shards' due sets, held back
// in the held set of one of their lanes, or running (leased in their job's
// run hash).
func (r *Queue) Scheduled(ctx context.Context, occs []job.Occurrence) ([]bool, error) {
	if len(occs) == 0 {
		return nil, nil
	}
	type lookup struct {
		at  []int
		cmd *redis.FloatSliceCmd
	}
	members := make(map[int][]string, len(r.shards))
	at := make(map[int][]int, len(r.shards))
	for k, o := range occs {
		i := ShardOf(o.JobID, len(r.shards))
		members[i] = append(members[i], o.Member())
		at[i] = append(at[i], k)
	}
	pipe := r.rdb.Pipeline()
	var lookups []lookup
	for i, m := range members {
		lookups = append(lookups, lookup{at: at[i], cmd: pipe.ZMScore(ctx, r.shards[i].keys.Due(), m...)})
	}
	held := make([][]*redis.FloatCmd, len(occs))
	leased := make([]*redis.StringCmd, len(occs))
	for k, o := range occs {
		q := r.shards[ShardOf(o.JobID, len(r.shards))]
		for _, lane := range routeLanes(o) {
			held[k] = append(held[k], pipe.ZScore(ctx, q.keys.Held(lane), o.Member()))
		}
		leased[k] = pipe.HGet(ctx, q.keys.Run(o.JobID), leaseField(o))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("look up %d occurrences: %w", len(occs), err)
	}
	in := make([]bool, len(occs))
	for _, l := range lookups {
		for j, s := range l.cmd.Val() {
			in[l.at[j]] = s != 0
		}
	}
	for k, cmds := range held {
		for _, c := range cmds {
			if c.Err() == nil {
				in[k] = true
			}
		}
		if strings.HasPrefix(leased[k].Val(), "v1|") { // a lease, not the mark of an attempt done
			in[k] = true
		}
	}
	return in, nil
}

// EnsureGroup creates every shard's stream and consumer group if missing.
func (r *Queue) EnsureGroup(ctx context.Context) error {
	for _, q := range r.shards {
		if err := q.EnsureGroup(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Stats sums the shards' sizes, read in one round trip.
func (r *Queue) Stats(ctx context.Context) (Stats, error) {
	pipe := r.rdb.Pipeline()
	type cmds struct {
		due, ready *redis.IntCmd
		pending    *redis.XPendingCmd
		held       *redis.Cmd
		flowsHeld  *redis.Cmd
	}
	all := make([]cmds, len(r.shards))
	for i, q := range r.shards {
		all[i] = cmds{pipe.ZCard(ctx, q.keys.Due()), pipe.XLen(ctx, q.keys.Ready()), pipe.XPending(ctx, q.keys.Ready(), Group),
			heldScript.Eval(ctx, pipe, []string{q.keys.HeldLanes(), q.keys.HeldPrefix()}),
			heldScript.Eval(ctx, pipe, []string{q.keys.FlowsHeld(), q.keys.HeldPrefix()})}
	}
	_, _ = pipe.Exec(ctx)
	// Every command's error, not only the first: a shard with no group yet
	// (NOGROUP) must not hide another master that did not answer.
	for _, c := range all {
		for _, err := range []error{c.due.Err(), c.ready.Err(), c.pending.Err(), c.held.Err(), c.flowsHeld.Err()} {
			if err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, errNoGroup) {
				return Stats{}, fmt.Errorf("queue stats: %w", err)
			}
		}
	}
	var st Stats
	for _, c := range all {
		st.Due += c.due.Val()
		st.Ready += c.ready.Val()
		held, _ := c.held.Int64()
		flowsHeld, _ := c.flowsHeld.Int64()
		st.Held += held + flowsHeld
		if p := c.pending.Val(); p != nil {
			st.Pending += p.Count
		}
	}
	return st, nil
}

// Intact reports whether every shard still holds its marker, at mark or
// above (see Shard.Intact).
func (r *Queue) Intact(ctx context.Context, mark int64) (bool, error) {
	for _, q := range r.shards {
		ok, err := q.Intact(ctx, mark)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// MarkIntact sets every shard's marker to mark.
func (r *Queue) MarkIntact(ctx context.Context, mark int64) error {
	for _, q := range r.shards {
		if err := q.MarkIntact(ctx, mark); err != nil {
			return err
		}
	}
	return nil
}

// Consumers lists the workers of every shard's group, one row per worker:
// its pending entries summed, its idle time the least over the shards.
func (r *Queue) Consumers(ctx context.Context) ([]Consumer, error) {
	var out []Consumer
	seen := map[string]int{}
	for _, q := range r.shards {
		cs, err := q.Consumers(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if i, ok := seen[c.Name]; ok {
				out[i].Pending += c.Pending
				out[i].Idle = min(out[i].Idle, c.Idle)
				continue
			}
			seen[c.Name] = len(out)
			out = append(out, c)
		}
	}
	return out, nil
}

// DuePerMinute sums the shards' counts of members due in each minute.
func (r *Queue) DuePerMinute(ctx context.Context, from time.Time, minutes int) ([]int64, error) {
	out := make([]int64, minutes)
	for _, q := range r.shards {
		counts, err := q.DuePerMinute(ctx, from, minutes)
		if err != nil {
			return nil, err
		}
		for i, n := range counts {
			out[i] += n
		}
	}
	return out, nil
}

// Settle finishes handled entries of every shard (done is keyed by shard
// index) in one pipelined round trip. Per shard, the retries go into the due
// set first, then the entries are acknowledged and deleted: an entry is
// never acknowledged before its retry is safe, and a cluster client keeps
// each master's commands in order.
func (r *Queue) Settle(ctx context.Context, done map[int]Settlement) error {
	var calls []scriptCall
	n := 0
	for i, s := range done {
		if s.empty() {
			continue
		}
		calls = append(calls, r.shards[i].settle(s))
		n += len(s.IDs)
	}
	if len(calls) == 0 {
		return nil
	}
	if _, err := runScripts(ctx, r.rdb, calls); err != nil {
		return fmt.Errorf("settle %d entries: %w", n, err)
	}
	return nil
}

// Settlement is what settling does in one shard: schedule the retries, end
// the leases of attempts that ended, then acknowledge and delete the
// entries.
type Settlement struct {
	IDs     []string
	Retries []Entry
	// Ended are attempts whose outcome is recorded: their leases end,
	// whoever holds them (a worker that took one over runs a finished
	// attempt; its outcome will change nothing).
	Ended []job.Occurrence
	// Dropped are attempts acknowledged unrun (stale, of a job gone or no
	// longer scheduled): a lease left on one by a dead worker ends; a live
	// lease stays, for its worker to end.
	Dropped []job.Occurrence
	// Now is the settling worker's clock, against which leases are judged
	// run out.
	Now time.Time
}

func (s Settlement) empty() bool {
	return len(s.IDs) == 0 && len(s.Retries) == 0 && len(s.Ended) == 0 && len(s.Dropped) == 0
}

// ErrShardsDiffer says this process's shard count is not the deployment's.
var ErrShardsDiffer = errors.New("shard count differs from the deployment's")

// ShardsKey holds the deployment's shard count (see the function ShardsKey).
func (r *Queue) ShardsKey() string { return ShardsKey(r.Prefix()) }

// CheckShards records this queue's shard count as the deployment's if none is
// recorded yet, and fails with ErrShardsDiffer if another one is: a process
// with another N would put jobs where no publisher or worker of the
// deployment looks. After Redis loses its data the next check records it
// again; changing N means deleting the key with the shards' keys.
func (r *Queue) CheckShards(ctx context.Context) error {
	n := len(r.shards)
	set, err := r.rdb.SetNX(ctx, r.ShardsKey(), n, 0).Result()
	if err != nil {
		return fmt.Errorf("check shard count: %w", err)
	}
	if set {
		return nil
	}
	got, err := r.rdb.Get(ctx, r.ShardsKey()).Result()
	if errors.Is(err, redis.Nil) {
		return r.CheckShards(ctx) // deleted in between: record ours
	}
	if err != nil {
		return fmt.Errorf("check shard count: %w", err)
	}
	if got != strconv.Itoa(n) {
		return fmt.Errorf("%w: TOCK_REDIS_SHARDS=%d here, %s in Redis (%s); every service must use the same, see docs/operations.md",
			ErrShardsDiffer, n, got, r.ShardsKey())
	}
	return nil
}
