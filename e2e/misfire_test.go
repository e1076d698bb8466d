package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestMisfirePolicies stops every scheduler for 30 s under three recurring
// jobs (every 5 s) with the three misfire policies, then starts one again.
// The occurrences that fell in the outage are published long after the
// misfire threshold (3 s) and judged by the worker, as pkg/schedule/misfire.go
// states:
//
//   - skip: every missed occurrence is skipped.
//   - run_once: an occurrence runs only if the next one is still in the
//     future when it is judged (it is "the latest missed occurrence");
//     otherwise it is "superseded by" the next. So exactly one of the outage
//     occurrences runs (the newest) unless the occurrence after it was already
//     due at restart: then that one supersedes all of them and none runs.
//   - catch_up (misfire_max 2): an occurrence runs if fewer than 2
//     occurrences lie between it and the judging time; so the newest one or
//     two outage occurrences run, the rest are skipped.
//
// Whatever the policy, every occurrence has a run row (skipped ones say why),
// every delivered run records its lateness, and after the restart the jobs
// run on time again.
func TestMisfirePolicies(t *testing.T) {
	const (
		threshold = 3 * time.Second
		period    = 5 * time.Second
		outage    = 30 * time.Second
	)
	c := start(t, cluster.Options{Schedulers: 2, Workers: 1, Env: []string{"TOCK_MISFIRE_THRESHOLD=3s"}})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	policies := []struct {
		name     string
		schedule map[string]any
	}{
		{"skip", map[string]any{"cron": "*/5 * * * * *", "misfire": "skip"}},
		{"run_once", map[string]any{"cron": "*/5 * * * * *", "misfire": "run_once"}},
		{"catch_up", map[string]any{"cron": "*/5 * * * * *", "misfire": "catch_up", "misfire_max": 2}},
	}
	ids := map[string]string{}
	for _, p := range policies {
		j, err := api.CreateJob(ctx, schedSpec{Name: "misfire-" + p.name, Type: "webhook", Schedule: p.schedule,
			Payload: hookTo(target.URL + "/" + p.name)})
		require.NoError(t, err)
		ids[p.name] = j.ID
	}
	ok := target.WaitFor(2*period+2*time.Second, func(ds []cluster.Delivery) bool {
		for _, id := range ids {
			if len(cluster.ForJob(ds, id)) == 0 {
				return false
			}
		}
		return true
	})
	require.True(t, ok, "every job runs once before the outage")

	// The outage: every scheduler stopped, so nothing is published.
	for _, name := range []string{"scheduler-1", "scheduler-2"} {
		require.NoError(t, c.Signal(name, syscall.SIGTERM))
	}
	for _, name := range []string{"scheduler-1", "scheduler-2"} {
		require.NoError(t, c.Wait(name, 15*time.Second))
	}
	stopped := time.Now()
	// Restart 3.5 s past an occurrence, at least 30 s on: that occurrence is
	// then the newest of the outage and the next one is not yet due when the
	// worker judges them (about 0.2 s after the restart), so run_once should
	// run exactly one outage occurrence and catch_up two. The assertions
	// below follow the policy from the recorded judging time, whatever the
	// phase turns out to be.
	cluster.SleepUntil(ctx, stopped.Add(outage).Add(-3500*time.Millisecond).Truncate(period).Add(period+3500*time.Millisecond))
	restarted := time.Now()
	_, err := c.StartProc(ctx, "scheduler", "scheduler-1")
	require.NoError(t, err)
	ready := time.Now()
	cluster.SleepUntil(ctx, ready.Add(12*time.Second))
	observed := time.Now()
	t.Logf("schedulers stopped at %s, restarted at %s (ready %s later), observed until %s",
		timeOfDay(stopped), timeOfDay(restarted), ready.Sub(restarted).Round(time.Millisecond), timeOfDay(observed))

	// The occurrences well inside the outage: published at the restart at the
	// earliest, so more than the threshold late.
	var missed []time.Time
	for at := stopped.Add(time.Second).Truncate(period).Add(period); at.Before(restarted.Add(-threshold)); at = at.Add(period) {
		missed = append(missed, at.UTC())
	}
	require.GreaterOrEqual(t, len(missed), 4, "the outage must hold several occurrences")
	newest := missed[len(missed)-1]
	// Every occurrence from the first delivered one to shortly before the
	// end of the observation must have a run row.
	lastExpected := observed.Add(-2 * time.Second)

	ds := target.Deliveries()
	var table []string
	for _, p := range policies {
		id := ids[p.name]
		first := cluster.ForJob(ds, id)[0].ScheduledFor
		var expected []time.Time
		for at := first; !at.After(lastExpected); at = at.Add(period) {
			expected = append(expected, at)
		}
		// Wait until the worker has recorded every expected occurrence.
		var runs map[int64]cluster.Run
		ok := cluster.WaitUntil(10*time.Second, 200*time.Millisecond, func() bool {
			list, err := api.Runs(ctx, id, 5)
			if err != nil {
				return false
			}
			runs = map[int64]cluster.Run{}
			for _, r := range list {
				require.Equal(t, 1, r.Attempt, "%s: a target answering 200 needs no retry", p.name)
				runs[r.ScheduledFor.UnixMilli()] = r
			}
			for _, at := range expected {
				if r, ok := runs[at.UnixMilli()]; !ok || r.Status == "running" {
					return false
				}
			}
			return true
		})
		delivered := map[int64]cluster.Delivery{}
		for _, d := range cluster.ForJob(target.Deliveries(), id) {
			_, dup := delivered[d.ScheduledFor.UnixMilli()]
			require.False(t, dup, "%s: occurrence %s delivered twice", p.name, d.ScheduledFor)
			delivered[d.ScheduledFor.UnixMilli()] = d
		}
		for _, at := range expected {
			r, has := runs[at.UnixMilli()]
			require.True(t, has, "%s: occurrence %s has no run row: dropped without a trace", p.name, timeOfDay(at))
			require.True(t, ok, "%s: occurrence %s still %s", p.name, timeOfDay(at), r.Status)
		}

		// Each run is either delivered and completed, or skipped with a
		// reason and never delivered.
		for ms, r := range runs {
			d, sent := delivered[ms]
			switch r.Status {
			case "completed":
				require.True(t, sent, "%s: run %s completed but the target never saw it", p.name, timeOfDay(r.ScheduledFor))
				require.GreaterOrEqual(t, r.LatenessMS, int64(0), "%s: run %s lateness", p.name, timeOfDay(r.ScheduledFor))
				require.False(t, d.At.Before(r.ScheduledFor), "%s: run %s delivered early", p.name, timeOfDay(r.ScheduledFor))
			case "skipped":
				require.False(t, sent, "%s: run %s skipped but delivered", p.name, timeOfDay(r.ScheduledFor))
				require.NotEmpty(t, r.Error, "%s: run %s skipped without a reason", p.name, timeOfDay(r.ScheduledFor))
			default:
				t.Fatalf("%s: run %s is %s", p.name, timeOfDay(r.ScheduledFor), r.Status)
			}
		}

		// The outage occurrences, under the job's policy. Each was judged
		// by the worker at its run's started_at.
		var ran, skipped []time.Time
		detail := []string{}
		for _, at := range missed {
			r := runs[at.UnixMilli()]
			judged := r.StartedAt
			require.Greater(t, judged.Sub(at), threshold, "%s: occurrence %s judged only %s late", p.name, timeOfDay(at), judged.Sub(at))
			if r.Status == "completed" {
				ran = append(ran, at)
				detail = append(detail, fmt.Sprintf("%s ran (lateness_ms=%d)", timeOfDay(at), r.LatenessMS))
			} else {
				skipped = append(skipped, at)
				detail = append(detail, fmt.Sprintf("%s skipped: %s", timeOfDay(at), r.Error))
			}
			var wantRun bool
			var reason string
			switch p.name {
			case "skip":
				wantRun, reason = false, "misfire skip"
			case "run_once":
				// Runs only if the next occurrence was not yet due.
				wantRun, reason = at.Add(period).After(judged), "superseded by "+at.Add(period).Format(time.RFC3339)
			case "catch_up":
				// Runs if fewer than 2 occurrences lie in (at, judged].
				wantRun, reason = at.Add(2*period).After(judged), "beyond catch_up bound of 2"
			}
			if wantRun {
				require.Equal(t, "completed", r.Status, "%s: occurrence %s (judged at %s) should run", p.name, timeOfDay(at), timeOfDay(judged))
			} else {
				require.Equal(t, "skipped", r.Status, "%s: occurrence %s (judged at %s) should be skipped", p.name, timeOfDay(at), timeOfDay(judged))
				require.Contains(t, r.Error, reason, "%s: occurrence %s", p.name, timeOfDay(at))
			}
		}
		switch p.name {
		case "skip":
			require.Empty(t, ran, "skip: no outage occurrence runs")
		case "run_once":
			require.LessOrEqual(t, len(ran), 1, "run_once: at most one outage occurrence runs")
			if len(ran) == 1 {
				require.Equal(t, newest, ran[0], "run_once: the one that runs is the newest")
			} else {
				// All superseded by the occurrence after the outage, which ran.
				next := runs[newest.Add(period).UnixMilli()]
				require.Equal(t, "completed", next.Status, "run_once: the occurrence superseding the outage ran")
				detail = append(detail, fmt.Sprintf("all superseded by %s, which ran", timeOfDay(next.ScheduledFor)))
			}
		case "catch_up":
			require.LessOrEqual(t, len(ran), 2, "catch_up: at most misfire_max outage occurrences run")
			require.NotEmpty(t, ran, "catch_up: the newest outage occurrence runs")
			require.Equal(t, missed[len(missed)-len(ran):], ran, "catch_up: the newest ones run")
		}

		// After the restart, on time again.
		var after int
		for _, at := range expected {
			if at.Before(ready.Add(time.Second)) {
				continue
			}
			r := runs[at.UnixMilli()]
			require.Equal(t, "completed", r.Status, "%s: occurrence %s after the restart", p.name, timeOfDay(at))
			require.Less(t, r.LatenessMS, threshold.Milliseconds(), "%s: occurrence %s after the restart is late", p.name, timeOfDay(at))
			after++
		}
		require.GreaterOrEqual(t, after, 1, "%s: occurrences after the restart", p.name)

		table = append(table, fmt.Sprintf("%-9s %7d %10d %8d %14d   %s", p.name, len(missed), len(ran), len(skipped), after, strings.Join(detail, "; ")))
	}
	t.Logf("misfire policies, threshold %s, outage %s .. %s:\n%-9s %7s %10s %8s %14s   %s\n%s",
		threshold, timeOfDay(stopped), timeOfDay(restarted), "policy", "outage", "delivered", "skipped", "after restart", "occurrences",
		strings.Join(table, "\n"))
}

// timeOfDay shows an instant as UTC time of day with milliseconds.
func timeOfDay(t time.Time) string { return t.UTC().Format("15:04:05.000") }
