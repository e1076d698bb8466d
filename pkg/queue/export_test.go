package queue

import (
	"context"

	"github.com/tockhq/tock/pkg/job"
)

// Settle settles entries of this one shard through Queue.Settle, the one
// way entries are settled, for the tests of a single shard.
func (q *Shard) Settle(ctx context.Context, ids []string, retries []Entry) error {
	return q.alone().Settle(ctx, map[int]Settlement{0: {IDs: ids, Retries: retries}})
}

// LeaseField is an attempt's field in its job's run hash.
func LeaseField(o job.Occurrence) string { return leaseField(o) }

// SetFlows records flow limits in this one shard.
func (q *Shard) SetFlows(ctx context.Context, f []FlowLimits) error {
	return q.alone().SetFlows(ctx, f)
}

// FlowStates reads flow lanes' states in this one shard.
func (q *Shard) FlowStates(ctx context.Context, lanes []string) ([]FlowState, error) {
	return q.alone().FlowStates(ctx, lanes)
}
