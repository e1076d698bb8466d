// Reading: each shard's reader fills the free slots with new entries from
// its stream, and hands each batch to the starter.

package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
)

// batch is what a reader or a reclaimer hands the starter: entries of one
// shard, each holding a slot.
type batch struct {
	shard *queue.Shard
	msgs  []queue.Message
}

// reader reads new entries of one shard's stream into free slots.
type reader struct {
	w      *Worker
	q      *queue.Shard
	slots  *slotPool
	out    chan<- batch
	shared bool // other shards' readers take from the same slots
}

// run reads until ctx ends. When the slots are shared with other shards'
// readers, a reader waiting on an empty stream holds one slot, not a
// batch's worth, so it starves no other shard.
func (r *reader) run(ctx context.Context) {
	failing := false
	for {
		// Take one slot, waiting if all are busy, then as many more as are free.
		n := r.slots.take(ctx, r.w.Batch)
		if n == 0 {
			return
		}
		msgs, held, err := r.read(ctx, n)
		// The slots this read did not fill go back at once: the one place
		// a reader gives slots back; the completer gives back the rest.
		r.slots.give(held - len(msgs))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !failing {
				r.w.Log.Warn("read_failed", zap.Error(err))
				failing = true
			}
			sleep(ctx, time.Second)
			continue
		}
		failing = false
		if len(msgs) > 0 {
			r.out <- batch{shard: r.q, msgs: msgs}
		}
	}
}

// read reads up to n entries into the n slots held, and returns them with
// how many slots it still holds.
func (r *reader) read(ctx context.Context, n int) ([]queue.Message, int, error) {
	if !r.shared {
		msgs, err := r.q.Read(ctx, r.w.Name, n, r.w.Block)
		return msgs, n, err
	}
	msgs, err := r.q.Read(ctx, r.w.Name, n, -1)
	if err != nil || len(msgs) > 0 {
		return msgs, n, err
	}
	// Nothing waits: block on one entry only, with one slot, so the other
	// shards keep the rest.
	r.slots.give(n - 1)
	msgs, err = r.q.Read(ctx, r.w.Name, 1, r.w.Block)
	return msgs, 1, err
}
