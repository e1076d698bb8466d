package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestRetention: with TOCK_JOB_RETENTION at 3 s, a one-off job that has
// finished is gone from the API (404, its runs with it) once that long has
// passed, while a recurring job that is still active keeps its history and
// a finished job with a retention of its own (1 h) is kept.
func TestRetention(t *testing.T) {
	c := start(t, cluster.Options{
		Schedulers: 1, Workers: 1,
		Env: []string{"TOCK_JOB_RETENTION=3s", "TOCK_RETENTION_INTERVAL=200ms"},
	})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	oneOff, err := api.CreateJob(ctx, map[string]any{"name": "done soon", "type": "webhook",
		"run_at": time.Now().Add(time.Second), "payload": map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)
	keptLonger, err := api.CreateJob(ctx, map[string]any{"name": "kept an hour", "type": "webhook", "retention": "1h",
		"run_at": time.Now().Add(time.Second), "payload": map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)
	recurring, err := api.CreateJob(ctx, map[string]any{"name": "every second", "type": "webhook",
		"schedule": map[string]any{"cron": "* * * * * *"}, "payload": map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)

	var finished time.Time
	require.True(t, cluster.WaitUntil(15*time.Second, 50*time.Millisecond, func() bool {
		j, err := api.GetJob(ctx, oneOff.ID)
		if err == nil && j.Status == "completed" && finished.IsZero() {
			finished = time.Now()
		}
		return !finished.IsZero()
	}), "the one-off job completed")
	runs, err := api.Runs(ctx, oneOff.ID, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)

	// Gone once its retention has passed: the job and its runs answer 404.
	require.True(t, cluster.WaitUntil(15*time.Second, 100*time.Millisecond, func() bool {
		code, _ := api.Do(ctx, "GET", "/api/v1/jobs/"+oneOff.ID, nil, nil)
		return code == 404
	}), "the finished job was not removed after its retention")
	require.GreaterOrEqual(t, time.Since(finished), 3*time.Second-500*time.Millisecond, "removed no earlier than its retention")
	code, err := api.Do(ctx, "GET", "/api/v1/jobs/"+oneOff.ID+"/runs", nil, nil)
	require.NoError(t, err)
	require.Equal(t, 404, code)

	// The job with its own longer retention finished as early and is kept.
	kept, err := api.GetJob(ctx, keptLonger.ID)
	require.NoError(t, err)
	require.Equal(t, "completed", kept.Status)
	keptRuns, err := api.Runs(ctx, keptLonger.ID, 10)
	require.NoError(t, err)
	require.Len(t, keptRuns, 1)

	// The active job, which has run every second all along, keeps its runs.
	j, err := api.GetJob(ctx, recurring.ID)
	require.NoError(t, err)
	require.Equal(t, "scheduled", j.Status)
	history, err := api.Runs(ctx, recurring.ID, 100)
	require.NoError(t, err)
	require.NotEmpty(t, history)
	oldest := history[len(history)-1].ScheduledFor
	require.Greater(t, time.Since(oldest), 3*time.Second, "an active job keeps runs older than the finished jobs' retention")
	t.Logf("one-off removed %s after it finished; the recurring job kept %d runs", time.Since(finished).Round(100*time.Millisecond), len(history))
}
