package e2e

import (
	"context"
	"fmt"
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
	}
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
		} else {
			require.Zero(t, delivered, "%s: finished before the upgrade, not run again", j.what)
			require.Len(t, runs, j.runs, "%s: its old runs are still listed", j.what)
		}
	}
	time.Sleep(time.Second) // a duplicate would arrive within the publish tick
	require.Equal(t, pending, target.Count(), "no pending job ran twice")
}
