package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestRecurrencesFromThePast is the isolation issue's misfire scenario on the
// real services: five every-second crons whose start_at is in 1970 under the
// default misfire policy, and five with catch_up and misfire_max 10,000. A
// recurrence starts from now, so nothing of the 56 years before is skipped,
// caught up or written down: each job has one run row per second it has
// existed, and the loader's rounds stay short. Then a cancel of each answers
// 204 at once, whatever the loader is doing.
func TestRecurrencesFromThePast(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 2, Workers: 2})
	target := cluster.NewTarget()
	defer target.Close()
	ctx := t.Context()
	// A user with the default limits: ten every-second jobs are the 600
	// occurrences a minute they allow.
	api, _, err := c.API().User(ctx, "from-1970", nil)
	require.NoError(t, err)

	created := time.Now()
	var ids []string
	for i := range 10 {
		sched := map[string]any{"cron": "* * * * * *", "start_at": "1970-01-01T00:00:00Z"}
		if i >= 5 {
			sched["misfire"], sched["misfire_max"] = "catch_up", 10000
		}
		j, err := api.CreateJob(ctx, schedSpec{Name: fmt.Sprintf("since-1970-%d", i), Type: "webhook", Schedule: sched,
			Payload: hookTo(target.URL + "/tick")})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	took := time.Since(created)

	// Ten seconds of running.
	cluster.SleepUntil(ctx, time.Now().Add(10*time.Second))
	db, err := pgx.Connect(ctx, c.DatabaseURL)
	require.NoError(t, err)
	defer db.Close(context.Background())
	var rows, skipped int
	var first time.Time
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'skipped'), min(scheduled_for)
		FROM job_runs WHERE job_id = ANY($1::uuid[])`, ids).Scan(&rows, &skipped, &first))
	alive := time.Since(created)
	t.Logf("10 every-second jobs from 1970, created in %s: %d run rows (%d skipped) in their first %s; the first occurrence was %s",
		took.Round(time.Millisecond), rows, skipped, alive.Round(time.Millisecond), first.UTC().Format(time.RFC3339Nano))
	require.Zero(t, skipped, "nothing from before the job existed is skipped")
	require.False(t, first.Before(created.Add(-time.Second)), "the recurrences start from now")
	require.LessOrEqual(t, rows, 10*(int(alive/time.Second)+2), "one row per job and second at most")
	require.Positive(t, rows, "the jobs run")

	count, sum, over := loaderRounds(t, c)
	require.Positive(t, count, "the leader ran loader rounds")
	t.Logf("loader rounds: %d, mean %.1f ms, %d over 100 ms", count, 1000*sum/float64(count), over)

	var slowest time.Duration
	for _, id := range ids {
		began := time.Now()
		code, err := api.Do(ctx, "DELETE", "/api/v1/jobs/"+id, nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, code)
		slowest = max(slowest, time.Since(began))
	}
	t.Logf("cancels: every one 204, the slowest in %s", slowest.Round(time.Millisecond))
}

// loaderRounds reads tock_loader_round_seconds from every scheduler: rounds,
// their total seconds, and how many took over 100 ms.
func loaderRounds(t *testing.T, c *cluster.Cluster) (count int, sum float64, over int) {
	t.Helper()
	for _, name := range []string{"scheduler-1", "scheduler-2"} {
		p := c.Proc(name)
		require.NotNil(t, p)
		resp, err := http.Get("http://" + p.MetricsAddr + "/metrics")
		require.NoError(t, err)
		within := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			field := func() float64 {
				v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				require.NoError(t, err)
				return v
			}
			switch {
			case strings.HasPrefix(line, `tock_loader_round_seconds_bucket{le="0.1"}`):
				within = int(field())
			case strings.HasPrefix(line, "tock_loader_round_seconds_count "):
				n := int(field())
				count += n
				over += n - within
			case strings.HasPrefix(line, "tock_loader_round_seconds_sum "):
				sum += field()
			}
		}
		resp.Body.Close()
		require.NoError(t, sc.Err())
	}
	return count, sum, over
}
