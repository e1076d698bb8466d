package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/testenv"
)

// TestThroughPgBouncer runs the spine with every service's pool going
// through Debian's PgBouncer in transaction pooling mode, which hands each
// transaction whichever server connection is free, at most 6 for the
// whole cluster: pgx's cache_describe mode (no named prepared statements), the
// migrations on a direct connection (TOCK_DATABASE_DIRECT_URL: tern holds a
// session's advisory lock), and every statement tock runs fitting in one
// transaction. One-off jobs (single and bulk, due at once and through the
// loader), a failing job with retries, a recurring job, pause, resume,
// trigger and cancel: everything runs exactly once and is recorded.
func TestThroughPgBouncer(t *testing.T) {
	if _, err := exec.LookPath("pgbouncer"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pgbouncer is not installed (Debian's pgbouncer); .ci/run installs it")
		}
		t.Skip("pgbouncer is not installed")
	}
	const serverConns = 6
	bouncer, err := cluster.StartPgBouncer(t.Context(), testenv.DatabaseURL(), serverConns)
	require.NoError(t, err)
	t.Cleanup(func() {
		bouncer.Close()
		if t.Failed() {
			t.Logf("--- pgbouncer log ---\n%s", bouncer.Log())
		}
	})
	c := start(t, cluster.Options{
		Schedulers: 2, Workers: 2, Pooler: bouncer.Addr,
		Env: []string{"TOCK_LOAD_HORIZON=3s", "TOCK_RETRY_BACKOFF=100ms", "TOCK_RETRY_BACKOFF_MAX=200ms"},
	})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	// The servers' side: how many Postgres backends serve the cluster's
	// database at once, sampled while everything runs (this connection
	// is one of them).
	db, err := pgx.Connect(ctx, c.DatabaseURL)
	require.NoError(t, err)
	defer db.Close(context.Background())
	var most atomic.Int64
	sampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var n int64
			if db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`).Scan(&n) == nil && n > most.Load() {
				most.Store(n)
			}
			select {
			case <-sampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	var ids []string
	due := time.Now()
	for i := range 100 {
		at := time.Now().Add(time.Second + time.Duration(i%5)*time.Second) // some at creation, some through the loader
		j, err := api.CreateJob(ctx, createJob{Name: fmt.Sprintf("single-%d", i), Type: "webhook", RunAt: at,
			Payload: map[string]any{"url": target.URL + "/ok"}})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	bulk := make([]createJob, 200)
	for i := range bulk {
		bulk[i] = createJob{Name: fmt.Sprintf("bulk-%d", i), Type: "webhook", RunAt: time.Now().Add(2 * time.Second),
			Payload: map[string]any{"url": target.URL + "/ok"}}
	}
	var created struct {
		IDs []string `json:"ids"`
	}
	code, err := api.Do(ctx, "POST", "/api/v1/jobs:batch", map[string]any{"jobs": bulk}, &created)
	require.NoError(t, err)
	require.Equal(t, 201, code)
	ids = append(ids, created.IDs...)
	two := 2
	failing, err := api.CreateJob(ctx, createJob{Name: "failing", Type: "webhook", RunAt: time.Now().Add(time.Second), MaxRetries: &two,
		Payload: map[string]any{"url": target.URL + "/fail"}})
	require.NoError(t, err)
	recurring, err := api.CreateJob(ctx, schedSpec{Name: "every second, thrice", Type: "webhook",
		Schedule: map[string]any{"cron": "* * * * * *", "count": 3}, Payload: hookTo(target.URL + "/cron")})
	require.NoError(t, err)
	paused, err := api.CreateJob(ctx, createJob{Name: "paused", Type: "webhook", RunAt: time.Now().Add(3 * time.Second),
		Payload: map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)
	code, err = api.Action(ctx, paused.ID, "pause")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	cancelled, err := api.CreateJob(ctx, createJob{Name: "cancelled", Type: "webhook", RunAt: time.Now().Add(time.Hour),
		Payload: map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)
	code, err = api.Do(ctx, "DELETE", "/api/v1/jobs/"+cancelled.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, 204, code)
	code, err = api.Action(ctx, paused.ID, "resume")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	ids = append(ids, paused.ID)

	ok := target.WaitFor(60*time.Second, func(ds []cluster.Delivery) bool {
		oks, fails, crons := 0, 0, 0
		for _, d := range ds {
			switch d.Path {
			case "/ok":
				oks++
			case "/fail":
				fails++
			case "/cron":
				crons++
			}
		}
		return oks >= len(ids) && fails >= 3 && crons >= 3
	})
	require.True(t, ok, "not everything was delivered through PgBouncer within 60 s of %s", due)

	close(sampling)
	<-sampled
	t.Logf("at most %d Postgres backends served the cluster's database, this test's own included, for 5 processes through PgBouncer", most.Load())
	require.LessOrEqual(t, most.Load(), int64(serverConns+1), "every service went through PgBouncer's %d server connections", serverConns)
	require.True(t, cluster.WaitUntil(30*time.Second, 100*time.Millisecond, func() bool {
		var unfinished int
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'scheduled'`).Scan(&unfinished))
		return unfinished == 0
	}), "jobs still scheduled")
	perKey := map[string]int{}
	for _, d := range target.Deliveries() {
		perKey[d.IdempotencyKey+"/"+fmt.Sprint(d.Attempt)]++
	}
	for k, n := range perKey {
		require.Equal(t, 1, n, "attempt %s delivered %d times", k, n)
	}
	var completed, failed int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'permanently_failed')
		FROM jobs WHERE id = ANY($1::uuid[]) OR id = $2::uuid OR id = $3::uuid`, ids, recurring.ID, failing.ID).Scan(&completed, &failed))
	require.Equal(t, len(ids)+1, completed, "every one-off job and the recurring one completed")
	require.Equal(t, 1, failed, "the failing job failed permanently after its retries")
	runs, err := api.Runs(ctx, failing.ID, 10)
	require.NoError(t, err)
	require.Len(t, runs, 3)
	var status string
	require.NoError(t, db.QueryRow(ctx, `SELECT status FROM jobs WHERE id = $1`, cancelled.ID).Scan(&status))
	require.Equal(t, "cancelled", status)
}
