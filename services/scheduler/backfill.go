// Backfills: the leader queues each running backfill's occurrences a few
// at a time, as earlier ones end, so that a backfill takes at most part of
// its owner's share of the workers and stops queueing the moment it is
// cancelled.

package main

import (
	"context"
	"errors"
	"fmt"
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

// backfill feeds the running backfills, and says whether any runs.
func (l *Leader) backfill(ctx context.Context) bool {
	bs, err := l.store.RunningBackfills(ctx, backfillsPerRound)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("backfills_unread", zap.Error(err))
		}
		return false
	}
	for _, b := range bs {
		if err := l.feed(ctx, b, l.clock()); err != nil && ctx.Err() == nil {
			l.log.Warn("backfill_not_fed", zap.Stringer("backfill_id", b.ID), zap.Error(err))
		}
	}
	return len(bs) > 0
}

// backfillWindow is how many occurrences of b may be queued and not ended
// at once: one under skip or buffer_one, so that they run in order; under
// allow half its owner's cap on attempts in flight (its owner's other jobs
// keep the rest), at most maxBackfillWindow.
func (l *Leader) backfillWindow(b *store.Backfill) int {
	if b.Overlap != job.OverlapAllow {
		return 1
	}
	owner := 0
	if l.caps != nil {
		owner = l.caps().Owner
	}
	if owner <= 0 {
		return maxBackfillWindow
	}
	return min(max(owner/2, 1), maxBackfillWindow)
}

// feed moves backfill b on: it counts its queued occurrences that ended,
// queues the next ones its window has room for (those that ran already are
// counted, not queued), and completes it once the range is walked and
// every queued one ended. A job gone or ended cancels it; a paused job
// holds it.
func (l *Leader) feed(ctx context.Context, b *store.Backfill, now time.Time) error {
	j, err := l.store.GetJob(ctx, uuid.Nil, b.JobID)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return l.endBackfill(ctx, b, now, "the job was deleted")
	case err != nil:
		return err
	case j.Status != job.StatusScheduled && j.Status != job.StatusPaused:
		return l.endBackfill(ctx, b, now, "the job is "+string(j.Status))
	}
	if err := l.settleBackfill(ctx, b, now); err != nil {
		return err
	}
	var entries []queue.Entry
	if j.Status == job.StatusScheduled {
		if len(b.Inflight) > 0 && now.Sub(b.ProgressedAt) > j.Timeout+backfillRefeed {
			l.log.Info("backfill_requeued", zap.Stringer("backfill_id", b.ID), zap.Int("occurrences", len(b.Inflight)))
			for _, at := range b.Inflight {
				entries = append(entries, backfillEntry(j, b, at, now))
			}
			b.ProgressedAt = now
		}
		more, err := l.planBackfill(ctx, j, b, now)
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
	_, err = l.store.SaveBackfill(ctx, b)
	return err
}

// settleBackfill takes the occurrences of b whose final outcome is
// recorded out of its inflight, counting them.
func (l *Leader) settleBackfill(ctx context.Context, b *store.Backfill, now time.Time) error {
	if len(b.Inflight) == 0 {
		return nil
	}
	outcomes, err := l.store.Outcomes(ctx, b.JobID, b.Inflight)
	if err != nil {
		return err
	}
	kept := make([]time.Time, 0, len(b.Inflight))
	for _, at := range b.Inflight {
		switch outcomes[at.UnixMilli()] {
		case "", job.RunRunning, job.RunFailed:
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
	return nil
}

// planBackfill walks b's range from its cursor for as many occurrences as
// its window has room for, and returns the entries of those that never
// ran. Their due times are the job's: nominal time plus its jitter offset.
func (l *Leader) planBackfill(ctx context.Context, j *job.Job, b *store.Backfill, now time.Time) ([]queue.Entry, error) {
	room := l.backfillWindow(b) - len(b.Inflight)
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
