package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/queue"
)

// bench is one run: the services, the target, and the clients that read
// Postgres and Redis behind the services' backs to measure them.
type bench struct {
	cfg    config
	logDir string
	binTmp string // a build directory of our own, removed at the end
	c      *cluster.Cluster
	target *target
	api    *http.Client
	db     *pgx.Conn
	rdb    *redis.Client
	keys   queue.Keys
	procs  []proc
	res    *results

	// bulkRate is the bulk ingest rate measured first; it sizes how far ahead
	// the burst and the steady jobs are due, so that creating them ends
	// before the first is due.
	bulkRate float64
}

func (c config) steadyJobs() int { return int(c.steadyFor.Seconds() * float64(c.steadyRate)) }

// newBench builds the services if needed, starts them on a fresh database and
// key prefix, and starts the target.
func newBench(ctx context.Context, cfg config) (*bench, error) {
	b := &bench{cfg: cfg}
	var err error
	if b.logDir, err = os.MkdirTemp("", "tock-bench-logs-"); err != nil {
		return nil, err
	}
	binDir := cfg.binDir
	if !haveBinaries(binDir) {
		if b.binTmp, err = os.MkdirTemp("", "tock-bench-bin-"); err != nil {
			return nil, err
		}
		binDir = b.binTmp
		logf("building the services into %s", binDir)
		if err := cluster.Build(ctx, binDir); err != nil {
			b.close(true)
			return nil, err
		}
	}
	if b.target, err = startTarget(max(cfg.burst, cfg.steadyJobs()) + 1024); err != nil {
		b.close(true)
		return nil, err
	}
	// Warnings only: a log line per job would measure the logger.
	env := []string{"TOCK_LOG_LEVEL=warn"}
	if cfg.profileDir != "" {
		env = append(env, "TOCK_PPROF=true")
	}
	b.c, err = cluster.Start(ctx, cluster.Options{
		BinDir: binDir, AdminURL: cfg.databaseURL, RedisURL: cfg.redisURL,
		Schedulers: cfg.schedulers, Workers: cfg.workers,
		Env:    env,
		LogDir: b.logDir, KeepDB: cfg.keep, Logf: logf,
	})
	if err != nil {
		b.close(true)
		return nil, fmt.Errorf("start services (is Postgres answering at %s and Redis at %s?): %w", cfg.databaseURL, cfg.redisURL, err)
	}
	if b.db, err = pgx.Connect(ctx, b.c.DatabaseURL); err != nil {
		b.close(true)
		return nil, fmt.Errorf("connect to the benchmark database: %w", err)
	}
	opt, err := redis.ParseURL(cfg.redisURL)
	if err != nil {
		b.close(true)
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	b.rdb = redis.NewClient(opt)
	b.keys = queue.Keys{Prefix: b.c.RedisPrefix}
	byAddr := map[string]proc{}
	for _, name := range b.c.Names() {
		p := b.c.Proc(name)
		byAddr[p.MetricsAddr] = proc{name: name, service: p.Service}
	}
	if b.procs, err = childProcs(byAddr); err != nil {
		b.close(true)
		return nil, err
	}
	b.api = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
		MaxIdleConns: cfg.clients + cfg.bulkConc, MaxIdleConnsPerHost: cfg.clients + cfg.bulkConc}}
	return b, nil
}

func haveBinaries(dir string) bool {
	for _, s := range []string{"dashboard", "scheduler", "worker"} {
		if fi, err := os.Stat(filepath.Join(dir, s)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// run measures every phase in order. A phase that cannot go on returns an
// error; a lost or early job is a failure in the results, and the later
// phases still run.
func (b *bench) run(ctx context.Context) (*results, error) {
	b.res = &results{
		IngestBulkBatch: b.cfg.bulkBatch, IngestBulkConcurrency: b.cfg.bulkConc, IngestSingleClients: b.cfg.clients,
		CPU: map[string]map[string]float64{}, CPUByProcess: map[string]map[string]float64{}, PhaseSeconds: map[string]float64{},
		StoreCost: map[string]map[string]float64{},
		Quick:     b.cfg.quick, Workers: b.cfg.workers, Schedulers: b.cfg.schedulers,
		Machine:   machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, Commit: gitCommit()},
		StartedAt: time.Now().UTC().Format(time.RFC3339),
		Failures:  []string{},
	}
	start := time.Now()
	for _, phase := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"ingest", b.ingest},
		{"storage", b.storage},
		{"idle", b.idle},
		{"burst", b.burst},
		{"steady", b.steady},
	} {
		logf("phase %s", phase.name)
		t := time.Now()
		if err := phase.run(ctx); err != nil {
			return b.res, fmt.Errorf("%s: %w", phase.name, err)
		}
		b.res.PhaseSeconds[phase.name] = round(time.Since(t).Seconds(), 1)
	}
	b.res.PhaseSeconds["total"] = round(time.Since(start).Seconds(), 1)
	return b.res, nil
}

// close stops the services and removes what the run made, keeping the
// database, the Redis keys and the logs with -keep, and the logs on failure.
func (b *bench) close(failed bool) {
	if b.db != nil {
		_ = b.db.Close(context.Background())
	}
	if b.c != nil {
		if failed {
			for _, name := range b.c.Names() {
				fmt.Fprintf(os.Stderr, "--- %s log tail ---\n%s\n", name, b.c.LogTail(name, 20))
			}
		}
		b.c.Stop()
		if !b.cfg.keep && b.rdb != nil {
			b.dropKeys()
		}
	}
	if b.rdb != nil {
		_ = b.rdb.Close()
	}
	if b.target != nil {
		b.target.close()
	}
	if b.binTmp != "" {
		_ = os.RemoveAll(b.binTmp)
	}
	if b.cfg.keep || failed {
		if b.c != nil {
			fmt.Fprintf(os.Stderr, "kept: service logs in %s; database %s; Redis prefix %s\n", b.logDir, b.c.DatabaseURL, b.c.RedisPrefix)
		}
	} else if b.logDir != "" {
		_ = os.RemoveAll(b.logDir)
	}
}

// dropKeys deletes every Redis key of the run's prefix.
func (b *bench) dropKeys() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := b.rdb.Scan(ctx, 0, b.c.RedisPrefix+":*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			_ = b.rdb.Unlink(ctx, batch...).Err()
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		_ = b.rdb.Unlink(ctx, batch...).Err()
	}
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		commit += "-dirty"
	}
	return commit
}

// jobSpec is a webhook job as POST /api/v1/jobs takes it.
type jobSpec struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	RunAt   string `json:"run_at"`
	Payload any    `json:"payload"`
	// Flow is the job's flow key and limits (-burst-flow-keys); nil for none.
	Flow map[string]any `json:"flow,omitempty"`
}

type webhookPayload struct {
	URL    string         `json:"url"`
	Method string         `json:"method"`
	Body   map[string]int `json:"body"`
}

// spec is the benchmark's job i, due at at: a POST to the target with a
// small body, so the payload stays near the size of a typical webhook call.
func (b *bench) spec(name string, i int, at time.Time) jobSpec {
	return jobSpec{Name: fmt.Sprintf("%s-%d", name, i), Type: "webhook", RunAt: at.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Payload: webhookPayload{URL: b.target.url, Method: "POST", Body: map[string]int{"seq": 1_000_000 + i}}}
}

// pendingSpec is ingest job i, due at at and never run: a ping with a
// payload of about 20 bytes, the size issue 7's storage target is set for.
func pendingSpec(name string, i int, at time.Time) jobSpec {
	return jobSpec{Name: fmt.Sprintf("%s-%d", name, i), Type: "ping", RunAt: at.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Payload: map[string]string{"url": "http://a.io/"}}
}

// batchBodies marshals specs into bulk request bodies of at most batch jobs.
func batchBodies(specs []jobSpec, batch int) ([][]byte, error) {
	var out [][]byte
	for start := 0; start < len(specs); start += batch {
		body, err := json.Marshal(map[string]any{"jobs": specs[start:min(start+batch, len(specs))]})
		if err != nil {
			return nil, err
		}
		out = append(out, body)
	}
	return out, nil
}

// post sends a JSON body as the admin and returns the status and answer.
func (b *bench) post(ctx context.Context, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.c.APIURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.c.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.api.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// createBulk sends the bodies through the bulk API, conc at a time, and
// returns how many jobs were created. Any answer but 201 stops it.
func (b *bench) createBulk(ctx context.Context, bodies [][]byte, conc int) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan []byte)
	created := make(chan int, len(bodies))
	done := make(chan struct{})
	go func() {
		defer close(work)
		for _, body := range bodies {
			select {
			case work <- body:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range conc {
		go func() {
			defer func() { done <- struct{}{} }()
			for body := range work {
				code, out, err := b.post(ctx, "/api/v1/jobs:batch", body)
				if err == nil && code != http.StatusCreated {
					err = fmt.Errorf("POST /api/v1/jobs:batch: status %d: %.300s", code, out)
				}
				var ans struct {
					Created int `json:"created"`
				}
				if err == nil {
					err = json.Unmarshal(out, &ans)
				}
				if err != nil {
					cancel(err)
					return
				}
				created <- ans.Created
			}
		}()
	}
	for range conc {
		<-done
	}
	close(created)
	n := 0
	for c := range created {
		n += c
	}
	if err := context.Cause(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// waitStats is what Postgres says of one phase's runs.
type waitStats struct {
	completed  int
	lastFinish time.Time
}

// waitDone waits until the target has seen want requests for occurrences
// scheduled in [from, to) and Postgres holds a completed run for want of
// them, or until deadline. It then returns what it found.
func (b *bench) waitDone(ctx context.Context, want int, from, to, deadline time.Time) (waitStats, error) {
	const q = `SELECT count(DISTINCT job_id) FILTER (WHERE status = 'completed'), max(finished_at)
		FROM job_runs WHERE scheduled_for >= $1 AND scheduled_for < $2`
	var st waitStats
	read := func() error {
		var last *time.Time
		if err := b.db.QueryRow(ctx, q, from, to).Scan(&st.completed, &last); err != nil {
			return fmt.Errorf("count runs: %w", err)
		}
		if last != nil {
			st.lastFinish = *last
		}
		return nil
	}
	nextLog := time.Now().Add(5 * time.Second)
	for {
		// Postgres is asked only once the target has seen every job: the
		// query would otherwise compete with the workers it measures.
		if b.target.count() >= want {
			if err := read(); err != nil {
				return st, err
			}
			if st.completed >= want {
				return st, nil
			}
		}
		if time.Now().After(deadline) {
			return st, read()
		}
		if time.Now().After(nextLog) {
			logf("waiting: target saw %d of %d", b.target.count(), want)
			nextLog = time.Now().Add(5 * time.Second)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// phaseStats is what the target saw of one phase.
type phaseStats struct {
	lateness   latencies // first delivery of each occurrence, sorted
	early      int       // deliveries before their due time
	duplicates int       // deliveries of an occurrence seen before
	stray      int       // deliveries scheduled outside the phase
	lastAt     time.Time // the last first delivery
}

// analyse reads the target's deliveries of occurrences scheduled in [from, to).
func analyse(ds []delivery, from, to time.Time) phaseStats {
	var st phaseStats
	seen := make(map[string]struct{}, len(ds))
	st.lateness = make(latencies, 0, len(ds))
	for _, d := range ds {
		if d.scheduled.Before(from) || !d.scheduled.Before(to) {
			st.stray++
			continue
		}
		if d.at.Before(d.scheduled) {
			st.early++
		}
		key := d.jobID + "@" + d.scheduled.Format(time.RFC3339Nano)
		if _, dup := seen[key]; dup {
			st.duplicates++
			continue
		}
		seen[key] = struct{}{}
		st.lateness = append(st.lateness, d.at.Sub(d.scheduled))
		if d.at.After(st.lastAt) {
			st.lastAt = d.at
		}
	}
	slices.Sort(st.lateness)
	return st
}

// lead is how far ahead n jobs created through the bulk API should be due:
// twice the time the measured bulk rate needs for them, plus slack for the
// due set to fill.
func (b *bench) lead(n int, slack time.Duration) time.Duration {
	rate := b.bulkRate
	if rate <= 0 {
		rate = 1000
	}
	return time.Duration(2*float64(n)/rate*float64(time.Second)) + slack
}

var errOverran = errors.New("creating the jobs took longer than their lead: the first were due before the last were created")
