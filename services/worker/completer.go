// Completing: one completer group-commits the outcomes of ended attempts in
// one Postgres statement (an attempt's one write), then hands the batch's
// Redis half (acknowledgements, retries, the leases' end) to its settler,
// which settles everything handed to it since its last call in one Redis
// round trip. The two halves run side by side: a Redis that stalls holds
// back the settles, never the recording of outcomes (an attempt that ends
// during the stall is in Postgres when its lease runs out, and is not run
// again), and at a steady load settles coalesce over several commits. It
// gives an entry's slot back as it takes the entry over. It also
// auto-pauses a recurring job that keeps failing and sends the alerts
// outcomes raise.

package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// completer settles what the starter and the runners hand it.
type completer struct {
	w     *Worker
	slots *slotPool
	in    chan []*item
	// ended takes the entries of attempts that ended whose places in their
	// lanes may be awaited (queue.Message.Capped), for the releaser to give
	// them back before the group commit.
	ended chan queue.Message
	// halves takes the Redis half of each batch recorded, for the settler.
	halves chan redisHalf
	// alerts holds a token per failure alert in flight (see maxAlerts).
	alerts chan struct{}
	// calls is told when a commit wrote callbacks.
	calls *caller
	done  sync.WaitGroup
}

func newCompleter(w *Worker, slots *slotPool, calls *caller) *completer {
	return &completer{w: w, slots: slots, calls: calls, in: make(chan []*item, w.Concurrency),
		ended: make(chan queue.Message, w.Concurrency), halves: make(chan redisHalf, maxHalves),
		alerts: make(chan struct{}, maxAlerts)}
}

// maxHalves bounds the batches recorded and not yet handed to the settler:
// beyond it (Redis stalled long enough for that many commits) the recording
// waits for the settler.
const maxHalves = 256

// start starts the completer, its settler and the releaser; their calls
// run under ctx, which outlives the readers by the grace period.
func (c *completer) start(ctx context.Context) {
	c.done.Go(func() {
		c.record(ctx)
		close(c.halves)
	})
	c.done.Go(func() { c.settler(ctx) })
	c.done.Go(func() { c.releaser(ctx) })
}

// stop waits for everything handed over to be settled; the runners have
// stopped.
func (c *completer) stop() {
	close(c.in)
	close(c.ended)
	c.done.Wait()
}

// end hands over an attempt a runner ended, and its entry to the releaser
// when a member may be waiting for its place (queue.Message.Capped).
func (c *completer) end(it *item) {
	if it.action != leave && it.msg.Capped {
		c.ended <- it.msg
	}
	c.take([]*item{it})
}

// settleAll hands over entries the starter did not run.
func (c *completer) settleAll(items []*item) {
	if len(items) > 0 {
		c.take(items)
	}
}

// take queues items for the group commit and gives their slots back: the
// one place a slot held by an entry is given back. A slot bounds what a
// worker reads and runs, not what waits to be recorded: an entry stays
// pending in its stream until settled, so nothing is lost by freeing its
// slot first, and a slow outcome write (Postgres busy) then delays no
// other attempt's start. The queue is bounded (c.in), so a completer that
// cannot write holds the runners, and through them the slots, back.
func (c *completer) take(items []*item) {
	c.in <- items
	c.slots.give(len(items))
}

// record is the group commit: it takes everything waiting, and what comes
// within the commit window after the first, writes the outcomes to
// Postgres in one statement, then hands the Redis half to the settler.
// While a flush is in flight the next batch gathers too, so batches grow
// with load.
func (c *completer) record(ctx context.Context) {
	const maxBatch = 1024
	batch := make([]*item, 0, maxBatch)
	win := window{d: c.w.CommitWindow}
	for its := range c.in {
		batch = append(batch[:0], its...)
		gather(&win, c.in, len(batch), maxBatch, func(its []*item) int {
			batch = append(batch, its...)
			return len(its)
		})
		c.flush(ctx, batch)
	}
}

// window is how long a gather waits for more after the first value, with
// its timer, reused from one gather to the next; 0 takes only what waits.
type window struct {
	d     time.Duration
	timer *time.Timer
}

// gather takes from ch, into add (which says how many items a value
// holds), what waits and what comes within w, until have reaches most or
// ch closes. It takes what waits, sleeps out the window, then takes what
// came meanwhile: values sent during the window wait in ch (buffered)
// instead of waking the gatherer one by one, which at a steady load was a
// wake-up of the completer and of the releaser for every attempt.
func gather[T any](w *window, ch <-chan T, have, most int, add func(T) int) {
	if !drain(ch, &have, most, add) || have >= most || w.d <= 0 {
		return
	}
	if w.timer == nil {
		w.timer = time.NewTimer(w.d)
	} else {
		w.timer.Reset(w.d)
	}
	<-w.timer.C
	drain(ch, &have, most, add)
}

// drain takes what waits in ch, until have reaches most; false when ch is
// closed.
func drain[T any](ch <-chan T, have *int, most int, add func(T) int) bool {
	for *have < most {
		select {
		case v, ok := <-ch:
			if !ok {
				return false
			}
			*have += add(v)
		default:
			return true
		}
	}
	return true
}

// flush settles one batch.
func (c *completer) flush(ctx context.Context, batch []*item) {
	w := c.w
	var results []store.Result
	var recorded []*item
	settle := map[int]queue.Settlement{}
	var aside, back map[*queue.Shard][]queue.Message
	add := func(m map[*queue.Shard][]queue.Message, it *item) map[*queue.Shard][]queue.Message {
		if m == nil {
			m = map[*queue.Shard][]queue.Message{}
		}
		m[it.shard] = append(m[it.shard], it.msg)
		return m
	}
	now := w.Clock()
	of := func(shard int) queue.Settlement {
		s := settle[shard]
		s.Now = now
		return s
	}
	for _, it := range batch {
		occ := it.msg.Occurrence
		s := of(it.msg.Shard)
		switch {
		case it.finished:
			s.Ended = append(s.Ended, occ)
		case it.dropped:
			s.Dropped = append(s.Dropped, occ)
		}
		switch it.action {
		case record, deadLetter:
			res := store.Result{ID: it.run, Occurrence: occ, Owner: it.job.Owner, Status: it.status, DueAt: it.msg.DueAt, Throttled: it.msg.Throttled,
				StartedAt: it.startedAt, FinishedAt: it.endedAt, Output: it.out.Output, Error: it.out.Error,
				TrimHistory: it.job.History == job.HistoryFailures,
				EndsJob:     len(it.job.Schedule) == 0 || it.job.LastAt.Equal(occ.ScheduledFor)}
			if it.reason != "" {
				res.Error = it.reason
			}
			if it.job.Notify != nil && it.job.Notify.Callback != nil {
				res.Callback = callbackBody(it, res.Status, res.Error)
			}
			results = append(results, res)
			recorded = append(recorded, it)
			continue // settled once the outcome is in Postgres
		case ack:
			s.IDs = append(s.IDs, it.msg.ID)
		case ackRetry:
			s.IDs = append(s.IDs, it.msg.ID)
			s.Retries = append(s.Retries, queue.Entry{Occurrence: occ.Next(), DueAt: now})
		case requeue:
			s.IDs = append(s.IDs, it.msg.ID)
			s.Retries = append(s.Retries, queue.Entry{Occurrence: occ, DueAt: it.requeueAt})
		case giveBack:
			back = add(back, it)
		case setAside:
			aside = add(aside, it)
		case leave:
		}
		settle[it.msg.Shard] = s
	}
	if len(results) > 0 {
		recorded, results = c.write(ctx, recorded, results)
		for _, it := range recorded {
			occ := it.msg.Occurrence
			s := of(it.msg.Shard)
			s.Ended = append(s.Ended, occ)
			switch {
			case it.action == deadLetter:
				it.msg.Err = errors.New(it.reason)
				aside = add(aside, it)
			case it.status == job.RunFailed:
				s.IDs = append(s.IDs, it.msg.ID)
				s.Retries = append(s.Retries, queue.Entry{Occurrence: occ.Next(), DueAt: it.endedAt.Add(w.backoff(occ.Attempt))})
			default:
				s.IDs = append(s.IDs, it.msg.ID)
			}
			settle[it.msg.Shard] = s
		}
		for _, r := range results {
			if r.Callback != nil {
				c.calls.poke()
				break
			}
		}
		c.observe(recorded, results)
		paused := c.autoPause(ctx, recorded, results)
		c.alert(ctx, recorded, results, paused)
	}
	select {
	case c.halves <- redisHalf{settle: settle, aside: aside, back: back}:
	case <-ctx.Done():
	}
}

// redisHalf is what settling a batch does in Redis, in order: set entries
// aside (dead letters, poison), give entries back, then settle each shard.
type redisHalf struct {
	settle      map[int]queue.Settlement
	aside, back map[*queue.Shard][]queue.Message
}

// merge adds o's work to h's.
func (h *redisHalf) merge(o redisHalf) {
	for i, s := range o.settle {
		m := h.settle[i]
		m.IDs = append(m.IDs, s.IDs...)
		m.Retries = append(m.Retries, s.Retries...)
		m.Ended = append(m.Ended, s.Ended...)
		m.Dropped = append(m.Dropped, s.Dropped...)
		if s.Now.After(m.Now) {
			m.Now = s.Now
		}
		h.settle[i] = m
	}
	join := func(to *map[*queue.Shard][]queue.Message, from map[*queue.Shard][]queue.Message) {
		for q, msgs := range from {
			if *to == nil {
				*to = map[*queue.Shard][]queue.Message{}
			}
			(*to)[q] = append((*to)[q], msgs...)
		}
	}
	join(&h.aside, o.aside)
	join(&h.back, o.back)
}

// settler runs the Redis halves of recorded batches, those waiting merged
// into one: the entries set aside and given back once (a failure leaves
// them pending, for their next delivery), the settles retried through an
// outage until ctx ends, taking in what more is recorded meanwhile, so that
// an entry is never acknowledged before its outcome is in Postgres and the
// recording never waits on Redis but for maxHalves batches.
func (c *completer) settler(ctx context.Context) {
	var waiting window // 0: only what waits
	for h := range c.halves {
		more := func(o redisHalf) int {
			h.merge(o)
			return 1
		}
		gather(&waiting, c.halves, 1, maxHalves, more)
		c.setAside(ctx, h.aside)
		c.giveBack(ctx, h.back)
		h.aside, h.back = nil, nil
		for attempt := 0; ; attempt++ {
			err := c.w.Queue.Settle(ctx, h.settle)
			if err == nil {
				c.w.settled.Signal()
				break
			}
			if ctx.Err() != nil {
				return
			}
			if attempt == 0 {
				c.w.Log.Warn("settle_failed", zap.Error(err))
			}
			sleep(ctx, backoffStep(attempt))
			// What was recorded meanwhile joins the retry.
			gather(&waiting, c.halves, 1, maxHalves, more)
			c.setAside(ctx, h.aside)
			c.giveBack(ctx, h.back)
			h.aside, h.back = nil, nil
		}
	}
}

// setAside moves entries to the dead stream. A failure leaves them
// pending: their next delivery finds the attempt finished and acknowledges
// it, or sets it aside again.
func (c *completer) setAside(ctx context.Context, aside map[*queue.Shard][]queue.Message) {
	w := c.w
	for q, msgs := range aside {
		if err := q.SetAside(ctx, msgs); err != nil {
			w.Log.Warn("set_aside_failed", zap.Error(err))
			continue
		}
		n := 0
		for _, m := range msgs {
			if m.Deliveries > w.MaxDeliveries && w.MaxDeliveries > 0 {
				n++
			}
		}
		w.Metrics.DeadLettered.Add(float64(n))
	}
}

// giveBack hands entries back to the group. A failure leaves the entries
// pending all the same, this reclaim counted.
func (c *completer) giveBack(ctx context.Context, back map[*queue.Shard][]queue.Message) {
	for q, msgs := range back {
		if _, err := q.GiveBack(ctx, c.w.Name, msgs); err != nil {
			c.w.Log.Warn("give_back_failed", zap.Int("entries", len(msgs)), zap.Error(err))
		}
	}
}

// write records the outcomes in one statement, through an outage, and
// returns those recorded. Should Postgres refuse the statement's data (one
// outcome it cannot take spoils the batch), it writes halves, down to the
// one outcome refused, and writes that one again without what the target
// answered (its output, its error text): the attempt ran, and must not run
// again for want of a place for its answer. One refused even so is left
// unrecorded, its entry pending and its lease kept: taken over once its
// lease ends, run again, and dead-lettered after MaxDeliveries. So is
// everything when ctx ends first.
func (c *completer) write(ctx context.Context, items []*item, results []store.Result) ([]*item, []store.Result) {
	w := c.w
	at := make([]int, len(results))
	for i := range at {
		at[i] = i
	}
	var written []int
	_, all := bisect(ctx, w.Log, at, func(part []int) ([]struct{}, error) {
		batch := make([]store.Result, len(part))
		for k, i := range part {
			batch[k] = results[i]
		}
		if err := w.Store.FinishRuns(ctx, batch, w.Clock()); err != nil {
			return nil, err
		}
		written = append(written, part...)
		return nil, nil
	}, func(i int, err error) {
		occ := results[i].Occurrence
		w.Log.Error("finish_refused", zap.String("job_id", occ.JobID.String()), zap.Int("attempt", occ.Attempt),
			zap.String("code", pgCode(err)))
		res := results[i]
		res.Output = ""
		res.Error = "its answer was not recorded: Postgres refused it (SQLSTATE " + pgCode(err) + ")"
		if _, err := retryPG(ctx, w.Log, func() (struct{}, error) {
			return struct{}{}, w.Store.FinishRuns(ctx, []store.Result{res}, w.Clock())
		}); err == nil {
			results[i] = res
			written = append(written, i)
		}
	})
	if !all && ctx.Err() == nil {
		w.Log.Error("finish_runs_abandoned", zap.Int("runs", len(results)-len(written)))
	}
	slices.Sort(written)
	outItems := make([]*item, len(written))
	outResults := make([]store.Result, len(written))
	for k, i := range written {
		outItems[k], outResults[k] = items[i], results[i]
	}
	return outItems, outResults
}

// maxReleaseWindow bounds how long the releaser gathers, whatever the
// commit window: a lane at its cap (an owner's, a host's) starts its next
// attempt only once the place of one that ended is back, so the longer
// commit window that makes outcomes cheaper to record must not slow a capped
// lane down.
const maxReleaseWindow = 12500 * time.Microsecond

// releaser gives back, in batches, the places in their lanes of entries
// whose attempts ended (queue.Queue.Release), so that an owner's next
// attempt does not wait for the group commit of this one's outcome. It
// takes only entries that took a lane's last place (queue.Message.Capped):
// any other place comes back with the settle, which costs Redis less than
// a release and a settle. A
// failure is logged, once per outage, and dropped: settling the entries
// then gives their places back.
func (c *completer) releaser(ctx context.Context) {
	const maxBatch = 1024
	failing := false
	// It gathers for half the commit window after the first, at most
	// maxReleaseWindow: at a steady load a release per attempt would be a
	// Redis call per attempt, and a place comes back a few ms later at most.
	win := window{d: min(c.w.CommitWindow/2, maxReleaseWindow)}
	for m := range c.ended {
		byShard := map[int][]string{}
		add := func(m queue.Message) int {
			byShard[m.Shard] = append(byShard[m.Shard], m.ID)
			return 1
		}
		gather(&win, c.ended, add(m), maxBatch, add)
		err := c.w.Queue.Release(ctx, byShard)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			c.w.Log.Warn("release_failed", zap.Error(err))
			failing = true
		case err == nil:
			failing = false
		}
	}
}

// observe logs one line per recorded outcome and counts it. It runs only
// once the outcomes are in Postgres, so an outcome that a shutdown left
// unrecorded (and another worker will redo) is neither logged nor counted.
// The line carries ids and figures only: never the payload, the output, the
// error text (a target may echo a URL with its token) or the signing secret.
func (c *completer) observe(batch []*item, results []store.Result) {
	for i, it := range batch {
		res := results[i]
		typ := string(it.job.Type)
		dur := it.endedAt.Sub(it.startedAt)
		c.w.Metrics.Runs.WithLabelValues(typ, string(res.Status)).Inc()
		ran := res.Status != job.RunSkipped && res.Status != job.RunExpired && it.action != deadLetter
		if ran {
			c.w.Metrics.Duration.WithLabelValues(typ).Observe(max(dur.Seconds(), 0))
		}
		c.w.Log.Info("run_finished",
			zap.String("job_id", it.msg.Occurrence.JobID.String()), zap.String("owner", it.job.Owner.String()),
			zap.String("type", typ), zap.Int("attempt", it.msg.Occurrence.Attempt), zap.String("status", string(res.Status)),
			zap.Int64("lateness_ms", it.startedAt.Sub(it.msg.Released()).Milliseconds()), zap.Int64("duration_ms", dur.Milliseconds()),
			zap.Int("status_code", it.out.StatusCode))
	}
}

// autoPause pauses the recurring jobs of this batch whose last occurrences
// all failed permanently, and returns them.
func (c *completer) autoPause(ctx context.Context, batch []*item, results []store.Result) []uuid.UUID {
	var ids []uuid.UUID
	for i, it := range batch {
		if results[i].Status == job.RunPermanentlyFailed && len(it.job.Schedule) > 0 {
			ids = append(ids, it.msg.Occurrence.JobID)
		}
	}
	if c.w.AutoPauseAfter <= 0 || len(ids) == 0 {
		return nil
	}
	paused, err := c.w.Store.AutoPause(ctx, ids, c.w.AutoPauseAfter, c.w.Clock())
	if err != nil {
		c.w.Log.Warn("auto_pause_failed", zap.Error(err))
		return nil
	}
	for _, id := range paused {
		c.w.Log.Warn("job_auto_paused", zap.String("job_id", id.String()), zap.Int("failed_occurrences", c.w.AutoPauseAfter))
	}
	return paused
}
