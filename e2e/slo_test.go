package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// sloAlerts are the alerts of sink whose event is an SLO's.
func sloAlerts(sink *alertSink) (breaches, recoveries []map[string]any) {
	for _, a := range sink.all() {
		switch a["event"] {
		case "slo_breach":
			breaches = append(breaches, a)
		case "slo_recovered":
			recoveries = append(recoveries, a)
		}
	}
	return breaches, recoveries
}

// sloStatus is a job's slo_status as the API shows it.
type sloStatus struct {
	Breached    bool      `json:"breached"`
	LateSince   time.Time `json:"late_since"`
	LateByMS    int64     `json:"late_by_ms"`
	SilentSince time.Time `json:"silent_since"`
}

func jobSLOStatus(t *testing.T, api *cluster.API, id string) sloStatus {
	t.Helper()
	var v struct {
		SLOStatus sloStatus `json:"slo_status"`
	}
	code, err := api.Do(t.Context(), http.MethodGet, "/api/v1/jobs/"+id, nil, &v)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	return v.SLOStatus
}

func jobStatus(t *testing.T, api *cluster.API, id string) string {
	t.Helper()
	j, err := api.GetJob(t.Context(), id)
	require.NoError(t, err)
	return j.Status
}

func atRisk(t *testing.T, api *cluster.API) []string {
	t.Helper()
	var page struct {
		Jobs []struct {
			ID string `json:"id"`
		} `json:"jobs"`
	}
	code, err := api.Do(t.Context(), http.MethodGet, "/api/v1/jobs?at_risk=true", nil, &page)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	var ids []string
	for _, j := range page.Jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// TestSLO is the SLO acceptance on the real services: late_after broken by
// a job held behind a paused flow key sends exactly one alert and one
// recovery; silent_after on an every-second job whose target starts
// failing sends one alert within 11 s of its last completion and one
// recovery once it succeeds again; the job's slo_status and the at-risk
// listing say so meanwhile.
func TestSLO(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	api := c.API()
	ctx := t.Context()

	t.Run("LateBehindAPausedFlow", func(t *testing.T) {
		target := cluster.NewTarget()
		defer target.Close()
		sink := newAlertSink()
		defer sink.Close()
		code, err := api.Do(ctx, http.MethodPut, "/api/v1/flows/slo-held", map[string]any{"paused": true}, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		j, err := api.CreateJob(ctx, map[string]any{"name": "held", "type": "webhook",
			"schedule": map[string]any{"cron": "* * * * * *"}, "flow": map[string]any{"key": "slo-held"},
			"slo":     map[string]any{"late_after": "500ms"},
			"notify":  map[string]any{"on": []string{"slo_breach", "slo_recovered"}, "webhook": map[string]any{"url": sink.URL + "/slo"}},
			"payload": hookTo(target.URL + "/held")})
		require.NoError(t, err)
		defer func() { _, _ = api.Do(ctx, http.MethodDelete, "/api/v1/jobs/"+j.ID, nil, nil) }()

		require.True(t, cluster.WaitUntil(15*time.Second, 100*time.Millisecond, func() bool {
			b, _ := sloAlerts(sink)
			return len(b) >= 1
		}), "a held job breaks late_after")
		require.Empty(t, cluster.ForJob(target.Deliveries(), j.ID), "nothing ran: the key is paused")
		st := jobSLOStatus(t, api, j.ID)
		require.True(t, st.Breached)
		require.False(t, st.LateSince.IsZero())
		require.Greater(t, st.LateByMS, int64(500))
		require.Contains(t, atRisk(t, api), j.ID)

		code, err = api.Do(ctx, http.MethodPut, "/api/v1/flows/slo-held", map[string]any{"paused": false}, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.True(t, cluster.WaitUntil(15*time.Second, 100*time.Millisecond, func() bool {
			_, r := sloAlerts(sink)
			return len(r) >= 1
		}), "on time again once the key resumes")
		time.Sleep(3 * time.Second) // a second breach or recovery would arrive meanwhile
		breaches, recoveries := sloAlerts(sink)
		require.Len(t, breaches, 1, "one alert per breach")
		require.Len(t, recoveries, 1, "one recovery")
		b := breaches[0]
		require.Equal(t, j.ID, b["job"].(map[string]any)["id"])
		slo := b["slo"].(map[string]any)
		require.Equal(t, "late", slo["kind"])
		require.Equal(t, "500ms", slo["late_after"])
		require.Greater(t, slo["late_by_ms"].(float64), 500.0)
		require.Equal(t, "late", recoveries[0]["slo"].(map[string]any)["kind"])
		require.False(t, jobSLOStatus(t, api, j.ID).Breached)
		require.NotContains(t, atRisk(t, api), j.ID)
	})

	t.Run("SilentWhileItsTargetFails", func(t *testing.T) {
		var failing atomic.Bool
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if failing.Load() {
				http.Error(w, "down", http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		defer target.Close()
		sink := newAlertSink()
		defer sink.Close()
		j, err := api.CreateJob(ctx, map[string]any{"name": "heartbeat", "type": "webhook", "max_retries": 0,
			"schedule": map[string]any{"cron": "* * * * * *"},
			"slo":      map[string]any{"silent_after": "10s"},
			"notify":   map[string]any{"on": []string{"slo_breach", "slo_recovered"}, "webhook": map[string]any{"url": sink.URL + "/slo"}},
			"payload":  hookTo(target.URL + "/beat")})
		require.NoError(t, err)
		defer func() { _, _ = api.Do(ctx, http.MethodDelete, "/api/v1/jobs/"+j.ID, nil, nil) }()
		require.True(t, cluster.WaitUntil(15*time.Second, 100*time.Millisecond, func() bool {
			completed, ok := completedRuns(t, api, j.ID)
			return ok && len(completed) >= 2
		}), "it runs")
		failing.Store(true)
		failedAt := time.Now()

		require.True(t, cluster.WaitUntil(25*time.Second, 100*time.Millisecond, func() bool {
			b, _ := sloAlerts(sink)
			return len(b) >= 1
		}), "a job that stops completing breaks silent_after")
		breaches, _ := sloAlerts(sink)
		slo := breaches[0]["slo"].(map[string]any)
		require.Equal(t, "silent", slo["kind"])
		require.Equal(t, "10s", slo["silent_after"])
		since, err := time.Parse(time.RFC3339Nano, slo["since"].(string))
		require.NoError(t, err)
		last, err := time.Parse(time.RFC3339Nano, slo["last_completed_at"].(string))
		require.NoError(t, err)
		require.True(t, last.Before(failedAt.Add(time.Second)), "its last completion was before the target failed")
		require.LessOrEqual(t, since.Sub(last), 11*time.Second, "alerted within 11 s of the last completion")
		require.True(t, jobSLOStatus(t, api, j.ID).Breached)

		failing.Store(false)
		// Five permanent failures in a row paused it (TOCK_AUTO_PAUSE_AFTER):
		// its owner resumes it, as the pause alert asks.
		if jobStatus(t, api, j.ID) == "paused" {
			code, err := api.Action(ctx, j.ID, "resume")
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code)
		}
		require.True(t, cluster.WaitUntil(15*time.Second, 100*time.Millisecond, func() bool {
			_, r := sloAlerts(sink)
			return len(r) >= 1
		}), "it recovers once it completes again")
		time.Sleep(2 * time.Second)
		breaches, recoveries := sloAlerts(sink)
		require.Len(t, breaches, 1)
		require.Len(t, recoveries, 1)
		require.Equal(t, "silent", recoveries[0]["slo"].(map[string]any)["kind"])
		require.False(t, jobSLOStatus(t, api, j.ID).Breached)
	})

	t.Run("CommandLine", func(t *testing.T) {
		_, _, token := newUser(t, api, "slo-keeper")
		r := cli(t, c, token, "jobs", "create", "--name", "watched", "--type", "ping", "--target", "https://example.com/",
			"--cron", "0 9 * * *", "--slo-late-after", "750ms", "--slo-silent-after", "2d", "-o", "json")
		require.Equal(t, 0, r.code, r.err)
		var created struct {
			ID  string            `json:"id"`
			SLO map[string]string `json:"slo"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.out), &created))
		require.Equal(t, map[string]string{"late_after": "750ms", "silent_after": "48h0m0s"}, created.SLO)
		r = cli(t, c, token, "jobs", "edit", created.ID, "--slo-silent-after", "", "-o", "json")
		require.Equal(t, 0, r.code, r.err)
		require.NotContains(t, r.out, "silent_after")
		r = cli(t, c, token, "jobs", "list", "--at-risk", "-o", "json")
		require.Equal(t, 0, r.code, r.err)
		require.NotContains(t, r.out, created.ID, "its SLO holds")
		r = cli(t, c, token, "jobs", "create", "--name", "bad", "--type", "ping", "--target", "https://example.com/",
			"--delay", "1h", "--slo-silent-after", "10s")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.err, "slo.silent_after")
	})

	t.Run("BadSLOsAreRefused", func(t *testing.T) {
		for field, spec := range map[string]map[string]any{
			"slo.late_after":   {"slo": map[string]any{"late_after": "0s"}, "schedule": map[string]any{"cron": "* * * * *"}},
			"slo.silent_after": {"slo": map[string]any{"silent_after": "10s"}, "delay": "1h"},
			"slo.late":         {"slo": map[string]any{"late": "1s"}, "schedule": map[string]any{"cron": "* * * * *"}},
		} {
			spec["name"], spec["type"], spec["payload"] = "bad slo", "ping", map[string]any{"url": "https://example.com/"}
			var out struct {
				Error struct {
					Field string `json:"field"`
				} `json:"error"`
			}
			code, err := api.Do(ctx, http.MethodPost, "/api/v1/jobs", spec, &out)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, code, field)
			require.Equal(t, field, out.Error.Field)
		}
	})
}
