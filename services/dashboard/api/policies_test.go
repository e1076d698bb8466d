package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// everyMinute is a valid recurring ping job with the given extra fields.
func everyMinute(extra map[string]any) map[string]any {
	s := map[string]any{
		"name": "every minute", "type": "ping",
		"schedule": map[string]any{"cron": "* * * * *"},
		"payload":  map[string]any{"url": "https://example.com/health"},
	}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// TestJobPolicies: expires_after, overlap and notify are kept, shown,
// changed by PATCH and audited without the destination; each bad value is
// a 400 naming its field.
func TestJobPolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	notify := map[string]any{"on": []string{"permanently_failed", "recovered"}, "webhook": map[string]any{"url": "https://alerts.example.com/tock", "headers": map[string]string{"Authorization": "Bearer s3cret"}}}
	rec := b.do(t, http.MethodPost, "/api/v1/jobs", everyMinute(map[string]any{"expires_after": "30s", "overlap": "skip", "notify": notify}))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	j := decode[api.Job](t, rec)
	require.Equal(t, "30s", j.ExpiresAfter)
	require.Equal(t, job.OverlapSkip, j.Overlap)
	require.NotNil(t, j.Notify)
	require.Equal(t, []job.NotifyEvent{"permanently_failed", "recovered"}, j.Notify.On)
	require.Equal(t, "https://alerts.example.com/tock", j.Notify.Webhook.URL)

	rec = b.do(t, http.MethodPatch, "/api/v1/jobs/"+j.ID.String(), map[string]any{"overlap": "buffer_one", "expires_after": "", "notify": map[string]any{"on": []string{}}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	j = decode[api.Job](t, rec)
	require.Empty(t, j.ExpiresAfter)
	require.Equal(t, job.OverlapBufferOne, j.Overlap)
	require.Nil(t, j.Notify)

	one := decode[api.Job](t, b.do(t, http.MethodPost, "/api/v1/jobs", spec("one-off", b.now.Add(time.Hour))))
	require.Empty(t, one.Overlap, "a one-off job has no overlap policy")

	list := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action="+store.ActionJobCreate, nil))
	for _, e := range list.Entries {
		require.NotContains(t, string(e.Change), "s3cret")
		require.NotContains(t, string(e.Change), "alerts.example.com")
	}

	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"expiry not a duration":   {everyMinute(map[string]any{"expires_after": "soon"}), "expires_after"},
		"expiry too short":        {everyMinute(map[string]any{"expires_after": "10ms"}), "expires_after"},
		"overlap unknown":         {everyMinute(map[string]any{"overlap": "queue"}), "overlap"},
		"overlap on a one-off":    {func() map[string]any { s := spec("x", b.now.Add(time.Hour)); s["overlap"] = "skip"; return s }(), "overlap"},
		"notify unknown event":    {everyMinute(map[string]any{"notify": map[string]any{"on": []string{"boom"}, "email": map[string]any{"to": []string{"a@example.com"}}}}), "notify.on"},
		"notify two destinations": {everyMinute(map[string]any{"notify": map[string]any{"on": []string{"failed"}, "email": map[string]any{"to": []string{"a@example.com"}}, "slack": map[string]any{"webhook_url": "https://hooks.slack.com/x"}}}), "notify"},
		"notify private address":  {everyMinute(map[string]any{"notify": map[string]any{"on": []string{"failed"}, "webhook": map[string]any{"url": "http://10.0.0.1/"}}}), "notify.webhook.url"},
		"notify unknown field":    {everyMinute(map[string]any{"notify": map[string]any{"on": []string{"failed"}, "sms": "123"}}), ""},
	} {
		e := requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", tc.body), http.StatusBadRequest, apierr.CodeInvalid)
		if tc.field != "" {
			require.Equal(t, tc.field, e.Field, name)
		}
	}
	e := requireError(t, b.do(t, http.MethodPatch, "/api/v1/jobs/"+one.ID.String(), map[string]any{"overlap": "skip"}), http.StatusBadRequest, apierr.CodeInvalid)
	require.Equal(t, "overlap", e.Field)
}
