package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/api"
)

// TestOccurrencesPerMinute holds a user to occurrences_per_minute: every
// recurring job adds its rate (occurrences an hour over 60), and a create, a
// resume or an edit that would pass the limit is a 429 on the schedule.
func TestOccurrencesPerMinute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.user(t, "frequent", "user", map[string]any{"occurrences_per_minute": 121})
	every := func(cron string) map[string]any {
		return map[string]any{"name": "every " + cron, "type": "ping", "schedule": map[string]any{"cron": cron},
			"payload": map[string]any{"url": "https://example.com/"}}
	}
	first := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("* * * * * *")))
	second := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("* * * * * *")))

	rec := b.as(t, u, http.MethodPost, "/api/v1/jobs", every("*/2 * * * * *"))
	e := requireError(t, rec, http.StatusTooManyRequests, api.CodeQuotaExceeded)
	require.Equal(t, "schedule", e.Field)
	require.Contains(t, e.Message, "121 a minute")

	// A daily job still fits: it adds one an hour (its busiest hour).
	require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("0 0 9 * * *")).Code)

	// Pausing one makes room; resuming it then is refused, since the room
	// was taken.
	require.Equal(t, http.StatusOK, b.as(t, u, http.MethodPost, "/api/v1/jobs/"+first.ID.String()+"/pause", nil).Code)
	third := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("* * * * * *")))
	rec = b.as(t, u, http.MethodPost, "/api/v1/jobs/"+first.ID.String()+"/resume", nil)
	require.Equal(t, "schedule", requireError(t, rec, http.StatusTooManyRequests, api.CodeQuotaExceeded).Field)

	// An edit that makes a job run more often counts only its increase.
	rec = b.as(t, u, http.MethodPatch, "/api/v1/jobs/"+third.ID.String(), map[string]any{"schedule": map[string]any{"cron": "*/2 * * * * *"}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = b.as(t, u, http.MethodPatch, "/api/v1/jobs/"+third.ID.String(), map[string]any{"schedule": map[string]any{"cron": "* * * * * *"}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = b.as(t, u, http.MethodPatch, "/api/v1/jobs/"+second.ID.String(), map[string]any{"name": "renamed"})
	require.Equal(t, http.StatusOK, rec.Code, "a change that does not add occurrences always passes")

	// The limit shows among the effective limits.
	me := decode[api.User](t, b.as(t, u, http.MethodGet, "/api/v1/me", nil))
	require.Equal(t, 121, me.EffectiveLimits.OccurrencesPerMinute)
	require.Equal(t, 600, decode[api.User](t, b.as(t, b.user(t, "plain", "user", nil), http.MethodGet, "/api/v1/me", nil)).EffectiveLimits.OccurrencesPerMinute)
}
