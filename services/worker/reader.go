// Reading: each shard's reader fills the free slots with new entries from
// its stream, and hands each batch to the starter.

package main

import (
	"cmp"
	"context"
	"strconv"
	"strings"
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
	// last is the id of the newest entry read, "" before the first.
	last string
	// catching is the catch-up after a failed read; nil when none is due.
	catching *catchUp
}

// catchUp looks, after a failed read, for entries a read took but whose
// answer was lost (see queue.Shard.Unread): they are pending to this
// worker, newer than the last entry read before the failure, and unknown
// to the reader. Redis serves such a read when it resumes, about when the
// reader's calls succeed again, so the reader looks right after its
// first read that works and twice more after that, to be sure to look
// after it.
type catchUp struct {
	since  string          // the newest entry read before the failure
	got    map[string]bool // entries the reader has read or found since
	at     []time.Time     // when to look; set at the first read that works
	resume string          // where an unfinished look goes on
}

// catchUpAt is when the reader looks for entries lost to a failed read,
// after its first read that works.
var catchUpAt = []time.Duration{0, time.Second, 3 * time.Second}

// run reads until ctx ends. When the slots are shared with other shards'
// readers, a reader waiting on an empty stream holds one slot, not a
// batch's worth, so it starves no other shard. After a failed read, it
// catches up (catchUp).
func (r *reader) run(ctx context.Context) {
	failing := false
	for {
		// Take one slot, waiting if all are busy, then as many more as are free.
		n := r.slots.take(ctx, r.w.Batch)
		if n == 0 {
			return
		}
		var msgs []queue.Message
		var err error
		held := n
		if c := r.catching; c != nil && len(c.at) > 0 && !time.Now().Before(c.at[0]) {
			msgs, err = r.lookBack(ctx, n)
		} else {
			msgs, held, err = r.read(ctx, n)
		}
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
			if r.catching == nil {
				r.catching = &catchUp{since: r.last, got: map[string]bool{}}
			}
			r.catching.at, r.catching.resume = nil, ""
			sleep(ctx, time.Second)
			continue
		}
		failing = false
		if c := r.catching; c != nil {
			for _, m := range msgs {
				c.got[m.ID] = true
			}
			if c.at == nil {
				now := time.Now()
				for _, d := range catchUpAt {
					c.at = append(c.at, now.Add(d))
				}
			}
		}
		r.w.readFull(len(msgs), held)
		if len(msgs) > 0 {
			r.last = laterID(r.last, msgs[len(msgs)-1].ID)
			r.out <- batch{shard: r.q, msgs: msgs}
		}
	}
}

// lookBack is one step of the catch-up: up to n entries lost to a failed
// read. A look ends when nothing is left to find; the catch-up, after its
// last look.
func (r *reader) lookBack(ctx context.Context, n int) ([]queue.Message, error) {
	c := r.catching
	after := cmp.Or(c.resume, c.since)
	msgs, resume, err := r.q.Unread(ctx, r.w.Name, after, n, func(id string) bool { return c.got[id] })
	if err != nil {
		return nil, err
	}
	if len(msgs) > 0 {
		r.w.Log.Info("read_recovered", zap.Int("entries", len(msgs)))
	}
	c.resume = resume
	if resume == "" {
		c.at = c.at[1:]
		if len(c.at) == 0 {
			r.catching = nil
		}
	}
	return msgs, nil
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

// laterID is the later of two stream entry ids ("<ms>-<seq>"; "" is the
// earliest).
func laterID(a, b string) string {
	parse := func(id string) (uint64, uint64) {
		ms, seq, _ := strings.Cut(id, "-")
		m, _ := strconv.ParseUint(ms, 10, 64)
		s, _ := strconv.ParseUint(seq, 10, 64)
		return m, s
	}
	am, as := parse(a)
	bm, bs := parse(b)
	if a == "" || bm > am || (bm == am && bs > as) {
		return b
	}
	return a
}
