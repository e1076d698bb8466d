package queue

import "context"

// Settle settles entries of this one shard through Queue.Settle, the one
// way entries are settled, for the tests of a single shard.
func (q *Shard) Settle(ctx context.Context, ids []string, retries []Entry) error {
	return q.alone().Settle(ctx, map[int]Settlement{0: {IDs: ids, Retries: retries}})
}
