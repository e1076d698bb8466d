package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestErasure on the real services: a finished job purged with DELETE
// ?purge=true answers 404 and its runs are gone; an erased user's key
// answers 401, their jobs are gone, their running attempt is stopped and
// their recurring job runs no more.
func TestErasure(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	admin := c.API()
	ctx := t.Context()
	ann, annID, err := admin.User(ctx, "ann", nil)
	require.NoError(t, err)

	done, err := ann.CreateJob(ctx, map[string]any{"name": "done", "type": "webhook",
		"run_at": time.Now().Add(time.Second), "payload": map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)
	require.True(t, cluster.WaitUntil(15*time.Second, 50*time.Millisecond, func() bool {
		j, err := ann.GetJob(ctx, done.ID)
		return err == nil && j.Status == "completed"
	}), "the one-off job completed")
	code, err := ann.Do(ctx, http.MethodDelete, "/api/v1/jobs/"+done.ID+"?purge=true", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, code)
	for _, path := range []string{"/api/v1/jobs/" + done.ID, "/api/v1/jobs/" + done.ID + "/runs"} {
		code, err = ann.Do(ctx, http.MethodGet, path, nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, code, path)
	}

	recurring, err := ann.CreateJob(ctx, map[string]any{"name": "every second", "type": "webhook",
		"schedule": map[string]any{"cron": "* * * * * *"}, "payload": map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)
	require.True(t, target.WaitFor(10*time.Second, func(d []cluster.Delivery) bool {
		n := 0
		for _, x := range d {
			if x.JobID == recurring.ID {
				n++
			}
		}
		return n >= 2
	}), "the recurring job ran")

	var erased map[string]int
	code, err = admin.Do(ctx, http.MethodPost, "/api/v1/users/"+annID+"/erase", nil, &erased)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, erased["jobs"])
	require.Positive(t, erased["runs"])

	code, err = ann.Do(ctx, http.MethodGet, "/api/v1/jobs", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, code, "the erased user's key")
	code, err = admin.Do(ctx, http.MethodGet, "/api/v1/jobs/"+recurring.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code)

	// What Redis still held for the job finds no job and is dropped: after
	// a moment, the job is not delivered any more.
	time.Sleep(2 * time.Second)
	before := target.Count()
	time.Sleep(3 * time.Second)
	require.Equal(t, before, target.Count(), "nothing of the erased user runs")
}
