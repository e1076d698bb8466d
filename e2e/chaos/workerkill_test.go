package chaos

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// A worker killed with many attempts running: their leases live in Redis
// and no Postgres row exists for them.
const (
	killedRunning = 1_000
	// killedCancelled are one-off jobs due after the kill, cancelled while
	// the worker is dead.
	killedCancelled = 20
	// killedTimeout is the jobs' timeout: a lease ends this plus
	// TOCK_LEASE_MARGIN (1 s) after its attempt started.
	killedTimeout = 5 * time.Second
	// killedBound is how long after the kill every attempt must have an
	// outcome: the leases end (6 s), the reclaimers see the entries (every
	// second, TOCK_VISIBILITY_TIMEOUT 3 s) and the other worker runs 1,000
	// attempts. Generous for a busy 2-core machine.
	killedBound = 40 * time.Second
)

// gateTarget records every request it receives and holds each until it is
// opened, then answers 200; a request whose connection drops (its worker
// died) is recorded all the same: the target saw it.
type gateTarget struct {
	*httptest.Server
	open chan struct{}
	once sync.Once
	mu   sync.Mutex
	seen []cluster.Delivery
}

func newGateTarget() *gateTarget {
	g := &gateTarget{open: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempt, _ := strconv.Atoi(r.Header.Get("X-Tock-Attempt"))
		g.mu.Lock()
		g.seen = append(g.seen, cluster.Delivery{JobID: r.Header.Get("X-Tock-Job-Id"),
			IdempotencyKey: r.Header.Get("Idempotency-Key"), Attempt: attempt, Path: r.URL.Path, At: time.Now()})
		g.mu.Unlock()
		select {
		case <-g.open:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	}))
	return g
}

func (g *gateTarget) release() { g.once.Do(func() { close(g.open) }) }

func (g *gateTarget) deliveries() []cluster.Delivery {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]cluster.Delivery(nil), g.seen...)
}

// TestWorkerKilledWithAttemptsRunning: one worker holds 1,000 attempts
// running (their target holds every request) when it is killed with
// SIGKILL. While it is dead a one-off job whose attempt it ran is cancelled
// (409: its attempt runs, under a lease that outlives its worker), and 20
// one-off jobs due later are cancelled (204). Another worker then takes
// every attempt over once its lease ends: each of the 1,000 ends with one
// outcome, delivered again only under the same Idempotency-Key and attempt,
// and the cancelled jobs never run.
func TestWorkerKilledWithAttemptsRunning(t *testing.T) {
	fx := setup(t, fault{name: "WorkerKilledRunning", workerEnv: []string{"TOCK_WORKER_CONCURRENCY=1100"}})
	ctx := t.Context()
	gate := newGateTarget()
	t.Cleanup(gate.Close)
	t.Cleanup(gate.release)

	// One worker only, so that the one killed holds every attempt.
	require.NoError(t, fx.c.Signal("worker-2", syscall.SIGTERM))
	require.NoError(t, fx.c.Wait("worker-2", 15*time.Second))

	l := &load{target: gate.URL, planned: map[uuid.UUID]*planned{}}
	due := time.Now().Add(3 * time.Second)
	for range killedRunning {
		l.add(due, kindOK, 0)
	}
	later := due.Add(20 * time.Second)
	for range killedCancelled {
		l.add(later, kindOK, 0)
	}
	for _, j := range l.jobs {
		j.Timeout = killedTimeout
	}
	require.NoError(t, l.insert(ctx, fx.c.DatabaseURL))
	running, cancelled := l.jobs[:killedRunning], l.jobs[killedRunning:]

	started := map[string]bool{}
	require.True(t, cluster.WaitUntil(time.Until(due.Add(30*time.Second)), 50*time.Millisecond, func() bool {
		for _, d := range gate.deliveries() {
			started[d.JobID] = true
		}
		return len(started) >= killedRunning
	}), "the worker did not start all %d attempts: %d", killedRunning, len(started))
	leases, err := fx.running(ctx)
	require.NoError(t, err)
	require.Len(t, leases, killedRunning, "every attempt running holds a lease in Redis")
	var rows int
	require.NoError(t, fx.db.QueryRow(ctx, `SELECT count(*) FROM job_runs`).Scan(&rows))
	require.Zero(t, rows, "no Postgres row exists for an attempt that runs")

	require.NoError(t, fx.c.Signal("worker-1", syscall.SIGKILL))
	killed := time.Now()
	require.NoError(t, fx.c.Wait("worker-1", 10*time.Second))
	t.Logf("WorkerKilledRunning: worker-1 killed with %d attempts running, %s after they were due",
		killedRunning, killed.Sub(due).Round(time.Millisecond))

	// Cancels while the worker is dead: a job whose attempt it ran, and
	// the jobs due later.
	api := fx.c.API()
	code, err := api.Do(ctx, http.MethodDelete, "/api/v1/jobs/"+running[0].ID.String(), nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, code, "a one-off job whose attempt runs is not cancelled")
	for _, j := range cancelled {
		code, err := api.Do(ctx, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, code)
	}

	gate.release()
	_, err = fx.c.StartProc(ctx, "worker", "worker-2")
	require.NoError(t, err)

	var final map[uuid.UUID]string
	done := cluster.WaitUntil(killedBound, 250*time.Millisecond, func() bool {
		final = map[uuid.UUID]string{}
		rows, err := fx.db.Query(ctx, `SELECT job_id, status::text FROM job_runs`)
		if err != nil {
			return false
		}
		defer rows.Close()
		for rows.Next() {
			var id uuid.UUID
			var status string
			if rows.Scan(&id, &status) == nil {
				final[id] = status
			}
		}
		return len(final) >= killedRunning
	})
	require.True(t, done, "%d of %d attempts reached an outcome within %s of the kill", len(final), killedRunning, killedBound)
	t.Logf("WorkerKilledRunning: every attempt had an outcome %s after the kill", time.Since(killed).Round(time.Millisecond))

	byJob := map[string][]cluster.Delivery{}
	for _, d := range gate.deliveries() {
		byJob[d.JobID] = append(byJob[d.JobID], d)
	}
	again := 0
	for _, j := range running {
		require.Equal(t, "completed", final[j.ID], "job %s", j.ID)
		ds := byJob[j.ID.String()]
		require.NotEmpty(t, ds)
		for _, d := range ds {
			require.Equal(t, ds[0].IdempotencyKey, d.IdempotencyKey, "job %s delivered again under another key", j.ID)
			require.Equal(t, 1, d.Attempt, "job %s", j.ID)
		}
		again += len(ds) - 1
	}
	t.Logf("WorkerKilledRunning: %d of the %d attempts killed were delivered again, each under its Idempotency-Key", again, killedRunning)

	cluster.SleepUntil(ctx, later.Add(2*time.Second))
	for _, j := range cancelled {
		require.Empty(t, byJob[j.ID.String()], "a cancelled job never runs")
		got, err := api.GetJob(ctx, j.ID.String())
		require.NoError(t, err)
		require.Equal(t, "cancelled", got.Status)
	}
	require.Empty(t, cluster.ForJob(gate.deliveries(), cancelled[0].ID.String()))
	left, err := fx.running(context.WithoutCancel(ctx))
	require.NoError(t, err)
	require.Empty(t, left, "no lease is left")
}
