package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestPutByKey on the real services: PUT /api/v1/jobs/by-key/{key} twice
// keeps one job, with the second definition, and GET by key finds it.
func TestPutByKey(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	api := c.API()
	ctx := t.Context()
	spec := func(cron string) map[string]any {
		return map[string]any{"name": "report", "type": "ping", "schedule": map[string]any{"cron": cron},
			"payload": map[string]any{"url": "https://example.com/health"}}
	}
	var first, second, got struct {
		ID       string `json:"id"`
		Key      string `json:"key"`
		Schedule struct {
			Cron string `json:"cron"`
		} `json:"schedule"`
	}
	code, err := api.Do(ctx, http.MethodPut, "/api/v1/jobs/by-key/daily-report", spec("0 9 * * *"), &first)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code)
	code, err = api.Do(ctx, http.MethodPut, "/api/v1/jobs/by-key/daily-report", spec("0 10 * * *"), &second)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, first.ID, second.ID, "one job")
	code, err = api.Do(ctx, http.MethodGet, "/api/v1/jobs/by-key/daily-report", nil, &got)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, first.ID, got.ID)
	require.Equal(t, "0 10 * * *", got.Schedule.Cron)
	var list struct {
		Jobs []struct{} `json:"jobs"`
	}
	code, err = api.Do(ctx, http.MethodGet, "/api/v1/jobs", nil, &list)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, list.Jobs, 1)
}
