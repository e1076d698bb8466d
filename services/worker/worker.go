package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testsignal"
)

// Runner executes one attempt; jobtype.Registry is the real one.
type Runner interface {
	Execute(ctx context.Context, t jobtype.Task) jobtype.Outcome
}

// Worker reads the ready streams of every shard and runs what it reads on a
// bounded pool, in five duties, each a type of its own with a start and a
// stop, joined by channels:
//
//   - a reader per shard takes free slots, then reads as many new entries
//     (reader.go); a reclaimer per shard takes over entries a dead or stalled
//     worker left pending (reclaimer.go);
//   - the starter reads, in one Postgres statement per batch, what the
//     attempts need (a read: an attempt's start writes nothing to Postgres),
//     leases them in one Redis script per shard, and hands what may run to
//     the runners (starter.go);
//   - the runners, as many long-lived goroutines as slots, run one attempt
//     each at a time (runner.go);
//   - the completer group-commits the outcomes in one Postgres statement (an
//     attempt's one write), and its settler, beside it, settles the entries
//     of the batches recorded since its last call in one Redis round trip:
//     acknowledgements, retries, the leases' end (completer.go).
//
// A slot is taken before an entry is read and given back when the
// completer settles it (or leaves it pending for a reclaim), so the worker
// never holds more entries than it can run, and entries it has not taken
// stay in the stream, in priority order, for whichever worker frees a slot
// first.
type Worker struct {
	Store  *store.Store
	Queue  *queue.Queue
	Runner Runner
	Log    *zap.Logger
	Clock  func() time.Time

	Name        string        // consumer name in the group, unique per process
	Concurrency int           // attempts run at once
	Batch       int           // most entries read per XREADGROUP
	Block       time.Duration // XREADGROUP BLOCK
	Visibility  time.Duration // pending this long, an entry is reclaimed
	LeaseMargin time.Duration // lease = timeout + margin
	BackoffBase time.Duration
	BackoffMax  time.Duration
	Grace       time.Duration // on shutdown, in-flight attempts get this long
	// CommitWindow is how long the group commit waits for more outcomes
	// after the first, unless a full batch gathers first: at a steady load
	// every outcome written alone pays a statement, a commit and a Redis
	// settle of its own. 0 writes each as soon as the last write ends.
	CommitWindow time.Duration
	// MisfireThreshold: a recurring occurrence starting later than this is
	// judged by its job's misfire policy before it runs.
	MisfireThreshold time.Duration
	// AutoPauseAfter pauses a recurring job whose last this many occurrences
	// all failed permanently; 0 never does.
	AutoPauseAfter int
	// MaxDeliveries: an entry delivered more often than this without an
	// outcome (Postgres refused its outcome, or its worker died each time) is
	// dead-lettered instead of started again; 0 never dead-letters.
	MaxDeliveries int
	// Metrics receives each attempt's lateness when it starts and its outcome
	// once recorded.
	Metrics *metrics.Worker
	// Tracer makes a span per attempt and sends its trace context to the
	// target; nil (tracing off) makes none and sends none.
	Tracer trace.Tracer

	// settled is raised after each settle, for tests to wait on; nil in
	// production.
	settled *testsignal.Signal

	// calling is the attempts calling their targets now; callingPeak the
	// most at hand at once since Busy last looked: calling, or read
	// together in one batch. busyNow, when set, is told (without waiting)
	// when that passes busyCalls.
	calling, callingPeak atomic.Int64
	busyNow              chan struct{}
}

// busyCalls is how many attempts at hand at once make the worker busy
// (Busy): a steady load of short attempts has a few at a time, a burst
// hundreds.
const busyCalls = 16

// Busy says whether the worker has had more than busyCalls attempts at hand
// at once since the last call: service.Procs then gives it every core.
func (w *Worker) Busy() bool {
	return w.callingPeak.Swap(w.calling.Load()) > busyCalls
}

// startCall counts an attempt calling its target for Busy, until endCall.
func (w *Worker) startCall() {
	n := w.calling.Add(1)
	if n == busyCalls+1 {
		w.tellBusy()
	}
	w.raisePeak(n)
}

// endCall is the end of an attempt's call to its target (startCall).
func (w *Worker) endCall() { w.calling.Add(-1) }

// readFull counts a read that filled every one of its n slots, more than
// busyCalls, for Busy: more is waiting in the stream, a backlog that needs
// every core before its attempts reach their targets. At a steady load
// reads come back with what one publish tick moved (about 50 entries at
// 1,000 jobs/s), short of the 256 a worker asks for.
func (w *Worker) readFull(got, n int) {
	if got == n && n > busyCalls {
		w.tellBusy()
		w.raisePeak(int64(n))
	}
}

func (w *Worker) tellBusy() {
	select {
	case w.busyNow <- struct{}{}:
	default:
	}
}

func (w *Worker) raisePeak(n int64) {
	for {
		p := w.callingPeak.Load()
		if n <= p || w.callingPeak.CompareAndSwap(p, n) {
			return
		}
	}
}

// Run consumes until ctx ends, then stops reading, lets in-flight attempts
// finish within the grace period, records them, and returns. Attempts still
// running after the grace period are abandoned unrecorded and unacknowledged:
// their lease expires and another worker takes them over. The duties start
// in the order work flows backwards (completer first) and stop in the
// order it flows (readers first).
func (w *Worker) Run(ctx context.Context) {
	if w.Metrics == nil {
		w.Metrics = metrics.NewWorker(prometheus.NewRegistry()) // counted, not served
	}
	// exec outlives ctx by the grace period, so in-flight attempts can finish.
	execCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()

	slots := newSlotPool(w.Concurrency)
	running := newAttempts()
	calls := newCaller(w)
	calls.start(ctx, execCtx)
	comp := newCompleter(w, slots, calls)
	comp.start(execCtx)
	runners := newRunners(w, comp, running)
	runners.start(execCtx)
	st := newStarter(w, runners, comp)
	st.start(execCtx)

	var readers sync.WaitGroup
	shared := len(w.Queue.Shards()) > 1
	for _, q := range w.Queue.Shards() {
		r := &reader{w: w, q: q, slots: slots, out: st.in, shared: shared}
		rc := &reclaimer{w: w, q: q, slots: slots, out: st.in}
		readers.Go(func() { r.run(ctx) })
		readers.Go(func() { rc.run(ctx) })
	}
	readers.Go(func() { (&abortWatcher{w: w, attempts: running}).run(ctx) })
	readers.Wait()

	// Past the grace period everything still in flight is abandoned: attempts
	// and the completer's retries alike, so Run always returns.
	grace := time.AfterFunc(w.Grace, func() {
		w.Log.Warn("shutdown_grace_expired_abandoning_attempts")
		abandon()
	})
	defer grace.Stop()
	st.stop()
	runners.stop()
	comp.stop()
	calls.stop()
}
