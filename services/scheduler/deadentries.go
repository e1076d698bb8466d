// The leader's drain of the dead streams: what workers set aside is kept in
// Postgres, then deleted from Redis, so that nothing is kept only there.

package main

import (
	"context"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// Bounds of one drain, per shard: a backlog (the stream holds up to about
// 10,000 entries) drains over rounds without holding up the leader's loop.
const (
	drainBatch   = 500
	drainBatches = 4
)

// drainDead copies each shard's dead-stream entries into Postgres and then
// deletes them from the stream. A failure between the two leaves them in
// the stream, saved again (once) by the next round.
func (l *Leader) drainDead(ctx context.Context) {
	for i, sh := range l.queue.Shards() {
		drained := 0
		for range drainBatches {
			n, err := l.drainShard(ctx, i, sh)
			if err != nil {
				if ctx.Err() == nil {
					l.log.Warn("dead_drain_failed", zap.Int("shard", i), zap.Error(err))
				}
				break
			}
			drained += n
			if n < drainBatch {
				break
			}
		}
		if drained > 0 {
			l.log.Info("dead_entries_drained", zap.Int("shard", i), zap.Int("entries", drained))
		}
	}
}

// drainShard moves one batch of shard i's dead stream, and says how many.
func (l *Leader) drainShard(ctx context.Context, i int, sh *queue.Shard) (int, error) {
	entries, err := sh.DeadEntries(ctx, drainBatch)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	kept, ids := keptEntries(i, entries)
	if err := l.store.SaveDeadEntries(ctx, kept); err != nil {
		return 0, err
	}
	if err := sh.DropDead(ctx, ids); err != nil {
		return 0, err
	}
	return len(entries), nil
}

// keptEntries is what Postgres keeps of shard i's dead entries, with the
// job and owner their members name, and the entries' ids in the stream.
func keptEntries(i int, entries []queue.DeadEntry) ([]store.DeadEntry, []string) {
	kept := make([]store.DeadEntry, len(entries))
	ids := make([]string, len(entries))
	for k, e := range entries {
		kept[k] = store.DeadEntry{Shard: i, Entry: e.ID, SetAsideAt: e.At, Error: e.Error, Deliveries: e.Deliveries, Fields: e.Fields}
		if o, err := job.ParseMember(e.Fields["m"]); err == nil {
			kept[k].JobID, kept[k].Owner = o.JobID, o.Owner
		}
		ids[k] = e.ID
	}
	return kept, ids
}
