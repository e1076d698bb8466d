package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestLabelFilter: on the real services, GET /api/v1/jobs?label=… finds
// exactly the jobs that carry every label asked for, single and bulk
// creates alike, and a job's labels come back on every view.
func TestLabelFilter(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	api := c.API()
	ctx := t.Context()
	at := time.Now().Add(time.Hour)
	job := func(name string, labels map[string]string) map[string]any {
		return map[string]any{"name": name, "type": "ping", "run_at": at, "labels": labels,
			"payload": map[string]any{"url": "https://example.com"}}
	}
	want := map[string]bool{}
	for _, spec := range []map[string]any{
		job("a", map[string]string{"customer": "1234", "plan": "pro"}),
		job("b", map[string]string{"customer": "1234"}),
		job("c", map[string]string{"customer": "12345"}),
		job("d", nil),
	} {
		j, err := api.CreateJob(ctx, spec)
		require.NoError(t, err)
		if spec["name"] == "a" || spec["name"] == "b" {
			want[j.ID] = true
		}
	}
	ids, err := api.CreateBatch(ctx, []any{job("e", map[string]string{"customer": "1234", "plan": "free"}), job("f", map[string]string{"plan": "pro"})})
	require.NoError(t, err)
	want[ids[0]] = true

	var list struct {
		Jobs []struct {
			ID     string            `json:"id"`
			Labels map[string]string `json:"labels"`
		} `json:"jobs"`
	}
	code, err := api.Do(ctx, http.MethodGet, "/api/v1/jobs?label=customer=1234&limit=100", nil, &list)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	got := map[string]bool{}
	for _, j := range list.Jobs {
		got[j.ID] = true
		require.Equal(t, "1234", j.Labels["customer"])
	}
	require.Equal(t, want, got, "exactly the jobs labelled customer=1234")

	code, err = api.Do(ctx, http.MethodGet, "/api/v1/jobs?label=customer=1234&label=plan=pro", nil, &list)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, list.Jobs, 1)
	require.Equal(t, map[string]string{"customer": "1234", "plan": "pro"}, list.Jobs[0].Labels)
}
