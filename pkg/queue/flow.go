package queue

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/pkg/job"
)

// Flow keys. A flow lane ("f:" + job.FlowLane) is a lane of fair dispatch
// (fair.go) whose limits its owner sets: its members are held back while it
// has its concurrency in the stream, has started its rate's count within
// the rate's period, or is paused, and come out in due order. Its limits
// are what Postgres holds for the key (store.Flow), written to every shard
// by the dashboard when they change and by the scheduler's leader at every
// loader round, so a Redis that lost them has them back within a round.
//
// Every job of a flow key lives in one shard (FlowShard), so its count,
// its log and its held set are one shard's and the limits hold across
// every worker and scheduler without a cross-shard step.

// FlowLimits are one flow lane's limits as the scripts read them.
type FlowLimits struct {
	// Lane is job.FlowLane of the owner and key.
	Lane        string
	Concurrency int // 0: none
	Rate        job.Rate
	Paused      bool
}

func (f FlowLimits) value() string {
	paused := "0"
	if f.Paused {
		paused = "1"
	}
	return strconv.Itoa(max(f.Concurrency, 0)) + "|" + strconv.Itoa(max(f.Rate.Count, 0)) + "|" +
		strconv.FormatInt(max(f.Rate.Period.Milliseconds(), 0), 10) + "|" + paused
}

// FlowLane is the lane of a flow key's lane id in the shard's keys.
func FlowLane(lane string) string { return "f:" + lane }

// FlowShard is the shard every job of a flow lane lives in.
func (r *Queue) FlowShard(lane string) int {
	n := len(r.shards)
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(lane))
	return int(h.Sum32() % uint32(n))
}

// NewJobID returns a new job id (job.NewID) for a job of flow lane lane
// ("" for none): one that lives in the lane's shard. A UUIDv7's random
// bits decide its shard, so drawing again until it lands there takes as
// many draws as there are shards, on average.
func (r *Queue) NewJobID(lane string) uuid.UUID {
	id := job.NewID()
	if lane == "" || len(r.shards) <= 1 {
		return id
	}
	want := r.FlowShard(lane)
	for ShardOf(id, len(r.shards)) != want {
		id = job.NewID()
	}
	return id
}

// InFlowShard reports whether job id lives in flow lane lane's shard.
func (r *Queue) InFlowShard(id uuid.UUID, lane string) bool {
	return lane == "" || ShardOf(id, len(r.shards)) == r.FlowShard(lane)
}

// SetFlows records flow lanes' limits in every shard, in one round trip,
// and asks the publishers to look at those lanes again at once (a limit
// raised or a key resumed lets members out).
func (r *Queue) SetFlows(ctx context.Context, flows []FlowLimits) error {
	if len(flows) == 0 {
		return nil
	}
	pipe := r.rdb.Pipeline()
	for _, q := range r.shards {
		fields := make([]any, 0, 2*len(flows))
		wakes := make([]redis.Z, 0, len(flows))
		for _, f := range flows {
			fields = append(fields, FlowLane(f.Lane), f.value())
			wakes = append(wakes, redis.Z{Score: 0, Member: FlowLane(f.Lane)})
		}
		pipe.HSet(ctx, q.keys.Flows(), fields...)
		pipe.ZAdd(ctx, q.keys.FlowWakes(), wakes...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("set %d flow keys: %w", len(flows), err)
	}
	return nil
}

// ForgetFlows removes flow lanes' limits from every shard: their jobs run
// unlimited, and what waits comes out.
func (r *Queue) ForgetFlows(ctx context.Context, lanes ...string) error {
	if len(lanes) == 0 {
		return nil
	}
	pipe := r.rdb.Pipeline()
	for _, q := range r.shards {
		fields := make([]string, len(lanes))
		wakes := make([]redis.Z, len(lanes))
		for i, l := range lanes {
			fields[i] = FlowLane(l)
			wakes[i] = redis.Z{Score: 0, Member: FlowLane(l)}
		}
		pipe.HDel(ctx, q.keys.Flows(), fields...)
		pipe.ZAdd(ctx, q.keys.FlowWakes(), wakes...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("forget %d flow keys: %w", len(lanes), err)
	}
	return nil
}

// FlowState is what a flow lane has running and waiting.
type FlowState struct {
	// InFlight is its entries in the ready streams, read or not: attempts
	// running or about to.
	InFlight int64
	// Waiting is its due members held back by its limits.
	Waiting int64
}

// FlowStates reads lanes' states, summed over the shards, in one round trip.
func (r *Queue) FlowStates(ctx context.Context, lanes []string) ([]FlowState, error) {
	out := make([]FlowState, len(lanes))
	if len(lanes) == 0 {
		return out, nil
	}
	pipe := r.rdb.Pipeline()
	type cmds struct {
		inflight *redis.SliceCmd
		held     []*redis.IntCmd
	}
	all := make([]cmds, len(r.shards))
	for i, q := range r.shards {
		fields := make([]string, len(lanes))
		all[i].held = make([]*redis.IntCmd, len(lanes))
		for j, l := range lanes {
			fields[j] = FlowLane(l)
			all[i].held[j] = pipe.ZCard(ctx, q.keys.Held(FlowLane(l)))
		}
		all[i].inflight = pipe.HMGet(ctx, q.keys.Inflight(), fields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("flow states: %w", err)
	}
	for _, c := range all {
		for j, v := range c.inflight.Val() {
			if s, ok := v.(string); ok {
				n, _ := strconv.ParseInt(s, 10, 64)
				out[j].InFlight += n
			}
			out[j].Waiting += c.held[j].Val()
		}
	}
	return out, nil
}
