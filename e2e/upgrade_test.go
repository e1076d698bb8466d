package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// lastReleasedSchema is the schema version of the last tock released before
// the job type became text (007), bulk creates one audit entry (008) and
// finished jobs an index for retention (009).
const lastReleasedSchema = 6

// TestUpgradeInPlace: a database as the previous release left it, holding a
// job in every state with its runs, is migrated by the new services as they
// start, with no manual step. Every pending job then runs once, and every
// old run is still listed.
func TestUpgradeInPlace(t *testing.T) {
	target := cluster.NewTarget()
	defer target.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	admin := store.BootstrapAdmin
	hook := func(path string) string { return fmt.Sprintf(`{"url": %q}`, target.URL+path) }

	type old struct {
		id        uuid.UUID
		what      string
		runs      int  // run rows it holds before the upgrade
		runsAfter bool // it must run (once) after the upgrade
	}
	jobs := []old{
		{id: job.NewID(), what: "scheduled, not yet loaded", runsAfter: true},
		{id: job.NewID(), what: "claimed into the Redis the upgrade lost", runsAfter: true},
		{id: job.NewID(), what: "running when its worker stopped", runs: 1, runsAfter: true},
		{id: job.NewID(), what: "completed", runs: 1},
		{id: job.NewID(), what: "permanently failed after two attempts", runs: 2},
		{id: job.NewID(), what: "running under a live lease when its worker stopped", runs: 1, runsAfter: true},
	}
	// The last job's lease, taken by the stopped release's worker, ends
	// this long after the upgrade starts: no worker of the new release may
	// run it before.
	leaseEnds := now.Add(8 * time.Second)
	due := now.Add(6 * time.Second)
	prepare := func(ctx context.Context, url string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if err := store.MigrateTo(ctx, conn, lastReleasedSchema); err != nil {
			return err
		}
		// Rows as the previous release wrote them: type was an enum then.
		insert := `INSERT INTO jobs (id, owner_id, due_hour, type, status, max_retries, timeout_ms, run_at, due_at,
		    created_at, updated_at, name, payload, timezone)
		  VALUES ($1, $2, coalesce(extract(hour FROM $7::timestamptz AT TIME ZONE 'UTC')::smallint, -1), 'webhook', $3::job_status,
		    2, 5000, $4, $7, $5, $5, $6, $8::jsonb, 'UTC')`
		run := `INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until, finished_at, output)
		  VALUES ($1, $2, $3, $4::run_status, $5, $6, $2, $2, $7, $8, $9)`
		past := now.Add(-time.Hour)
		steps := []struct {
			sql  string
			args []any
		}{
			{insert, []any{jobs[0].id, admin, "scheduled", due, now, jobs[0].what, due, hook("/ok")}},
			{insert, []any{jobs[1].id, admin, "scheduled", due, now, jobs[1].what, nil, hook("/ok")}},
			{insert, []any{jobs[2].id, admin, "scheduled", now.Add(-2 * time.Minute), now, jobs[2].what, nil, hook("/ok")}},
			{run, []any{jobs[2].id, now.Add(-2 * time.Minute), 1, "running", job.NewID(), admin, now.Add(-time.Minute), nil, nil}},
			{insert, []any{jobs[3].id, admin, "completed", past, past, jobs[3].what, nil, hook("/ok")}},
			{run, []any{jobs[3].id, past, 1, "completed", job.NewID(), admin, past, past, "HTTP 200"}},
			{insert, []any{jobs[4].id, admin, "permanently_failed", past, past, jobs[4].what, nil, hook("/fail")}},
			{run, []any{jobs[4].id, past, 1, "failed", job.NewID(), admin, past, past, "HTTP 500"}},
			{run, []any{jobs[4].id, past, 2, "permanently_failed", job.NewID(), admin, past, past, "HTTP 500"}},
			{insert, []any{jobs[5].id, admin, "scheduled", now.Add(-time.Minute), now, jobs[5].what, nil, hook("/ok")}},
			{run, []any{jobs[5].id, now.Add(-time.Minute), 1, "running", job.NewID(), admin, leaseEnds, nil, nil}},
		}
		for i, st := range steps {
			if _, err := conn.Exec(ctx, st.sql, st.args...); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		return nil
	}

	c := start(t, cluster.Options{Schedulers: 1, Workers: 1, Prepare: prepare,
		// The running attempt's lease ended a minute ago: the reconciler,
		// which runs when a leader starts, hands it to a worker.
		Env: []string{"TOCK_RECONCILE_INTERVAL=1s"}})
	api := c.API()
	ctx := t.Context()

	var version int
	conn, err := pgx.Connect(ctx, c.DatabaseURL)
	require.NoError(t, err)
	require.NoError(t, conn.QueryRow(ctx, `SELECT version FROM tock_schema_version`).Scan(&version))
	_ = conn.Close(ctx)
	require.Greater(t, version, lastReleasedSchema, "the services migrated the database as they started")

	pending := 0
	for _, j := range jobs {
		if j.runsAfter {
			pending++
		}
	}
	require.True(t, target.WaitFor(30*time.Second, func(ds []cluster.Delivery) bool { return len(ds) >= pending }),
		"every pending job ran after the upgrade: %d of %d", target.Count(), pending)
	for _, j := range jobs {
		require.True(t, cluster.WaitUntil(15*time.Second, 100*time.Millisecond, func() bool {
			got, err := api.GetJob(ctx, j.id.String())
			return err == nil && got.Status != "scheduled"
		}), "%s: the job reached a final state", j.what)
		runs, err := api.Runs(ctx, j.id.String(), 10)
		require.NoError(t, err)
		delivered := len(cluster.ForJob(target.Deliveries(), j.id.String()))
		if j.runsAfter {
			require.Equal(t, 1, delivered, "%s: ran once after the upgrade", j.what)
			require.Len(t, runs, 1, "%s: one run, its outcome", j.what)
			require.NotEqual(t, "running", runs[0].Status, "%s: its outcome replaced the running row", j.what)
		} else {
			require.Zero(t, delivered, "%s: finished before the upgrade, not run again", j.what)
			require.Len(t, runs, j.runs, "%s: its old runs are still listed", j.what)
		}
	}
	for _, d := range cluster.ForJob(target.Deliveries(), jobs[5].id.String()) {
		require.False(t, d.At.Before(leaseEnds), "%s: not run while the old lease held (ran at %s, lease ended %s)",
			jobs[5].what, d.At, leaseEnds)
	}
	time.Sleep(time.Second) // a duplicate would arrive within the publish tick
	require.Equal(t, pending, target.Count(), "no pending job ran twice")
}

// schemaBeforeSealedSecrets is the schema of the last release that stored
// a job's credentials in clear in its payload and notify.
const schemaBeforeSealedSecrets = 20

// TestSecretsSealedOnUpgrade: jobs the previous release stored, with
// credentials in clear in their payload and notify, are sealed by the new
// services as they start (every dashboard's pass after the migrations):
// views show fingerprints, a dump of every table holds none of the
// credentials, and the jobs deliver exactly as before, the credentials
// themselves in their headers.
func TestSecretsSealedOnUpgrade(t *testing.T) {
	rec := newReceiver(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	admin := store.BootstrapAdmin
	auth, alertAuth, slack := "Bearer old-"+randomHex(t, 12), "Bearer alert-"+randomHex(t, 12), "slk"+randomHex(t, 12)
	oneOff, recurring := job.NewID(), job.NewID()
	due := now.Add(6 * time.Second)
	prepare := func(ctx context.Context, url string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if err := store.MigrateTo(ctx, conn, schemaBeforeSealedSecrets); err != nil {
			return err
		}
		// As the previous release wrote them: the payload and notify as
		// given, credentials and all.
		insert := `INSERT INTO jobs (id, owner_id, due_hour, type, status, max_retries, timeout_ms, run_at, due_at,
		    created_at, updated_at, name, payload, timezone, schedule, per_hour, notify)
		  VALUES ($1, $2, extract(hour FROM $4::timestamptz AT TIME ZONE 'UTC')::smallint, 'webhook', 'scheduled', 0, 5000,
		    $3, $4, $5, $5, $6, $7::jsonb, 'UTC', $8::jsonb, $9, $10::jsonb)`
		payload := func(path string) string {
			return fmt.Sprintf(`{"url": %q, "headers": {"Authorization": %q, "Content-Type": "application/json"}}`, rec.URL+path, auth)
		}
		notify := fmt.Sprintf(`{"on": ["failed"], "webhook": {"url": %q, "headers": {"Authorization": %q}}}`, rec.URL+"/alert", alertAuth)
		if _, err := conn.Exec(ctx, insert, oneOff, admin, due, due, now, "old one-off", payload("/old-hook"), nil, nil, notify); err != nil {
			return err
		}
		yearly := `{"cron": "0 3 1 1 *", "timezone": "UTC", "start_at": "` + now.Format(time.RFC3339Nano) + `", "misfire": "run_once", "misfire_max": 100, "dst": {"gap": "shift", "overlap": "first"}}`
		next := time.Date(now.Year()+1, 1, 1, 3, 0, 0, 0, time.UTC)
		slackNotify := fmt.Sprintf(`{"on": ["failed"], "slack": {"webhook_url": %q}}`, "https://hooks.slack.com/services/T0/B0/"+slack)
		_, err = conn.Exec(ctx, insert, recurring, admin, nil, next, now, "old recurring", payload("/old-yearly"), yearly, 1, slackNotify)
		return err
	}
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1, Prepare: prepare})
	ctx := t.Context()
	api := c.API()

	// The pass runs right after the migrations; the job then delivers
	// with its credential, as before the upgrade.
	require.True(t, cluster.WaitUntil(20*time.Second, 100*time.Millisecond, func() bool { return len(rec.find("/old-hook")) > 0 }),
		"the old one-off job ran")
	require.Equal(t, auth, rec.find("/old-hook")[0].Header.Get("Authorization"), "delivered with its credential unchanged")
	conn, err := pgx.Connect(ctx, c.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.True(t, cluster.WaitUntil(20*time.Second, 100*time.Millisecond, func() bool {
		var unsealed int
		return conn.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE secrets IS NULL OR secrets NOT LIKE 'enc:v1:%'`).Scan(&unsealed) == nil && unsealed == 0
	}), "every old job's credentials are sealed")
	for _, id := range []uuid.UUID{oneOff, recurring} {
		var v map[string]any
		code, err := api.Do(ctx, http.MethodGet, "/api/v1/jobs/"+id.String(), nil, &v)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		b, _ := json.Marshal(v)
		require.Contains(t, string(b), "secret:sha256:")
		for _, s := range []string{auth, alertAuth, slack} {
			require.NotContains(t, string(b), s)
		}
	}
	dump, err := exec.CommandContext(ctx, "pg_dump", "--data-only", c.DatabaseURL).Output()
	require.NoError(t, err)
	for _, s := range []string{auth, alertAuth, slack} {
		require.NotContains(t, string(dump), s, "the dump holds an old credential")
	}
	// The sealed recurring job still delivers with its credential.
	code, err := api.Action(ctx, recurring.String(), "trigger")
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code)
	require.True(t, cluster.WaitUntil(20*time.Second, 100*time.Millisecond, func() bool { return len(rec.find("/old-yearly")) > 0 }))
	require.Equal(t, auth, rec.find("/old-yearly")[0].Header.Get("Authorization"))
}
