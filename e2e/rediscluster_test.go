package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestRedisCluster runs tock on a three-master Redis Cluster, with the queue
// spread over six shards (hash tags), as on ElastiCache in cluster mode: jobs
// made through the API and the bulk API, loaded by the loader or put in Redis
// at creation, a retried failure and a recurring job all run exactly once per
// attempt; the shards' keys sit on every master; and after the whole cluster
// loses its data the reconciler rebuilds every shard from Postgres. Any
// CROSSSLOT error in a service's log fails it.
func TestRedisCluster(t *testing.T) {
	rc, err := cluster.StartRedisCluster(t.Context(), 3)
	if errors.Is(err, cluster.ErrUnavailable) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer rc.Close()

	c := start(t, cluster.Options{
		RedisURL: rc.URL(), Schedulers: 2, Workers: 2,
		Env: []string{
			"TOCK_REDIS_CLUSTER=true", "TOCK_REDIS_SHARDS=6",
			// A short horizon, so jobs due in a few seconds go through the
			// loader rather than the dashboard's short-notice path.
			"TOCK_LOAD_HORIZON=2s", "TOCK_RECONCILE_INTERVAL=1s",
			"TOCK_RETRY_BACKOFF=100ms", "TOCK_RETRY_BACKOFF_MAX=200ms",
		},
	})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	// Wave 1: 200 single creates due in 1-4 s (the first second's at
	// creation, the rest through the loader), a bulk of 300 due in 3 s, a job
	// failing twice before it gives up, and a recurring job every second.
	var ids []string
	for i := range 200 {
		// Each from its own creation: 200 creates in a row can take longer
		// than a second, and a time in the past is refused.
		at := time.Now().Add(time.Second + time.Duration(i%4)*time.Second)
		j, err := api.CreateJob(ctx, createJob{Name: fmt.Sprintf("single-%d", i), Type: "webhook", RunAt: at,
			Payload: map[string]any{"url": target.URL + "/ok"}})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	bulkAt := time.Now().Add(3 * time.Second)
	jobs := make([]createJob, 300)
	for i := range jobs {
		jobs[i] = createJob{Name: fmt.Sprintf("bulk-%d", i), Type: "webhook", RunAt: bulkAt,
			Payload: map[string]any{"url": target.URL + "/ok"}}
	}
	var created struct {
		Created int      `json:"created"`
		IDs     []string `json:"ids"`
	}
	code, err := api.Do(ctx, "POST", "/api/v1/jobs:batch", map[string]any{"jobs": jobs}, &created)
	require.NoError(t, err)
	require.Equal(t, 201, code)
	require.Equal(t, 300, created.Created)
	ids = append(ids, created.IDs...)
	two := 2
	failing, err := api.CreateJob(ctx, createJob{Name: "always-500", Type: "webhook", RunAt: time.Now().Add(time.Second),
		MaxRetries: &two, Payload: map[string]any{"url": target.URL + "/fail"}})
	require.NoError(t, err)
	t0 := ceilSecond(time.Now().Add(time.Second))
	recurring, err := api.CreateJob(ctx, schedSpec{Name: "every-second", Type: "webhook",
		Schedule: map[string]any{"cron": "* * * * * *", "start_at": t0, "count": 4},
		Payload:  hookTo(target.URL + "/cron")})
	require.NoError(t, err)

	delivered := target.WaitFor(60*time.Second, func(ds []cluster.Delivery) bool {
		return countPath(ds, "/ok") >= len(ids) && countPath(ds, "/fail") >= 3 && countPath(ds, "/cron") >= 4
	})
	require.True(t, delivered, "not everything was delivered: %d /ok of %d, %d /fail, %d /cron",
		countPath(target.Deliveries(), "/ok"), len(ids), countPath(target.Deliveries(), "/fail"), countPath(target.Deliveries(), "/cron"))
	waitStatus(t, api, failing.ID, "permanently_failed", 10*time.Second)
	waitStatus(t, api, recurring.ID, "completed", 10*time.Second)

	// The shards' hash tags spread them evenly: two per master.
	nodes, err := rc.Keys(ctx, c.RedisPrefix)
	require.NoError(t, err)
	for i, keys := range nodes {
		streams := 0
		for _, k := range keys {
			if strings.HasSuffix(k, ":ready") {
				streams++
			}
		}
		require.Equal(t, 2, streams, "master %d holds two of the six shards: %v", i, keys)
		t.Logf("master %d holds %d keys: %s", i, len(keys), strings.Join(keys, " "))
	}
	var sys struct {
		Queue struct {
			Due, Stream, Pending int64
		} `json:"queue"`
		Schedulers []struct{ Leader bool } `json:"schedulers"`
		Workers    []struct{ Name string } `json:"workers"`
	}
	code, err = api.Do(ctx, "GET", "/api/v1/system", nil, &sys)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.Len(t, sys.Schedulers, 2, "both schedulers heard through the home shard")
	require.Len(t, sys.Workers, 2, "both workers, each reading all six shards, listed once")

	// Wave 2: 100 jobs due in 5 s, not in Redis at creation (the horizon is
	// 2 s, so the loader claims them a few seconds ahead) ... then the whole
	// cluster loses its data. The reconciler must see the markers gone and
	// put every claimed job back.
	// One batch, so that a slow machine still creates them all well before
	// they are due.
	wave2At := time.Now().Add(5 * time.Second)
	batch2 := make([]createJob, 100)
	for i := range batch2 {
		batch2[i] = createJob{Name: fmt.Sprintf("wave2-%d", i), Type: "webhook", RunAt: wave2At,
			Payload: map[string]any{"url": target.URL + "/wave2"}}
	}
	var created2 struct {
		IDs []string `json:"ids"`
	}
	code, err = api.Do(ctx, "POST", "/api/v1/jobs:batch", map[string]any{"jobs": batch2}, &created2)
	require.NoError(t, err)
	require.Equal(t, 201, code)
	wave2 := created2.IDs
	require.Len(t, wave2, len(batch2))
	db, err := pgx.Connect(ctx, c.DatabaseURL)
	require.NoError(t, err)
	defer db.Close(context.Background())
	require.Eventually(t, func() bool {
		var unclaimed int
		_ = db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE name LIKE 'wave2-%' AND due_at IS NOT NULL`).Scan(&unclaimed)
		return unclaimed == 0
	}, 10*time.Second, 50*time.Millisecond, "the loader did not claim wave 2")
	require.NoError(t, rc.FlushAll(ctx))
	t.Logf("flushed every master %s before wave 2 was due", time.Until(wave2At).Round(time.Millisecond))

	delivered = target.WaitFor(60*time.Second, func(ds []cluster.Delivery) bool { return countPath(ds, "/wave2") >= len(wave2) })
	require.True(t, delivered, "wave 2 was not rebuilt: %d of %d delivered", countPath(target.Deliveries(), "/wave2"), len(wave2))
	ids = append(ids, wave2...)

	// The truth in Postgres: everything finished, nothing running.
	require.Eventually(t, func() bool {
		var running, scheduled int
		_ = db.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE status = 'running'`).Scan(&running)
		_ = db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'scheduled'`).Scan(&scheduled)
		return running == 0 && scheduled == 0
	}, 30*time.Second, 100*time.Millisecond, "runs still running or jobs still scheduled")

	// Exactly once per one-off job; four attempts of the failing one (2
	// retries after the first), one per cron occurrence.
	perKey := map[string]int{}
	perJob := map[string]int{}
	for _, d := range target.Deliveries() {
		perKey[fmt.Sprintf("%s/%d", d.IdempotencyKey, d.Attempt)]++
		perJob[d.JobID]++
	}
	for key, n := range perKey {
		require.Equal(t, 1, n, "attempt %s delivered %d times", key, n)
	}
	for _, id := range ids {
		require.Equal(t, 1, perJob[id], "job %s", id)
	}
	require.Equal(t, 3, perJob[failing.ID], "the first attempt and two retries")
	require.Equal(t, 4, perJob[recurring.ID])
	var completed int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE status = 'completed'`).Scan(&completed))
	require.Equal(t, len(ids)+4, completed)

	for _, name := range c.Names() {
		require.NotContains(t, c.LogTail(name, 100000), "CROSSSLOT", "%s", name)
	}
}

func countPath(ds []cluster.Delivery, path string) int {
	n := 0
	for _, d := range ds {
		if d.Path == path {
			n++
		}
	}
	return n
}
