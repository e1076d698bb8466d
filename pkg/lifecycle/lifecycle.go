// Package lifecycle changes jobs the way tock keeps them in two places:
// each change commits in Postgres, the source of truth, and then makes
// Redis's due set follow. Create, edit (pause and resume are edits), cancel,
// trigger, retry and abort live here, so that the API's handlers only translate
// HTTP, and what happens when Redis fails between the two (and what repairs
// it) is written once.
//
// The rule: Postgres first. A change whose Redis half fails is still made:
// the job is committed and will run, at worst when the loader's next round
// or the reconciler finds it (docs/architecture.md, "what repairs what").
// The Redis half runs even if the caller has gone away, bounded by
// afterCommitTimeout. Retry is the one exception, and says why.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
)

// afterCommitTimeout bounds the Redis and Postgres calls made after a job has
// been committed. They run even if the client has gone away: the job exists,
// and leaving it claimed but absent from Redis would delay it until the
// reconciler notices.
const afterCommitTimeout = 5 * time.Second

// Jobs makes job changes in Postgres and then in the due set.
type Jobs struct {
	store *store.Store
	queue *queue.Queue
	// horizon is how far ahead the loader plans: a job due within it is
	// put in the due set at once rather than at the loader's next round.
	horizon time.Duration
	// misfire judges, when a recurring job is loaded right after a change,
	// whether an occurrence already late runs, as the loader would.
	misfire time.Duration
	log     *zap.Logger
	// claimedBy is this dashboard's process number, recorded on the jobs it
	// stores claimed (store.Create.ClaimedBy); zero until it beats in Redis.
	claimedBy atomic.Int32
	// lookups look for the jobs of creates whose commit went unanswered
	// (settleUnsure).
	lookups *lookups
}

// New returns Jobs over st and q, planning horizon ahead with the loader's
// misfire threshold.
func New(st *store.Store, q *queue.Queue, horizon, misfire time.Duration, log *zap.Logger) *Jobs {
	return &Jobs{store: st, queue: q, horizon: horizon, misfire: misfire, log: log, lookups: newLookups()}
}

// ClaimAs records n, this process's number, on the one-off jobs Create
// stores claimed from now on. The process must already beat under n
// (queue.Shard.DashboardBeat): should it die between a commit and the ZADD
// that follows, the scheduler's leader re-adds its claims as soon as the
// beat expires. Zero stops recording.
func (l *Jobs) ClaimAs(n int32) { l.claimedBy.Store(n) }

// AfterCommit is the context of a change's Redis half: it outlives the
// request, within afterCommitTimeout. The API's other after-commit calls
// (a disabled user's aborts, an owner's cap) use it too.
func AfterCommit(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), afterCommitTimeout)
}

// Create stores new jobs, built at now. A one-off job due within the
// horizon is stored claimed and its first attempt put in the due set right
// after the commit, so it runs on time rather than at the loader's next
// round; if Redis refuses, the claims go back to the loader. A single
// recurring job due within the horizon is then loaded at once, as the
// loader would, so its first occurrences are in Redis before the answer; a
// batch's recurring jobs are left to the loader's next round, since loading
// each is a transaction of its own.
func (l *Jobs) Create(ctx context.Context, jobs []*job.Job, now time.Time, c store.Create) error {
	horizon := now.Add(l.horizon)
	var soon []*job.Job
	flows := false
	for _, j := range jobs {
		if j.Flow != nil {
			// Every job of a flow key lives in the key's shard.
			if lane := job.FlowLane(j.Owner, j.Flow.Key); !l.queue.InFlowShard(j.ID, lane) {
				j.ID = l.queue.NewJobID(lane)
			}
			flows = true
		}
	}
	for _, j := range jobs {
		if !j.Recurring() && j.RunAt.Before(horizon) {
			j.DueAt = time.Time{} // stored claimed: enqueued below
			soon = append(soon, j)
		}
	}
	if len(soon) > 0 {
		c.ClaimedBy = l.claimedBy.Load()
	}
	err := l.store.CreateJobs(ctx, jobs, c)
	if errors.Is(err, store.ErrCommitUnsure) {
		return l.settleUnsure(jobs, func(ctx context.Context) { l.created(ctx, jobs, soon, flows, now) }, err)
	}
	if err != nil {
		return err
	}
	l.created(ctx, jobs, soon, flows, now)
	return nil
}

// created is Create's Redis half, once jobs are committed: soon, the
// claimed one-off jobs, go in the due set (after their flow keys' limits,
// when flows), and a single recurring job due within the horizon is loaded.
func (l *Jobs) created(ctx context.Context, jobs, soon []*job.Job, flows bool, now time.Time) {
	if flows && !l.setFlows(ctx, jobs) {
		// Their limits are not in Redis yet: the loader, which writes them
		// first, hands these jobs over instead.
		l.releaseClaims(ctx, soon, nil)
		return
	}
	if len(soon) > 0 {
		l.enqueueClaimed(ctx, soon)
	}
	if len(jobs) == 1 && jobs[0].Recurring() && jobs[0].DueAt.Before(now.Add(l.horizon)) {
		l.load(ctx, jobs[0].ID, now)
	}
}

// UnsureError is Create's error when Postgres did not answer its commit
// (store.ErrCommitUnsure): the jobs may be stored or not. Create finds out
// in the background, as soon as Postgres answers again, and if they are,
// makes its Redis half follow as after any commit, so that they run on
// time rather than when the reconciler notices them. The caller answers
// the error (a 503); Stored tells it, later, what became of the jobs, so
// that an Idempotency-Key's repeat gets the jobs made rather than making
// them twice.
type UnsureError struct {
	err  error
	done chan struct{}
	// stored and known are written once, before done is closed.
	stored, known bool
}

func (e *UnsureError) Error() string { return e.err.Error() }
func (e *UnsureError) Unwrap() error { return e.err }

// Done is closed once Create has looked for the jobs: Stored then tells.
func (e *UnsureError) Done() <-chan struct{} { return e.done }

// Stored says, once Done is closed, whether the jobs were stored, and
// whether that is known: not when Postgres did not answer within
// unsureFor.
func (e *UnsureError) Stored() (stored, known bool) {
	select {
	case <-e.done:
		return e.stored, e.known
	default:
		return false, false
	}
}

const (
	// unsureFor bounds how long a create with an unsure commit is looked
	// for: the reconciler's backstop (TOCK_LOST_AFTER) requeues one found
	// later. It ends within the API's minute of settling the create's
	// Idempotency-Key, so that the key is settled with what was found.
	unsureFor = 50 * time.Second
	// maxUnsure bounds the creates looked for at once; beyond, the
	// reconciler finds their jobs if they were stored.
	maxUnsure = 1024
)

// settleUnsure finds out, in the background, whether jobs, whose commit
// failed with err (a *store.CommitUnsureError), were stored, and if so runs
// after (the commit's Redis half). It returns the *UnsureError that tells.
// Stop ends the looking: a stored job's claim then waits for the leader,
// which re-adds a stopped dashboard's claims.
func (l *Jobs) settleUnsure(jobs []*job.Job, after func(context.Context), err error) error {
	u := &UnsureError{err: err, done: make(chan struct{})}
	var ce *store.CommitUnsureError
	if !errors.As(err, &ce) || !l.lookups.take() {
		l.log.Warn("create_commit_unsure_not_followed", zap.Int("jobs", len(jobs)), zap.Error(err))
		close(u.done)
		return u
	}
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	l.log.Warn("create_commit_unsure", zap.Int("jobs", len(jobs)), zap.Error(err))
	l.lookups.Go(func(ctx context.Context) {
		defer close(u.done)
		deadline := time.Now().Add(unsureFor)
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			left := time.Until(deadline)
			if left <= 0 {
				l.log.Warn("create_commit_unsure_not_followed", zap.Int("jobs", len(jobs)))
				return
			}
			tctx, cancel := context.WithTimeout(ctx, min(5*time.Second, left))
			stored, settled, err := l.store.JobsStored(tctx, ids, ce.PID)
			cancel()
			if err == nil && settled {
				u.stored, u.known = stored, true
				l.log.Info("create_commit_settled", zap.Int("jobs", len(jobs)), zap.Bool("stored", stored))
				if stored {
					actx, cancel := AfterCommit(ctx)
					after(actx)
					cancel()
				}
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(wait, time.Until(deadline))):
			}
		}
	})
	return u
}

// Stop ends the looking for creates whose commit went unanswered
// (settleUnsure) and waits for it.
func (l *Jobs) Stop() { l.lookups.stop() }

// lookups runs at most maxUnsure background lookups, under a context Stop
// ends.
type lookups struct {
	ctx    context.Context
	cancel context.CancelFunc
	places chan struct{}
	wg     sync.WaitGroup
}

func newLookups() *lookups {
	ctx, cancel := context.WithCancel(context.Background())
	return &lookups{ctx: ctx, cancel: cancel, places: make(chan struct{}, maxUnsure)}
}

// take holds a place for a lookup; false when all are taken or Stop was
// called.
func (k *lookups) take() bool {
	if k.ctx.Err() != nil {
		return false
	}
	select {
	case k.places <- struct{}{}:
		return true
	default:
		return false
	}
}

// Go runs f, which holds a place taken, and gives the place back after.
func (k *lookups) Go(f func(context.Context)) {
	k.wg.Go(func() {
		defer func() { <-k.places }()
		f(k.ctx)
	})
}

func (k *lookups) stop() {
	k.cancel()
	k.wg.Wait()
}

// enqueueClaimed puts claimed one-off jobs' first attempts in the due set in
// one pipeline or, when Redis fails, hands the claims back to the loader in
// one statement. Neither outcome is the caller's error: the jobs are
// committed and will run.
func (l *Jobs) enqueueClaimed(ctx context.Context, jobs []*job.Job) {
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	entries := make([]queue.Entry, len(jobs))
	for i, j := range jobs {
		entries[i] = queue.Entry{Occurrence: j.Occurrence(j.RunAt), DueAt: j.RunAt}
	}
	err := l.queue.EnqueueSoon(ctx, entries, time.Now())
	if err == nil {
		return
	}
	l.releaseClaims(ctx, jobs, err)
}

// releaseClaims hands claimed one-off jobs that could not be put in Redis
// (why: err, nil for their flow keys' limits) back to the loader.
func (l *Jobs) releaseClaims(ctx context.Context, jobs []*job.Job, err error) {
	if len(jobs) == 0 {
		return
	}
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	if rerr := l.store.ReleaseClaim(ctx, ids...); rerr != nil {
		// The reconciler finds claimed jobs that never started and requeues them.
		l.log.Error("release_claims_failed", zap.Int("jobs", len(jobs)), zap.NamedError("enqueue_error", err), zap.Error(rerr))
		return
	}
	l.log.Warn("enqueue_failed_claims_released", zap.Int("jobs", len(jobs)), zap.Error(err))
}

// setFlows writes the limits of the flow keys jobs name, as Postgres now
// holds them, to Redis, so that the jobs meet them from their first
// attempt. It reports whether that worked; the leader's next loader round
// writes them anyway.
func (l *Jobs) setFlows(ctx context.Context, jobs []*job.Job) bool {
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	keys := map[uuid.UUID][]string{}
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Flow == nil {
			continue
		}
		if lane := job.FlowLane(j.Owner, j.Flow.Key); !seen[lane] {
			seen[lane] = true
			keys[j.Owner] = append(keys[j.Owner], j.Flow.Key)
		}
	}
	var limits []queue.FlowLimits
	for owner, ks := range keys {
		flows, err := l.store.FlowLimits(ctx, owner, ks)
		if err != nil {
			l.log.Warn("flow_limits_failed", zap.Error(err))
			return false
		}
		limits = append(limits, FlowLimits(flows)...)
	}
	if err := l.queue.SetFlows(ctx, limits); err != nil {
		l.log.Warn("flow_limits_failed", zap.Error(err))
		return false
	}
	return true
}

// FlowLimits are flows as the queue's scripts read them.
func FlowLimits(flows []*store.Flow) []queue.FlowLimits {
	out := make([]queue.FlowLimits, len(flows))
	for i, f := range flows {
		out[i] = queue.FlowLimits{Lane: f.Lane(), Concurrency: f.Concurrency, Paused: f.Paused}
		if f.Rate != nil {
			out[i].Rate = *f.Rate
		}
	}
	return out
}

// load hands a job's occurrences due within the horizon to Redis right away,
// as the loader would. A failure only delays the job until the loader's next
// round, so it is logged, not returned.
func (l *Jobs) load(ctx context.Context, id uuid.UUID, now time.Time) {
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	w := store.Window{Until: now.Add(l.horizon), Now: now, MisfireThreshold: l.misfire}
	if _, err := l.store.LoadJob(ctx, id, w, func(ctx context.Context, occs []job.Occurrence) error {
		return l.queue.EnqueueSoon(ctx, queue.AsScheduled(occs), now)
	}); err != nil {
		l.log.Warn("load_job_failed", zap.Stringer("job_id", id), zap.Error(err))
	}
}

// Edit applies e to a job of owner's (uuid.Nil: anyone's) under its row
// lock, and then makes the due set follow: a one-off job's first attempt
// planned under the old generation is taken out (best effort; a worker would
// drop it as stale anyway), and a scheduled job due within the horizon is
// loaded at once, so a job moved to "in 3 s" runs in 3 s. A recurring job's
// occurrences loaded under the old generation are taken out too
// (removeLoaded). Pause and resume are edits.
func (l *Jobs) Edit(ctx context.Context, owner, id uuid.UUID, now time.Time, e store.Edit, u store.Update) (*job.Job, error) {
	f := l.fencer(now)
	u.Running, u.Fence = l.running, f.fence
	edit := func(j *job.Job, started bool) error {
		was := j.FlowKey()
		if err := e(j, started); err != nil {
			return err
		}
		if j.Flow != nil && j.Flow.Key != was && !l.queue.InFlowShard(j.ID, job.FlowLane(j.Owner, j.Flow.Key)) {
			return fmt.Errorf("%w: with %d Redis shards, flow key %q lives in another shard than this job; create a new job for it",
				job.ErrConflict, len(l.queue.Shards()), j.Flow.Key)
		}
		return nil
	}
	before, after, err := l.store.UpdateJob(ctx, owner, id, now, edit, u)
	if err != nil {
		f.lift(ctx)
		return nil, err
	}
	if after.Flow != nil && !reflect.DeepEqual(before.Flow, after.Flow) {
		l.setFlows(ctx, []*job.Job{after})
	}
	if before.Generation != after.Generation {
		if !before.Recurring() && !before.RunAt.IsZero() {
			l.removeStale(ctx, before.Occurrence(before.RunAt))
		} else if before.Recurring() {
			l.removeLoaded(ctx, before, now)
		}
	}
	if after.Status == job.StatusScheduled && !after.DueAt.IsZero() && after.DueAt.Before(now.Add(l.horizon)) {
		l.load(ctx, after.ID, now)
	}
	return after, nil
}

// Cancel cancels a job of owner's: a one-off job that has not started, or a
// recurring job at any time, which stops all its future occurrences. A
// one-off job's first attempt, or a recurring job's loaded occurrences, are
// then taken out of the due set. The removal is best effort: cancelling
// moved the job to a new generation, so a worker that still receives an old
// occurrence finds it stale and drops it.
func (l *Jobs) Cancel(ctx context.Context, owner, id uuid.UUID, now time.Time, a store.Audit) error {
	f := l.fencer(now)
	before, _, err := l.store.CancelJob(ctx, owner, id, now, a, f.fence)
	if err != nil {
		f.lift(ctx)
		return err
	}
	if before.Recurring() {
		l.removeLoaded(ctx, before, now)
	} else if !before.RunAt.IsZero() {
		l.removeStale(ctx, before.Occurrence(before.RunAt))
	}
	return nil
}

// maxLoadedRemoved bounds the occurrences removeLoaded recomputes for one
// job: the loader hands out at most this many of one job per round.
const maxLoadedRemoved = 10_000

// removeLoaded takes out of the due set the occurrences that the loader
// handed to Redis for recurring job before, as it was before a change moved
// it to a new generation (an edit, a pause, a cancel): those due from a
// horizon ago up to its cursor (before.DueAt), or up to its final occurrence
// once the loader found it. Their instants are recomputed from the schedule
// within the loader's units (not its time, so that a busy machine does not
// cut the walk short), at most maxLoadedRemoved. Only a scheduled job has
// any: the loader claims no other. Best effort, as removeStale: a worker
// drops any left behind as stale, but until then they would count as due
// work on the System page and hold Redis memory (an every-second job leaves
// some 600).
func (l *Jobs) removeLoaded(ctx context.Context, before *job.Job, now time.Time) {
	if before.Status != job.StatusScheduled {
		return
	}
	until := before.DueAt
	if until.IsZero() {
		if before.LastAt.IsZero() {
			return
		}
		until = before.LastAt.Add(time.Millisecond)
	}
	from := now.Add(-l.horizon)
	if !until.After(from) {
		return
	}
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	sched, err := schedule.FromJSONWithin(schedule.NewBudget(ctx, schedule.LoaderUnits, 0), before.Schedule)
	if err != nil {
		return
	}
	sched = sched.Jittered(before.JitterOffset)
	// One routed occurrence, its instant set per step, as the loader plans
	// them (the payload is read once, not per occurrence).
	base := before.Occurrence(time.Time{})
	var occs []job.Occurrence
	for t, ok := sched.Next(from.Add(-time.Millisecond)); ok && t.Before(until) && len(occs) < maxLoadedRemoved; t, ok = sched.Next(t) {
		o := base
		o.ScheduledFor = t
		occs = append(occs, o)
	}
	if err := sched.Err(); err != nil {
		l.log.Warn("remove_loaded_cut_short", zap.Stringer("job_id", before.ID), zap.Int("occurrences", len(occs)), zap.Error(err))
	}
	if len(occs) == 0 {
		return
	}
	if err := l.queue.Remove(ctx, occs); err != nil {
		l.log.Warn("remove_loaded_failed", zap.Stringer("job_id", before.ID), zap.Int("occurrences", len(occs)), zap.Error(err))
	}
}

// removeStale takes an occurrence of an older generation out of the due set.
// It is best effort: a worker that receives it anyway finds its generation
// stale and drops it.
func (l *Jobs) removeStale(ctx context.Context, occ job.Occurrence) {
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	if err := l.queue.Remove(ctx, []job.Occurrence{occ}); err != nil {
		l.log.Warn("remove_stale_failed", zap.Stringer("job_id", occ.JobID), zap.Int("generation", occ.Generation), zap.Error(err))
	}
}

// Trigger runs a scheduled job of owner's once more, at now, in addition to
// its schedule: one extra occurrence under the job's current generation and
// priority, with an idempotency key of its own. Its audit entry and the
// occurrence go together: the entry is inserted, the occurrence put in the
// due set, and only then the entry committed, so a failure to queue leaves
// no entry and a failure to write the entry queues nothing. An audit that
// is not recorded (a zero actor) writes no entry, as in the store's methods.
// A job that is not scheduled is job.ErrConflict.
func (l *Jobs) Trigger(ctx context.Context, owner, id uuid.UUID, now time.Time, a store.Audit) (job.Occurrence, error) {
	j, err := l.store.GetJob(ctx, owner, id)
	if err != nil {
		return job.Occurrence{}, err
	}
	if j.Status != job.StatusScheduled {
		return job.Occurrence{}, fmt.Errorf("%w: a %s job cannot be triggered; only a scheduled one can", job.ErrConflict, j.Status)
	}
	occ := j.Occurrence(now)
	enqueue := func(ctx context.Context) error {
		return l.queue.EnqueueSoon(ctx, []queue.Entry{{Occurrence: occ, DueAt: now}}, now)
	}
	if a.Recorded() {
		change, _ := json.Marshal(map[string]any{"scheduled_for": now, "idempotency_key": occ.Key()})
		entry := store.AuditEntry{At: now, Actor: a.Actor, Action: a.Action, TargetType: store.TargetJob, TargetID: j.ID, Change: change}
		err = l.store.RecordAuditAround(ctx, entry, enqueue)
	} else {
		err = enqueue(ctx)
	}
	if err != nil {
		return job.Occurrence{}, fmt.Errorf("trigger job %s: %w", j.ID, err)
	}
	return occ, nil
}

// Retry gives a permanently failed occurrence of a job of owner's one more
// attempt, now (scheduledFor picks the occurrence; zero, the latest that
// failed). Here Redis is told inside the transaction, before the commit: a
// retry lives only in the due set until it starts, so a commit that Redis
// did not follow would leave a job scheduled with nothing to run it. A
// worker handed the attempt before the commit waits for the job's lock
// (store.FetchCommitted), and one that finds the commit failed drops the
// attempt.
func (l *Jobs) Retry(ctx context.Context, owner, id uuid.UUID, scheduledFor, now time.Time, a store.Audit) (job.Occurrence, error) {
	return l.store.RetryOccurrence(ctx, owner, id, scheduledFor, now, a, func(ctx context.Context, occ job.Occurrence) error {
		return l.queue.EnqueueSoon(ctx, []queue.Entry{{Occurrence: occ, DueAt: now}}, now)
	})
}

// Abort stops the running attempts of a job of owner's (uuid.Nil: anyone's):
// they are read from Redis, where their leases live; the abort is recorded
// in Postgres (a one-off job is cancelled with it, fenced first so that no
// attempt of it starts again); then the workers are told through Redis,
// and end them within about a second and record them aborted, never
// retried. Should Redis fail, the error says so and a second call tells
// the workers again. Nothing running is job.ErrConflict. It returns the
// attempts being stopped.
func (l *Jobs) Abort(ctx context.Context, owner, id uuid.UUID, now time.Time, a store.Audit) ([]job.Run, error) {
	leases, err := l.queue.Running(ctx, id)
	if err != nil {
		return nil, err
	}
	runs := make([]job.Run, len(leases))
	for i, ls := range leases {
		runs[i] = LeaseRun(ls)
	}
	f := l.fencer(now)
	if err := l.store.AbortJob(ctx, owner, id, now, a, runs, f.fence); err != nil {
		f.lift(ctx)
		return nil, err
	}
	if err := l.queue.Abort(ctx, queue.AbortRequest{Job: id, Actor: a.Actor, At: now}); err != nil {
		return nil, fmt.Errorf("abort job %s: tell the workers: %w", id, err)
	}
	return runs, nil
}

// LeaseRun is a running attempt, as its lease in Redis holds it, as a run.
func LeaseRun(ls queue.Lease) job.Run {
	return job.Run{ID: ls.Run, JobID: ls.Occurrence.JobID, Owner: ls.Occurrence.Owner, ScheduledFor: ls.Occurrence.ScheduledFor,
		Attempt: ls.Occurrence.Attempt, Status: job.RunRunning, DueAt: ls.DueAt, StartedAt: ls.StartedAt, LeaseUntil: ls.Until}
}

// RunningRuns returns the attempts of job id that run, newest first, as
// runs: Redis holds the attempts in flight, Postgres only outcomes.
func (l *Jobs) RunningRuns(ctx context.Context, id uuid.UUID) ([]job.Run, error) {
	leases, err := l.queue.Running(ctx, id)
	if err != nil {
		return nil, err
	}
	runs := make([]job.Run, len(leases))
	for i, ls := range leases {
		runs[i] = LeaseRun(ls)
	}
	slices.SortFunc(runs, func(a, b job.Run) int { return -compareRuns(a, b) })
	return runs, nil
}

// ShowRunning makes each job's LastRun its newest attempt running, where
// that is newer than its newest outcome, in one round trip to Redis.
func (l *Jobs) ShowRunning(ctx context.Context, jobs ...*job.Job) error {
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	running, err := l.queue.RunningOf(ctx, ids)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		for _, ls := range running[j.ID] {
			r := LeaseRun(ls)
			if j.LastRun == nil || compareRuns(r, *j.LastRun) > 0 {
				j.LastRun = &r
			}
		}
	}
	return nil
}

// compareRuns orders runs by occurrence, then attempt.
func compareRuns(a, b job.Run) int {
	if c := a.ScheduledFor.Compare(b.ScheduledFor); c != 0 {
		return c
	}
	return a.Attempt - b.Attempt
}

// running says whether an attempt of job id runs.
func (l *Jobs) running(ctx context.Context, id uuid.UUID) (bool, error) {
	leases, err := l.queue.Running(ctx, id)
	return len(leases) > 0, err
}

// fence is one change's fence (see store.Fencer): set before the change
// commits, lifted if it does not.
type fence struct {
	l   *Jobs
	now time.Time
	id  uuid.UUID
	gen int
	set bool
}

func (l *Jobs) fencer(now time.Time) *fence { return &fence{l: l, now: now} }

func (f *fence) fence(ctx context.Context, id uuid.UUID, gen int) (bool, error) {
	leases, err := f.l.queue.Fence(ctx, id, gen, f.now)
	if err != nil {
		return false, err
	}
	f.id, f.gen, f.set = id, gen, true
	return len(leases) > 0, nil
}

// lift lifts the fence of a change that did not commit, so the job's
// entries start again at once rather than when it expires. Best effort.
func (f *fence) lift(ctx context.Context) {
	if !f.set {
		return
	}
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	if err := f.l.queue.Unfence(ctx, f.id, f.gen); err != nil {
		f.l.log.Warn("unfence_failed", zap.Stringer("job_id", f.id), zap.Error(err))
	}
}

// AbortOwner tells the workers to stop every running attempt of a user who
// was just disabled (or erased), committed already. Best effort: the
// user's jobs are paused in Postgres, so nothing new of theirs starts; a
// failure leaves what runs to end by itself, and is logged.
func (l *Jobs) AbortOwner(ctx context.Context, owner, actor uuid.UUID, at time.Time) {
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	if err := l.queue.Abort(ctx, queue.AbortRequest{Owner: owner, Actor: actor, At: at}); err != nil {
		l.log.Warn("abort_owner_failed", zap.Stringer("user_id", owner), zap.Error(err))
	}
}
