package e2e

import (
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestRunSearch: on the real services, GET /api/v1/runs finds one user's
// failures across their jobs by status and error text, never another
// user's, and GET /api/v1/runs:stats counts them.
func TestRunSearch(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	admin := c.API()
	ctx := t.Context()
	ann, _, err := admin.User(ctx, "ann", nil)
	require.NoError(t, err)
	bob, _, err := admin.User(ctx, "bob", nil)
	require.NoError(t, err)

	// A port nothing listens on: every delivery is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + l.Addr().String() + "/"
	require.NoError(t, l.Close())

	at := time.Now().Add(time.Second)
	create := func(api *cluster.API, name, url string) string {
		j, err := api.CreateJob(ctx, map[string]any{"name": name, "type": "webhook", "run_at": at, "max_retries": 0,
			"payload": map[string]any{"url": url}})
		require.NoError(t, err)
		return j.ID
	}
	failing := map[string]bool{}
	var all []string
	for i := range 3 {
		id := create(ann, "ann fails "+strconv.Itoa(i), refused)
		failing[id] = true
		all = append(all, id)
	}
	for i := range 2 {
		all = append(all, create(ann, "ann succeeds "+strconv.Itoa(i), target.URL+"/ok"))
	}
	theirs := map[string]bool{}
	for i := range 2 {
		id := create(bob, "bob fails "+strconv.Itoa(i), refused)
		theirs[id] = true
		all = append(all, id)
	}
	require.True(t, cluster.WaitUntil(30*time.Second, 100*time.Millisecond, func() bool {
		for _, id := range all {
			j, err := admin.GetJob(ctx, id)
			if err != nil || (j.Status != "completed" && j.Status != "permanently_failed") {
				return false
			}
		}
		return true
	}), "every job ran once")

	type run struct {
		JobID   string `json:"job_id"`
		JobName string `json:"job_name"`
		Status  string `json:"status"`
		Error   string `json:"error"`
	}
	search := func(api *cluster.API, query string) map[string]bool {
		t.Helper()
		var page struct {
			Runs       []run  `json:"runs"`
			NextCursor string `json:"next_cursor"`
		}
		code, err := api.Do(ctx, http.MethodGet, "/api/v1/runs?"+query, nil, &page)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Empty(t, page.NextCursor)
		got := map[string]bool{}
		for _, r := range page.Runs {
			require.Equal(t, "permanently_failed", r.Status)
			require.Contains(t, r.Error, "refused")
			require.NotEmpty(t, r.JobName)
			require.False(t, got[r.JobID], "one run per job")
			got[r.JobID] = true
		}
		return got
	}
	require.Equal(t, failing, search(ann, "status=permanently_failed&q=refused"), "exactly ann's failures")
	require.Equal(t, theirs, search(bob, "status=permanently_failed&q=refused"), "exactly bob's failures")
	require.Len(t, search(admin, "status=permanently_failed&q=refused"), len(failing)+len(theirs))

	var stats struct {
		Groups []struct {
			Key   string `json:"key"`
			Count int    `json:"count"`
		} `json:"groups"`
	}
	code, err := ann.Do(ctx, http.MethodGet, "/api/v1/runs:stats?group_by=status", nil, &stats)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	counts := map[string]int{}
	for _, g := range stats.Groups {
		counts[g.Key] = g.Count
	}
	require.Equal(t, map[string]int{"permanently_failed": 3, "completed": 2}, counts)
}
