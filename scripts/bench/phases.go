package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ingest creates jobs due in a day, so that none runs: first through the
// bulk API, then one POST at a time from concurrent clients. The bodies are
// marshalled before the clock starts; the figures are the server's.
func (b *bench) ingest(ctx context.Context) error {
	cfg := b.cfg
	due := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	specs := make([]jobSpec, cfg.bulk)
	for i := range specs {
		specs[i] = pendingSpec("ingest-bulk", i, due.Add(time.Duration(i%60_000)*time.Millisecond))
	}
	if p, err := json.Marshal(specs[0].Payload); err == nil {
		b.res.PayloadBytes = len(p)
	}
	bodies, err := batchBodies(specs, cfg.bulkBatch)
	if err != nil {
		return err
	}
	cost := b.storeCost(ctx)
	before := snapshot(b.procs)
	// Profiled for about the 2.6 s the last full run's 100,000 took.
	profiled := b.profile(ctx, "ingest", time.Now(), time.Duration(cfg.bulk/40)*time.Millisecond)
	start := time.Now()
	n, err := b.createBulk(ctx, bodies, cfg.bulkConc)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	profiled()
	if n != cfg.bulk {
		return fmt.Errorf("bulk API created %d of %d jobs", n, cfg.bulk)
	}
	b.bulkRate = float64(n) / elapsed.Seconds()
	b.res.IngestBulkJobs, b.res.IngestBulkJobsPerS = n, round(b.bulkRate, 0)
	b.res.PhaseSeconds["ingest_bulk"] = round(elapsed.Seconds(), 2)
	logf("bulk: %d jobs in %s: %.0f jobs/s", n, elapsed.Round(time.Millisecond), b.bulkRate)

	singles := make([][]byte, cfg.single)
	for i := range singles {
		if singles[i], err = json.Marshal(pendingSpec("ingest-single", i, due.Add(time.Duration(i%60_000)*time.Millisecond))); err != nil {
			return err
		}
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		firstErr error
		errOnce  sync.Once
	)
	start = time.Now()
	for range cfg.clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(singles) || ctx.Err() != nil {
					return
				}
				code, out, err := b.post(ctx, "/api/v1/jobs", singles[i])
				if err == nil && code != http.StatusCreated {
					err = fmt.Errorf("POST /api/v1/jobs: status %d: %.300s", code, out)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					next.Store(int64(len(singles)))
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	if firstErr != nil {
		return firstErr
	}
	after := snapshot(b.procs)
	b.res.IngestSingleJobs = cfg.single
	b.res.IngestSingleJobsPerS = round(float64(cfg.single)/elapsed.Seconds(), 0)
	b.res.PhaseSeconds["ingest_single"] = round(elapsed.Seconds(), 2)
	b.res.CPU["ingest"], b.res.CPUByProcess["ingest"] = perThousand(b.procs, before, after, cfg.bulk+cfg.single)
	b.res.perJob("ingest", cost, b.storeCost(ctx), cfg.bulk+cfg.single)
	logf("single: %d jobs in %s: %.0f jobs/s", cfg.single, elapsed.Round(time.Millisecond), b.res.IngestSingleJobsPerS)
	return nil
}

// storage measures, on a database that holds only the ingest phase's pending
// one-off jobs, Postgres bytes per job over every partition of jobs with its
// indexes and TOAST (inserts only: no dead rows to vacuum first), and checks that Redis holds none of those jobs: they are
// beyond the horizon.
func (b *bench) storage(ctx context.Context) error {
	// Let the loader run a few rounds (TOCK_LOAD_INTERVAL is 1s) over the
	// far-off jobs before looking at Redis.
	settle := time.Now().Add(3 * time.Second)
	// No VACUUM or ANALYZE here: the phases after run on the statistics
	// that tock (and, where it is on, autovacuum) keeps, as in production.
	const sizeQ = `SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::bigint FROM pg_partition_tree('jobs') WHERE isleaf`
	if err := b.db.QueryRow(ctx, sizeQ).Scan(&b.res.PGJobsBytes); err != nil {
		return fmt.Errorf("size of jobs: %w", err)
	}
	if err := b.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'scheduled'`).Scan(&b.res.PGPendingJobs); err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	if want := int64(b.cfg.bulk + b.cfg.single); b.res.PGPendingJobs != want {
		b.res.fail("ingest: Postgres holds %d pending jobs, want %d", b.res.PGPendingJobs, want)
	}
	if b.res.PGPendingJobs > 0 {
		b.res.PGBytesPerPendingJob = round(float64(b.res.PGJobsBytes)/float64(b.res.PGPendingJobs), 1)
	}
	if err := b.storageBreakdown(ctx); err != nil {
		return err
	}

	time.Sleep(time.Until(settle))
	card, err := b.rdb.ZCard(ctx, b.keys.Due()).Result()
	if err != nil {
		return fmt.Errorf("zcard: %w", err)
	}
	xlen, err := b.rdb.XLen(ctx, b.keys.Ready()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("xlen: %w", err)
	}
	bytes, err := b.memoryUsage(ctx, b.keys.Due())
	if err != nil {
		return err
	}
	b.res.RedisJobsBeyondHorizon, b.res.RedisBytesBeyondHorizon = card+xlen, bytes
	if card+xlen > 0 {
		b.res.fail("storage: %d jobs due in a day are in Redis; the horizon should keep them out", card+xlen)
	}
	logf("storage: Postgres %d bytes for %d pending jobs; Redis holds %d of them in %d bytes",
		b.res.PGJobsBytes, b.res.PGPendingJobs, card+xlen, bytes)
	return nil
}

// memoryUsage is MEMORY USAGE key SAMPLES 0 (exact), 0 when key is absent.
func (b *bench) memoryUsage(ctx context.Context, key string) (int64, error) {
	n, err := b.rdb.MemoryUsage(ctx, key, 0).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("memory usage %s: %w", key, err)
	}
	return n, nil
}

// burst creates cfg.burst webhook jobs all due at one instant T, far enough
// ahead to create them all, measures the due set holding them, and waits for
// every one to run.
func (b *bench) burst(ctx context.Context) error {
	n := b.cfg.burst
	lead := b.lead(n, 10*time.Second)
	at := time.Now().Add(lead).Truncate(time.Millisecond)
	spread := b.cfg.burstSpread
	// The burst's occurrences are scheduled in [at, last]; end is just past it.
	last := at.Add(time.Duration(n-1) * spread / time.Duration(n)).Truncate(time.Millisecond)
	end := last.Add(time.Millisecond)
	b.res.BurstJobs, b.res.BurstLeadS, b.res.BurstSpreadS = n, round(lead.Seconds(), 1), spread.Seconds()
	specs := make([]jobSpec, n)
	for i := range specs {
		specs[i] = b.spec("burst", i, at.Add(time.Duration(i)*spread/time.Duration(n)))
		if k := b.cfg.burstFlowKeys; k > 0 {
			// Job i on key i mod k: each key's jobs spread over the burst.
			specs[i].Flow = map[string]any{"key": fmt.Sprintf("bench-%d", i%k), "concurrency": b.cfg.burstFlowConcurrency}
		}
	}
	b.res.BurstFlowKeys = b.cfg.burstFlowKeys
	bodies, err := batchBodies(specs, b.cfg.bulkBatch)
	if err != nil {
		return err
	}
	logf("burst: %d jobs due at %s (in %s)", n, at.UTC().Format(time.RFC3339Nano), time.Until(at).Round(time.Millisecond))
	before := snapshot(b.procs)
	start := time.Now()
	created, err := b.createBulk(ctx, bodies, b.cfg.bulkConc)
	if err != nil {
		return err
	}
	b.res.PhaseSeconds["burst_create"] = round(time.Since(start).Seconds(), 2)
	if created != n {
		return fmt.Errorf("bulk API created %d of %d jobs", created, n)
	}
	if time.Now().After(at) {
		return errOverran
	}

	// The window's cost in Redis: the due set holds the burst and nothing
	// else (the ingest jobs are beyond the horizon).
	var card int64
	for time.Now().Before(at.Add(-200 * time.Millisecond)) {
		if card, err = b.rdb.ZCard(ctx, b.keys.Due()).Result(); err != nil {
			return fmt.Errorf("zcard: %w", err)
		}
		if card >= int64(n) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	bytes, err := b.memoryUsage(ctx, b.keys.Due())
	if err != nil {
		return err
	}
	b.res.RedisWindowJobs, b.res.RedisDueSetBytes = card, bytes
	if card > 0 {
		b.res.RedisBytesPerWindowJob = round(float64(bytes)/float64(card), 1)
	}
	if card < int64(n) {
		b.res.fail("burst: the due set held %d of %d jobs before they were due", card, n)
	}
	logf("burst: due set holds %d jobs in %d bytes; waiting for %s", card, bytes, at.UTC().Format(time.RFC3339Nano))

	// The drain's CPU, of every process and both stores, is measured from
	// just before T until every job has run, as River's bench measures it;
	// creating the jobs and loading them into Redis is burst_create's.
	// Profiled from due for about as long as the last full run took (13 s
	// for 100,000 jobs on 2 cores).
	drain, cost := b.drainStart(ctx, at, before, "burst_create", n)
	profiled := b.profile(ctx, "burst", at, time.Duration(n/8)*time.Millisecond)
	deadline := end.Add(60*time.Second + time.Duration(n)*2*time.Millisecond)
	st, err := b.waitDone(ctx, n, at, end, deadline)
	if err != nil {
		return err
	}
	profiled()
	after := snapshot(b.procs)
	b.res.CPU["burst"], b.res.CPUByProcess["burst"] = perThousand(b.procs, drain, after, n)
	b.res.perJob("burst", cost, b.storeCost(ctx), n)
	b.res.PhaseSeconds["burst_run"] = round(time.Since(at).Seconds(), 2)

	b.memory(ctx)
	ps := analyse(b.target.take(b.cfg.steadyJobs()+1024), at, end)
	b.res.BurstLost = n - st.completed
	b.res.BurstDuplicates, b.res.BurstEarlyStarts = ps.duplicates, ps.early
	b.res.BurstLatenessP50MS, b.res.BurstLatenessP99MS, b.res.BurstLatenessMaxMS =
		ps.lateness.quantile(0.5), ps.lateness.quantile(0.99), ps.lateness.quantile(1)
	if !ps.lastAt.IsZero() {
		b.res.BurstLastStartS = round(ps.lastAt.Sub(at).Seconds(), 3)
		b.res.BurstLastStartAfterLastDueS = round(ps.lastAt.Sub(last).Seconds(), 3)
	}
	if !st.lastFinish.IsZero() {
		b.res.BurstLastDoneS = round(st.lastFinish.Sub(at).Seconds(), 3)
	}
	if b.res.BurstLost > 0 || len(ps.lateness) < n {
		b.res.fail("burst: %d of %d jobs completed and the target saw %d", st.completed, n, len(ps.lateness))
	}
	if ps.early > 0 {
		b.res.fail("burst: %d deliveries before their due time", ps.early)
	}
	return nil
}

// steady creates jobs due at their own milliseconds, steadyRate a second for
// steadyFor, and waits for every one to run.
func (b *bench) steady(ctx context.Context) error {
	n, rate := b.cfg.steadyJobs(), b.cfg.steadyRate
	lead := b.lead(n, 5*time.Second)
	t0 := time.Now().Add(lead).Truncate(time.Millisecond)
	end := t0.Add(b.cfg.steadyFor)
	b.res.SteadyJobs, b.res.SteadyRatePerS, b.res.SteadySeconds = n, rate, b.cfg.steadyFor.Seconds()
	specs := make([]jobSpec, n)
	for i := range specs {
		specs[i] = b.spec("steady", i, t0.Add(time.Duration(i)*time.Second/time.Duration(rate)))
	}
	bodies, err := batchBodies(specs, b.cfg.bulkBatch)
	if err != nil {
		return err
	}
	logf("steady: %d jobs due from %s at %d/s (in %s)", n, t0.UTC().Format(time.RFC3339Nano), rate, time.Until(t0).Round(time.Millisecond))
	before := snapshot(b.procs)
	start := time.Now()
	created, err := b.createBulk(ctx, bodies, b.cfg.bulkConc)
	if err != nil {
		return err
	}
	b.res.PhaseSeconds["steady_create"] = round(time.Since(start).Seconds(), 2)
	if created != n {
		return fmt.Errorf("bulk API created %d of %d jobs", created, n)
	}
	if time.Now().After(t0) {
		return errOverran
	}

	drain, cost := b.drainStart(ctx, t0, before, "steady_create", n)
	profiled := b.profile(ctx, "steady", t0, min(b.cfg.steadyFor, 30*time.Second))
	st, err := b.waitDone(ctx, n, t0, end, end.Add(60*time.Second))
	if err != nil {
		return err
	}
	profiled()
	after := snapshot(b.procs)
	b.res.CPU["steady"], b.res.CPUByProcess["steady"] = perThousand(b.procs, drain, after, n)
	b.res.perJob("steady", cost, b.storeCost(ctx), n)

	ps := analyse(b.target.take(0), t0, end)
	b.res.SteadyLost = n - st.completed
	b.res.SteadyDuplicates, b.res.SteadyEarlyStarts = ps.duplicates, ps.early
	b.res.SteadyLatenessP50MS, b.res.SteadyLatenessP99MS, b.res.SteadyLatenessMaxMS =
		ps.lateness.quantile(0.5), ps.lateness.quantile(0.99), ps.lateness.quantile(1)
	if !st.lastFinish.IsZero() {
		b.res.SteadyLastDoneS = round(st.lastFinish.Sub(end).Seconds(), 3)
	}
	if b.res.SteadyLost > 0 || len(ps.lateness) < n {
		b.res.fail("steady: %d of %d jobs completed and the target saw %d", st.completed, n, len(ps.lateness))
	}
	if ps.early > 0 {
		b.res.fail("steady: %d deliveries before their due time", ps.early)
	}
	return nil
}

// idle measures what the whole stack costs while nothing is due: every
// service process, Postgres and Redis, in CPU milliseconds per second, over
// idleFor. The ingest phase's jobs are pending, due in a day: beyond the
// horizon, as most of a deployment's jobs are at any moment.
func (b *bench) idle(ctx context.Context) error {
	if b.cfg.idleFor <= 0 {
		return nil
	}
	before, cost := snapshot(b.procs), b.storeCost(ctx)
	start := time.Now()
	// What a process does with nothing due is what it costs all day.
	profiled := b.profile(ctx, "idle", start, b.cfg.idleFor-time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.idleFor):
	}
	after, cost2, took := snapshot(b.procs), b.storeCost(ctx), time.Since(start).Seconds()
	profiled()
	ms := map[string]float64{}
	for _, p := range b.procs {
		ms[p.service] += (after[p.name] - before[p.name]).Seconds() * 1000 / took
	}
	if cost.ok && cost2.ok {
		ms["postgres"] = (cost2.pgCPU - cost.pgCPU).Seconds() * 1000 / took
		ms["redis"] = (cost2.redisCPU - cost.redisCPU).Seconds() * 1000 / took
	}
	total := 0.0
	for k, v := range ms {
		total += v
		ms[k] = round(v, 1)
	}
	ms["total"] = round(total, 1)
	b.res.IdleCPUMsPerS = ms
	logf("idle: %.1f ms of CPU a second over %s (%v)", total, b.cfg.idleFor, ms)
	return nil
}

// memory records each service process's peak resident memory, Redis's peak
// memory and the database's size, in MB.
func (b *bench) memory(ctx context.Context) {
	mb := func(n int64) float64 { return round(float64(n)/(1<<20), 1) }
	b.res.PeakMemoryMB = map[string]float64{}
	for _, p := range b.procs {
		if n, err := peakRSS(p.pid); err == nil {
			b.res.PeakMemoryMB[p.name] = mb(n)
		}
	}
	if info, err := b.rdb.InfoMap(ctx, "memory").Result(); err == nil {
		if n, err := strconv.ParseInt(info["Memory"]["used_memory_peak"], 10, 64); err == nil {
			b.res.PeakMemoryMB["redis server peak since its start"] = mb(n)
		}
	}
	var size int64
	if err := b.db.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&size); err == nil {
		b.res.PeakMemoryMB["postgres database size"] = mb(size)
	}
}

// storageBreakdown splits the pending jobs' bytes per job into the heap, TOAST
// and each index (a partitioned index's partitions summed; the per-hour
// partial indexes together), to show what the figure is made of.
func (b *bench) storageBreakdown(ctx context.Context) error {
	const q = `WITH leaf AS (SELECT relid FROM pg_partition_tree('jobs') WHERE isleaf)
SELECT 'heap', sum(pg_relation_size(relid))::bigint FROM leaf
UNION ALL
SELECT 'toast', sum(pg_total_relation_size(relid) - pg_relation_size(relid) - pg_indexes_size(relid))::bigint FROM leaf
UNION ALL
SELECT 'index ' || coalesce(parent.relname, regexp_replace(ic.relname, '^jobs_h[0-9]{2}_', 'jobs_hNN_')), sum(pg_relation_size(ic.oid))::bigint
FROM leaf JOIN pg_index i ON i.indrelid = leaf.relid JOIN pg_class ic ON ic.oid = i.indexrelid
LEFT JOIN pg_inherits inh ON inh.inhrelid = ic.oid LEFT JOIN pg_class parent ON parent.oid = inh.inhparent
GROUP BY 1 ORDER BY 1`
	rows, err := b.db.Query(ctx, q)
	if err != nil {
		return fmt.Errorf("storage breakdown: %w", err)
	}
	defer rows.Close()
	b.res.PGBytesPerPendingJobBy = map[string]float64{}
	for rows.Next() {
		var name string
		var bytes int64
		if err := rows.Scan(&name, &bytes); err != nil {
			return fmt.Errorf("storage breakdown: %w", err)
		}
		if b.res.PGPendingJobs > 0 {
			b.res.PGBytesPerPendingJobBy[name] = round(float64(bytes)/float64(b.res.PGPendingJobs), 1)
		}
	}
	return rows.Err()
}

// drainLead is how long before the first due time a phase's drain starts to
// count: enough to read /proc and both stores before anything is due.
const drainLead = 20 * time.Millisecond

// drainStart waits until just before due and snapshots every process and
// both stores there: the start of the phase's drain, the window River's bench
// measures (from T until every job has completed). What the processes spent
// from before (just before the phase's creates) until then, creating the jobs,
// loading them into Redis and idling until due, goes to the phase create, so
// the JSON still shows it.
func (b *bench) drainStart(ctx context.Context, due time.Time, before cpuSnapshot, create string, jobs int) (cpuSnapshot, storeCost) {
	if d := time.Until(due.Add(-drainLead)); d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	drain := snapshot(b.procs)
	b.res.CPU[create], b.res.CPUByProcess[create] = perThousand(b.procs, before, drain, jobs)
	return drain, b.storeCost(ctx)
}
