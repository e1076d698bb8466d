// Starting: what the readers read is checked against Postgres in one read
// per batch, leased in Redis in one script per shard, and handed to the
// runners; what must not run goes straight to the completer, which settles
// it.

package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/calendar"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
)

// fenceRetry is how soon an entry its job's fence stopped is tried again:
// the change behind the fence commits (the entry is then stale) or rolls
// back (it runs) within that.
const fenceRetry = 250 * time.Millisecond

// starter starts the batches the readers and reclaimers read, one at a
// time (concurrent starts of small batches only contend), gathering every
// batch waiting into one Postgres read.
type starter struct {
	w       *Worker
	runners *runners
	comp    *completer
	in      chan batch
	done    sync.WaitGroup
}

func newStarter(w *Worker, r *runners, c *completer) *starter {
	return &starter{w: w, runners: r, comp: c, in: make(chan batch, 2*len(w.Queue.Shards())+2)}
}

// start starts the starter; its Postgres and Redis calls run under ctx,
// which outlives the readers by the grace period.
func (s *starter) start(ctx context.Context) {
	s.done.Go(func() {
		for b := range s.in {
			batches := []batch{b}
		more:
			for {
				select {
				case b, ok := <-s.in:
					if !ok {
						break more
					}
					batches = append(batches, b)
				default:
					break more
				}
			}
			s.startAll(ctx, batches)
		}
	})
}

// stop waits for the batches read to be started; the readers have stopped.
func (s *starter) stop() {
	close(s.in)
	s.done.Wait()
}

// startAll starts batches read from any shards: one Postgres read for all,
// then one lease script per shard.
func (s *starter) startAll(ctx context.Context, batches []batch) {
	var items []*item
	var occs []job.Occurrence
	var settle []*item
	seen := map[attemptID]bool{}
	entries := map[entryID]bool{}
	for _, b := range batches {
		for _, m := range b.msgs {
			it := &item{msg: m, shard: b.shard}
			entry := entryID{m.Shard, m.ID}
			switch key := attemptKey(m.Occurrence); {
			case entries[entry]:
				// The same entry twice (read back after a failed read as
				// well as reclaimed): one copy is enough, and the other must
				// not settle the entry.
				it.action = leave
				settle = append(settle, it)
			case m.Err != nil:
				s.w.Log.Error("poison_entry_set_aside", zap.String("entry_id", m.ID), zap.Error(m.Err))
				it.action = setAside
				settle = append(settle, it)
			case seen[key]:
				// The same attempt twice in one batch (a re-add after a
				// fault): run it once, acknowledge the copy.
				it.action = ack
				settle = append(settle, it)
			default:
				seen[key] = true
				items = append(items, it)
				occs = append(occs, m.Occurrence)
			}
			entries[entry] = true
		}
	}
	if len(items) > 0 {
		now := s.w.Clock()
		fetched, err := retryPG(ctx, s.w.Log, func() ([]store.Fetched, error) { return s.w.Store.Fetch(ctx, occs, now) })
		if err != nil {
			// Left pending: reclaimed after the visibility timeout.
			if ctx.Err() == nil {
				s.w.Log.Error("fetch_refused", zap.Int("entries", len(items)), zap.String("code", pgCode(err)))
			}
			for _, it := range items {
				it.action = leave
			}
			settle = append(settle, items...)
			items = nil
		}
		unsure := s.awaitRetries(ctx, items, fetched, now)
		var leasing []*item
		var unended []store.Result
		for i, it := range items {
			if unsure[i] {
				it.action = leave
				settle = append(settle, it)
				continue
			}
			if s.judge(it, fetched[i], now) {
				leasing = append(leasing, it)
			} else {
				settle = append(settle, it)
			}
			if it.unended {
				unended = append(unended, store.Result{Occurrence: it.msg.Occurrence})
			}
		}
		if len(unended) > 0 {
			s.w.Log.Info("jobs_ended_late", zap.Int("jobs", len(unended)))
			if err := s.w.Store.EndJobs(ctx, unended, now); err != nil {
				s.w.Log.Warn("end_jobs_failed", zap.Int("jobs", len(unended)), zap.String("code", pgCode(err)))
			}
		}
		leasing, dropped := s.backfilled(ctx, leasing)
		settle = append(settle, dropped...)
		leasing, dropped = s.calendared(ctx, leasing)
		settle = append(settle, dropped...)
		settle = append(settle, s.lease(ctx, leasing)...)
	}
	s.comp.settleAll(settle)
}

// backfilled reads the backfills of the attempts among items that a
// backfill queued (one read, only for a batch that holds one), and drops
// those of a backfill cancelled or gone, returning the others and those
// dropped. Should the read
// fail, the backfill's attempts are left pending, to be reclaimed.
func (s *starter) backfilled(ctx context.Context, items []*item) (run, settle []*item) {
	var ids []uuid.UUID
	for _, it := range items {
		if b := it.msg.Occurrence.Backfill; b != uuid.Nil && !slices.Contains(ids, b) {
			ids = append(ids, b)
		}
	}
	if len(ids) == 0 {
		return items, nil
	}
	states, err := s.w.Store.BackfillStates(ctx, ids)
	for _, it := range items {
		b := it.msg.Occurrence.Backfill
		switch {
		case b == uuid.Nil:
			run = append(run, it)
		case err != nil:
			it.action = leave
			settle = append(settle, it)
		case !states[b].Running:
			s.w.Log.Info("entry_dropped_backfill_not_running", zap.String("job_id", it.msg.Occurrence.JobID.String()),
				zap.String("backfill_id", b.String()))
			it.action, it.dropped = ack, true
			settle = append(settle, it)
		default:
			run = append(run, it)
		}
	}
	if err != nil && ctx.Err() == nil {
		s.w.Log.Warn("backfill_states_failed", zap.Int("backfills", len(ids)), zap.String("code", pgCode(err)))
	}
	return run, settle
}

// awaitRetries fetches again, in place, once their transactions end, the
// attempts fetched with a job that failed permanently: a retry of it puts
// its attempt in Redis before it commits. It returns those it could not
// fetch again, to be left pending and reclaimed.
func (s *starter) awaitRetries(ctx context.Context, items []*item, fetched []store.Fetched, now time.Time) map[int]bool {
	var at []int
	var occs []job.Occurrence
	for i, f := range fetched {
		if f.Job != nil && f.Job.Status == job.StatusPermanentlyFailed && items[i].msg.Occurrence.Attempt > 1 {
			at = append(at, i)
			occs = append(occs, items[i].msg.Occurrence)
		}
	}
	if len(occs) == 0 {
		return nil
	}
	again, err := s.w.Store.FetchCommitted(ctx, occs, now)
	if err != nil {
		s.w.Log.Warn("fetch_committed_failed", zap.Int("entries", len(occs)), zap.String("code", pgCode(err)))
		unsure := make(map[int]bool, len(at))
		for _, i := range at {
			unsure[i] = true
		}
		return unsure
	}
	for k, i := range at {
		fetched[i] = again[k]
	}
	return nil
}

// judge reads what Postgres holds of an attempt: true when it may be
// leased, false when it is settled as it is (its outcome recorded already;
// its job gone, no longer scheduled or planned under an older generation).
func (s *starter) judge(it *item, f store.Fetched, now time.Time) bool {
	occ := it.msg.Occurrence
	current := live(f.Job, occ) && occ.Generation >= f.Job.Generation
	switch {
	case f.Outcome != "" && f.Outcome != job.RunRunning:
		// Finished before (a redelivery racing its settle, or its worker
		// died between recording and settling): its lease ends, and a
		// failed attempt's retry, which may not be in the due set yet, is
		// put there.
		it.action, it.finished = ack, true
		if f.Outcome == job.RunFailed && current {
			it.action = ackRetry
		}
		// Its job, still scheduled, should have ended with it: the
		// outcome was recorded while a claim of the job was not committed
		// (see store.EndJobs).
		it.unended = f.Outcome != job.RunFailed && current && f.Job.Status == job.StatusScheduled &&
			(len(f.Job.Schedule) == 0 || f.Job.LastAt.Equal(occ.ScheduledFor))
		return false
	case !live(f.Job, occ):
		s.w.Log.Info("entry_dropped_job_not_scheduled", zap.String("job_id", occ.JobID.String()))
		it.action, it.dropped = ack, true
		return false
	case !current:
		// Planned under a schedule the job has left: stale, whatever the
		// attempt of its occurrence is doing.
		it.action, it.dropped = ack, true
		return false
	case f.Outcome == job.RunRunning && f.LeaseUntil.After(now):
		// A start a release that recorded starts leased to a live worker.
		it.action = giveBack
		return false
	}
	it.job = f.Job
	return true
}

// live says whether job j still runs occ: it is scheduled, or it is a
// recurring job that completed when its final occurrence ended while occ,
// an earlier one, still had an attempt to make (a retry after a failure,
// or a start held back behind a backlog): occ belongs to the plan that
// completed, and dropping it would lose it.
func live(j *store.AttemptJob, occ job.Occurrence) bool {
	switch {
	case j == nil:
		return false
	case j.Status == job.StatusScheduled:
		return true
	case j.Status == job.StatusCompleted:
		return j.Schedule != nil && !j.LastAt.IsZero() && !occ.ScheduledFor.After(j.LastAt)
	}
	return false
}

// lease leases the attempts of items in Redis, one script per shard, and
// hands those that may run to the runners; it returns those the completer
// settles as they are.
func (s *starter) lease(ctx context.Context, items []*item) []*item {
	byShard := map[*queue.Shard][]*item{}
	for _, it := range items {
		byShard[it.shard] = append(byShard[it.shard], it)
	}
	var settle []*item
	for q, its := range byShard {
		// Earliest occurrence first, so that of two of one job in a batch
		// the earlier takes its overlap hold.
		slices.SortStableFunc(its, func(a, b *item) int {
			return a.msg.Occurrence.ScheduledFor.Compare(b.msg.Occurrence.ScheduledFor)
		})
		now := s.w.Clock()
		starts := make([]queue.Start, len(its))
		for i, it := range its {
			occ := it.msg.Occurrence
			// Published ahead of its due time (TOCK_PUBLISH_LEAD), or of
			// the start its flow key's rate gave it, an attempt starts at
			// it: the runner waits until then.
			at := now
			if r := it.msg.Released(); r.After(at) {
				at = r
			}
			it.startedAt, it.run = at, job.NewID()
			it.leaseUntil = at.Add(it.job.Timeout + s.w.LeaseMargin)
			overlap := it.job.Overlap
			if occ.Attempt > 1 || overlap == job.OverlapAllow || occ.Backfill != uuid.Nil {
				// A retry is not held back, nor a backfill's attempt, which
				// takes no hold either: its backfill paces it, and it never
				// holds back the job's own occurrences.
				overlap = ""
			}
			starts[i] = queue.Start{Generation: occ.Generation, Overlap: overlap,
				Lease: queue.Lease{Occurrence: occ, Worker: s.w.Name, Run: it.run, StartedAt: at, Until: it.leaseUntil,
					DueAt: it.msg.DueAt, Entry: it.msg.ID, Member: occ.Member()}}
		}
		answers, err := q.Start(ctx, starts, now, store.OverlapWaitKept)
		if err != nil {
			if ctx.Err() == nil {
				s.w.Log.Warn("lease_failed", zap.Int("entries", len(its)), zap.Error(err))
			}
			for _, it := range its {
				it.action = leave
			}
			settle = append(settle, its...)
			continue
		}
		for i, it := range its {
			if s.place(it, answers[i], now) {
				s.runners.run(it)
			} else {
				settle = append(settle, it)
			}
		}
	}
	return settle
}

// place acts on the start script's answer for one attempt: true when it
// runs; otherwise it says how it is settled.
func (s *starter) place(it *item, answer int, now time.Time) bool {
	switch answer {
	case queue.StartFenced:
		it.action, it.requeueAt = requeue, now.Add(fenceRetry)
		return false
	case queue.StartHeld:
		// Leased to a live worker: it acknowledges. A long attempt is
		// reclaimed every visibility timeout while it runs; those reclaims
		// must not add up to dead-letter it, so give this one back.
		it.action = giveBack
		return false
	case queue.StartDone:
		// Its outcome was recorded after this worker read Postgres:
		// another worker ran it moments ago.
		it.action = ack
		return false
	case queue.StartWait:
		// buffer_one: an earlier occurrence still runs. Not started; back
		// in the due set shortly, its place in the buffer kept.
		it.action, it.requeueAt = requeue, now.Add(store.OverlapPoll)
		return false
	}
	it.action, it.endedAt = record, now
	switch {
	case answer == queue.StartSkip:
		it.status, it.reason = job.RunSkipped, "overlap: an earlier occurrence of the job still runs"
	case s.w.MaxDeliveries > 0 && it.msg.Deliveries > s.w.MaxDeliveries:
		s.w.Log.Warn("entry_dead_lettered", zap.String("job_id", it.msg.Occurrence.JobID.String()),
			zap.Time("scheduled_for", it.msg.Occurrence.ScheduledFor), zap.Int("attempt", it.msg.Occurrence.Attempt),
			zap.Int("deliveries", it.msg.Deliveries))
		it.status, it.reason, it.action = job.RunPermanentlyFailed, s.deadReason(it.msg.Deliveries), deadLetter
	case it.job.ExpiresAfter > 0 && now.Sub(it.msg.DueAt) > it.job.ExpiresAfter:
		it.status = job.RunExpired
		it.reason = fmt.Sprintf("expired: could start only %s after it was due; expires_after is %s",
			now.Sub(it.msg.DueAt).Round(time.Millisecond), it.job.ExpiresAfter)
	case it.calendar != "":
		it.status, it.reason = job.RunSkipped, it.calendar
	default:
		if reason := s.misfired(it, now); reason != "" {
			it.status, it.reason = job.RunSkipped, "misfire: "+reason
			break
		}
		// Its lateness counts when it starts (the runner).
		return true
	}
	// Every attempt started counts, a skipped misfire too: its lateness is
	// what made it one. A clock skewed behind Redis's counts as on time.
	s.w.Metrics.Lateness.Observe(max(now.Sub(it.msg.Released()).Seconds(), 0))
	if s.w.Tracer != nil {
		_, span := s.w.startAttempt(context.Background(), it, now)
		endAttempt(span, it.status, 0, now)
	}
	return false
}

// deadReason is what an attempt dead-lettered after deliveries deliveries
// says, in its run row and in the dead stream: never a payload, URL or
// secret, only what the worker knows and where to look.
func (s *starter) deadReason(deliveries int) string {
	return fmt.Sprintf("dead-lettered: delivered %d times without an outcome (TOCK_MAX_DELIVERIES is %d): "+
		"Postgres refused its outcome or its worker died each time; see the workers' logs", deliveries, s.w.MaxDeliveries)
}

// attemptID names one attempt of one occurrence under one generation,
// whatever its priority: a stale generation's copy in the same batch is a
// different entry, not a duplicate of the current one. A map key that
// builds no string per entry.
type attemptID struct {
	job                 uuid.UUID
	at                  int64 // scheduled_for, unix ms
	attempt, generation int
}

// entryID names one entry of one shard's stream.
type entryID struct {
	shard int
	id    string
}

func attemptKey(o job.Occurrence) attemptID {
	return attemptID{o.JobID, o.ScheduledFor.UnixMilli(), o.Attempt, o.Generation}
}

// calendared reads the calendars named by the jobs of the first attempts
// among items that fall on their schedules (one read, only for a batch
// that holds one), and marks those whose nominal time one of them skips,
// to be recorded skipped when they start. It returns the items to lease,
// and those left pending, to be reclaimed, when the read fails.
func (s *starter) calendared(ctx context.Context, items []*item) (run, settle []*item) {
	var keys []store.CalendarKey
	var named []*item
	for _, it := range items {
		if len(it.job.SkipCalendars) == 0 || it.msg.Occurrence.Attempt != 1 {
			continue
		}
		named = append(named, it)
		for _, n := range it.job.SkipCalendars {
			if k := (store.CalendarKey{Owner: it.job.Owner, Name: n}); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	if len(named) == 0 {
		return items, nil
	}
	cals, err := s.w.Store.Calendars(ctx, keys)
	if err != nil {
		if ctx.Err() == nil {
			s.w.Log.Warn("calendars_unread", zap.Int("calendars", len(keys)), zap.Error(err))
		}
		for _, it := range named {
			it.action = leave
		}
		return slices.DeleteFunc(items, func(it *item) bool { return it.action == leave }), named
	}
	for _, it := range named {
		at, ok := onSchedule(it.job, it.msg.Occurrence.ScheduledFor)
		if !ok {
			continue // triggered: run as asked
		}
		var mine []*calendar.Calendar
		for _, n := range it.job.SkipCalendars {
			if c := cals[store.CalendarKey{Owner: it.job.Owner, Name: n}]; c != nil {
				mine = append(mine, c)
			}
		}
		it.calendar = calendar.Skip(mine, at)
	}
	return items, nil
}

// onSchedule returns the nominal time of the occurrence due at sf (sf
// less the job's jitter offset) when that is one of its schedule's
// instants; false for a triggered run, or a one-off job.
func onSchedule(aj *store.AttemptJob, sf time.Time) (time.Time, bool) {
	if len(aj.Schedule) == 0 {
		return time.Time{}, false
	}
	n := sf.Add(-aj.JitterOffset)
	sched, err := schedule.FromJSONWithin(schedule.NewBudget(context.Background(), misfireUnits, 0), aj.Schedule)
	if err != nil {
		return time.Time{}, false
	}
	if at, ok := sched.Unbounded().Next(n.Add(-time.Millisecond)); ok && at.Equal(n) {
		return n, true
	}
	return time.Time{}, false
}

// misfireUnits and misfireTime bound the judging of one late attempt: a
// catch_up bound of misfire_max walks up to that many occurrences.
const (
	misfireUnits = schedule.RequestUnits / 4
	misfireTime  = 5 * time.Millisecond
)

// misfired applies a recurring job's misfire policy to a first attempt that
// starts later than the threshold, and returns why it must be skipped, or "".
// A backfill's attempt is overdue by design: it runs.
func (s *starter) misfired(it *item, now time.Time) string {
	occ := it.msg.Occurrence
	if len(it.job.Schedule) == 0 || occ.Attempt != 1 || occ.Backfill != uuid.Nil || now.Sub(occ.ScheduledFor) <= s.w.MisfireThreshold {
		return ""
	}
	if it.job.LastAt.Equal(occ.ScheduledFor) {
		// The final occurrence of an ended recurrence: no later one supersedes it.
		return ""
	}
	sched, err := schedule.FromJSONWithin(schedule.NewBudget(context.Background(), misfireUnits, misfireTime), it.job.Schedule)
	if err != nil {
		s.w.Log.Warn("stored_schedule_unreadable", zap.String("job_id", occ.JobID.String()), zap.Error(err))
		return ""
	}
	sched = sched.Jittered(it.job.JitterOffset)
	if run, reason := sched.Misfired(occ.ScheduledFor, now, s.w.MisfireThreshold); !run && sched.Err() == nil {
		return reason
	}
	// Judged to run, or too costly to judge (a catch_up bound of thousands
	// on a dense rule): it runs, late, and says how late.
	return ""
}

// nominal is the time the occurrence due at sf had before its job's
// jitter moved it: sf less the job's offset, when sf is the job's run_at or
// one of its schedule's occurrences; zero for a job without jitter, and
// for a triggered run (due when it was triggered, not on the schedule).
func nominal(aj *store.AttemptJob, sf time.Time) time.Time {
	if !aj.Jittered {
		return time.Time{}
	}
	n := sf.Add(-aj.JitterOffset)
	if len(aj.Schedule) == 0 {
		if sf.Equal(aj.RunAt) {
			return n
		}
		return time.Time{}
	}
	// Units only: a deadline would drop the header of an attempt at
	// random on a busy worker, and the stored rule was checked when stored.
	sched, err := schedule.FromJSONWithin(schedule.NewBudget(context.Background(), misfireUnits, 0), aj.Schedule)
	if err != nil {
		return time.Time{}
	}
	if at, ok := sched.Unbounded().Next(n.Add(-time.Millisecond)); ok && at.Equal(n) {
		return n // unbounded: a backfill's occurrence may lie before start_at
	}
	return time.Time{}
}
