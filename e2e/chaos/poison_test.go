package chaos

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
)

// Poison: one job of a burst whose outcome Postgres refuses, for real.
const (
	poisonJobs          = 200
	poisonMaxDeliveries = 3
	// poisonDue is from insert to the burst's due time: the loader (2 s
	// ahead, every 500 ms) claims it before it is due.
	poisonDue = 2 * time.Second
	// poisonBound is how late any other job of the burst may be delivered:
	// the poison read with them must not hold them up until a reclaim
	// (TOCK_VISIBILITY_TIMEOUT, 3 s) or forever. Generous for a busy 2-core
	// machine; they take well under a second.
	poisonBound = 10 * time.Second
)

// TestPoisonDeadLettered: an entry that decodes but whose outcome Postgres
// refuses (a trigger raising 22023 on every row of its job but a dead
// letter's), even without the target's answer, does not hold up the
// entries recorded with it. Each delivery runs it (the attempt's start
// writes nothing to Postgres), with the same Idempotency-Key, and after
// TOCK_MAX_DELIVERIES deliveries it is dead-lettered: its job
// permanently_failed, with one run row saying why (shown by the API), the
// entry in the dead stream, nothing left pending or leased.
func TestPoisonDeadLettered(t *testing.T) {
	fx := setup(t, fault{name: "Poison", workerEnv: []string{fmt.Sprintf("TOCK_MAX_DELIVERIES=%d", poisonMaxDeliveries)}})
	ctx := t.Context()

	l := &load{target: fx.target.URL, planned: map[uuid.UUID]*planned{}}
	due := time.Now().Add(poisonDue)
	for range poisonJobs {
		l.add(due, kindOK, job.DefaultMaxRetries)
	}
	poison := l.jobs[poisonJobs/2]
	_, err := fx.db.Exec(ctx, `CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the chaos suite refuses this job' USING ERRCODE = '22023';
END $$`)
	require.NoError(t, err)
	_, err = fx.db.Exec(ctx, fmt.Sprintf(`CREATE TRIGGER refuse_poison BEFORE INSERT ON job_runs FOR EACH ROW
WHEN (NEW.job_id = '%s' AND (NEW.error IS NULL OR NEW.error NOT LIKE 'dead-lettered%%')) EXECUTE FUNCTION refuse_poison()`, poison.ID))
	require.NoError(t, err)
	require.NoError(t, l.insert(ctx, fx.c.DatabaseURL))
	due = l.last // as stored: whole milliseconds
	t.Logf("Poison: %d jobs due at %s; job %s refused by Postgres", poisonJobs, due.Format("15:04:05.000"), poison.ID)

	// Every other job is delivered, once each, promptly.
	require.True(t, fx.target.WaitFor(due.Add(30*time.Second).Sub(time.Now()), func(ds []cluster.Delivery) bool {
		seen := map[string]bool{}
		for _, d := range ds {
			if d.JobID != poison.ID.String() {
				seen[d.JobID] = true
			}
		}
		return len(seen) >= poisonJobs-1
	}), "the other jobs were not all delivered")
	var latest time.Duration
	byJob := map[string][]cluster.Delivery{}
	for _, d := range fx.target.Deliveries() {
		byJob[d.JobID] = append(byJob[d.JobID], d)
	}
	for _, j := range l.jobs {
		if j == poison {
			continue
		}
		ds := byJob[j.ID.String()]
		require.Len(t, ds, 1, "job %s is delivered once", j.ID)
		latest = max(latest, ds[0].At.Sub(j.RunAt))
	}
	t.Logf("Poison: the %d other jobs were delivered at most %s after they were due", poisonJobs-1, latest.Round(time.Millisecond))
	require.Less(t, latest, poisonBound, "the poison held up the jobs read with it")

	// The poison is dead-lettered after its deliveries.
	api := fx.c.API()
	var pj cluster.Job
	require.True(t, cluster.WaitUntil(time.Until(due.Add(60*time.Second)), 250*time.Millisecond, func() bool {
		pj, err = api.GetJob(ctx, poison.ID.String())
		return err == nil && pj.Status != "scheduled"
	}), "the poison job did not end: %+v, %v", pj, err)
	require.Equal(t, "permanently_failed", pj.Status)
	runs, err := api.Runs(ctx, poison.ID.String(), 10)
	require.NoError(t, err)
	require.Len(t, runs, 1, "one run row, the dead letter's")
	want := fmt.Sprintf("dead-lettered: delivered %d times without an outcome (TOCK_MAX_DELIVERIES is %d)",
		poisonMaxDeliveries+1, poisonMaxDeliveries)
	require.Equal(t, "permanently_failed", runs[0].Status)
	require.Contains(t, runs[0].Error, want)
	require.NotNil(t, runs[0].FinishedAt)
	t.Logf("Poison: dead-lettered %s after it was due", runs[0].FinishedAt.Sub(due).Round(time.Millisecond))

	var page struct {
		Runs []struct {
			JobID string `json:"job_id"`
			Error string `json:"error"`
		} `json:"runs"`
	}
	code, err := api.Do(ctx, http.MethodGet, "/api/v1/runs?status=permanently_failed&q=dead-lettered", nil, &page)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, page.Runs, 1, "the run search finds the dead letter, and only it")
	require.Equal(t, poison.ID.String(), page.Runs[0].JobID)

	poisoned := cluster.ForJob(fx.target.Deliveries(), poison.ID.String())
	require.GreaterOrEqual(t, len(poisoned), poisonMaxDeliveries, "the poison ran on each delivery whose outcome was refused")
	for _, d := range poisoned {
		require.Equal(t, poisoned[0].IdempotencyKey, d.IdempotencyKey, "each with the same Idempotency-Key")
		require.Equal(t, 1, d.Attempt)
	}

	// The dead stream keeps it; nothing stays pending.
	opt, err := redis.ParseURL(fx.redis.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	keys := queue.Keys{Prefix: fx.c.RedisPrefix, Shard: 0}
	// The leader drains the dead stream into Postgres (dead_entries) at
	// each reconcile (every second here): Redis keeps none of it.
	var deadLeft int64
	require.True(t, cluster.WaitUntil(20*time.Second, 100*time.Millisecond, func() bool {
		deadLeft, err = rdb.XLen(ctx, keys.Dead()).Result()
		return err == nil && deadLeft == 0
	}), "%d entries left in the dead stream, %v", deadLeft, err)
	var (
		keptJob         uuid.UUID
		keptErr, member string
		keptDeliveries  int
	)
	require.NoError(t, fx.db.QueryRow(ctx, `SELECT job_id, error, deliveries, fields->>'m' FROM dead_entries`).
		Scan(&keptJob, &keptErr, &keptDeliveries, &member))
	require.Equal(t, poison.ID, keptJob)
	require.True(t, strings.Contains(member, poison.ID.String()), "kept member %s", member)
	require.Contains(t, keptErr, want)
	require.Equal(t, poisonMaxDeliveries+1, keptDeliveries)
	var pending int64
	// A copy of the entry the reconciler re-added (an expired lease older
	// than TOCK_LOST_AFTER) is acknowledged at its next delivery, the
	// attempt being finished by then.
	require.True(t, cluster.WaitUntil(20*time.Second, 100*time.Millisecond, func() bool {
		p, err := rdb.XPending(ctx, keys.Ready(), queue.Group).Result()
		pending = -1
		if err == nil {
			pending = p.Count
		}
		return pending == 0
	}), "%d entries still pending", pending)

	leases, err := fx.queue.Running(ctx, poison.ID)
	require.NoError(t, err)
	require.Empty(t, leases, "its lease ended with the dead letter")

	var refused int
	for _, name := range []string{"worker-1", "worker-2"} {
		for _, e := range fx.events(name) {
			if e.Msg == "finish_refused" {
				refused++
			}
		}
	}
	// Once on each delivery before the dead letter, and on those of any
	// copy the reconciler re-added meanwhile.
	require.GreaterOrEqual(t, refused, poisonMaxDeliveries, "the refused outcome is logged on each delivery")
	t.Logf("Poison: finish_refused logged %d times", refused)

	// It is a dead letter; with Postgres taking its outcomes again, a
	// replay runs it once more, as attempt 2, and it leaves the list.
	var letters struct {
		DeadLetters []struct {
			ID    string `json:"id"`
			JobID string `json:"job_id"`
			Error string `json:"error"`
		} `json:"dead_letters"`
	}
	code, err = api.Do(ctx, http.MethodGet, "/api/v1/dead-letters", nil, &letters)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, letters.DeadLetters, 1)
	require.Equal(t, poison.ID.String(), letters.DeadLetters[0].JobID)
	require.Contains(t, letters.DeadLetters[0].Error, want)
	_, err = fx.db.Exec(ctx, `DROP TRIGGER refuse_poison ON job_runs`)
	require.NoError(t, err)
	code, err = api.Do(ctx, http.MethodPost, "/api/v1/dead-letters/"+letters.DeadLetters[0].ID+"/replay", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code)
	require.True(t, cluster.WaitUntil(30*time.Second, 100*time.Millisecond, func() bool {
		pj, err = api.GetJob(ctx, poison.ID.String())
		return err == nil && pj.Status == "completed"
	}), "the replayed dead letter did not complete: %+v, %v", pj, err)
	var second int
	for _, d := range cluster.ForJob(fx.target.Deliveries(), poison.ID.String()) {
		if d.Attempt == 2 {
			second++
		}
	}
	require.Equal(t, 1, second, "the replay ran once, as attempt 2")
	code, err = api.Do(ctx, http.MethodGet, "/api/v1/dead-letters", nil, &letters)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, letters.DeadLetters, "a replayed dead letter leaves the list")
}
