// Backfills: the leader queues each running backfill's occurrences a few
// at a time, as earlier ones end, so that a backfill takes at most part of
// its owner's share of the workers and stops queueing the moment it is
// cancelled.

package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
)

const (
	// backfillBusy and backfillIdle are how often the leader looks at the
	// backfills while some run, and while none does.
	backfillBusy = 200 * time.Millisecond
	backfillIdle = time.Second
	// backfillsPerRound bounds the backfills one round feeds.
	backfillsPerRound = 100
	// maxBackfillWindow bounds the occurrences of one backfill queued and
	// not ended yet.
	maxBackfillWindow = 100
	// backfillRefeed, after the job's timeout, is how long a backfill may
	// go without an occurrence ending before the leader queues those not
	// ended again: Redis may have lost them (a start of one that ran
	// already is refused, so nothing runs twice).
	backfillRefeed = time.Minute
)

// runBackfills feeds the running backfills until ctx ends (the
// leadership): every backfillBusy while some run, every backfillIdle
// otherwise. Its own goroutine, so that a round over many backfills never
// delays a loader round.
func (l *Leader) runBackfills(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if l.backfill(ctx) {
				t.Reset(backfillBusy)
			} else {
				t.Reset(backfillIdle)
			}
		}
	}
}

// backfill feeds a page of the running backfills, the next page each
// round, and says whether any runs.
func (l *Leader) backfill(ctx context.Context) bool {
	bs, err := l.store.RunningBackfills(ctx, l.backfillAfter, backfillsPerRound)
	if err == nil && len(bs) == 0 && l.backfillAfter != uuid.Nil {
		l.backfillAfter = uuid.Nil // from the first again
		bs, err = l.store.RunningBackfills(ctx, uuid.Nil, backfillsPerRound)
	}
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("backfills_unread", zap.Error(err))
		}
		return false
	}
	if len(bs) == 0 {
		return false
	}
	l.backfillAfter = bs[len(bs)-1].ID
	if len(bs) < backfillsPerRound {
		l.backfillAfter = uuid.Nil
	}
	var owners []uuid.UUID
	for _, b := range bs {
		if !slices.Contains(owners, b.Owner) {
			owners = append(owners, b.Owner)
		}
	}
	running, err := l.store.RunningBackfillsPerOwner(ctx, owners)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("backfills_uncounted", zap.Error(err))
		}
		return true
	}
	for _, b := range bs {
		if err := l.feed(ctx, b, l.backfillWindow(b, running[b.Owner]), l.clock()); err != nil && ctx.Err() == nil {
			l.log.Warn("backfill_not_fed", zap.Stringer("backfill_id", b.ID), zap.Error(err))
		}
	}
	return true
}

// backfillWindow is how many occurrences of b may be queued and not ended
// at once, its owner running others too: one under skip or buffer_one,
// so that they run in order, one after the other; under allow a share of
// half its owner's cap on attempts in flight (at most maxBackfillWindow in
// all), so that its owner's own jobs keep the other half.
func (l *Leader) backfillWindow(b *store.Backfill, ownerBackfills int) int {
	if b.Overlap != job.OverlapAllow {
		return 1
	}
	owner := 0
	if l.caps != nil {
		owner = l.caps().Owner
	}
	share := maxBackfillWindow
	if owner > 0 {
		share = min(max(owner/2, 1), maxBackfillWindow)
	}
	return max(share/max(ownerBackfills, 1), 1)
}

// feed moves backfill b on: it counts its queued occurrences that ended,
// queues again those not started when the job moved to a new generation
// (an edit, a pause and resume made them stale) or when none ended for a
// while (Redis may have lost them), queues the next ones its window has
// room for (those that ran already are counted, not queued), and
// completes it once the range is walked and every queued one ended. A job
// gone or ended cancels it; a paused job holds it. It writes the backfill
// only when something changed.
func (l *Leader) feed(ctx context.Context, b *store.Backfill, window int, now time.Time) error {
	before := *b
	before.Inflight = slices.Clone(b.Inflight)
	j, err := l.store.GetJob(ctx, uuid.Nil, b.JobID)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return l.endBackfill(ctx, b, now, "the job was deleted")
	case err != nil:
		return err
	case j.Status != job.StatusScheduled && j.Status != job.StatusPaused:
		return l.endBackfill(ctx, b, now, "the job is "+string(j.Status))
	}
	unstarted, err := l.settleBackfill(ctx, b, now)
	if err != nil {
		return err
	}
	var entries []queue.Entry
	if j.Status == job.StatusScheduled {
		stale := j.Generation != b.Generation
		stalled := now.Sub(b.ProgressedAt) > j.Timeout+backfillRefeed
		if len(unstarted) > 0 && (stale || stalled) {
			l.log.Info("backfill_requeued", zap.Stringer("backfill_id", b.ID), zap.Int("occurrences", len(unstarted)),
				zap.Bool("new_generation", stale))
			for _, at := range unstarted {
				entries = append(entries, backfillEntry(j, b, at, now))
			}
			b.ProgressedAt = now
		}
		b.Generation = j.Generation
		more, err := l.planBackfill(ctx, j, b, window, now)
		if err != nil {
			return err
		}
		entries = append(entries, more...)
	}
	// Queued before the cursor is saved: a save that fails plans them
	// again next round, and a second copy of an occurrence never starts.
	if len(entries) > 0 {
		if err := l.queue.EnqueueSoon(ctx, entries, now); err != nil {
			return err
		}
	}
	if !b.Cursor.Before(b.To) && len(b.Inflight) == 0 {
		b.Status, b.FinishedAt = store.BackfillCompleted, now
	}
	if reflect.DeepEqual(before, *b) {
		return nil
	}
	_, err = l.store.SaveBackfill(ctx, b)
	return err
}

// settleBackfill takes the occurrences of b whose final outcome is
// recorded out of its inflight, counting them, and returns those of the
// others that have no run yet (a failed attempt's retry is the worker's).
func (l *Leader) settleBackfill(ctx context.Context, b *store.Backfill, now time.Time) ([]time.Time, error) {
	if len(b.Inflight) == 0 {
		return nil, nil
	}
	outcomes, err := l.store.Outcomes(ctx, b.JobID, b.Inflight)
	if err != nil {
		return nil, err
	}
	kept := make([]time.Time, 0, len(b.Inflight))
	var unstarted []time.Time
	for _, at := range b.Inflight {
		switch outcomes[at.UnixMilli()] {
		case "":
			kept, unstarted = append(kept, at), append(unstarted, at)
		case job.RunRunning, job.RunFailed:
			kept = append(kept, at)
		case job.RunCompleted:
			b.Completed++
		case job.RunSkipped:
			b.Skipped++
		default:
			b.Failed++
		}
	}
	if len(kept) != len(b.Inflight) {
		b.ProgressedAt = now
	}
	b.Inflight = kept
	return unstarted, nil
}

// planBackfill walks b's range from its cursor for as many occurrences as
// its window has room for, and returns the entries of those that never
// ran. Their due times are the job's: nominal time plus its jitter offset.
func (l *Leader) planBackfill(ctx context.Context, j *job.Job, b *store.Backfill, window int, now time.Time) ([]queue.Entry, error) {
	room := window - len(b.Inflight)
	if room <= 0 || !b.Cursor.Before(b.To) {
		return nil, nil
	}
	sched, err := schedule.FromJSONWithin(schedule.LoaderBudget(ctx), j.Schedule)
	if err != nil {
		return nil, fmt.Errorf("read the job's schedule: %w", err)
	}
	sched = sched.Unbounded() // the range names the occurrences, not start_at or end_at
	var due []time.Time
	cursor, after := b.To, b.Cursor.Add(-time.Millisecond)
	for len(due) < room {
		n, ok := sched.Next(after)
		if !ok || !n.Before(b.To) {
			if sched.Err() != nil {
				cursor = after.Add(time.Millisecond) // out of budget: on from here next round
			}
			break
		}
		if n.Add(j.JitterOffset).After(now) {
			// Jittered past now: due later than asked to run; it is
			// queued once due (meanwhile the job's own load may run it).
			cursor = n
			break
		}
		due, after, cursor = append(due, n.Add(j.JitterOffset)), n, n.Add(time.Millisecond)
	}
	outcomes, err := l.store.Outcomes(ctx, j.ID, due)
	if err != nil {
		return nil, err
	}
	var entries []queue.Entry
	for _, at := range due {
		if _, ran := outcomes[at.UnixMilli()]; ran {
			b.Existing++
			continue
		}
		b.Queued++
		b.Inflight = append(b.Inflight, at)
		entries = append(entries, backfillEntry(j, b, at, now))
	}
	if len(entries) > 0 {
		b.ProgressedAt = now
	}
	b.Cursor = cursor
	return entries, nil
}

// backfillEntry is b's first attempt of j's occurrence due at at, due now.
func backfillEntry(j *job.Job, b *store.Backfill, at, now time.Time) queue.Entry {
	o := j.Occurrence(at)
	o.Backfill = b.ID
	return queue.Entry{Occurrence: o, DueAt: now}
}

// endBackfill cancels b, for reason.
func (l *Leader) endBackfill(ctx context.Context, b *store.Backfill, now time.Time, reason string) error {
	b.Status, b.FinishedAt, b.Reason = store.BackfillCancelled, now, reason
	_, err := l.store.SaveBackfill(ctx, b)
	return err
}
